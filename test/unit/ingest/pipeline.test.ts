import { describe, expect, it } from 'vitest';
import type { ChunkingOptions } from '../../../shared/src/chunking/types.js';
import type { LoadedDocument } from '../../../shared/src/documents/types.js';
import {
  INGEST_BATCH_CHUNKS,
  indexingKey,
  ingestDocuments,
} from '../../../shared/src/ingest/pipeline.js';
import { MemoryStore, testChunk } from '../../support/memory-store.js';

const chunking: ChunkingOptions = { method: 'recursive', chunkSize: 128, chunkOverlap: 0 };

function doc(key: string, text: string, hash = `h-${text}`): LoadedDocument {
  return { key, text, blocks: [], contentHash: hash, format: 'txt' };
}

/** One chunk per line; ids include the text so a changed line is a new chunk. */
function byLine(d: LoadedDocument) {
  return d.text
    .split('\n')
    .map((line, i) => ({ ...testChunk(d.key, i + 1, line), id: `${d.key}#${i + 1}:${line}` }));
}

describe('ingestDocuments', () => {
  it('indexes new documents and records their hash and indexing settings', async () => {
    // Prepare
    const store = new MemoryStore();
    // Act
    const summary = await ingestDocuments([doc('a.txt', 'one\ntwo'), doc('b.txt', 'three')], {
      store,
      chunking,
      chunk: byLine,
    });
    // Assess
    expect(summary.documents.map((d) => [d.documentId, d.status, d.chunks])).toEqual([
      ['a.txt', 'indexed', 2],
      ['b.txt', 'indexed', 1],
    ]);
    expect(summary.chunksStored).toBe(3);
    expect(store.chunks.size).toBe(3);
    expect(store.documents.get('a.txt')?.metadata?.indexing).toBe(indexingKey(chunking));
    expect(store.documents.get('a.txt')?.contentHash).toBe('h-one\ntwo');
  });

  it('does no embedding work for unchanged documents', async () => {
    const store = new MemoryStore();
    await ingestDocuments([doc('a.txt', 'one')], { store, chunking, chunk: byLine });
    const callsBefore = store.embedCalls;
    const summary = await ingestDocuments([doc('a.txt', 'one')], {
      store,
      chunking,
      chunk: byLine,
    });
    expect(store.embedCalls).toBe(callsBefore);
    expect(summary.documents[0]?.status).toBe('unchanged');
    expect(summary.documentsSkipped).toBe(1);
  });

  it('re-indexes a document when the chunking settings change', async () => {
    const store = new MemoryStore();
    await ingestDocuments([doc('a.txt', 'one')], { store, chunking, chunk: byLine });
    const summary = await ingestDocuments([doc('a.txt', 'one')], {
      store,
      chunking: { ...chunking, chunkSize: 256 },
      chunk: byLine,
    });
    expect(summary.documents[0]?.status).toBe('indexed');
  });

  it('replaces the chunks of a changed document and removes its stale ones', async () => {
    // Prepare
    const store = new MemoryStore();
    await ingestDocuments([doc('a.txt', 'one\ntwo\nthree')], { store, chunking, chunk: byLine });
    // Act
    await ingestDocuments([doc('a.txt', 'one\nTWO')], { store, chunking, chunk: byLine });
    // Assess
    expect([...store.chunks.keys()].sort()).toEqual(['a.txt#1:one', 'a.txt#2:TWO']);
    expect(store.documents.get('a.txt')?.chunkCount).toBe(2);
  });

  it('prunes documents that are no longer present when asked', async () => {
    const store = new MemoryStore();
    await ingestDocuments([doc('a.txt', 'one'), doc('b.txt', 'two')], {
      store,
      chunking,
      chunk: byLine,
    });
    const summary = await ingestDocuments([doc('a.txt', 'one')], {
      store,
      chunking,
      chunk: byLine,
      prune: true,
    });
    expect(summary.pruned).toEqual(['b.txt']);
    expect([...store.documents.keys()]).toEqual(['a.txt']);
    expect([...store.chunks.keys()]).toEqual(['a.txt#1:one']);
  });

  it('reports a document whose chunking fails and ingests the others', async () => {
    const store = new MemoryStore();
    const summary = await ingestDocuments([doc('bad.txt', 'x'), doc('good.txt', 'y')], {
      store,
      chunking,
      chunk: (d) => {
        if (d.key === 'bad.txt') throw new Error('cannot split');
        return byLine(d);
      },
    });
    expect(summary.documents).toEqual([
      { documentId: 'bad.txt', status: 'failed', chunks: 0, error: 'cannot split' },
      { documentId: 'good.txt', status: 'indexed', chunks: 1 },
    ]);
  });

  it('keeps the previous version when embedding a batch fails', async () => {
    // Prepare
    const store = new MemoryStore();
    await ingestDocuments([doc('a.txt', 'one')], { store, chunking, chunk: byLine });
    store.failNextAdd = new Error('embedding service down');
    // Act
    const summary = await ingestDocuments([doc('a.txt', 'uno')], {
      store,
      chunking,
      chunk: byLine,
    });
    // Assess
    expect(summary.documents[0]).toMatchObject({
      status: 'failed',
      error: 'embedding service down',
    });
    expect(store.documents.get('a.txt')?.contentHash).toBe('h-one');
    expect([...store.chunks.keys()]).toEqual(['a.txt#1:one']);
  });

  it('hands the store groups of whole documents of about INGEST_BATCH_CHUNKS chunks and reports progress', async () => {
    // Prepare: 10 documents of 500 chunks each
    const store = new MemoryStore();
    const keys = Array.from({ length: 10 }, (_, i) => `d${i}`);
    const docs = keys.map((k) =>
      doc(k, Array.from({ length: 500 }, (_, i) => `${k}-${i}`).join('\n')),
    );
    const sizes: number[] = [];
    const original = store.addChunks.bind(store);
    store.addChunks = async (chunks, options) => {
      sizes.push(chunks.length);
      return original(chunks, options);
    };
    const seen: number[] = [];
    // Act
    await ingestDocuments(docs, {
      store,
      chunking,
      chunk: byLine,
      onProgress: (p) => seen.push(p.documentsDone),
    });
    // Assess: the first group closes once it reaches INGEST_BATCH_CHUNKS (9 documents, 4,500 chunks)
    expect(INGEST_BATCH_CHUNKS).toBe(4096);
    expect(sizes).toEqual([4500, 500]);
    expect(seen).toEqual([9, 10, 10]);
  });
  it('keeps stored documents under a folder that could not be read, and says why', async () => {
    // Prepare
    const store = new MemoryStore();
    await ingestDocuments(
      [doc('a.txt', 'one'), doc('sub/b.txt', 'two'), doc('sub2/c.txt', 'three')],
      {
        store,
        chunking,
        chunk: byLine,
      },
    );
    // Act: `sub` was unreadable this time (its failure key is the folder), `sub2` is gone
    const summary = await ingestDocuments([doc('a.txt', 'one')], {
      store,
      chunking,
      chunk: byLine,
      prune: true,
      keep: ['sub'],
    });
    // Assess
    expect(summary.pruned).toEqual(['sub2/c.txt']);
    expect(summary.kept).toEqual([
      { documentId: 'sub/b.txt', reason: 'folder sub could not be read this time' },
    ]);
    expect([...store.documents.keys()].sort()).toEqual(['a.txt', 'sub/b.txt']);
  });

  it('fails only the document the store rejects; its neighbours in the batch are indexed', async () => {
    // Prepare: the store refuses any chunk of one document (poison), whatever it is batched with
    const store = new MemoryStore();
    const original = store.addChunks.bind(store);
    store.addChunks = async (chunks, options) => {
      if (chunks.some((c) => c.text.includes('POISON'))) throw new Error('invalid byte sequence');
      return original(chunks, options);
    };
    // Act
    const summary = await ingestDocuments(
      [doc('a.txt', 'one'), doc('bad.txt', 'POISON'), doc('c.txt', 'three')],
      { store, chunking, chunk: byLine },
    );
    // Assess
    expect(summary.documents).toEqual([
      { documentId: 'a.txt', status: 'indexed', chunks: 1 },
      { documentId: 'bad.txt', status: 'failed', chunks: 0, error: 'invalid byte sequence' },
      { documentId: 'c.txt', status: 'indexed', chunks: 1 },
    ]);
    expect([...store.documents.keys()].sort()).toEqual(['a.txt', 'c.txt']);
    expect((await store.checkIntegrity()).clean).toBe(true);
  });

  it('stops retrying document by document when every attempt fails the same way (an outage)', async () => {
    // Prepare
    const store = new MemoryStore();
    let calls = 0;
    store.addChunks = async () => {
      calls += 1;
      throw new Error('503 service unavailable');
    };
    const docs = Array.from({ length: 20 }, (_, i) => doc(`d${i}.txt`, `text ${i}`));
    // Act
    const summary = await ingestDocuments(docs, { store, chunking, chunk: byLine });
    // Assess: the batch, then two single documents, then no more calls
    expect(calls).toBe(3);
    expect(summary.documents.every((d) => d.status === 'failed')).toBe(true);
    expect(summary.documents).toHaveLength(20);
    expect((await store.checkIntegrity()).liveWrites).toEqual([]);
  });
});

/** A pgvector store on an in-memory PGlite (loaded on first use), building its index from `annMinRows` rows. */
async function pgliteStore(collectionName: string, annMinRows: number) {
  const { openPglite } = await import('../../../shared/src/vectorstores/sql-client.js');
  const { PgVectorStore } = await import(
    '../../../shared/src/vectorstores/pgvector/pgvector-store.js'
  );
  const { createHashEmbedder } = await import('../vectorstores/fake-embedder.js');
  return PgVectorStore.create({
    client: await openPglite({}),
    embedder: createHashEmbedder(),
    collectionName,
    annMinRows,
    ownsClient: true,
  });
}

describe('ingestDocuments and the ANN index', () => {
  it('builds the index at the end of an ingestion that reaches the threshold, once', async () => {
    // Prepare
    const store = await pgliteStore('ai4rag_pipeline_index', 5);
    try {
      const small = await ingestDocuments([doc('a.txt', 'one\ntwo')], {
        store,
        chunking,
        chunk: byLine,
      });
      // Act
      const big = await ingestDocuments([doc('b.txt', 'three\nfour\nfive\nsix')], {
        store,
        chunking,
        chunk: byLine,
      });
      const more = await ingestDocuments([doc('c.txt', 'seven')], {
        store,
        chunking,
        chunk: byLine,
      });
      // Assess
      expect(small.index).toBeUndefined();
      expect(big.index).toMatchObject({ built: true, rows: 6, reason: 'built' });
      expect(more.index).toBeUndefined();
      expect((await store.stats()).annIndex).toBe(true);
    } finally {
      await store.close();
    }
  });

  it('brings the index up to date during a long ingestion, in the background every indexEvery chunks', async () => {
    // Prepare: 60 one-line chunks in writes of about 10, a build every 20 stored chunks
    const store = await pgliteStore('ai4rag_pipeline_index_every', 0);
    const docs = Array.from({ length: 12 }, (_, d) =>
      doc(`d${d}.txt`, Array.from({ length: 5 }, (_, l) => `doc ${d} line ${l}`).join('\n')),
    );
    const storedAtBuild: number[] = [];
    const build = store.buildIndex.bind(store);
    store.buildIndex = async (o) => {
      storedAtBuild.push((await store.stats()).chunks);
      return build(o);
    };
    try {
      // Act
      const summary = await ingestDocuments(docs, {
        store,
        chunking,
        chunk: byLine,
        batchChunks: 10,
        indexEvery: 20,
      });
      // Assess: at least one build while writing (after 20 chunks, before the last), then the final one
      expect(summary.chunksStored).toBe(60);
      expect(summary.indexError).toBeUndefined();
      expect(storedAtBuild.length).toBeGreaterThanOrEqual(2);
      expect(storedAtBuild[0]).toBeGreaterThanOrEqual(20);
      expect(storedAtBuild[0]).toBeLessThan(60);
      const hits = await store.search('doc 7 line 3', { k: 1, searchMode: 'vector' });
      expect(hits[0]?.text).toBe('doc 7 line 3');
      expect((await store.stats()).annIndex).toBe(true);
      // 0 builds only at the end; buildIndex: false never
      storedAtBuild.length = 0;
      const more = docs.map((d) => doc(d.key.replace('d', 'e'), d.text));
      await ingestDocuments(more.slice(0, 6), {
        store,
        chunking,
        chunk: byLine,
        batchChunks: 10,
        indexEvery: 0,
      });
      expect(storedAtBuild).toHaveLength(1);
      storedAtBuild.length = 0;
      await ingestDocuments(more.slice(6), {
        store,
        chunking,
        chunk: byLine,
        batchChunks: 10,
        buildIndex: false,
      });
      expect(storedAtBuild).toHaveLength(0);
      await expect(
        ingestDocuments(docs, { store, chunking, chunk: byLine, indexEvery: -1 }),
      ).rejects.toThrow('indexEvery must be a whole number of chunks, got -1');
    } finally {
      await store.close();
    }
  });
});

describe('ingestDocuments and the keyword statistics', () => {
  it('re-weights BM25 at the end when the corpus moved the average length, not in the first search', async () => {
    // Prepare: the first write (one short chunk) fixes the collection's average length; the next ones are long
    const store = await pgliteStore('ai4rag_pipeline_reweight', 1_000_000);
    const long = (d: number) =>
      Array.from({ length: 30 }, (_, w) => `word${(d * 7 + w) % 50} term${w}`).join(' ');
    const docs = [
      doc('short.txt', 'parking permits'),
      ...Array.from({ length: 6 }, (_, d) => doc(`long${d}.txt`, long(d))),
    ];
    try {
      // Act
      const summary = await ingestDocuments(docs, {
        store,
        chunking,
        chunk: byLine,
        batchChunks: 1,
      });
      // Assess: re-weighted once, at the end; the weights are current before any search
      expect(summary.chunksStored).toBe(7);
      expect(summary.statistics).toEqual({ reweighted: true, deferred: false });
      expect(summary.statisticsError).toBeUndefined();
      expect(await store.refreshStatistics()).toEqual({ reweighted: false, deferred: false });
      // An ingestion that changes nothing has nothing to refresh
      const again = await ingestDocuments(docs, { store, chunking, chunk: byLine });
      expect(again.statistics).toBeUndefined();
    } finally {
      await store.close();
    }
  });
});
