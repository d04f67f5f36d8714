import { MilvusClient } from '@zilliz/milvus2-sdk-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MilvusVectorStore } from '../../../shared/src/vectorstores/milvus/milvus-store.js';
import { PgVectorStore } from '../../../shared/src/vectorstores/pgvector/pgvector-store.js';
import { openPglite, type SqlClient } from '../../../shared/src/vectorstores/sql-client.js';
import type { DocumentRecord, VectorStore } from '../../../shared/src/vectorstores/types.js';
import { type FakeMilvus, startFakeMilvus } from '../../support/fake-milvus/server.js';
import { createHashEmbedder } from './fake-embedder.js';

/** Ids that sort the same in byte order and in PGlite's default collation (C). */
const IDS = Array.from({ length: 25 }, (_, i) => `docs/${String(i).padStart(2, '0')}.md`);

function record(documentId: string): DocumentRecord {
  return {
    documentId,
    contentHash: `h-${documentId}`,
    chunkCount: 1,
    updatedAt: new Date(0).toISOString(),
  };
}

async function pages(store: VectorStore, limit: number): Promise<string[][]> {
  const out: string[][] = [];
  let after: string | undefined;
  for (;;) {
    const page = await store.listDocuments({ limit, ...(after !== undefined && { after }) });
    if (page.length === 0) return out;
    out.push(page.map((r) => r.documentId));
    after = page[page.length - 1]?.documentId;
  }
}

let fake: FakeMilvus;
let milvusClient: MilvusClient;
let pg: SqlClient;
const stores: [string, VectorStore][] = [];

beforeAll(async () => {
  fake = await startFakeMilvus();
  milvusClient = new MilvusClient({ address: fake.uri, logLevel: 'error' });
  await milvusClient.connectPromise;
  pg = await openPglite({});
  const embedder = createHashEmbedder();
  stores.push(
    [
      'pgvector',
      await PgVectorStore.create({ client: pg, embedder, collectionName: 'ai4rag_paging' }),
    ],
    [
      'milvus',
      await MilvusVectorStore.create({
        client: milvusClient,
        embedder,
        collectionName: 'ai4rag_paging',
      }),
    ],
  );
  // Shuffled writes, one deleted document (its tombstone is no record)
  for (const [, store] of stores) {
    for (const id of [...IDS].reverse()) await store.putDocument(record(id));
    await store.putDocument(record('docs/zz-deleted.md'));
    await store.deleteDocument('docs/zz-deleted.md');
  }
}, 60_000);

afterAll(async () => {
  for (const [, store] of stores) await store.close();
  await milvusClient?.closeConnection();
  await fake?.close();
  await pg?.close();
});

describe.each(['pgvector', 'milvus'])('listDocuments paging on %s', (name) => {
  const store = () => stores.find(([n]) => n === name)?.[1] as VectorStore;

  it('pages through every record once, in id order', async () => {
    // Act
    const got = await pages(store(), 10);

    // Assess
    expect(got.map((p) => p.length)).toEqual([10, 10, 5]);
    expect(got.flat()).toEqual(IDS);
  });

  it('lists everything without a limit, and after an id without one', async () => {
    // Act
    const all = await store().listDocuments();
    const tail = await store().listDocuments({ after: IDS[22] as string });

    // Assess
    expect(all.map((r) => r.documentId)).toEqual(IDS);
    expect(tail.map((r) => r.documentId)).toEqual(IDS.slice(23));
  });

  it.each([0, -1, 1.5, 10_001])('refuses a limit of %s', async (limit) => {
    await expect(store().listDocuments({ limit })).rejects.toThrow(/limit must be an integer/);
  });
});
