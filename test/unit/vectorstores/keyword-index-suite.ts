import { describe, expect, it } from 'vitest';
import type { AI4RAGChunk } from '../../../shared/src/chunking/types.js';
import { mulberry32 } from '../../../shared/src/util/random.js';
import { keywordIndexNames } from '../../../shared/src/vectorstores/pgvector/keyword-index.js';
import {
  dropPgCollection,
  PgVectorStore,
} from '../../../shared/src/vectorstores/pgvector/pgvector-store.js';
import type { SqlClient } from '../../../shared/src/vectorstores/sql-client.js';
import { makeChunk } from './contract.js';
import { createHashEmbedder } from './fake-embedder.js';

/** Words with skewed frequencies: the first ones occur in most chunks, so their posting lists are long. */
const VOCAB = Array.from({ length: 60 }, (_, i) => `w${i}x`);

/** `count` chunks over `docs` documents, 8–20 words each drawn with P(word i) ∝ 1/(i+1). */
function corpus(count: number, docs: number, seed: number): AI4RAGChunk[] {
  const rand = mulberry32(seed);
  const weights = VOCAB.map((_, i) => 1 / (i + 1));
  const sum = weights.reduce((s, w) => s + w, 0);
  const draw = () => {
    let r = rand() * sum;
    for (const [i, w] of weights.entries()) {
      r -= w;
      if (r <= 0) return VOCAB[i] as string;
    }
    return VOCAB[VOCAB.length - 1] as string;
  };
  return Array.from({ length: count }, (_, i) => {
    const words = Array.from({ length: 8 + Math.floor(rand() * 13) }, draw);
    return makeChunk(`doc${i % docs}`, Math.floor(i / docs) + 1, words.join(' '), {
      user: { part: i % 10 },
    });
  });
}

const QUERIES = [
  'w0x w1x',
  'w3x w17x w42x',
  'w59x',
  'w2x w2x w30x w8x',
  'w11x w12x w13x w14x w15x',
  'w0x w58x',
  'w25x w5x',
  'w7x w9x w44x',
];

async function postingCount(client: SqlClient, collection: string): Promise<number> {
  const n = keywordIndexNames(collection);
  const res = await client.query<{ n: number }>(
    `SELECT (SELECT count(*) FROM ${n.postings})::int AS n`,
  );
  return res.rows[0]?.n ?? -1;
}

/**
 * The BM25 postings index (`keyword-index.ts`) against the exact scan it replaces: same hits and scores, kept in
 * step with every write path, complete under filters and when its term lists are cut short.
 */
export function runKeywordIndexSuite(label: string, getClient: () => SqlClient): void {
  describe(`BM25 keyword index (${label})`, () => {
    const embedder = createHashEmbedder({ dimension: 8 });
    let seq = 0;
    const open = (collectionName: string, keywordDepth?: number) =>
      PgVectorStore.create({
        client: getClient(),
        embedder,
        collectionName,
        ...(keywordDepth !== undefined && { keywordDepth }),
      });
    const fresh = () => `ai4rag_kwi_${Date.now().toString(36)}_${seq++}`;

    it('returns the exact scan’s top 10, ids and scores, on every sample query', async () => {
      // Prepare: one collection, read through the index (default depth) and by the exact scan (depth 0)
      const name = fresh();
      const indexed = await open(name);
      const exact = await open(name, 0);
      try {
        await indexed.addChunks(corpus(400, 40, 7));
        for (const q of QUERIES) {
          // Act
          const got = await indexed.keywordSearch(q, { k: 10 });
          const want = await exact.keywordSearch(q, { k: 10 });
          // Assert
          expect(want.length, q).toBe(10);
          expect(got.map((h) => h.id)).toEqual(want.map((h) => h.id));
          got.forEach((h, i) => {
            expect(h.score).toBeCloseTo(want[i]?.score as number, 5);
          });
        }
      } finally {
        await indexed.close();
        await exact.close();
        await dropPgCollection(getClient(), name);
      }
    });

    it('with term lists cut to 5 postings: k hits, scored exactly, and complete under a selective filter', async () => {
      // Prepare: depth 5 is far below the common words' document frequencies (hundreds)
      const name = fresh();
      const shallow = await open(name, 5);
      const exact = await open(name, 0);
      try {
        await shallow.addChunks(corpus(400, 40, 11));
        for (const q of QUERIES) {
          // Act
          const got = await shallow.keywordSearch(q, { k: 10 });
          const want = await exact.keywordSearch(q, { k: 10 });
          const filtered = await shallow.keywordSearch(q, { k: 10, filter: { 'user.part': 3 } });
          const wantFiltered = await exact.keywordSearch(q, { k: 10, filter: { 'user.part': 3 } });
          // Assert: every hit carries its exact BM25 score (rescored), best first; the filter is complete
          expect(got.length, q).toBe(10);
          const exactScore = new Map(
            (await exact.keywordSearch(q, { k: 400 })).map((h) => [h.id, h.score]),
          );
          for (const h of got) expect(h.score).toBeCloseTo(exactScore.get(h.id) as number, 5);
          const scores = got.map((h) => h.score as number);
          expect(scores).toEqual([...scores].sort((x, y) => y - x));
          // (The ids themselves may differ from the exact top 10 here: a cut list can miss a chunk; the bench
          // measures that overlap at the default depth.)
          expect(want.length).toBe(10);
          expect(filtered.map((h) => h.id)).toEqual(wantFiltered.map((h) => h.id));
        }
      } finally {
        await shallow.close();
        await exact.close();
        await dropPgCollection(getClient(), name);
      }
    });

    it('stays equal to the chunks’ weights through re-upserts, deletes, aborted writes and re-weighting', async () => {
      // Prepare
      const name = fresh();
      const store = await open(name);
      const exact = await open(name, 0);
      try {
        const chunks = corpus(200, 20, 3);
        await store.addChunks(chunks);
        expect(await postingCount(getClient(), name)).toBeGreaterThan(0);

        // Act: changed content under the same ids (upsert updates), a deleted document, an aborted staged write,
        // a committed staged write, and enough new text to move avgdl past the re-weighting tolerance
        await store.addChunks(
          chunks.slice(0, 30).map((c) => ({ ...c, text: `${c.text} w59x w58x w57x` })),
        );
        await store.deleteDocument('doc3');
        const aborted = await store.beginWrite({ owner: 'test' });
        await store.addChunks(corpus(20, 2, 99), { version: aborted });
        await store.abortWrite(aborted);
        const long = corpus(100, 10, 5).map((c, i) => ({
          ...c,
          id: `long-${i}`,
          text: `${c.text} ${c.text} ${c.text} ${c.text}`,
        }));
        await store.addChunks(long);
        await store.keywordSearch('w1x', { k: 5 }); // folds statistics, re-weights every row

        // Assert: the integrity check finds no posting out of step, and searches agree with the exact scan
        const report = await store.checkIntegrity();
        expect(report.keywordIndexMismatch).toBe(0);
        for (const q of QUERIES) {
          const got = await store.keywordSearch(q, { k: 10 });
          const want = await exact.keywordSearch(q, { k: 10 });
          expect(got.map((h) => h.id)).toEqual(want.map((h) => h.id));
        }
        const deleted = await store.keywordSearch('w0x w1x w2x', { k: 400 });
        expect(deleted.some((h) => h.id.startsWith('doc3'))).toBe(false);
      } finally {
        await store.close();
        await exact.close();
        await dropPgCollection(getClient(), name);
      }
    });

    it('repair rebuilds postings that were lost, and a dropped collection leaves no index behind', async () => {
      // Prepare: postings removed behind the store's back (as a manual DELETE would)
      const name = fresh();
      const store = await open(name);
      const n = keywordIndexNames(name);
      try {
        await store.addChunks(corpus(50, 5, 1));
        for (let d = 0; d < 5; d += 1) {
          await store.putDocument({
            documentId: `doc${d}`,
            contentHash: `h${d}`,
            chunkCount: 10,
            updatedAt: new Date(0).toISOString(),
          });
        }
        await getClient().query(`DELETE FROM ${n.postings} WHERE term % 3 = 0`);

        // Act
        const before = await store.checkIntegrity();
        const repaired = await store.checkIntegrity({ repair: true });
        const after = await store.checkIntegrity();

        // Assert
        expect(before.keywordIndexMismatch).toBeGreaterThan(0);
        expect(before.clean).toBe(false);
        expect(repaired.repaired?.keywordIndexRebuilt).toBe(true);
        expect(after.keywordIndexMismatch).toBe(0);
        expect(after.clean).toBe(true);
      } finally {
        await store.close();
        await dropPgCollection(getClient(), name);
      }
      const left = await getClient().query<{ t: string | null; f: string | null }>(
        `SELECT to_regclass($1) AS t, to_regprocedure($2) AS f`,
        [n.postings.slice(1, -1), `${n.fn}()`],
      );
      expect(left.rows[0]).toEqual({ t: null, f: null });
    });
  });
}
