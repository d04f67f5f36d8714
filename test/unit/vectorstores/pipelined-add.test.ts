import { afterEach, describe, expect, it } from 'vitest';
import type { Embedder } from '../../../shared/src/embeddings/types.js';
import { PgVectorStore } from '../../../shared/src/vectorstores/pgvector/pgvector-store.js';
import { openPglite } from '../../../shared/src/vectorstores/sql-client.js';
import { makeChunk } from './contract.js';
import { createHashEmbedder } from './fake-embedder.js';

/** An embedder that fails on its n-th call (1-based) and counts calls. */
function failingOn(call: number): Embedder & { calls: number } {
  const inner = createHashEmbedder();
  const e = {
    modelId: inner.modelId,
    dimension: inner.dimension,
    contextLength: inner.contextLength,
    calls: 0,
    async embedDocuments(texts: string[]) {
      e.calls += 1;
      if (e.calls === call) throw new Error(`embedding call ${call} failed`);
      return inner.embedDocuments(texts);
    },
    embedQuery: (text: string) => inner.embedQuery(text),
  };
  return e;
}

const chunks = (n: number) =>
  Array.from({ length: n }, (_, i) => makeChunk(`doc${i % 7}`, i + 1, `chunk ${i} text`));

describe('PgVectorStore.addChunks (pipelined embedding and writing)', () => {
  const stores: PgVectorStore[] = [];
  afterEach(async () => {
    for (const s of stores.splice(0)) await s.close();
  });

  it('stores every batch, in batches of at most 1,024 texts per embedding call', async () => {
    // Prepare
    const embedder = failingOn(0);
    const store = await PgVectorStore.create({
      client: await openPglite({}),
      embedder,
      collectionName: 'ai4rag_pipe_ok',
      ownsClient: true,
    });
    stores.push(store);
    // Act
    const stored = await store.addChunks(chunks(2500));
    // Assess
    expect(stored).toBe(2500);
    expect(embedder.calls).toBe(3);
    expect((await store.stats()).chunks).toBe(2500);
  });

  it('rejects when a later batch fails to embed; a staged write leaves nothing visible and nothing behind', async () => {
    // Prepare
    const embedder = failingOn(2);
    const store = await PgVectorStore.create({
      client: await openPglite({}),
      embedder,
      collectionName: 'ai4rag_pipe_fail',
      ownsClient: true,
    });
    stores.push(store);
    const version = await store.beginWrite();
    // Act
    const result = store.addChunks(chunks(2100), { version });
    // Assess: the in-flight write of batch 1 completes before the error surfaces; batch 3 is never started
    await expect(result).rejects.toThrow('embedding call 2 failed');
    expect(embedder.calls).toBe(2);
    // Batch 1 is staged, not visible
    expect((await store.stats()).chunks).toBe(0);
    expect(await store.search('chunk 5 text', { k: 5 })).toEqual([]);
    expect((await store.checkIntegrity()).liveWrites.map((w) => w.chunks)).toEqual([1024]);
    // Aborting removes it
    expect(await store.abortWrite(version)).toBe(1024);
    expect(await store.checkIntegrity()).toMatchObject({
      clean: true,
      orphanChunks: 0,
      liveWrites: [],
    });
  });
});
