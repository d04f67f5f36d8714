/**
 * Document management: GET /documents (paged), GET /documents/{id}, DELETE /documents/{id}, POST /uploads
 * (pre-signed PUT URL), GET /stats, GET /health. The document id in the path is the URL-encoded document key.
 */
import {
  type DocumentView,
  ListDocumentsQuery,
  parseWith,
  UploadRequest,
} from '../../shared/src/api/schemas.js';
import { detectFormat } from '../../shared/src/documents/load.js';
import { NotFoundError, ValidationError } from '../../shared/src/errors.js';
import {
  type DocumentStatusRecord,
  type OPEN_STATUSES,
  readStatus,
  removeDocument,
  statusMarkerPrefix,
} from '../../shared/src/ingest/knowledge-base.js';
import { checkObjectKey } from '../../shared/src/ports/object-store.js';
import { mapLimit } from '../../shared/src/util/concurrency.js';
import type { DocumentRecord, VectorStore } from '../../shared/src/vectorstores/types.js';
import { type ApiEvent, httpHandler, jsonResponse, pathParameter } from '../_shared/http.js';
import { openReader, readerRuntime } from '../_shared/query.js';
import { lazyRuntime, type Runtime } from '../_shared/runtime.js';

/** Status objects read at once for a page of GET /documents. */
const STATUS_READS = 16;

/** Lifetime of an upload URL: long enough to start a large PUT, short enough to be useless if leaked. */
export const UPLOAD_URL_SECONDS = 300;

function view(
  record: DocumentRecord | undefined,
  status: DocumentStatusRecord | undefined,
): DocumentView {
  const documentKey = record?.documentId ?? status?.documentId ?? '';
  return {
    document_key: documentKey,
    status: status?.status ?? 'indexed',
    content_hash: status?.contentHash ?? record?.contentHash ?? null,
    chunk_count: record?.chunkCount ?? status?.chunkCount ?? 0,
    updated_at: status?.updatedAt ?? record?.updatedAt ?? null,
    ...(status?.error !== undefined && { error: status.error }),
    ...(record?.metadata && { metadata: record.metadata }),
  };
}

function encodeCursor(documentId: string): string {
  return Buffer.from(documentId, 'utf8').toString('base64url');
}

function decodeCursor(cursor: string): string {
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  if (encodeCursor(text) !== cursor.replace(/=+$/, '')) throw new ValidationError('invalid cursor');
  return text;
}

/** One page of the collection's records (`limit` after `after`), or none when it does not exist yet. */
async function listRecords(
  rt: Runtime,
  limit: number,
  after: string | undefined,
): Promise<DocumentRecord[]> {
  try {
    const { store } = await openReader(rt);
    return await store.listDocuments({ limit, ...(after !== undefined && { after }) });
  } catch (error) {
    if (error instanceof NotFoundError) return [];
    throw error;
  }
}

/** Ids of the documents whose status is `status`, from their markers (one list, no object read). */
async function openIds(rt: Runtime, status: (typeof OPEN_STATUSES)[number]): Promise<string[]> {
  const prefix = statusMarkerPrefix(rt.config.collection, status);
  const keys = await rt.objectStore.list(prefix);
  return keys.map((key) => {
    const segment = key.slice(prefix.length);
    try {
      return decodeURIComponent(segment);
    } catch {
      return segment;
    }
  });
}

/** Ids looked up per `getDocuments` call when counting the open documents that also have a record. */
const RECORD_BATCH = 1000;

/**
 * GET /stats: the store's SQL (or Milvus count) aggregates, and counts by status from the pending and failed
 * markers — never one read per document. Indexed: the documents with a record, less those a newer upload made
 * pending or whose newer version failed.
 */
async function statsOf(rt: Runtime) {
  let stats: {
    documents: number;
    chunks: number;
    dimension: number | null;
    model: string | null;
    sizeBytes: number | null;
  } = { documents: 0, chunks: 0, dimension: null, model: null, sizeBytes: null };
  let store: VectorStore | undefined;
  try {
    store = (await openReader(rt)).store;
    const s = await store.stats();
    stats = {
      documents: s.documents,
      chunks: s.chunks,
      dimension: s.dimension,
      model: s.embeddingModel,
      sizeBytes: s.sizeBytes ?? null,
    };
  } catch (error) {
    if (!(error instanceof NotFoundError)) throw error;
  }
  const pending = await openIds(rt, 'pending');
  const failed = await openIds(rt, 'failed');
  const open = [...new Set([...pending, ...failed])];
  let openWithRecord = 0;
  if (store) {
    for (let i = 0; i < open.length; i += RECORD_BATCH) {
      openWithRecord += (await store.getDocuments(open.slice(i, i + RECORD_BATCH))).size;
    }
  }
  return {
    collection: rt.config.collection,
    store: rt.config.store,
    documents: stats.documents,
    chunks: stats.chunks,
    dimension: stats.dimension,
    embedding_model: stats.model,
    size_bytes: stats.sizeBytes,
    by_status: {
      pending: pending.length,
      indexed: Math.max(0, stats.documents - openWithRecord),
      failed: failed.length,
    },
  };
}

async function getRecord(rt: Runtime, id: string): Promise<DocumentRecord | undefined> {
  try {
    const { store } = await openReader(rt);
    return await store.getDocument(id);
  } catch (error) {
    if (error instanceof NotFoundError) return undefined;
    throw error;
  }
}

/** Validates an upload key: a safe object key of a supported document type. */
export function checkUploadKey(key: string): string {
  checkObjectKey(key);
  if (key.split('/').some((part) => part.startsWith('.'))) {
    throw new ValidationError(`upload key "${key}" has a hidden segment`);
  }
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is rejected
  if (/[\u0000-\u001f\u007f]/.test(key)) {
    throw new ValidationError('upload key contains control characters');
  }
  if (!detectFormat(key)) throw new ValidationError(`upload key "${key}" is not a supported type`);
  return key;
}

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  txt: 'text/plain',
  md: 'text/markdown',
  html: 'text/html',
  pdf: 'application/pdf',
  docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  docling: 'application/json',
  jsonl: 'application/x-ndjson',
};

async function route(rt: Runtime, event: ApiEvent) {
  const method = event.httpMethod;
  const resource = event.resource ?? event.path;
  if (method === 'GET' && resource === '/health') {
    return jsonResponse(200, {
      status: 'ok',
      collection: rt.config.collection,
      store: rt.config.store,
    });
  }
  if (method === 'GET' && resource === '/documents') {
    const q = parseWith(ListDocumentsQuery, event.queryStringParameters ?? {}, 'query string');
    const after = q.cursor === undefined ? undefined : decodeCursor(q.cursor);
    // One more than the page tells whether another page follows.
    const records = await listRecords(rt, q.limit + 1, after);
    const page = records.slice(0, q.limit);
    const statuses = await mapLimit(page, STATUS_READS, (r) =>
      readStatus(rt.objectStore, rt.config.collection, r.documentId),
    );
    const last = page[page.length - 1];
    return jsonResponse(200, {
      documents: page.map((r, i) => view(r, statuses[i])),
      next_cursor: records.length > q.limit && last ? encodeCursor(last.documentId) : null,
    });
  }
  if (resource === '/documents/{id}' && (method === 'GET' || method === 'DELETE')) {
    const id = pathParameter(event, 'id');
    const [record, status] = await Promise.all([
      getRecord(rt, id),
      readStatus(rt.objectStore, rt.config.collection, id),
    ]);
    if (method === 'GET') {
      if (!record && !status) throw new NotFoundError(`document "${id}" not found`);
      return jsonResponse(200, view(record, status));
    }
    const sourceKey = status?.sourceKey ?? String(record?.metadata?.source_key ?? id);
    const objectExists = await rt.documents.exists(sourceKey).catch(() => false);
    if (!record && !status && !objectExists) throw new NotFoundError(`document "${id}" not found`);
    if (objectExists) await rt.documents.delete(sourceKey);
    // The collection's own embedding model opens it (not necessarily the configured one).
    const reader = await openReader(rt).catch((error: unknown) => {
      if (error instanceof NotFoundError) return undefined;
      throw error;
    });
    const chunksDeleted = await removeDocument(reader ? readerRuntime(rt, reader.modelId) : rt, id);
    return jsonResponse(200, { document_key: id, deleted: true, chunks_deleted: chunksDeleted });
  }
  if (method === 'POST' && resource === '/uploads') {
    const body = parseWith(UploadRequest, event.body, 'request body');
    const key = checkUploadKey(body.key);
    if (!rt.presignUpload) throw new ValidationError('uploads are not available in this runtime');
    const contentType =
      body.content_type ?? CONTENT_TYPES[detectFormat(key) ?? ''] ?? 'application/octet-stream';
    const url = await rt.presignUpload(key, contentType, UPLOAD_URL_SECONDS);
    return jsonResponse(200, {
      key,
      url,
      method: 'PUT',
      headers: { 'content-type': contentType },
      expires_in: UPLOAD_URL_SECONDS,
    });
  }
  if (method === 'GET' && resource === '/stats') return jsonResponse(200, await statsOf(rt));
  throw new NotFoundError(`no route ${method} ${event.path}`);
}

/**
 * Builds the documents handler (all routes above); `deps` replaces parts of the runtime.
 * @example export const handler = createDocumentsHandler();
 */
export function createDocumentsHandler(deps?: Partial<Runtime>) {
  const runtime = lazyRuntime(deps);
  return httpHandler('documents', (event) => route(runtime(), event));
}

/** Lambda entry point. */
export const handler = createDocumentsHandler();
