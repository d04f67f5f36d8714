import { resolveSemanticOptions } from '../chunking/limits.js';
import type { AI4RAGChunk, ChunkingOptions } from '../chunking/types.js';
import type { LoadedDocument } from '../documents/types.js';
import { ValidationError } from '../errors.js';
import type {
  DocumentRecord,
  IndexBuildResult,
  StatisticsRefresh,
  VectorStore,
  VersionedCommit,
  WriteOutcome,
} from '../vectorstores/types.js';

/**
 * Chunks handed to the store per `addChunks` call (documents whose chunks are pending are committed together).
 * The store embeds them in batches of at most 1,024 texts and writes batch i while embedding batch i + 1, so a
 * few batches per call keep both the CPU and the database busy.
 */
export const INGEST_BATCH_CHUNKS = 4096;

/** Document records looked up per query when checking what changed. */
const PREFETCH_DOCUMENTS = 1000;

/** Progress of an ingestion, reported after each batch. */
export interface IngestProgress {
  /** Documents given; for a stream, those read so far (it grows until the stream ends). */
  documentsTotal: number;
  documentsDone: number;
  documentsSkipped: number;
  chunksStored: number;
}

export interface IngestOptions {
  store: VectorStore;
  chunking: ChunkingOptions;
  /** Splits one document; the caller binds the chunking options (see `createChunker`). */
  chunk: (doc: LoadedDocument) => AI4RAGChunk[] | Promise<AI4RAGChunk[]>;
  onProgress?: (progress: IngestProgress) => void;
  /** Also delete stored documents whose keys are not among `docs` (folder sync). @default false */
  prune?: boolean;
  /**
   * Keys never pruned, with everything under them (`key/…`): files or folders present but unreadable this time.
   */
  keep?: readonly string[] | (() => readonly string[]);
  /**
   * When the documents were read (ISO time; default: when this call starts). A deletion committed after it (a
   * concurrent `--prune`, an API delete) wins over this ingest: the document stays deleted.
   */
  readAt?: string;
  /** Lease of each staged write, in seconds (see `VectorStore.beginWrite`). */
  leaseSeconds?: number;
  /**
   * Build the store's ANN index at the end once the collection is large enough (`VectorStore.buildIndex`), so no
   * search ever waits for it. @default true
   */
  buildIndex?: boolean;
  /**
   * While ingesting, bring the ANN index up to date in the background each time this many more chunks are stored
   * (0: only at the end). On pgvector each build indexes the rows
   * stored since the last one as a new segment, so a search during a long ingest scans at most about that many rows
   * exactly. Ignored with `buildIndex: false`.
   * @default INGEST_INDEX_EVERY
   */
  indexEvery?: number;
  /**
   * Staged writes in flight at once (1–8): each is its own version of its own documents, committed on its own, so
   * on a server store they run on separate connections (the HNSW insertions of an indexed collection on separate
   * server cores). Results keep the order of `docs` whatever the order writes finish in. @default 1
   */
  writers?: number;
  /** Chunks per staged write (documents are never split between writes). @default INGEST_BATCH_CHUNKS */
  batchChunks?: number;
}

/**
 * Chunks stored between the index builds of a long ingest (see `IngestOptions.indexEvery`): the pgvector store's
 * cap on the rows after its last segment (`SEGMENT_TAIL_MAX`), whose exact scan costs about 16 ms
 * (`npm run bench -- --hnsw`), what a search during the ingest may add. With the store's merges a fresh 1M-chunk load
 * puts each row into graphs about 5.5 times (`npm run bench -- --segments`, 0 → 1M every 20k rows).
 */
export const INGEST_INDEX_EVERY = 20_000;

/** Most staged writes {@link ingestDocuments} keeps in flight at once. */
export const MAX_INGEST_WRITERS = 8;

/** Outcome per document. */
export interface IngestDocumentResult {
  documentId: string;
  /** `superseded`: deleted or replaced by another writer while this one ran (its version was not stored). */
  status: 'indexed' | 'unchanged' | 'failed' | 'superseded';
  chunks: number;
  error?: string;
}

export interface IngestSummary extends IngestProgress {
  documents: IngestDocumentResult[];
  /** Documents removed because they were no longer present (with `prune`). */
  pruned: string[];
  /** Stored documents not among `docs` that `prune` kept, and why (their file or a folder above it was unreadable). */
  kept: { documentId: string; reason: string }[];
  /** The index build at the end, when one ran (absent: the store has none to build, or it already exists). */
  index?: IndexBuildResult;
  /** Why the index build at the end failed (the documents are committed; searches scan exactly meanwhile). */
  indexError?: string;
  /** The keyword statistics' refresh at the end (`VectorStore.refreshStatistics`), when the store has one. */
  statistics?: StatisticsRefresh;
  /** Why that refresh failed (the documents are committed; the next keyword search refreshes instead). */
  statisticsError?: string;
}

/** A document waiting to be written, with its place among the results. */
interface Pending {
  doc: LoadedDocument;
  chunks: AI4RAGChunk[];
  slot: number;
}

/** Consecutive single-document retries failing with one error after which the cause is taken as systemic. */
const SYSTEMIC_FAILURES = 2;

/** Key recorded with each document so a change of chunking settings re-indexes it. */
export function indexingKey(chunking: ChunkingOptions): string {
  const base = `${chunking.method}:${chunking.chunkSize}:${chunking.chunkOverlap}`;
  if (chunking.method === 'hierarchical') return `${base}:parent${chunking.parentChunkSize}`;
  if (chunking.method !== 'semantic') return base;
  const s = resolveSemanticOptions(chunking);
  return `${base}:${s.breakpoint}${s.breakpointAmount}:buffer${s.bufferSize}:min${s.minChunkSize}`;
}

/**
 * Indexes documents into a store and keeps it in sync: a document whose content hash and indexing settings are
 * unchanged is skipped (no embedding work); a changed one is written as a staged write (`beginWrite`): its new
 * chunks stay invisible until `finishWrite` commits it, removing its previous version in the same transaction. So
 * a crash or an outage part-way leaves every document at its previous version (the next run redoes it and sweeps
 * the dead write), two concurrent runs leave each document at one complete version (the last commit wins), and a
 * document deleted after this run read it stays deleted. One document's failure fails only itself.
 * Chunks of several documents are stored together, up to about {@link INGEST_BATCH_CHUNKS} per write.
 * @example
 * const summary = await ingestDocuments(docs, { store, chunking, chunk: (d) => chunker.chunk(d) });
 */
export async function ingestDocuments(
  docs: readonly LoadedDocument[] | AsyncIterable<LoadedDocument>,
  options: IngestOptions,
): Promise<IngestSummary> {
  const { store } = options;
  const writers = options.writers ?? 1;
  if (!Number.isInteger(writers) || writers < 1 || writers > MAX_INGEST_WRITERS) {
    throw new ValidationError(
      `writers must be an integer from 1 to ${MAX_INGEST_WRITERS}, got ${writers}`,
    );
  }
  const batchChunks = options.batchChunks ?? INGEST_BATCH_CHUNKS;
  if (!Number.isInteger(batchChunks) || batchChunks < 1) {
    throw new ValidationError(`batchChunks must be a positive integer, got ${batchChunks}`);
  }
  const indexEvery = options.indexEvery ?? INGEST_INDEX_EVERY;
  if (!Number.isInteger(indexEvery) || indexEvery < 0) {
    throw new ValidationError(`indexEvery must be a whole number of chunks, got ${indexEvery}`);
  }
  const key = indexingKey(options.chunking);
  const progress: IngestProgress = {
    documentsTotal: Array.isArray(docs) ? docs.length : 0,
    documentsDone: 0,
    documentsSkipped: 0,
    chunksStored: 0,
  };
  // In the order of `docs`: a document waiting for its write holds its slot until the write reports.
  const results: (IngestDocumentResult | undefined)[] = [];
  let pending: Pending[] = [];
  let pendingChunks = 0;

  const readAt = options.readAt ?? new Date().toISOString();
  const fail = (item: Pending, error: string) => {
    results[item.slot] = { documentId: item.doc.key, status: 'failed', chunks: 0, error };
    progress.documentsDone += 1;
  };

  /**
   * Stores some documents as one staged write: chunks invisible until `finishWrite` commits each document under
   * its own lock. A failure leaves every document at its previous version and no chunk behind (the write is
   * aborted, or swept by the next writer if this process dies).
   */
  const storeGroup = async (group: readonly Pending[]): Promise<WriteOutcome> => {
    const version = await store.beginWrite(
      options.leaseSeconds === undefined ? {} : { leaseSeconds: options.leaseSeconds },
    );
    let stored: number;
    try {
      stored = await store.addChunks(
        group.flatMap((p) => p.chunks),
        { version },
      );
    } catch (error) {
      await store.abortWrite(version).catch(() => undefined);
      throw error;
    }
    const updatedAt = new Date().toISOString();
    const commits: VersionedCommit[] = group.map(({ doc, chunks }) => ({
      record: {
        documentId: doc.key,
        contentHash: doc.contentHash,
        chunkCount: chunks.length,
        updatedAt,
        metadata: { indexing: key, format: doc.format, ...(doc.title && { title: doc.title }) },
      },
      chunkIds: chunks.map((c) => c.id),
      readAt,
    }));
    const outcome = await store.finishWrite(version, commits);
    progress.chunksStored += stored;
    indexSoFar();
    return outcome;
  };

  // One background build at a time, started once `indexEvery` more chunks are stored; its failure only costs speed
  // (reported like the final build's) and the next one, or the final build, tries again.
  let building: Promise<void> | undefined;
  let indexedAt = 0;
  let indexError: string | undefined;
  const indexSoFar = () => {
    const build = store.buildIndex?.bind(store);
    if (options.buildIndex === false || build === undefined || indexEvery === 0) return;
    if (building !== undefined || progress.chunksStored - indexedAt < indexEvery) return;
    indexedAt = progress.chunksStored;
    building = build()
      .then(
        () => undefined,
        (error: unknown) => {
          indexError = (error as Error).message;
        },
      )
      .finally(() => {
        building = undefined;
      });
  };

  const report = (group: readonly Pending[], outcome: WriteOutcome) => {
    const refused = new Map(outcome.refused.map((r) => [r.documentId, r]));
    for (const { doc, chunks, slot } of group) {
      const r = refused.get(doc.key);
      if (r === undefined) {
        results[slot] = { documentId: doc.key, status: 'indexed', chunks: chunks.length };
      } else if (r.reason === 'deleted' || r.reason === 'superseded') {
        results[slot] = { documentId: doc.key, status: 'superseded', chunks: 0, error: r.message };
      } else {
        results[slot] = { documentId: doc.key, status: 'failed', chunks: 0, error: r.message };
      }
      progress.documentsDone += 1;
    }
  };

  /** Writes one group, never rejecting for a store error: each document ends indexed, superseded or failed. */
  const write = async (batch: Pending[]): Promise<void> => {
    try {
      report(batch, await storeGroup(batch));
    } catch (error) {
      if (batch.length === 1) {
        fail(batch[0] as Pending, (error as Error).message);
      } else {
        // One document must not fail its neighbours: each on its own, unless the cause is plainly systemic (an
        // outage failing every attempt the same way), which then fails the rest without more calls.
        let lastError = '';
        let repeats = 0;
        for (const item of batch) {
          if (repeats >= SYSTEMIC_FAILURES) {
            fail(item, lastError);
            continue;
          }
          try {
            report([item], await storeGroup([item]));
            repeats = 0;
          } catch (inner) {
            const message = (inner as Error).message;
            repeats = message === lastError ? repeats + 1 : 1;
            lastError = message;
            fail(item, message);
          }
        }
      }
    }
    options.onProgress?.({ ...progress });
  };

  const inFlight = new Set<Promise<void>>();
  /** The first failure a write could not turn into a document result (a throwing progress callback). */
  let writeError: { error: unknown } | undefined;
  const flush = async (): Promise<void> => {
    if (pending.length === 0) return;
    const batch = pending;
    pending = [];
    pendingChunks = 0;
    const task: Promise<void> = write(batch)
      .catch((error: unknown) => {
        writeError ??= { error };
      })
      .finally(() => inFlight.delete(task));
    inFlight.add(task);
    if (inFlight.size >= writers) await Promise.race(inFlight);
    if (writeError !== undefined) throw writeError.error;
  };

  // Documents in windows of PREFETCH_DOCUMENTS: their known records fetched in one query, so a stream (a large
  // .jsonl read line by line) is never held whole; only the keys are kept, for `prune`.
  const present = new Set<string>();
  const windows = async function* (): AsyncGenerator<LoadedDocument[]> {
    let window: LoadedDocument[] = [];
    for await (const doc of docs) {
      window.push(doc);
      if (window.length >= PREFETCH_DOCUMENTS) {
        yield window;
        window = [];
      }
    }
    if (window.length > 0) yield window;
  };
  try {
    for await (const window of windows()) {
      if (!Array.isArray(docs)) progress.documentsTotal += window.length;
      const known = await store.getDocuments(window.map((d) => d.key));
      for (const doc of window) {
        present.add(doc.key);
        await ingestOne(doc, known.get(doc.key));
      }
    }
    await flush();
  } finally {
    // Never leave a write or a build running behind the caller's back, whatever failed.
    await Promise.all([...inFlight]);
    await building;
  }
  if (writeError !== undefined) throw writeError.error;
  options.onProgress?.({ ...progress });

  async function ingestOne(doc: LoadedDocument, existing: DocumentRecord | undefined) {
    if (
      existing &&
      existing.contentHash === doc.contentHash &&
      existing.metadata?.indexing === key
    ) {
      results.push({ documentId: doc.key, status: 'unchanged', chunks: existing.chunkCount });
      progress.documentsDone += 1;
      progress.documentsSkipped += 1;
      return;
    }
    let chunks: AI4RAGChunk[];
    try {
      chunks = await options.chunk(doc);
    } catch (error) {
      results.push({
        documentId: doc.key,
        status: 'failed',
        chunks: 0,
        error: (error as Error).message,
      });
      progress.documentsDone += 1;
      return;
    }
    pending.push({ doc, chunks, slot: results.length });
    results.push(undefined);
    pendingChunks += chunks.length;
    if (pendingChunks >= batchChunks) await flush();
  }

  const pruned: string[] = [];
  const kept: IngestSummary['kept'] = [];
  if (options.prune) {
    // Read at the end: with a stream, the files that failed to load are known only once it is exhausted.
    const protectedKeys =
      typeof options.keep === 'function' ? options.keep() : (options.keep ?? []);
    for (const record of await store.listDocuments()) {
      const id = record.documentId;
      if (present.has(id)) continue;
      const guard = protectedKeys.find((k) => id === k || id.startsWith(`${k}/`));
      if (guard !== undefined) {
        kept.push({
          documentId: id,
          reason:
            guard === id
              ? `${id} could not be read this time`
              : `folder ${guard} could not be read this time`,
        });
        continue;
      }
      await store.deleteDocument(id);
      pruned.push(id);
    }
  }
  // The keyword statistics brought up to date here rather than by the first search, inside a request: a corpus whose
  // first batch's average length was not the whole corpus's (or a prune) has every row re-weighted now.
  let statistics: StatisticsRefresh | undefined;
  let statisticsError: string | undefined;
  if (store.refreshStatistics && (progress.chunksStored > 0 || pruned.length > 0)) {
    try {
      statistics = await store.refreshStatistics();
    } catch (error) {
      statisticsError = (error as Error).message;
    }
  }
  let index: IndexBuildResult | undefined;
  if (options.buildIndex !== false && store.buildIndex && progress.chunksStored > 0) {
    // Every document is committed already: a failed build (a lock timeout) costs only speed; searches scan exactly.
    try {
      const r = await store.buildIndex();
      if (r.built) index = r;
      indexError = undefined;
    } catch (error) {
      indexError = (error as Error).message;
    }
  }
  return {
    ...progress,
    documents: results.filter((r): r is IngestDocumentResult => r !== undefined),
    pruned,
    kept,
    ...(index && { index }),
    ...(indexError !== undefined && { indexError }),
    ...(statistics && { statistics }),
    ...(statisticsError !== undefined && { statisticsError }),
  };
}
