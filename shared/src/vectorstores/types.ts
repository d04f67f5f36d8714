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
  /** Only chunks whose metadata matches the filter (the language of `filter.ts`). */
  filter?: MetadataFilter;
}

/** Operators of one field in a {@link MetadataFilter}. */
export interface MetadataFieldOperators {
  eq?: string | number | boolean;
  ne?: string | number | boolean;
  in?: readonly (string | number | boolean)[];
  nin?: readonly (string | number | boolean)[];
  gt?: number | string;
  gte?: number | string;
  lt?: number | string;
  lte?: number | string;
  startsWith?: string;
}

/**
 * A metadata filter (JSON form; grammar and semantics in `filter.ts`): built-in fields (`document_id`,
 * `sequence_number`, `start_index`, `headings`) and user metadata (`user.<key>`), each a value (equality) or
 * an operator object, combined with `and` / `or` / `not`. Stores validate it before any I/O.
 * @example { document_id: 'd1', 'user.year': { gte: 2020 }, or: [{ 'user.lang': 'en' }, { 'user.lang': 'de' }] }
 */
export type MetadataFilter = {
  readonly [field: string]:
    | string
    | number
    | boolean
    | MetadataFieldOperators
    | MetadataFilter
    | readonly MetadataFilter[];
};

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
  /** The staged write whose chunks make up this document (absent for direct writes). */
  version?: string;
  /** S3 `sequencer` of the upload this version came from (the Lambda flow). */
  sequencer?: string;
}

/** A document whose new chunks are stored: its record, and the ids of the chunks that make it up now. */
export interface DocumentCommit {
  record: DocumentRecord;
  keepIds: string[];
}

/**
 * Options of {@link VectorStore.beginWrite}. A *staged write* makes ingestion crash- and race-safe: chunks written
 * under its version stay invisible to every read until {@link VectorStore.finishWrite} commits them, and a write
 * whose lease lapsed (its writer died) is swept by the next writer.
 */
export interface BeginWriteOptions {
  /**
   * The version token (letters, digits, `.`, `_`, `-`, `:`; at most 128). Give a deterministic one when several
   * processes write one version (the Lambda flow); beginning an existing version renews its lease. Generated when
   * absent.
   */
  version?: string;
  /** Seconds the write stays alive without a write or renewal. @default 900 */
  leaseSeconds?: number;
  /** Who writes (`host:pid` for a local process, so a dead one is swept at once on the same host). */
  owner?: string;
}

/** One document of a staged write to commit. */
export interface VersionedCommit {
  /** The document's record; `chunkCount` must equal `chunkIds.length`. */
  record: DocumentRecord;
  /** Every chunk id of this version of the document (all must be staged under the write's version). */
  chunkIds: string[];
  /**
   * Order of the source event (an S3 `sequencer`, hexadecimal): a commit older than the stored record's or the
   * deletion's sequencer is refused (`superseded` / `deleted`).
   */
  sequencer?: string;
  /** ISO time the writer read the source: a deletion after it refuses the commit (`deleted`). */
  readAt?: string;
}

/** Why a document of a staged write was not committed. */
export type CommitRefusal = 'superseded' | 'deleted' | 'incomplete' | 'expired';

/** What {@link VectorStore.finishWrite} did. */
export interface WriteOutcome {
  /** Documents now at this write's version. */
  committed: string[];
  refused: { documentId: string; reason: CommitRefusal; message: string }[];
  /** Chunks removed: previous versions of the committed documents and the refused documents' staged chunks. */
  chunksDeleted: number;
}

/** Options of {@link VectorStore.deleteDocument}. */
export interface DeleteDocumentOptions {
  /** S3 `sequencer` of the removal: an older one than the stored record's is ignored (returns -1). */
  sequencer?: string;
}

/** Options of {@link VectorStore.buildIndex}. */
export interface BuildIndexOptions {
  /** Build even below the threshold. @default false */
  force?: boolean;
  /**
   * Give up when a lock is not granted within this many milliseconds (the build is retried later): the table's,
   * and on a server the database's build lock that another collection's build holds. @default 5000
   */
  lockTimeoutMs?: number;
  /**
   * `maintenance_work_mem` of a build on a PostgreSQL server, e.g. `'2GB'` (a whole number of kB, MB or GB, from
   * 64MB to 64GB). pgvector builds the graph in memory while it fits and many times slower once it does not.
   * @default '256MB'
   */
  memory?: string;
  /**
   * Most rows one call puts into ANN graphs (pgvector segments): newer rows beyond it wait for the next call, a
   * merge or a conversion beyond it is left for a call without the bound (`ai4rag index`). For callers with a
   * deadline, such as a Lambda function. @default unbounded
   */
  maxRows?: number;
  /**
   * How often a build on a PostgreSQL server reports its progress through the store's logger (pgvector): the phase
   * of each segment's `CREATE INDEX` and the rows in its graph so far, read from `pg_stat_progress_create_index`.
   * Each segment's start and end are reported whatever this is; 0 turns the periodic reports off. @default 30000
   */
  progressMs?: number;
  /**
   * Merge every segment into one (pgvector): a rebuild of every indexed row, for the fastest probes after a bulk
   * load; without it segments are merged only beyond four. @default false
   */
  merge?: boolean;
  /**
   * Pack the keyword index's long postings lists when they are not packed (pgvector: after the fold; a fold, a
   * rebuild or a re-weighting empties them). At 1M chunks it took 71 s, so the builds of an ingestion leave it to
   * the maintenance step (`ai4rag index`, the scheduled build). @default false
   */
  pack?: boolean;
}

/** What {@link VectorStore.refreshStatistics} did. */
export interface StatisticsRefresh {
  /** Every row's weights were recomputed (the average length had drifted past the tolerance, or k1/b changed). */
  reweighted: boolean;
  /** The weights are stale but the collection holds more than `maxRows` rows: left to a later refresh or search. */
  deferred: boolean;
}

/** What {@link VectorStore.buildIndex} did. */
export interface IndexBuildResult {
  built: boolean;
  /** Rows in the collection when it decided. */
  rows: number;
  seconds: number;
  /** Why it did not build (`exists`, `below threshold …`, `dimension …`), or how it built. */
  reason: string;
  /**
   * Rows this call put into ANN graphs (pgvector: a new segment, merges, a conversion). Rows of segments built
   * earlier are the catalogue's estimate (`reltuples`), so a merge's count can be off by a few.
   */
  indexed?: number;
  /** ANN index segments after the call (pgvector). */
  segments?: number;
  /** Keyword-index postings this call moved from the fresh table into the folded one (pgvector; absent when none). */
  postingsFolded?: number;
  /** Terms whose long postings lists this call packed (pgvector; absent when it did not pack). */
  postingsPacked?: number;
  /**
   * The fresh postings table had outgrown the folded one, and the two traded names before the fold, which then moved
   * the formerly folded postings (`postingsFolded`) instead (pgvector; absent when not).
   */
  postingsSwapped?: true;
}

/** Result of {@link VectorStore.checkIntegrity}. */
export interface IntegrityReport {
  collection: string;
  documents: number;
  chunks: number;
  /** Chunks of no committed document version and of no live write (invisible, but taking space). */
  orphanChunks: number;
  /** Documents whose stored chunks differ from their record (count or version). */
  mismatched: { documentId: string; recorded: number; stored: number }[];
  /** Staged writes still holding a lease (live, or dead and not yet expired). */
  liveWrites: { version: string; owner: string; expiresAt: string; chunks: number }[];
  /** Writes whose lease lapsed, with their staged chunks. */
  expiredWrites: { version: string; owner: string; chunks: number }[];
  /**
   * Postings of the keyword index that differ from the chunks' BM25 weights (missing or extra; stores with a
   * postings index only). 0 on a consistent store: the database maintains the index with the chunk rows.
   */
  keywordIndexMismatch?: number;
  /** Whether I1–I2 hold (no orphans, no mismatch, no expired write) and the keyword index matches the chunks. */
  clean: boolean;
  /** What `repair` changed (absent without it). */
  repaired?: {
    chunksDeleted: number;
    writesSwept: number;
    recordsFixed: number;
    /** Whether the keyword index was rebuilt from the chunks. */
    keywordIndexRebuilt?: boolean;
  };
}

/** Largest page {@link VectorStore.listDocuments} returns. */
export const MAX_LIST_PAGE = 10_000;

/** Options of {@link VectorStore.listDocuments}: one page of records. */
export interface ListDocumentsOptions {
  /** At most this many records (1..{@link MAX_LIST_PAGE}). @default every record */
  limit?: number;
  /** Only documents whose id sorts after this one (the last id of the previous page). */
  after?: string;
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
  /**
   * HNSW segments a vector search probes (pgvector; 0 with none or with an older full-table index). More than one
   * costs a probe each: `buildIndex({ merge: true })` (`ai4rag index --merge`) makes them one.
   */
  annSegments?: number;
  /**
   * Bytes the collection takes on disk, its tables with their indexes (pgvector; undefined where the store cannot
   * tell). What a database server's memory is sized against (README, "Deploy to AWS").
   */
  sizeBytes?: number;
}

/**
 * The vector-store port. One contract suite (test/unit/vectorstores/contract.ts) runs against every adapter.
 */
export interface VectorStore {
  readonly collectionName: string;
  /**
   * Embeds (≤ the embedder's batch limit per call) and upserts chunks; duplicate ids: first wins. Returns the number
   * stored. With `version`, the chunks are staged under that write (see {@link beginWrite}).
   */
  addChunks(chunks: AI4RAGChunk[], options?: { version?: string }): Promise<number>;
  /** Upserts chunks whose vectors are already computed. Idempotent by chunk id (and version). */
  upsert(records: EmbeddedChunk[], options?: { version?: string }): Promise<number>;
  /**
   * Starts (or renews) a staged write and sweeps writes whose lease lapsed or whose local writer died. Returns the
   * version token to pass to `upsert` / `addChunks` / `finishWrite`.
   */
  beginWrite(options?: BeginWriteOptions): Promise<string>;
  /**
   * Commits documents of a staged write, each under a per-document lock: its staged chunks must be complete, and
   * no newer version or deletion may have been committed meanwhile (compare-and-set); then its previous version's
   * chunks are removed and its record written, atomically. Staged chunks of documents not committed are removed,
   * and the write ends. One document's refusal never affects another.
   */
  finishWrite(version: string, entries: VersionedCommit[]): Promise<WriteOutcome>;
  /** Ends a staged write without committing: removes its staged chunks. Returns chunks removed. */
  abortWrite(version: string): Promise<number>;
  /**
   * Deletes a document (its visible chunks and record), leaving a tombstone so that an older ingest of it that
   * finishes later cannot bring it back. Returns chunks deleted, or -1 when a newer version outranks the deletion.
   */
  deleteDocument(documentId: string, options?: DeleteDocumentOptions): Promise<number>;
  /** Verifies I1–I2 (orphans, incomplete or mismatched documents, lapsed writes); with `repair`, fixes them. */
  checkIntegrity(options?: { repair?: boolean }): Promise<IntegrityReport>;
  /**
   * Builds the ANN index when the collection has reached the store's threshold (or with `force`), without blocking
   * readers or writers where the database allows (`CREATE INDEX CONCURRENTLY` on a PostgreSQL server). Searches never
   * build an index; ingestion calls this at its end, and `ai4rag index` on demand. Optional: stores that index at
   * creation (Milvus) lack it.
   */
  buildIndex?(options?: BuildIndexOptions): Promise<IndexBuildResult>;
  /**
   * Brings keyword-search statistics up to date on the write side (pgvector: folds the BM25 statistics log and
   * re-weights every row once the average chunk length drifted past the tolerance), unless the collection holds more
   * than `maxRows` rows. Writers call it after committing, so that a search does not do it inside a request.
   * Optional: stores whose keyword index needs no client-side statistics (Milvus) lack it.
   */
  refreshStatistics?(options?: { maxRows?: number }): Promise<StatisticsRefresh>;
  search(query: string, params: SearchParams): Promise<SearchHit[]>;
  /** Chunks of one document with sequence_number in [from, to], ordered by sequence_number. */
  getChunksBySequence(documentId: string, from: number, to: number): Promise<SearchHit[]>;
  /**
   * Deletes a document's chunks (except `keepIds`) and, without `keepIds`, its record (as {@link deleteDocument}).
   * Returns chunks deleted.
   */
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
  /**
   * Document records ordered by id: all of them, or one page (`limit` records whose id sorts after `after`, in the
   * store's own order, so that the last id of a page is the next page's `after`).
   * @throws {VectorStoreError} for a `limit` that is not an integer in 1..{@link MAX_LIST_PAGE}.
   */
  listDocuments(options?: ListDocumentsOptions): Promise<DocumentRecord[]>;
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
