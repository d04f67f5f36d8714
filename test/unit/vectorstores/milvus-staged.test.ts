import { DataType, FunctionType, MilvusClient } from '@zilliz/milvus2-sdk-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AI4RAGChunk } from '../../../shared/src/chunking/types.js';
import { VectorStoreError, WriteEndedError } from '../../../shared/src/vectorstores/errors.js';
import { MilvusVectorStore } from '../../../shared/src/vectorstores/milvus/milvus-store.js';
import type { VectorStore } from '../../../shared/src/vectorstores/types.js';
import { type FakeMilvus, startFakeMilvus } from '../../support/fake-milvus/server.js';
import { makeChunk } from './contract.js';
import { createHashEmbedder } from './fake-embedder.js';
import { commitOf, versionChunks } from './staged-contract.js';

// biome-ignore lint/suspicious/noExplicitAny: SDK call arguments are passed through untouched
type Args = any[];

/**
 * A client that can "crash" the store: the n-th mutating call (upsert or delete) after arming throws before it
 * reaches the server, as if the process died there; `pause` holds matching calls until released.
 */
function faultyClient(client: MilvusClient) {
  const state = {
    failAt: 0,
    calls: 0,
    pause: undefined as
      | undefined
      | { match: (method: string, args: Args) => boolean; gate: Promise<void>; hit: () => void },
  };
  const proxy = new Proxy(client, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target);
      if (typeof value !== 'function') return value;
      if (prop !== 'upsert' && prop !== 'delete') return value.bind(target);
      return async (...args: Args) => {
        const p = state.pause;
        if (p?.match(String(prop), args)) {
          state.pause = undefined;
          p.hit();
          await p.gate;
        }
        if (state.failAt > 0) {
          state.calls += 1;
          if (state.calls === state.failAt)
            throw new Error(`injected crash before ${String(prop)}`);
        }
        return value.apply(target, args);
      };
    },
  });
  return { client: proxy as MilvusClient, state };
}

const byId = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
const ids = (chunks: readonly AI4RAGChunk[]) => chunks.map((c) => c.id).sort(byId);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function visible(store: VectorStore, documentId: string): Promise<string[]> {
  return (await store.getChunksBySequence(documentId, 0, 1_000_000)).map((h) => h.id).sort(byId);
}

/** Every read path agrees on one committed version per document (I1), and records match it (I2). */
async function assertConsistent(
  store: VectorStore,
  allowed: Record<string, string[][]>,
): Promise<Record<string, string[]>> {
  const seen: Record<string, string[]> = {};
  for (const [doc, options] of Object.entries(allowed)) {
    const got = await visible(store, doc);
    expect(options).toContainEqual(got);
    seen[doc] = got;
    const record = await store.getDocument(doc);
    expect(record?.chunkCount ?? 0).toBe(got.length);
  }
  const union = Object.values(seen).flat().sort(byId);
  const dense = await store.search('passage about proteins', { k: 50 });
  expect(dense.map((h) => h.id).sort(byId)).toEqual(union);
  const hybrid = await store.search('passage about proteins', {
    k: 50,
    searchMode: 'hybrid',
    rankerStrategy: 'rrf',
  });
  expect(hybrid.map((h) => h.id).sort(byId)).toEqual(union);
  const stats = await store.stats();
  expect(stats.chunks).toBe(union.length);
  expect(stats.documents).toBe((await store.listDocuments()).length);
  return seen;
}

let fake: FakeMilvus;
let client: MilvusClient;
let counter = 0;
beforeAll(async () => {
  fake = await startFakeMilvus();
  client = new MilvusClient({ address: fake.uri, logLevel: 'error' });
  await client.connectPromise;
});
afterAll(async () => {
  await client?.closeConnection();
  await fake?.close();
});

const open = async (c: MilvusClient = client, name?: string) => {
  counter += 1;
  return MilvusVectorStore.create({
    client: c,
    embedder: createHashEmbedder(),
    collectionName: name ?? `ai4rag_crash_${counter}`,
  });
};

describe('Milvus staged writes: crash points', () => {
  const old1 = versionChunks('d1', 'old', 3);
  const d2 = versionChunks('d2', 'old', 2);
  const new1 = [old1[0] as AI4RAGChunk, ...versionChunks('d1', 'new', 1)];
  const d3 = versionChunks('d3', 'new', 2);
  const d4 = versionChunks('d4', 'new', 2);

  it('finishWrite: a crash before any of its writes leaves one complete version per document, repairable', async () => {
    for (let failAt = 1; ; failAt++) {
      // Prepare: d1, d2 committed; v2 replaces d1, adds d3, stages d4 incompletely
      const faulty = faultyClient(client);
      const store = await open(faulty.client);
      const v1 = await store.beginWrite();
      await store.addChunks([...old1, ...d2], { version: v1 });
      await store.finishWrite(v1, [commitOf('d1', old1), commitOf('d2', d2)]);
      const v2 = await store.beginWrite({ leaseSeconds: 0.2 });
      await store.addChunks([...new1, ...d3, d4[0] as AI4RAGChunk], { version: v2 });
      faulty.state.failAt = failAt;
      // Act
      const finished = await store
        .finishWrite(v2, [commitOf('d1', new1), commitOf('d3', d3), commitOf('d4', d4)])
        .then(
          () => true,
          (error: unknown) => {
            expect(String((error as Error).cause ?? error)).toMatch(/injected crash/);
            return false;
          },
        );
      faulty.state.failAt = 0;
      // Assess: whatever the crash point, readers see complete versions only
      const allowed = {
        d1: [ids(old1), ids(new1)],
        d2: [ids(d2)],
        d3: [[], ids(d3)],
        d4: [[]],
      };
      const seen = await assertConsistent(store, allowed);
      // The lease lapses; repair leaves exactly what readers saw, and a clean store
      await sleep(250);
      const report = await store.checkIntegrity({ repair: true });
      if (finished) expect(report.clean).toBe(true);
      expect(await assertConsistent(store, allowed)).toEqual(seen);
      expect(await store.checkIntegrity()).toMatchObject({
        clean: true,
        orphanChunks: 0,
        mismatched: [],
        expiredWrites: [],
      });
      await store.drop();
      if (finished) {
        expect(seen).toEqual({ d1: ids(new1), d2: ids(d2), d3: ids(d3), d4: [] });
        expect(failAt).toBeGreaterThan(4);
        break;
      }
    }
  });

  it('deleteDocument: a crash between tombstone and chunk removal hides the document; repair removes its rows', async () => {
    for (let failAt = 1; ; failAt++) {
      // Prepare
      const faulty = faultyClient(client);
      const store = await open(faulty.client);
      const v1 = await store.beginWrite();
      await store.addChunks([...old1, ...d2], { version: v1 });
      await store.finishWrite(v1, [commitOf('d1', old1), commitOf('d2', d2)]);
      faulty.state.failAt = failAt;
      // Act
      const done = await store.deleteDocument('d1').then(
        () => true,
        () => false,
      );
      faulty.state.failAt = 0;
      // Assess
      const allowed = { d1: [ids(old1), []], d2: [ids(d2)] };
      const seen = await assertConsistent(store, allowed);
      await store.checkIntegrity({ repair: true });
      expect(await assertConsistent(store, allowed)).toEqual(seen);
      expect((await store.checkIntegrity()).clean).toBe(true);
      await store.drop();
      if (done) break;
    }
  });

  it('two finishers of one document racing: the last switch wins and the loser leaves nothing behind', async () => {
    // Prepare: A reads the records, then pauses before switching; B finishes meanwhile
    const faulty = faultyClient(client);
    const a = await open(faulty.client);
    const b = await open(client, a.collectionName);
    const v1 = await a.beginWrite();
    await a.addChunks(old1, { version: v1 });
    await a.finishWrite(v1, [commitOf('d1', old1)]);
    const va = await a.beginWrite();
    const vb = await b.beginWrite();
    const chunksA = versionChunks('d1', 'a', 2);
    const chunksB = versionChunks('d1', 'b', 3);
    await a.addChunks(chunksA, { version: va });
    await b.addChunks(chunksB, { version: vb });
    let release: () => void = () => {};
    let paused: () => void = () => {};
    const atSwitch = new Promise<void>((r) => {
      paused = r;
    });
    faulty.state.pause = {
      match: (method, args) =>
        method === 'upsert' &&
        String(args[0]?.collection_name).endsWith('_docs') &&
        args[0]?.data?.[0]?.kind === 'doc',
      gate: new Promise<void>((r) => {
        release = r;
      }),
      hit: () => paused(),
    };
    // Act
    const finishA = a.finishWrite(va, [commitOf('d1', chunksA)]);
    await atSwitch;
    const outcomeB = await b.finishWrite(vb, [commitOf('d1', chunksB)]);
    release();
    const outcomeA = await finishA;
    // Assess
    expect(outcomeB.committed).toEqual(['d1']);
    expect(outcomeA.committed).toEqual(['d1']);
    expect((await a.getDocument('d1'))?.version).toBe(va);
    await assertConsistent(a, { d1: [ids(chunksA)] });
    expect(await a.checkIntegrity()).toMatchObject({ clean: true, orphanChunks: 0, chunks: 2 });
    await b.close();
    await a.drop();
  });
});

describe('Milvus staged writes: visibility without joins', () => {
  it('skips orphaned rows that outrank visible ones and still returns k hits; repair deletes them', async () => {
    // Prepare: d1 committed; rows of a version nobody holds (a crash leftover) match the query exactly
    const store = await open();
    const v1 = await store.beginWrite();
    const committed = versionChunks('d1', 'kept', 4);
    await store.addChunks(committed, { version: v1 });
    await store.finishWrite(v1, [commitOf('d1', committed)]);
    const query = 'ghost passage about proteins';
    const [vector] = await createHashEmbedder().embedDocuments([query]);
    await client.upsert({
      collection_name: store.collectionName,
      data: [1, 2, 3].map((i) => ({
        pk: `ghost|g${i}`,
        chunk_id: `g${i}`,
        version: 'ghost',
        content: query,
        document_id: 'd1',
        sequence_number: i,
        chunk_content: { document_id: 'd1', sequence_number: i },
        vector,
      })),
    });
    // Act
    const hits = await store.search(query, { k: 3 });
    const report = await store.checkIntegrity({ repair: true });
    // Assess
    expect(hits).toHaveLength(3);
    expect(hits.every((h) => h.id.startsWith('d1@kept'))).toBe(true);
    expect(await visible(store, 'd1')).toEqual(ids(committed));
    expect(report).toMatchObject({ clean: false, orphanChunks: 3, chunks: 4 });
    expect(report.repaired).toMatchObject({ chunksDeleted: 3 });
    expect((await store.checkIntegrity()).clean).toBe(true);
    await store.drop();
  });

  it('refuses to begin a finished write again; a lease a racing renewal re-creates hides only uncommitted rows', async () => {
    // Prepare
    const store = await open();
    const chunks = versionChunks('d1', 'a', 2);
    await store.beginWrite({ version: 'd1.01' });
    await store.addChunks(chunks, { version: 'd1.01' });
    await store.finishWrite('d1.01', [commitOf('d1', chunks, { sequencer: '01' })]);
    await expect(store.beginWrite({ version: 'd1.01' })).rejects.toBeInstanceOf(WriteEndedError);
    // Act: a renewal that read the lease before the finish ended it writes it back as running
    await client.upsert({
      collection_name: store.docsCollection,
      data: [
        {
          key: 'w:d1.01',
          kind: 'write',
          document_id: '',
          content_hash: '',
          chunk_count: 0,
          updated_at: new Date().toISOString(),
          metadata: {},
          has_metadata: false,
          version: 'd1.01',
          sequencer: '',
          deleted_at: 0,
          owner: 'elsewhere:1',
          expires_at: Date.now() + 60_000,
          lease_ms: 60_000,
          ended_at: 0,
          dummy: [0, 0],
        },
      ],
    });
    await store.addChunks(versionChunks('d2', 'a', 2), { version: 'd1.01' });
    // Assess: d1 stays visible at its version; the zombie's own rows are hidden, and aborting removes only them
    const hits = await store.search('passage about proteins', { k: 10 });
    expect(hits.map((h) => h.id).sort(byId)).toEqual(ids(chunks));
    expect(await store.abortWrite('d1.01')).toBe(2);
    expect(await visible(store, 'd1')).toEqual(ids(chunks));
    expect((await store.checkIntegrity()).clean).toBe(true);
    await store.drop();
  });

  it('pages reads past one query page (4,096 rows) in primary-key order', async () => {
    // Prepare
    const store = await open();
    const many = Array.from({ length: 4100 }, (_, i) => makeChunk('big', i + 1, `row ${i}`));
    const v = await store.beginWrite();
    await store.addChunks(many, { version: v });
    // Act
    const outcome = await store.finishWrite(v, [commitOf('big', many)]);
    // Assess
    expect(outcome.committed).toEqual(['big']);
    expect((await store.getChunksBySequence('big', 1, 1_000_000)).length).toBe(4100);
    expect(await store.checkIntegrity()).toMatchObject({ clean: true, chunks: 4100 });
    expect((await store.stats()).chunks).toBe(4100);
    await store.drop();
  });
});

describe('Milvus collections of an earlier release', () => {
  it('refuses a chunk collection without the version field, naming it and how to migrate', async () => {
    // Prepare: the schema-1 layout (chunk_id primary key)
    const name = 'ai4rag_legacy_layout';
    await client.createCollection({
      collection_name: name,
      description: JSON.stringify({
        ai4rag: 'chunks',
        embedding_model: createHashEmbedder().modelId,
        distance: 'cosine',
      }),
      fields: [
        { name: 'chunk_id', data_type: DataType.VarChar, is_primary_key: true, max_length: 128 },
        { name: 'content', data_type: DataType.VarChar, max_length: 65_535, enable_analyzer: true },
        { name: 'vector', data_type: DataType.FloatVector, dim: createHashEmbedder().dimension },
        { name: 'sparse', data_type: DataType.SparseFloatVector },
      ],
      functions: [
        {
          name: 'content_bm25',
          type: FunctionType.BM25,
          input_field_names: ['content'],
          output_field_names: ['sparse'],
          params: {},
        },
      ],
    } as Parameters<MilvusClient['createCollection']>[0]);
    // Act
    const act = MilvusVectorStore.create({
      client,
      embedder: createHashEmbedder(),
      collectionName: name,
    });
    // Assess
    await expect(act).rejects.toBeInstanceOf(VectorStoreError);
    await expect(act).rejects.toThrow(
      new RegExp(`collection ${name} has the layout of an earlier ai4rag release.*re-ingest`),
    );
    expect((await client.hasCollection({ collection_name: `${name}_docs` })).value).toBe(false);
    await client.dropCollection({ collection_name: name });
  });
});
