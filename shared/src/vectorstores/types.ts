import type { AI4RAGChunk, ChunkMetadata } from '../chunking/types.js';
import type { TermStats } from '../generation/term-stats.js';

export type DistanceMetric = 'cosine' | 'l2' | 'l1' | 'inner_product';
export type SearchMode = 'vector' | 'hybrid';
/** `''` is ai4rag's "no ranker" sentinel (vector search). */
export type RankerStrategy = '' | 'rrf' | 'weighted' | 'normalized';

/** Search parameters, validated exactly as ai4rag's `validate_search_params`. */
export interface SearchParams {
  /** Number of chunks to return (> 0). */
  k: number;
  /** Return `score` on each hit. */
  includeScores?: boolean;
  /** @default 'vector' */
  searchMode?: SearchMode;
  /** @default '' for vector; required non-empty for hybrid */
  rankerStrategy?: RankerStrategy;
  /** RRF k; 0 (unused) unless strategy is rrf. */
  rankerK?: number;
  /** Weight of the dense side; 1 (unused) unless strategy is weighted. */
  rankerAlpha?: number;
  /** Only chunks whose metadata matches every key/value. */
  filter?: MetadataFilter;
}

/** Equality filter over chunk metadata keys (`document_id`, `sequence_number`, or any custom key). */
export type MetadataFilter = Record<string, string | number | boolean>;

export interface SearchHit {
  id: string;
  text: string;
  metadata: ChunkMetadata;
  /** Higher is better, whatever the distance metric. Present when `includeScores`. */
  score?: number;
}

/** A chunk with its embedding, ready to store. */
export interface EmbeddedChunk {
  chunk: AI4RAGChunk;
  vector: number[];
}

/** What the store knows about an ingested document (for change detection and the documents API). */
export interface DocumentRecord {
  documentId: string;
  contentHash: string;
  chunkCount: number;
  /** ISO timestamp. */
  updatedAt: string;
  metadata?: Record<string, unknown>;
}

/** A document whose new chunks are stored: its record, and the ids of the chunks that make it up now. */
export interface DocumentCommit {
  record: DocumentRecord;
  keepIds: string[];
}

export interface CollectionStats {
  collection: string;
  documents: number;
  chunks: number;
  dimension: number;
  distance: DistanceMetric;
  embeddingModel: string;
  /** Whether an ANN index serves vector search (false: exact scan). */
  annIndex: boolean;
}

/**
 * The vector-store port. One contract suite (test/unit/vectorstores/contract.ts) runs against every adapter.
 */
export interface VectorStore {
  readonly collectionName: string;
  /** Embeds (≤ the embedder's batch limit per call) and upserts chunks; duplicate ids: first wins. Returns the number stored. */
  addChunks(chunks: AI4RAGChunk[]): Promise<number>;
  /** Upserts chunks whose vectors are already computed. Idempotent by chunk id. */
  upsert(records: EmbeddedChunk[]): Promise<number>;
  search(query: string, params: SearchParams): Promise<SearchHit[]>;
  /** Chunks of one document with sequence_number in [from, to], ordered by sequence_number. */
  getChunksBySequence(documentId: string, from: number, to: number): Promise<SearchHit[]>;
  /** Deletes a document's chunks (except `keepIds`) and its record. Returns chunks deleted. */
  deleteByDocument(documentId: string, options?: { keepIds?: string[] }): Promise<number>;
  deleteByFilter(filter: MetadataFilter): Promise<number>;
  putDocument(record: DocumentRecord): Promise<void>;
  /**
   * Finishes the ingestion of several documents whose new chunks are already upserted: deletes each document's
   * chunks that are not in its `keepIds` and writes its record, atomically. Returns the chunks deleted.
   */
  commitDocuments(entries: DocumentCommit[]): Promise<number>;
  getDocument(documentId: string): Promise<DocumentRecord | undefined>;
  /** Records of several documents, keyed by id (unknown ids are absent). */
  getDocuments(documentIds: string[]): Promise<Map<string, DocumentRecord>>;
  listDocuments(): Promise<DocumentRecord[]>;
  stats(): Promise<CollectionStats>;
  /**
   * Term rarity over the collection's chunks, from the keyword index's own statistics (the local extractive model
   * weighs question terms by it). Optional: stores without client-side BM25 statistics (Milvus) lack it.
   */
  termStats?(): Promise<TermStats>;
  /** Deletes the whole collection (its chunks, statistics and document records). The store is closed after. */
  drop(): Promise<void>;
  close(): Promise<void>;
}
