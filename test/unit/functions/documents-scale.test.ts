import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLocalRuntime, type LocalRuntime } from '../../../functions/_shared/runtime.js';
import { createDocumentsHandler } from '../../../functions/documents/handler.js';
import { createEmbedder } from '../../../shared/src/embeddings/factory.js';
import {
  documentSegment,
  statusKey,
  statusMarkerPrefix,
} from '../../../shared/src/ingest/knowledge-base.js';
import { MemoryObjectStore, putJson } from '../../../shared/src/ports/object-store.js';
import { auxiliaryName, quoteIdent } from '../../../shared/src/vectorstores/naming.js';
import { PgVectorStore } from '../../../shared/src/vectorstores/pgvector/pgvector-store.js';
import { openPglite, type SqlClient } from '../../../shared/src/vectorstores/sql-client.js';
import { context, getTestEvent } from './helpers.js';

type Handler = (event: APIGatewayProxyEvent, ctx: Context) => Promise<APIGatewayProxyResult>;
interface Page {
  documents: { document_key: string; status: string; chunk_count: number }[];
  next_cursor: string | null;
}

const COLLECTION = 'ai4rag_scale_test';
const DOCUMENTS = 100_000;
const id = (n: number): string => `doc-${String(n).padStart(6, '0')}`;

let client: SqlClient;
let store: PgVectorStore;
let rt: LocalRuntime;
let documents: Handler;
let objects: MemoryObjectStore;

function listEvent(query: Record<string, string> | null): APIGatewayProxyEvent {
  return {
    ...getTestEvent<APIGatewayProxyEvent>('apigw-list-documents'),
    queryStringParameters: query,
  };
}

beforeAll(async () => {
  // Prepare: 100k document records written in one statement, and a few pending and failed statuses
  client = await openPglite({});
  store = await PgVectorStore.create({
    client,
    embedder: await createEmbedder('local/feature-hash-v1-384'),
    collectionName: COLLECTION,
  });
  const docTable = quoteIdent(auxiliaryName(COLLECTION.toLowerCase(), 'd'));
  await client.query(
    `INSERT INTO ${docTable} (document_id, content_hash, chunk_count, updated_at)
     SELECT 'doc-' || lpad(g::text, 6, '0'), md5(g::text), 3, now() FROM generate_series(1, $1) g`,
    [DOCUMENTS],
  );
  objects = new MemoryObjectStore();
  const status = async (documentId: string, value: 'pending' | 'failed') => {
    await objects.put(statusMarkerPrefix(COLLECTION, value) + documentSegment(documentId), '');
    await putJson(objects, statusKey(COLLECTION, documentId), {
      documentId,
      status: value,
      sourceKey: documentId,
      updatedAt: new Date().toISOString(),
    });
  };
  await status(id(10), 'pending');
  await status(id(20), 'pending');
  await status('new/upload.md', 'pending');
  await status(id(30), 'failed');
  await status(id(40), 'failed');
  rt = createLocalRuntime({
    dataDir: mkdtempSync(join(tmpdir(), 'ai4rag-scale-')),
    inMemory: true,
    env: { AI4RAG_COLLECTION: COLLECTION },
  });
  documents = createDocumentsHandler({
    ...rt,
    objectStore: objects,
    openStore: async () => store,
  }) as unknown as Handler;
}, 120_000);

afterAll(async () => {
  await store?.close();
  await client?.close();
  await rt?.close();
});

describe('GET /stats at 100k documents', () => {
  it('counts documents in SQL and statuses from the pending and failed markers', async () => {
    // Prepare
    const event = listEvent(null);
    Object.assign(event, { resource: '/stats', path: '/stats' });

    // Act
    const out = await documents(event, context);

    // Assess
    expect(out.statusCode).toBe(200);
    expect(JSON.parse(out.body)).toMatchObject({
      collection: COLLECTION,
      documents: DOCUMENTS,
      chunks: 0,
      embedding_model: 'local/feature-hash-v1-384',
      by_status: { pending: 3, indexed: DOCUMENTS - 4, failed: 2 },
    });
  });
});

describe('GET /documents at 100k documents', () => {
  it('answers 100 documents by default, in id order', async () => {
    // Act
    const page = JSON.parse((await documents(listEvent(null), context)).body) as Page;

    // Assess
    expect(page.documents).toHaveLength(100);
    expect(page.documents[0]).toMatchObject({
      document_key: id(1),
      status: 'indexed',
      chunk_count: 3,
    });
    expect(page.documents[9]).toMatchObject({ document_key: id(10), status: 'pending' });
    expect(page.next_cursor).toEqual(expect.any(String));
  });

  it('pages through every document exactly once with the cursor', async () => {
    // Act
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const query: Record<string, string> = { limit: '1000', ...(cursor && { cursor }) };
      const out = await documents(listEvent(query), context);
      expect(out.statusCode).toBe(200);
      const page = JSON.parse(out.body) as Page;
      seen.push(...page.documents.map((d) => d.document_key));
      cursor = page.next_cursor;
      pages++;
    } while (cursor !== null && pages <= 101);

    // Assess
    expect(pages).toBe(100);
    expect(seen).toHaveLength(DOCUMENTS);
    expect(seen[0]).toBe(id(1));
    expect(seen[DOCUMENTS - 1]).toBe(id(DOCUMENTS));
    expect(seen.every((d, i) => i === 0 || (seen[i - 1] as string) < d)).toBe(true);
  });

  it.each([
    ['a page over 1000', { limit: '1001' }],
    ['a page of 0', { limit: '0' }],
    ['a cursor that is not one', { cursor: '***' }],
  ])('answers 400 for %s', async (_name, query) => {
    // Act
    const out = await documents(listEvent(query), context);

    // Assess
    expect(out.statusCode).toBe(400);
  });
});
