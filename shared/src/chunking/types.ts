/** Metadata every chunk carries (ai4rag's AI4RAGChunk metadata). */
export interface ChunkMetadata {
  document_id: string;
  /** 1-based position of the chunk within its document. */
  sequence_number: number;
  /** Character offset of the chunk in the document text (recursive chunking). */
  start_index?: number;
  /** Heading path "A > B" (hybrid chunking). */
  headings?: string;
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

export type ChunkingMethod = 'recursive' | 'hybrid';

export interface ChunkingOptions {
  method: ChunkingMethod;
  /** Chunk size in approximate tokens (ceil(chars / 4)). */
  chunkSize: number;
  /** Overlap in approximate tokens; must be 0 for hybrid. */
  chunkOverlap: number;
}
