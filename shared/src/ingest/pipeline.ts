import type { AI4RAGChunk, ChunkingOptions } from '../chunking/types.js';
import type { LoadedDocument } from '../documents/types.js';
import type { DocumentRecord, VectorStore } from '../vectorstores/types.js';

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
  documentsTotal: number;
  documentsDone: number;
  documentsSkipped: number;
  chunksStored: number;
}

export interface IngestOptions {
  store: VectorStore;
  chunking: ChunkingOptions;
  /** Splits one document; the caller binds the chunking options (see `createChunker`). */
  chunk: (doc: LoadedDocument) => AI4RAGChunk[];
  onProgress?: (progress: IngestProgress) => void;
  /** Also delete stored documents whose keys are not among `docs` (folder sync). @default false */
  prune?: boolean;
  /** Keys never pruned (e.g. files present but unreadable this time). */
  keep?: readonly string[];
}

/** Outcome per document. */
export interface IngestDocumentResult {
  documentId: string;
  status: 'indexed' | 'unchanged' | 'failed';
  chunks: number;
  error?: string;
}

export interface IngestSummary extends IngestProgress {
  documents: IngestDocumentResult[];
  /** Documents removed because they were no longer present (with `prune`). */
  pruned: string[];
}

/** Key recorded with each document so a change of chunking settings re-indexes it. */
export function indexingKey(chunking: ChunkingOptions): string {
  return `${chunking.method}:${chunking.chunkSize}:${chunking.chunkOverlap}`;
}

/**
 * Indexes documents into a store and keeps it in sync: a document whose content hash and indexing settings are
 * unchanged is skipped (no embedding work); a changed one gets its new chunks upserted first, then its stale
 * chunks removed and its record written in one transaction (`commitDocuments`) — so a crash part-way leaves the
 * old record and the next run redoes it.
 * Chunks of several documents are stored together, up to about {@link INGEST_BATCH_CHUNKS} per store call.
 * @example
 * const summary = await ingestDocuments(docs, { store, chunking, chunk: (d) => chunker.chunk(d) });
 */
export async function ingestDocuments(
  docs: readonly LoadedDocument[],
  options: IngestOptions,
): Promise<IngestSummary> {
  const { store } = options;
  const key = indexingKey(options.chunking);
  const progress: IngestProgress = {
    documentsTotal: docs.length,
    documentsDone: 0,
    documentsSkipped: 0,
    chunksStored: 0,
  };
  const results: IngestDocumentResult[] = [];
  let pending: { doc: LoadedDocument; chunks: AI4RAGChunk[] }[] = [];
  let pendingChunks = 0;

  const flush = async (): Promise<void> => {
    if (pending.length === 0) return;
    const batch = pending;
    pending = [];
    pendingChunks = 0;
    const all = batch.flatMap((p) => p.chunks);
    try {
      progress.chunksStored += await store.addChunks(all);
    } catch (error) {
      // The batch's documents keep their previous version (their records were not touched) and are
      // reported as failed; the rest of the ingestion goes on.
      for (const { doc } of batch) {
        results.push({
          documentId: doc.key,
          status: 'failed',
          chunks: 0,
          error: (error as Error).message,
        });
        progress.documentsDone += 1;
      }
      options.onProgress?.({ ...progress });
      return;
    }
    const updatedAt = new Date().toISOString();
    const commits = batch.map(({ doc, chunks }) => ({
      record: {
        documentId: doc.key,
        contentHash: doc.contentHash,
        chunkCount: chunks.length,
        updatedAt,
        metadata: { indexing: key, format: doc.format, ...(doc.title && { title: doc.title }) },
      },
      keepIds: chunks.map((c) => c.id),
    }));
    await store.commitDocuments(commits);
    for (const { doc, chunks } of batch) {
      results.push({ documentId: doc.key, status: 'indexed', chunks: chunks.length });
      progress.documentsDone += 1;
    }
    options.onProgress?.({ ...progress });
  };

  // Known documents, fetched in bulk (one query per PREFETCH_DOCUMENTS keys, not one per document).
  const known = new Map<string, DocumentRecord>();
  for (let i = 0; i < docs.length; i += PREFETCH_DOCUMENTS) {
    const keys = docs.slice(i, i + PREFETCH_DOCUMENTS).map((d) => d.key);
    for (const [id, record] of await store.getDocuments(keys)) known.set(id, record);
  }

  for (const doc of docs) {
    const existing = known.get(doc.key);
    if (
      existing &&
      existing.contentHash === doc.contentHash &&
      existing.metadata?.indexing === key
    ) {
      results.push({ documentId: doc.key, status: 'unchanged', chunks: existing.chunkCount });
      progress.documentsDone += 1;
      progress.documentsSkipped += 1;
      continue;
    }
    let chunks: AI4RAGChunk[];
    try {
      chunks = options.chunk(doc);
    } catch (error) {
      results.push({
        documentId: doc.key,
        status: 'failed',
        chunks: 0,
        error: (error as Error).message,
      });
      progress.documentsDone += 1;
      continue;
    }
    pending.push({ doc, chunks });
    pendingChunks += chunks.length;
    if (pendingChunks >= INGEST_BATCH_CHUNKS) await flush();
  }
  await flush();
  options.onProgress?.({ ...progress });

  const pruned: string[] = [];
  if (options.prune) {
    const present = new Set([...docs.map((d) => d.key), ...(options.keep ?? [])]);
    for (const record of await store.listDocuments()) {
      if (!present.has(record.documentId)) {
        await store.deleteByDocument(record.documentId);
        pruned.push(record.documentId);
      }
    }
  }
  return { ...progress, documents: results, pruned };
}
