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
import { checkObjectKey } from '../../shared/src/ports/object-store.js';
import { mapLimit } from '../../shared/src/util/concurrency.js';
import type { DocumentRecord } from '../../shared/src/vectorstores/types.js';
import { type ApiEvent, httpHandler, jsonResponse, pathParameter } from '../_shared/http.js';
import {
  type DocumentStatusRecord,
  readStatus,
  removeDocument,
} from '../_shared/knowledge-base.js';
import { openReader } from '../_shared/query.js';
import { lazyRuntime, type Runtime } from '../_shared/runtime.js';

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

/** Records of the collection, or none when it does not exist yet. */
async function listRecords(rt: Runtime): Promise<DocumentRecord[]> {
  try {
    const { store } = await openReader(rt);
    return await store.listDocuments();
  } catch (error) {
    if (error instanceof NotFoundError) return [];
    throw error;
  }
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
    const records = (await listRecords(rt))
      .filter((r) => after === undefined || r.documentId > after)
      .sort((a, b) => (a.documentId < b.documentId ? -1 : a.documentId > b.documentId ? 1 : 0));
    const page = records.slice(0, q.limit);
    const statuses = await mapLimit(page, 8, (r) =>
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
    const chunksDeleted = await removeDocument(rt, id);
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
  if (method === 'GET' && resource === '/stats') {
    let stats: {
      documents: number;
      chunks: number;
      dimension: number | null;
      model: string | null;
    } = { documents: 0, chunks: 0, dimension: null, model: null };
    try {
      const { store } = await openReader(rt);
      const s = await store.stats();
      stats = {
        documents: s.documents,
        chunks: s.chunks,
        dimension: s.dimension,
        model: s.embeddingModel,
      };
    } catch (error) {
      if (!(error instanceof NotFoundError)) throw error;
    }
    const prefix = `status/${rt.config.collection}/`;
    const keys = await rt.objectStore.list(prefix);
    const byStatus: Record<string, number> = { pending: 0, indexed: 0, failed: 0 };
    const statuses = await mapLimit(keys, 8, async (key) => {
      try {
        return JSON.parse(
          new TextDecoder().decode(await rt.objectStore.get(key)),
        ) as DocumentStatusRecord;
      } catch {
        return undefined;
      }
    });
    for (const s of statuses) if (s) byStatus[s.status] = (byStatus[s.status] ?? 0) + 1;
    return jsonResponse(200, {
      collection: rt.config.collection,
      store: rt.config.store,
      documents: stats.documents,
      chunks: stats.chunks,
      dimension: stats.dimension,
      embedding_model: stats.model,
      by_status: byStatus,
    });
  }
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
