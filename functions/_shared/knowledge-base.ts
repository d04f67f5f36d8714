/**
 * The knowledge-base flow behind the ingest, chunk and embed-batch handlers: S3 object → parsed documents →
 * chunk batches → embedded and stored chunks → committed document record. Every step is idempotent, so SQS
 * redeliveries and retries are harmless.
 *
 * Object layout in the artifacts store:
 * - `status/<collection>/<doc>.json` — ingestion status of a document (pending, indexed, failed);
 * - `documents/<collection>/<doc>/<hash>.json` — a parsed document too large to travel in a message;
 * - `batches/<collection>/<doc>/<hash>/<n>.json` — chunk batches, with `manifest.json` and `done/<n>` markers.
 */
import { z } from 'zod';
import { createChunker } from '../../shared/src/chunking/index.js';
import type { ChunkingOptions } from '../../shared/src/chunking/types.js';
import { loadBytes } from '../../shared/src/documents/load.js';
import type { LoadedDocument } from '../../shared/src/documents/types.js';
import { NotFoundError, ValidationError } from '../../shared/src/errors.js';
import {
  ChunkingOptionsSchema,
  readChunkBatch,
  writeChunkBatches,
} from '../../shared/src/ingest/batches.js';
import { indexingKey } from '../../shared/src/ingest/pipeline.js';
import { getJson, type ObjectStore, putJson } from '../../shared/src/ports/object-store.js';
import { batches as sliceBatches } from '../../shared/src/util/concurrency.js';
import type { DocumentRecord, EmbeddedChunk } from '../../shared/src/vectorstores/types.js';
import { MAX_MESSAGE_BYTES } from './queue.js';
import type { Runtime } from './runtime.js';

/** Texts per embedding call (the batch format's own limit, repeated here as the embed step's contract). */
export const EMBED_CALL_TEXTS = 1024;

/** A document's ingestion status, kept in the artifacts store. */
export interface DocumentStatusRecord {
  documentId: string;
  status: 'pending' | 'indexed' | 'failed';
  contentHash?: string;
  /** Object key the document came from (differs from documentId for jsonl records). */
  sourceKey: string;
  chunkCount?: number;
  updatedAt: string;
  error?: string;
}

/** Encodes a document key as one key segment (document keys contain `/`). */
export function documentSegment(documentId: string): string {
  const s = encodeURIComponent(documentId);
  return s === '.' || s === '..' ? s.replaceAll('.', '%2E') : s;
}

/** Key of a document's status object. */
export function statusKey(collection: string, documentId: string): string {
  return `status/${collection}/${documentSegment(documentId)}.json`;
}

/** Reads a document's status, or undefined. */
export async function readStatus(
  store: ObjectStore,
  collection: string,
  documentId: string,
): Promise<DocumentStatusRecord | undefined> {
  try {
    return await getJson<DocumentStatusRecord>(store, statusKey(collection, documentId));
  } catch (error) {
    if (error instanceof NotFoundError) return undefined;
    throw error;
  }
}

async function writeStatus(
  store: ObjectStore,
  collection: string,
  status: DocumentStatusRecord,
): Promise<void> {
  await putJson(store, statusKey(collection, status.documentId), status);
}

/** The message the ingest step sends to the chunk queue. */
export const ChunkRequestSchema = z.object({
  collection: z.string().min(1),
  embeddingModel: z.string().min(1),
  chunking: ChunkingOptionsSchema,
  documentId: z.string().min(1),
  contentHash: z.string().min(1),
  sourceKey: z.string().min(1),
  /** The parsed document, when it fits in a message. */
  document: z.unknown().optional(),
  /** Else the key of the parsed document in the artifacts store. */
  documentKey: z.string().optional(),
});
/** A parsed chunk request. */
export type ChunkRequest = z.infer<typeof ChunkRequestSchema>;

/** The message the chunk step sends to the embed queue. */
export const EmbedMessageSchema = z.object({ batchKey: z.string().min(1) });

/** What happened to one document of an ingested object. */
export interface IngestOutcome {
  documentId: string;
  status: 'queued' | 'unchanged' | 'failed' | 'removed' | 'missing';
  chunksDeleted?: number;
  error?: string;
}

/**
 * Handles an ObjectCreated notification: parses the object, skips documents whose content hash and indexing
 * settings are already stored, and sends the others to the chunk queue (large documents as an object key).
 * Broken files are recorded as `failed` and not retried (a retry cannot fix them).
 */
export async function ingestObject(rt: Runtime, sourceKey: string): Promise<IngestOutcome[]> {
  const { collection, chunking, embeddingModel } = rt.config;
  let bytes: Uint8Array;
  try {
    bytes = await rt.documents.get(sourceKey);
  } catch (error) {
    // Deleted again before we got to it: the ObjectRemoved notification handles the rest.
    if (error instanceof NotFoundError) return [{ documentId: sourceKey, status: 'missing' }];
    throw error;
  }
  const loaded = await loadBytes(bytes, sourceKey);
  const now = new Date().toISOString();
  const outcomes: IngestOutcome[] = [];
  for (const f of loaded.failures) {
    await writeStatus(rt.objectStore, collection, {
      documentId: f.key,
      status: 'failed',
      sourceKey,
      updatedAt: now,
      error: f.message,
    });
    outcomes.push({ documentId: f.key, status: 'failed', error: f.message });
  }
  if (loaded.documents.length === 0) return outcomes;
  const embedder = await rt.embedder(embeddingModel);
  const store = await rt.openStore(collection, embedder, { createIfMissing: true });
  const known = await store.getDocuments(loaded.documents.map((d) => d.key));
  const key = indexingKey(chunking);
  const requests: ChunkRequest[] = [];
  for (const doc of loaded.documents) {
    const existing = known.get(doc.key);
    if (existing?.contentHash === doc.contentHash && existing.metadata?.indexing === key) {
      outcomes.push({ documentId: doc.key, status: 'unchanged' });
      continue;
    }
    const request: ChunkRequest = {
      collection,
      embeddingModel,
      chunking,
      documentId: doc.key,
      contentHash: doc.contentHash,
      sourceKey,
    };
    const inline = JSON.stringify({ ...request, document: doc });
    if (Buffer.byteLength(inline, 'utf8') <= MAX_MESSAGE_BYTES - 1024) request.document = doc;
    else {
      request.documentKey = `documents/${collection}/${documentSegment(doc.key)}/${doc.contentHash}.json`;
      await putJson(rt.objectStore, request.documentKey, doc);
    }
    await writeStatus(rt.objectStore, collection, {
      documentId: doc.key,
      status: 'pending',
      contentHash: doc.contentHash,
      sourceKey,
      updatedAt: now,
    });
    requests.push(request);
    outcomes.push({ documentId: doc.key, status: 'queued' });
  }
  if (requests.length > 0) await rt.queue('chunk').send(requests);
  return outcomes;
}

/**
 * Removes a document's chunks, record and status (an ObjectRemoved notification, or DELETE /documents/{id}).
 * Returns the number of chunks deleted; removing an unknown document is not an error.
 */
export async function removeDocument(rt: Runtime, documentId: string): Promise<number> {
  const { collection } = rt.config;
  const embedder = await rt.embedder();
  let deleted = 0;
  try {
    const store = await rt.openStore(collection, embedder);
    deleted = await store.deleteByDocument(documentId);
  } catch (error) {
    // No collection yet: nothing to delete.
    if (!(error instanceof NotFoundError)) throw error;
  }
  await rt.objectStore.delete(statusKey(collection, documentId));
  return deleted;
}

/** The per-document manifest the chunk step writes before its batches. */
interface BatchManifest {
  documentId: string;
  contentHash: string;
  collection: string;
  embeddingModel: string;
  total: number;
  record: DocumentRecord;
  keepIds: string[];
}

/** Prefix of a document version's batches. */
export function batchPrefix(collection: string, documentId: string, contentHash: string): string {
  return `batches/${collection}/${documentSegment(documentId)}/${contentHash}`;
}

/**
 * Chunks one document and sends its batches to the embed queue. A request for a version that a newer upload
 * has superseded is dropped.
 * @returns the batch keys written (empty when superseded or when the document has no chunks).
 */
export async function chunkRequest(rt: Runtime, request: ChunkRequest): Promise<string[]> {
  const status = await readStatus(rt.objectStore, request.collection, request.documentId);
  if (status?.contentHash !== undefined && status.contentHash !== request.contentHash) return [];
  const doc =
    (request.document as LoadedDocument | undefined) ??
    (request.documentKey
      ? await getJson<LoadedDocument>(rt.objectStore, request.documentKey)
      : undefined);
  if (!doc || typeof doc.text !== 'string' || !Array.isArray(doc.blocks)) {
    throw new ValidationError(`chunk request for ${request.documentId} carries no document`);
  }
  const chunking = request.chunking as ChunkingOptions;
  const chunks = createChunker(chunking).chunk(doc);
  const record: DocumentRecord = {
    documentId: doc.key,
    contentHash: doc.contentHash,
    chunkCount: chunks.length,
    updatedAt: new Date().toISOString(),
    metadata: {
      indexing: indexingKey(chunking),
      format: doc.format,
      source_key: request.sourceKey,
      ...(doc.title && { title: doc.title }),
    },
  };
  const prefix = batchPrefix(request.collection, doc.key, doc.contentHash);
  const manifestKey = `${prefix}/manifest.json`;
  const keepIds = chunks.map((c) => c.id);
  if (chunks.length === 0) {
    const embedder = await rt.embedder(request.embeddingModel);
    const store = await rt.openStore(request.collection, embedder, { createIfMissing: true });
    await store.commitDocuments([{ record, keepIds }]);
    await markIndexed(rt, request.collection, record, request.sourceKey);
    return [];
  }
  const keys = await writeChunkBatches(
    rt.objectStore,
    prefix,
    {
      collection: request.collection,
      embeddingModel: request.embeddingModel,
      chunking,
      documentId: doc.key,
      contentHash: doc.contentHash,
      manifestKey,
    },
    chunks,
  );
  const manifest: BatchManifest = {
    documentId: doc.key,
    contentHash: doc.contentHash,
    collection: request.collection,
    embeddingModel: request.embeddingModel,
    total: keys.length,
    record,
    keepIds,
  };
  await putJson(rt.objectStore, manifestKey, manifest);
  await rt.queue('embed').send(keys.map((batchKey) => ({ batchKey })));
  return keys;
}

async function markIndexed(
  rt: Runtime,
  collection: string,
  record: DocumentRecord,
  sourceKey: string,
): Promise<void> {
  await writeStatus(rt.objectStore, collection, {
    documentId: record.documentId,
    status: 'indexed',
    contentHash: record.contentHash,
    sourceKey,
    chunkCount: record.chunkCount,
    updatedAt: new Date().toISOString(),
  });
}

/** Result of {@link embedBatch}. */
export interface EmbedBatchResult {
  batchKey: string;
  collection: string;
  chunks: number;
  /** Whether this call committed the document record (its last pending batch). */
  committed: boolean;
}

/**
 * Embeds one batch ({@link EMBED_CALL_TEXTS} texts per call) and upserts it (idempotent by chunk id). In the
 * knowledge-base flow it then marks the batch done and, when no batch of the document is pending, commits the
 * document: removes chunks of the previous version and writes the record, unless a newer version superseded it.
 * @throws {ValidationError} when `expectedCollection` differs from the batch's collection.
 */
export async function embedBatch(
  rt: Runtime,
  batchKey: string,
  expectedCollection?: string,
): Promise<EmbedBatchResult> {
  const batch = await readChunkBatch(rt.objectStore, batchKey);
  if (expectedCollection !== undefined && expectedCollection !== batch.collection) {
    throw new ValidationError(
      `batch ${batchKey} belongs to ${batch.collection}, not ${expectedCollection}`,
    );
  }
  const embedder = await rt.embedder(batch.embeddingModel);
  const store = await rt.openStore(batch.collection, embedder, { createIfMissing: true });
  const records: EmbeddedChunk[] = [];
  for (const group of sliceBatches(batch.chunks, EMBED_CALL_TEXTS)) {
    const vectors = await embedder.embedDocuments(group.map((c) => c.text));
    group.forEach((chunk, i) => {
      records.push({ chunk, vector: vectors[i] as number[] });
    });
  }
  await store.upsert(records);
  if (batch.commit) await store.commitDocuments([batch.commit]);
  let committed = false;
  if (batch.manifestKey) {
    const prefix = batch.manifestKey.slice(0, batch.manifestKey.lastIndexOf('/'));
    await rt.objectStore.put(`${prefix}/done/${batch.index}`, '');
    const done = (await rt.objectStore.list(`${prefix}/done/`)).length;
    if (done >= batch.total) {
      const manifest = await getJson<BatchManifest>(rt.objectStore, batch.manifestKey);
      const status = await readStatus(rt.objectStore, manifest.collection, manifest.documentId);
      if (status?.contentHash === undefined || status.contentHash === manifest.contentHash) {
        await store.commitDocuments([{ record: manifest.record, keepIds: manifest.keepIds }]);
        await markIndexed(
          rt,
          manifest.collection,
          manifest.record,
          status?.sourceKey ?? String(manifest.record.metadata?.source_key ?? ''),
        );
        committed = true;
      }
    }
  }
  return { batchKey, collection: batch.collection, chunks: records.length, committed };
}
