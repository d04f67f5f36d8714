/** Metadata every chunk carries (ai4rag's AI4RAGChunk metadata). */
export interface ChunkMetadata {
  document_id: string;
  /** 1-based position of the chunk within its document. */
  sequence_number: number;
  /** Character offset of the chunk in the document text (recursive chunking). */
  start_index?: number;
  /** Heading path "A > B" (hybrid chunking). */
  headings?: string;
  /**
   * Hierarchical (parent–child) chunking: the parent chunk this child was cut from. Only children are stored and
   * searched; the retriever answers with the parent text, once per parent, in the rank of its best child.
   * `parent_id` = `chunkId(document_id, parent_sequence_number, parent_text)`; `parent_sequence_number` is 1-based
   * per document; `parent_start_index` is the parent's character offset in the document text.
   */
  parent_id?: string;
  parent_sequence_number?: number;
  parent_start_index?: number;
  parent_text?: string;
  /** The document's user metadata (sidecar, jsonl `metadata`, S3 object metadata); filter it as `user.<key>`. */
  user?: Record<string, string | number | boolean>;
  [key: string]: unknown;
}

/** A chunk: ai4rag's AI4RAGChunk, with its deterministic id. */
export interface AI4RAGChunk {
  /** SHA-256 hex over (document_id UTF-8, sequence_number as 4-byte big-endian, text). */
  id: string;
  text: string;
  metadata: ChunkMetadata;
}

/**
 * `recursive` and `hybrid` are ai4rag's; `fixed` (fixed-size token windows with overlap), `semantic` (sentence
 * groups split where neighbouring embeddings drift apart) and `hierarchical` (small children indexed, their parent
 * chunk returned) are ours (issue 15).
 */
export type ChunkingMethod = 'recursive' | 'hybrid' | 'fixed' | 'semantic' | 'hierarchical';

/** How `semantic` chunking picks breakpoints among the distances of neighbouring sentence groups. */
export type SemanticBreakpoint = 'percentile' | 'standard_deviation' | 'gradient';

export interface ChunkingOptions {
  method: ChunkingMethod;
  /**
   * Chunk size in approximate tokens (ceil(chars / 4)); for `semantic` the maximum chunk size, for
   * `hierarchical` the child size.
   */
  chunkSize: number;
  /** Overlap in approximate tokens; must be 0 for hybrid and semantic. */
  chunkOverlap: number;
  /** `hierarchical` only: the parent chunk size in approximate tokens, greater than `chunkSize`. */
  parentChunkSize?: number;
  /** `semantic` only: how breakpoints are chosen (default `percentile`). */
  breakpoint?: SemanticBreakpoint;
  /**
   * `semantic` only: the breakpoint amount — a percentile in 0..100 for `percentile` and `gradient`, a number of
   * standard deviations for `standard_deviation`.
   */
  breakpointAmount?: number;
  /** `semantic` only: sentences on each side joined to a sentence before it is embedded (default 1). */
  bufferSize?: number;
  /** `semantic` only: the minimum chunk size in approximate tokens; smaller groups join a neighbour. */
  minChunkSize?: number;
}
