/**
 * The knowledge-base flow behind the ingest, chunk and embed-batch handlers: S3 object → parsed documents →
 * chunk batches → embedded and stored chunks → committed document record. Every step is idempotent, so SQS
 * redeliveries and retries are harmless. It sees its runtime through ports only ({@link KnowledgeBaseRuntime}:
 * object stores, work queues, embedders, vector stores), so it runs the same on AWS and on one machine.
 *
 * Integrity: each document version is one staged write of the vector store (version token from the document, its
 * content hash and the S3 `sequencer`), so its chunks stay invisible until the last batch commits it; the commit is a
 * compare-and-set against the stored record and tombstone (a late, older upload or one deleted meanwhile is
 * refused), and a redelivered message of a finished write does nothing. A poison document is marked `failed`
 * with its reason and costs only itself.
 *
 * Object layout in the artifacts store:
 * - `status/<collection>/<doc>.json` — ingestion status of a document (pending, indexed, failed);
 * - `status/.open/<collection>/<pending|failed>/<doc>` — an empty marker per pending or failed document;
 * - `documents/<collection>/<doc>/<hash>.json` — a parsed document too large to travel in a message;
 * - `batches/<collection>/<doc>/<hash>/<n>.json` — chunk batches, with `manifest.json` and `done/<n>` markers.
 */
import { createHash, randomBytes } from 'node:crypto';
import * as z from 'zod';
import { createChunker } from '../chunking/index.js';
import type { ChunkingCost } from '../chunking/semantic.js';
import type { ChunkingOptions } from '../chunking/types.js';
import { detectFormat, loadBytes } from '../documents/load.js';
import type { LoadedDocument, LoadResult } from '../documents/types.js';
import {
  isMetadataSidecar,
  METADATA_SIDECAR_SUFFIX,
  parseUserMetadata,
  withUserMetadata,
} from '../documents/user-metadata.js';
import type { Embedder } from '../embeddings/types.js';
import { NotFoundError, ValidationError } from '../errors.js';
import { getJson, type ObjectStore, putJson } from '../ports/object-store.js';
import { MAX_MESSAGE_BYTES, type WorkQueue } from '../ports/queue.js';
import { batches as sliceBatches } from '../util/concurrency.js';
import { VectorStoreError, WriteEndedError } from '../vectorstores/errors.js';
import { compareSequencers } from '../vectorstores/staged.js';
import type {
  DocumentRecord,
  EmbeddedChunk,
  IndexBuildResult,
  StatisticsRefresh,
  VectorStore,
  VersionedCommit,
} from '../vectorstores/types.js';
import { ChunkingOptionsSchema, readChunkBatch, writeChunkBatches } from './batches.js';
import { indexingKey } from './pipeline.js';

/**
 * What the knowledge-base flow needs from its runtime: the artifacts store (`objectStore`), the documents store,
 * the work queues, embedders, vector stores, and the knowledge base's settings. A handler's `Runtime` is one.
 */
export interface KnowledgeBaseRuntime {
  readonly objectStore: ObjectStore;
  readonly documents: ObjectStore;
  queue(name: 'ingest' | 'chunk' | 'embed'): WorkQueue;
  /** The configured embedding model's embedder, or `modelId`'s. */
  embedder(modelId?: string): Promise<Embedder>;
  openStore(
    collection: string,
    embedder: Embedder,
    options?: { createIfMissing?: boolean },
  ): Promise<VectorStore>;
  readonly config: { collection: string; embeddingModel: string; chunking: ChunkingOptions };
}

/** Texts per embedding call (the batch format's own limit, repeated here as the embed step's contract). */
export const EMBED_CALL_TEXTS = 1024;
/**
 * Lease of a document version's staged write: its embed messages may wait in the queue (retries, throttling) this
 * long after the last one was handled before the write is presumed abandoned and swept with its chunks — the
 * queues' retention (4 days), so only a redrive from a dead-letter queue can arrive later (and is then reported).
 */
export const KB_WRITE_LEASE_SECONDS = 4 * 24 * 3600;

/** What an S3 notification says of the event besides the key. */
export interface ObjectEvent {
  /** The object's `sequencer` (hexadecimal; orders the events of one key). */
  sequencer?: string;
}

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
  /** S3 `sequencer` of the event this status is about (a status is never overwritten by an older event's). */
  sequencer?: string;
}

/** Whether an event with `sequencer` is older than the one `status` records (then it must not overwrite it). */
function olderThan(
  sequencer: string | undefined,
  status: DocumentStatusRecord | undefined,
): boolean {
  return (
    sequencer !== undefined &&
    status?.sequencer !== undefined &&
    compareSequencers(sequencer, status.sequencer) < 0
  );
}

/**
 * The staged-write version of one document version: deterministic, so every batch of it (and every redelivery)
 * writes the same version; distinct per upload event.
 */
export function writeVersion(documentId: string, contentHash: string, sequencer?: string): string {
  const doc = createHash('sha256').update(documentId).digest('hex').slice(0, 16);
  const event = sequencer ?? `t${Date.now().toString(16)}${randomBytes(4).toString('hex')}`;
  return `kb.${doc}.${contentHash.slice(0, 16)}.${event}`;
}

/**
 * Whether an error is the input's fault (a retry cannot help): validation failures, and database data or
 * integrity errors (SQLSTATE classes 22 and 23) or limits (54). Everything else (connections, throttling, 5xx) is
 * retried by the queue.
 */
export function isPoisonError(error: unknown): boolean {
  if (error instanceof WriteEndedError) return false;
  if (error instanceof ValidationError) return true;
  if (error instanceof VectorStoreError) {
    const code = (error.cause as { code?: unknown } | undefined)?.code;
    return typeof code === 'string' && /^(22|23|54)/.test(code);
  }
  return false;
}

/** Encodes a document key as one key segment (document keys contain `/`). */
export function documentSegment(documentId: string): string {
  const s = encodeURIComponent(documentId);
  return s === '.' || s === '..' ? s.replaceAll('.', '%2E') : s;
}

/** Told of each document version marked `failed` (the ingestion functions count them as a metric). */
export type DocumentFailedListener = (documentId: string) => void;

const documentFailedListeners = new Set<DocumentFailedListener>();

/** Registers a listener of documents marked `failed` (once per function); returns its removal. */
export function onDocumentFailed(listener: DocumentFailedListener): () => void {
  documentFailedListeners.add(listener);
  return () => documentFailedListeners.delete(listener);
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

/** Statuses listed by a marker object besides the status itself (so counting them never lists every document). */
export const OPEN_STATUSES = ['pending', 'failed'] as const;

/** Prefix of the markers of the documents of one {@link OPEN_STATUSES} status (`.` keeps it off collection names). */
export function statusMarkerPrefix(
  collection: string,
  status: (typeof OPEN_STATUSES)[number],
): string {
  return `status/.open/${collection}/${status}/`;
}

async function writeStatus(
  store: ObjectStore,
  collection: string,
  status: DocumentStatusRecord,
): Promise<void> {
  await putJson(store, statusKey(collection, status.documentId), status);
  if (status.status === 'failed') {
    for (const listener of documentFailedListeners) listener(status.documentId);
  }
  await markStatus(store, collection, status.documentId, status.status);
}

/** Keeps one marker per pending or failed document (none for indexed or removed ones): GET /stats lists them. */
async function markStatus(
  store: ObjectStore,
  collection: string,
  documentId: string,
  status: DocumentStatusRecord['status'] | undefined,
): Promise<void> {
  for (const open of OPEN_STATUSES) {
    const key = statusMarkerPrefix(collection, open) + documentSegment(documentId);
    if (open === status) await store.put(key, '');
    else await store.delete(key);
  }
}

async function deleteStatus(
  store: ObjectStore,
  collection: string,
  documentId: string,
): Promise<void> {
  await store.delete(statusKey(collection, documentId));
  await markStatus(store, collection, documentId, undefined);
}

/** The message the ingest step sends to the chunk queue. */
export const ChunkRequestSchema = z.object({
  collection: z.string().min(1),
  embeddingModel: z.string().min(1),
  chunking: ChunkingOptionsSchema,
  documentId: z.string().min(1),
  contentHash: z.string().min(1),
  sourceKey: z.string().min(1),
  /** Staged-write version of this document version (see `writeVersion`). */
  version: z.string().min(1).optional(),
  /** S3 sequencer of the upload. */
  sequencer: z.string().optional(),
  /** When the object was read (ISO time). */
  readAt: z.string().optional(),
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
  /** `stale`: an event older than one already handled for this key (ignored). */
  status: 'queued' | 'unchanged' | 'failed' | 'removed' | 'missing' | 'stale';
  chunksDeleted?: number;
  error?: string;
}

/**
 * User metadata of an object's documents: its S3 user metadata (`x-amz-meta-*`, `-` in names read as `_`),
 * overridden by a sidecar object `<key>.metadata.json`, overridden by a jsonl record's own `metadata`. Invalid
 * metadata fails the object's documents (they would otherwise be found by the wrong filters).
 */
async function attachObjectMetadata(
  objects: ObjectStore,
  sourceKey: string,
  objectMetadata: Record<string, string>,
  loaded: LoadResult,
): Promise<LoadResult> {
  if (loaded.documents.length === 0) return loaded;
  const merged: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(objectMetadata)) {
    Object.defineProperty(merged, k.replace(/-/g, '_'), { value: v, enumerable: true });
  }
  let problem: string | undefined;
  const sidecarKey = `${sourceKey}${METADATA_SIDECAR_SUFFIX}`;
  // One GET (no HEAD first): a missing sidecar is the common case and costs one 404.
  try {
    const sidecar = parseUserMetadata(await getJson<unknown>(objects, sidecarKey));
    if (sidecar.ok) Object.assign(merged, sidecar.metadata);
    else problem = `metadata sidecar ${sidecarKey} is invalid (${sidecar.message})`;
  } catch (error) {
    if (!(error instanceof NotFoundError)) {
      problem = `metadata sidecar ${sidecarKey} is invalid (${(error as Error).message})`;
    }
  }
  const checked = problem === undefined ? parseUserMetadata(merged) : undefined;
  if (checked !== undefined && !checked.ok)
    problem = `object metadata is invalid (${checked.message})`;
  if (problem !== undefined || checked === undefined || !checked.ok) {
    const message = `${sourceKey}: ${problem}`;
    return {
      documents: [],
      failures: [
        ...loaded.failures,
        ...loaded.documents.map((d) => ({
          key: d.key,
          sourcePath: sourceKey,
          reason: 'invalid_record' as const,
          message,
        })),
      ],
      warnings: loaded.warnings ?? [],
    };
  }
  const metadata = checked.metadata;
  return { ...loaded, documents: loaded.documents.map((d) => withUserMetadata(d, metadata)) };
}

/** A chunking cost in the API's naming. */
function snakeCost(c: ChunkingCost) {
  return {
    groups: c.groups,
    embedded: c.embedded,
    cache_hits: c.cacheHits,
    tokens: c.tokens,
    ms: c.ms,
  };
}

/**
 * Handles an ObjectCreated notification: parses the object, skips documents whose content hash and indexing
 * settings are already stored, and sends the others to the chunk queue (large documents as an object key).
 * Broken files are recorded as `failed` and not retried (a retry cannot fix them).
 */
export async function ingestObject(
  rt: KnowledgeBaseRuntime,
  sourceKey: string,
  event: ObjectEvent = {},
): Promise<IngestOutcome[]> {
  const { collection, chunking, embeddingModel } = rt.config;
  const { sequencer } = event;
  if (olderThan(sequencer, await readStatus(rt.objectStore, collection, sourceKey))) {
    return [{ documentId: sourceKey, status: 'stale' }];
  }
  // Taken before the read: a deletion committed after it wins over this version.
  const readAt = new Date().toISOString();
  if (isMetadataSidecar(sourceKey)) {
    // A sidecar is metadata of its object, never a document: re-read that object (its own sequencer does not
    // apply: S3 sequencers compare only between events of one key).
    const main = sourceKey.slice(0, -METADATA_SIDECAR_SUFFIX.length);
    return (await rt.documents.exists(main)) ? ingestObject(rt, main) : [];
  }
  let bytes: Uint8Array;
  let objectMetadata: Record<string, string> = {};
  try {
    if (rt.documents.getWithMetadata) {
      const got = await rt.documents.getWithMetadata(sourceKey);
      bytes = got.body;
      objectMetadata = got.metadata;
    } else bytes = await rt.documents.get(sourceKey);
  } catch (error) {
    // Deleted again before we got to it: the ObjectRemoved notification handles the rest.
    if (error instanceof NotFoundError) return [{ documentId: sourceKey, status: 'missing' }];
    throw error;
  }
  const loaded = await attachObjectMetadata(
    rt.documents,
    sourceKey,
    objectMetadata,
    await loadBytes(bytes, sourceKey),
  );
  const now = new Date().toISOString();
  const outcomes: IngestOutcome[] = [];
  for (const f of loaded.failures) {
    await writeStatus(rt.objectStore, collection, {
      documentId: f.key,
      status: 'failed',
      sourceKey,
      updatedAt: now,
      error: f.message,
      ...(sequencer !== undefined && { sequencer }),
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
      version: writeVersion(doc.key, doc.contentHash, sequencer),
      readAt,
      ...(sequencer !== undefined && { sequencer }),
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
      ...(sequencer !== undefined && { sequencer }),
    });
    requests.push(request);
    outcomes.push({ documentId: doc.key, status: 'queued' });
  }
  if (requests.length > 0) await rt.queue('chunk').send(requests);
  return outcomes;
}

/**
 * Removes a document (an ObjectRemoved notification, or DELETE /documents/{id}): its chunks and record, leaving a
 * tombstone so that an ingest of it still in flight cannot bring it back, and its status. For a `.jsonl` object,
 * every document its records created goes too. An event older than the stored version (a late ObjectRemoved after
 * a re-upload) changes nothing. Returns the number of chunks deleted; removing an unknown document is not an error.
 */
export async function removeDocument(
  rt: KnowledgeBaseRuntime,
  documentId: string,
  event: ObjectEvent = {},
): Promise<number> {
  const { collection } = rt.config;
  const { sequencer } = event;
  const embedder = await rt.embedder();
  let store: VectorStore;
  try {
    store = await rt.openStore(collection, embedder);
  } catch (error) {
    // No collection yet: nothing to delete.
    if (!(error instanceof NotFoundError)) throw error;
    if (!olderThan(sequencer, await readStatus(rt.objectStore, collection, documentId))) {
      await deleteStatus(rt.objectStore, collection, documentId);
    }
    return 0;
  }
  const options = sequencer === undefined ? {} : { sequencer };
  const own = await store.deleteDocument(documentId, options);
  if (own < 0) return 0;
  let deleted = own;
  await deleteStatus(rt.objectStore, collection, documentId);
  // Documents created from this object's records (a .jsonl file): their records name it as source_key. Only a
  // .jsonl object has such records, so no other removal reads the document table.
  if (detectFormat(documentId) !== 'jsonl') return deleted;
  for (const record of await store.listDocuments()) {
    if (record.documentId === documentId || record.metadata?.source_key !== documentId) continue;
    const n = await store.deleteDocument(record.documentId, options);
    if (n < 0) continue;
    deleted += n;
    await deleteStatus(rt.objectStore, collection, record.documentId);
  }
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
  /** Staged-write version (absent in manifests written before staged writes). */
  version?: string;
  sequencer?: string;
  readAt?: string;
}

/** The commit a manifest stands for. */
function manifestCommit(m: BatchManifest): VersionedCommit {
  return {
    record: m.record,
    chunkIds: m.keepIds,
    ...(m.sequencer !== undefined && { sequencer: m.sequencer }),
    ...(m.readAt !== undefined && { readAt: m.readAt }),
  };
}

/** Marks a document version `failed` (unless a newer event owns its status). */
async function markFailed(
  rt: KnowledgeBaseRuntime,
  collection: string,
  documentId: string,
  sourceKey: string,
  error: string,
  version: { contentHash?: string; sequencer?: string },
): Promise<void> {
  const status = await readStatus(rt.objectStore, collection, documentId);
  if (olderThan(version.sequencer, status)) return;
  if (status?.contentHash !== undefined && version.contentHash !== undefined) {
    if (status.contentHash !== version.contentHash && version.sequencer === undefined) return;
  }
  await writeStatus(rt.objectStore, collection, {
    documentId,
    status: 'failed',
    sourceKey,
    updatedAt: new Date().toISOString(),
    error,
    ...(version.contentHash !== undefined && { contentHash: version.contentHash }),
    ...(version.sequencer !== undefined && { sequencer: version.sequencer }),
  });
}

/** Prefix of a document version's batches. */
export function batchPrefix(collection: string, documentId: string, contentHash: string): string {
  return `batches/${collection}/${documentSegment(documentId)}/${contentHash}`;
}

/**
 * Chunks one document version and sends its batches to the embed queue, after beginning its staged write. A
 * request for a version that a newer upload superseded, or whose write already finished (a redelivery), is
 * dropped; a document the chunker rejects is marked `failed`.
 * @returns the batch keys written (empty when dropped or when the document has no chunks).
 */
export async function chunkRequest(
  rt: KnowledgeBaseRuntime,
  request: ChunkRequest,
): Promise<string[]> {
  const status = await readStatus(rt.objectStore, request.collection, request.documentId);
  if (olderThan(request.sequencer, status)) return [];
  if (
    request.sequencer === undefined &&
    status?.contentHash !== undefined &&
    status.contentHash !== request.contentHash
  ) {
    return [];
  }
  const doc =
    (request.document as LoadedDocument | undefined) ??
    (request.documentKey
      ? await getJson<LoadedDocument>(rt.objectStore, request.documentKey)
      : undefined);
  if (!doc || typeof doc.text !== 'string' || !Array.isArray(doc.blocks)) {
    throw new ValidationError(`chunk request for ${request.documentId} carries no document`);
  }
  const chunking = request.chunking as ChunkingOptions;
  const version =
    request.version ?? writeVersion(request.documentId, request.contentHash, request.sequencer);
  const embedder = await rt.embedder(request.embeddingModel);
  const store = await rt.openStore(request.collection, embedder, { createIfMissing: true });
  try {
    await store.beginWrite({ version, leaseSeconds: KB_WRITE_LEASE_SECONDS });
  } catch (error) {
    if (error instanceof WriteEndedError) return [];
    throw error;
  }
  let chunks: Awaited<ReturnType<ReturnType<typeof createChunker>['chunk']>>;
  let chunker: ReturnType<typeof createChunker> | undefined;
  try {
    chunker = createChunker(chunking, { embedder });
    chunks = await chunker.chunk(doc);
  } catch (error) {
    await store.abortWrite(version);
    // Semantic chunking calls the embedder: its outages are retried like the embed step's, not a broken document.
    if (chunking.method === 'semantic' && !(error instanceof ValidationError)) throw error;
    await markFailed(rt, request.collection, doc.key, request.sourceKey, (error as Error).message, {
      contentHash: request.contentHash,
      ...(request.sequencer !== undefined && { sequencer: request.sequencer }),
    });
    return [];
  }
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
      // What semantic chunking cost for this document (sentence groups embedded, cache hits, tokens, ms).
      ...(chunking.method === 'semantic' && { chunking_cost: snakeCost(chunker.cost()) }),
    },
  };
  // One folder per write: two uploads of the same content in flight never count each other's batches.
  const prefix = `${batchPrefix(request.collection, doc.key, doc.contentHash)}/${createHash(
    'sha256',
  )
    .update(version)
    .digest('hex')
    .slice(0, 16)}`;
  const manifestKey = `${prefix}/manifest.json`;
  const manifest: BatchManifest = {
    documentId: doc.key,
    contentHash: doc.contentHash,
    collection: request.collection,
    embeddingModel: request.embeddingModel,
    total: 0,
    record,
    keepIds: chunks.map((c) => c.id),
    version,
    ...(request.sequencer !== undefined && { sequencer: request.sequencer }),
    ...(request.readAt !== undefined && { readAt: request.readAt }),
  };
  if (chunks.length === 0) {
    await finishDocument(rt, store, manifest, request.sourceKey);
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
      version,
    },
    chunks,
  );
  manifest.total = keys.length;
  await putJson(rt.objectStore, manifestKey, manifest);
  await rt.queue('embed').send(keys.map((batchKey) => ({ batchKey })));
  return keys;
}

async function markIndexed(
  rt: KnowledgeBaseRuntime,
  collection: string,
  record: DocumentRecord,
  sourceKey: string,
  sequencer?: string,
): Promise<void> {
  if (olderThan(sequencer, await readStatus(rt.objectStore, collection, record.documentId))) return;
  await writeStatus(rt.objectStore, collection, {
    documentId: record.documentId,
    status: 'indexed',
    contentHash: record.contentHash,
    sourceKey,
    chunkCount: record.chunkCount,
    updatedAt: new Date().toISOString(),
    ...(sequencer !== undefined && { sequencer }),
  });
}

/**
 * Commits a document version whose batches are all stored, and records the outcome: `indexed`; nothing when a
 * newer upload or a deletion outranks it (that event owns the status), or when a concurrent last batch already
 * committed it; `failed` when its write lapsed or is incomplete. Returns whether this call committed it.
 */
async function finishDocument(
  rt: KnowledgeBaseRuntime,
  store: VectorStore,
  manifest: BatchManifest,
  sourceKey: string,
): Promise<boolean> {
  const version = manifest.version as string;
  const outcome = await store.finishWrite(version, [manifestCommit(manifest)]);
  if (outcome.committed.length === 1) {
    await markIndexed(rt, manifest.collection, manifest.record, sourceKey, manifest.sequencer);
    return true;
  }
  const refusal = outcome.refused[0];
  if (refusal === undefined || refusal.reason === 'superseded' || refusal.reason === 'deleted') {
    return false;
  }
  // Ended: committed already by the other last batch of a race, or swept after its lease lapsed.
  const stored = await store.getDocument(manifest.documentId);
  if (refusal.reason === 'expired' && stored?.version === version) return false;
  await markFailed(rt, manifest.collection, manifest.documentId, sourceKey, refusal.message, {
    contentHash: manifest.contentHash,
    ...(manifest.sequencer !== undefined && { sequencer: manifest.sequencer }),
  });
  return false;
}

/**
 * A message of a write that has ended: nothing to do when the version was committed (a redelivery); otherwise the
 * write was swept after its lease lapsed (its messages waited longer than {@link KB_WRITE_LEASE_SECONDS}, e.g. a
 * late DLQ redrive), so the document is marked `failed` saying so, instead of staying `pending`.
 */
async function reportEnded(
  rt: KnowledgeBaseRuntime,
  store: VectorStore,
  version: string,
  manifest: BatchManifest | undefined,
): Promise<void> {
  if (manifest === undefined) return;
  if ((await store.getDocument(manifest.documentId))?.version === version) return;
  const status = await readStatus(rt.objectStore, manifest.collection, manifest.documentId);
  if (status?.status !== 'pending' || status.contentHash !== manifest.contentHash) return;
  await markFailed(
    rt,
    manifest.collection,
    manifest.documentId,
    String(manifest.record.metadata?.source_key ?? manifest.documentId),
    `${manifest.documentId}: its write lapsed before all its batches were stored (messages delayed past ` +
      `${KB_WRITE_LEASE_SECONDS / 3600} h); upload the object again to index it`,
    {
      contentHash: manifest.contentHash,
      ...(manifest.sequencer !== undefined && { sequencer: manifest.sequencer }),
    },
  );
}

/** Result of {@link embedBatch}. */
export interface EmbedBatchResult {
  batchKey: string;
  collection: string;
  chunks: number;
  /** Whether this call committed the document record (its last pending batch). */
  committed: boolean;
  /** Why nothing was stored: the write had ended (a redelivery), or the batch's document is poison (marked failed). */
  skipped?: 'ended' | 'poison';
  /** What the ANN index step after a knowledge-base commit did (see {@link ensureIndex}). */
  index?: IndexOutcome;
  /** What the statistics step after a knowledge-base commit did (see {@link refreshAfterCommit}). */
  statistics?: StatisticsOutcome;
}

/** The statistics step's outcome: the store's result, or why it failed (the next commit, or a search, does it). */
export type StatisticsOutcome = StatisticsRefresh | { error: string };

/**
 * Most rows the statistics step after one commit re-weights: the collections pgvector still scans exactly (its
 * default `annMinRows`), which have no HNSW index for the re-weighting's row updates to re-insert every row into.
 * Re-weighting takes about 1 s per 1,000 such rows on PGlite (the first query after `npm run bench -- --serve`'s
 * 1,000 uploads, before this step existed), so one commit spends at most about 20 s on it. A larger collection's
 * re-weighting is left to `ai4rag index` or, failing that, the next keyword search (as before).
 */
export const COMMIT_REWEIGHT_ROWS = 20_000;

/**
 * Brings the collection's keyword statistics up to date after a commit (pgvector: folds the BM25 statistics log and,
 * once the average chunk length drifted past the tolerance, re-weights every row), so that the next search does not
 * do it inside a request: an upload service's first documents fix the average length from a few texts, and the next
 * uploads move it (1,000 uploads of 80–140 words each: the first search after them took 1.0 s, re-weighting).
 * A failure fails nothing: the document is committed and a search still re-weights what it finds stale.
 */
export async function refreshAfterCommit(
  store: VectorStore,
): Promise<StatisticsOutcome | undefined> {
  if (store.refreshStatistics === undefined) return undefined;
  try {
    return await store.refreshStatistics({ maxRows: COMMIT_REWEIGHT_ROWS });
  } catch (error) {
    return { error: (error as Error).message };
  }
}

/** The ANN index step's outcome: the store's result, or why the attempt failed (retried by the next commit). */
export type IndexOutcome = IndexBuildResult | { built: false; error: string };

/**
 * Most rows the index step after one commit puts into HNSW graphs: about 25 s of building (an 80,000-row segment took
 * 21.6 s with 256 MB of `maintenance_work_mem`, `npm run bench -- --scale`), well inside embed-batch's 5 minutes.
 * Newer rows wait for the next commit; a larger merge or conversion is left to `ai4rag index`.
 */
export const COMMIT_INDEX_ROWS = 100_000;

/**
 * Builds the collection's ANN index once it is large enough, here at ingest time and never inside a search: the
 * store decides (its threshold; `exists` costs two small queries once built), builds concurrently on a server with
 * a lock timeout and one builder per collection (a concurrent commit gets `being built by another session`). A
 * failure (lock timeout, the function's time running out) fails nothing: the document is committed, searches scan
 * exactly meanwhile, and the next commit tries again (an invalid leftover index is dropped first). A collection
 * grown past the threshold before this existed, or far beyond what one invocation can build, is indexed by
 * `ai4rag index`.
 */
export async function ensureIndex(store: VectorStore): Promise<IndexOutcome | undefined> {
  if (store.buildIndex === undefined) return undefined;
  try {
    return await store.buildIndex({ maxRows: COMMIT_INDEX_ROWS });
  } catch (error) {
    return { built: false, error: (error as Error).message };
  }
}

/**
 * Most rows the scheduled index step ({@link scheduledIndex}) puts into graphs in one run. A commit's own step
 * ({@link COMMIT_INDEX_ROWS}) cannot merge segments of more than that in all, so with commits alone a growing
 * collection's segments multiply (13 at 1M rows, 14 at 2M, growing by 20,000 rows a build: `npm run bench --
 * --segments`), and every search probes each. This budget lets the step take up the merges the commits left, within
 * the function's 15 minutes: past the default 256 MB of build memory, `ai4rag index` put 514,941 rows into graphs in
 * 877 s (about 600 rows/s) at 1.31M chunks on this project's 2-core machine (README, "Segments as a binary counter").
 * Larger merges are `ai4rag index`'s, with `--memory`.
 */
export const SCHEDULED_INDEX_ROWS = 300_000;

/**
 * The scheduled index step of a deployment (the IndexFunction, hourly, pgvector only): brings the collection's ANN
 * index up to date within {@link SCHEDULED_INDEX_ROWS} rows, the merges that the commits' budget leaves behind
 * included, and folds its fresh keyword postings when due. Like {@link ensureIndex} it never builds inside a search,
 * runs concurrently with searches and writes, one builder per database, and a failure fails nothing (the next run
 * tries again, dropping what an interrupted build left). A collection not created yet, or a store that builds no
 * index (Milvus), is left alone.
 * @returns the store's result, why the attempt failed, or undefined when there was nothing to index.
 */
export async function scheduledIndex(
  rt: KnowledgeBaseRuntime,
  collection: string,
  embeddingModel?: string,
): Promise<IndexOutcome | undefined> {
  let store: VectorStore;
  try {
    store = await rt.openStore(collection, await rt.embedder(embeddingModel));
  } catch (error) {
    if (error instanceof NotFoundError) return undefined;
    throw error;
  }
  if (store.buildIndex === undefined) return undefined;
  try {
    return await store.buildIndex({ maxRows: SCHEDULED_INDEX_ROWS, pack: true });
  } catch (error) {
    return { built: false, error: (error as Error).message };
  }
}

/**
 * Embeds one batch ({@link EMBED_CALL_TEXTS} texts per call) and stages it under its document version's write
 * (idempotent by chunk id). In the knowledge-base flow it then marks the batch done and, when no batch of the
 * document is pending, commits the version (compare-and-set: an older upload or a deleted document is refused).
 * A redelivery after the write ended does nothing; a batch whose content is rejected (poison) ends the write and
 * marks the document `failed` instead of being retried.
 * @throws {ValidationError} when `expectedCollection` differs from the batch's collection.
 */
export async function embedBatch(
  rt: KnowledgeBaseRuntime,
  batchKey: string,
  expectedCollection?: string,
): Promise<EmbedBatchResult> {
  const batch = await readChunkBatch(rt.objectStore, batchKey);
  if (expectedCollection !== undefined && expectedCollection !== batch.collection) {
    throw new ValidationError(
      `batch ${batchKey} belongs to ${batch.collection}, not ${expectedCollection}`,
    );
  }
  const base = { batchKey, collection: batch.collection };
  const embedder = await rt.embedder(batch.embeddingModel);
  const store = await rt.openStore(batch.collection, embedder, { createIfMissing: true });
  const { version } = batch;
  const manifest =
    batch.manifestKey === undefined
      ? undefined
      : await getJson<BatchManifest>(rt.objectStore, batch.manifestKey);
  if (version !== undefined) {
    try {
      await store.beginWrite({ version, leaseSeconds: KB_WRITE_LEASE_SECONDS });
    } catch (error) {
      if (!(error instanceof WriteEndedError)) throw error;
      await reportEnded(rt, store, version, manifest);
      return { ...base, chunks: 0, committed: false, skipped: 'ended' };
    }
  }
  const records: EmbeddedChunk[] = [];
  try {
    for (const group of sliceBatches(batch.chunks, EMBED_CALL_TEXTS)) {
      const vectors = await embedder.embedDocuments(group.map((c) => c.text));
      group.forEach((chunk, i) => {
        records.push({ chunk, vector: vectors[i] as number[] });
      });
    }
    await store.upsert(records, version === undefined ? {} : { version });
  } catch (error) {
    if (error instanceof WriteEndedError) {
      await reportEnded(rt, store, version as string, manifest);
      return { ...base, chunks: 0, committed: false, skipped: 'ended' };
    }
    if (version === undefined || manifest === undefined || !isPoisonError(error)) throw error;
    await store.abortWrite(version);
    await markFailed(
      rt,
      manifest.collection,
      manifest.documentId,
      String(manifest.record.metadata?.source_key ?? manifest.documentId),
      (error as Error).message,
      {
        contentHash: manifest.contentHash,
        ...(manifest.sequencer !== undefined && { sequencer: manifest.sequencer }),
      },
    );
    return { ...base, chunks: 0, committed: false, skipped: 'poison' };
  }
  if (batch.commit) await store.commitDocuments([batch.commit]);
  let committed = false;
  if (batch.manifestKey && manifest) {
    const prefix = batch.manifestKey.slice(0, batch.manifestKey.lastIndexOf('/'));
    await rt.objectStore.put(`${prefix}/done/${batch.index}`, '');
    const done = (await rt.objectStore.list(`${prefix}/done/`)).length;
    if (done >= batch.total) {
      const sourceKey = String(manifest.record.metadata?.source_key ?? manifest.documentId);
      if (manifest.version !== undefined) {
        committed = await finishDocument(rt, store, manifest, sourceKey);
      } else {
        // A manifest written before staged writes: the direct commit it was queued with.
        const status = await readStatus(rt.objectStore, manifest.collection, manifest.documentId);
        if (status?.contentHash === undefined || status.contentHash === manifest.contentHash) {
          await store.commitDocuments([{ record: manifest.record, keepIds: manifest.keepIds }]);
          await markIndexed(rt, manifest.collection, manifest.record, sourceKey);
          committed = true;
        }
      }
    }
  }
  const kbCommit = committed && batch.manifestKey !== undefined;
  const statistics = kbCommit ? await refreshAfterCommit(store) : undefined;
  const index = kbCommit ? await ensureIndex(store) : undefined;
  return {
    ...base,
    chunks: records.length,
    committed,
    ...(statistics !== undefined && { statistics }),
    ...(index !== undefined && { index }),
  };
}
