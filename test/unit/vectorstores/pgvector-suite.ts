import { afterAll, describe, expect, it } from 'vitest';
import type { AI4RAGChunk } from '../../../shared/src/chunking/types.js';
import { analyze } from '../../../shared/src/text/analyzer.js';
import { VectorStoreError } from '../../../shared/src/vectorstores/errors.js';
import { auxiliaryName } from '../../../shared/src/vectorstores/naming.js';
import {
  dropPgCollection,
  PgVectorStore,
  type PgVectorStoreOptions,
} from '../../../shared/src/vectorstores/pgvector/pgvector-store.js';
import { REGISTRY_TABLE } from '../../../shared/src/vectorstores/pgvector/schema.js';
import type { SqlClient } from '../../../shared/src/vectorstores/sql-client.js';
import { makeChunk } from './contract.js';
import { createHashEmbedder } from './fake-embedder.js';

// The store's documented defaults (Lucene's), written out so a changed default fails here.
const K1 = 1.2;
const B = 0.75;

/** Plain-TS Okapi BM25 over analyzed terms (strings, no hashing), best first. */
function referenceBm25(
  docs: AI4RAGChunk[],
  query: string,
  avgdlOverride?: number,
): { id: string; score: number }[] {
  const analyzed = docs.map((d) => ({ id: d.id, tokens: analyze(d.text) }));
  const n = analyzed.length;
  const avgdl = avgdlOverride ?? analyzed.reduce((s, d) => s + d.tokens.length, 0) / n;
  const df = new Map<string, number>();
  for (const d of analyzed) for (const t of new Set(d.tokens)) df.set(t, (df.get(t) ?? 0) + 1);
  const qtf = new Map<string, number>();
  for (const t of analyze(query)) qtf.set(t, (qtf.get(t) ?? 0) + 1);
  const out: { id: string; score: number }[] = [];
  for (const d of analyzed) {
    let score = 0;
    for (const [t, q] of qtf) {
      const f = d.tokens.filter((x) => x === t).length;
      const dft = df.get(t) ?? 0;
      if (f === 0 || dft === 0) continue;
      const idf = Math.log(1 + (n - dft + 0.5) / (dft + 0.5));
      score += q * idf * ((f * (K1 + 1)) / (f + K1 * (1 - B + (B * d.tokens.length) / avgdl)));
    }
    if (score > 0) out.push({ id: d.id, score });
  }
  return out.sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : 1));
}

const BM25_CORPUS: AI4RAGChunk[] = [
  makeChunk('k1', 1, 'Protein folding is driven by hydrophobic collapse of the protein chain'),
  makeChunk('k1', 2, 'Chaperone proteins assist folding'),
  makeChunk('k1', 3, 'Misfolded proteins aggregate and cause disease in neurons and muscle'),
  makeChunk(
    'k2',
    1,
    'The market rallied as bond yields fell and the dollar weakened against the yen',
  ),
  makeChunk('k2', 2, 'Bond markets priced in rate cuts'),
  makeChunk('k2', 3, 'Yields on ten year bonds fell sharply'),
  makeChunk('k3', 1, 'Folding bicycles are popular in dense cities with small apartments'),
  makeChunk('k3', 2, 'A protein rich diet helps muscle recovery after cycling'),
];
/** Rounds of each writer race (see the tests). */
const RACE_ROUNDS = 12;
const QUERIES = [
  'protein folding',
  'bond yields fell',
  'muscle protein protein',
  'cities bicycles',
];

async function expectMatchesReference(
  store: PgVectorStore,
  docs: AI4RAGChunk[],
  avgdl?: number,
): Promise<void> {
  for (const q of QUERIES) {
    const got = await store.keywordSearch(q, { k: 20 });
    const want = referenceBm25(docs, q, avgdl);
    expect(
      got.map((h) => h.id),
      q,
    ).toEqual(want.map((w) => w.id));
    got.forEach((h, i) => {
      expect(Math.abs((h.score ?? 0) - (want[i]?.score ?? 0)), `${q} ${h.id}`).toBeLessThan(1e-4);
    });
  }
}

/**
 * pgvector-specific behaviour (BM25 exactness, HNSW policy, registry checks, error wrapping), run on every
 * pgvector transport. Collections are dropped afterwards.
 */
export function runPgVectorSuite(label: string, getClient: () => SqlClient): void {
  describe(`PgVectorStore specifics: ${label}`, () => {
    const runId = `${Date.now().toString(36)}${Math.floor(Math.random() * 1e6).toString(36)}`;
    const names: string[] = [];
    let counter = 0;
    const create = async (
      options: Omit<PgVectorStoreOptions, 'client' | 'embedder'> & {
        embedder?: PgVectorStoreOptions['embedder'];
      } = {},
    ): Promise<PgVectorStore> => {
      counter += 1;
      const collectionName = options.collectionName ?? `ai4rag_pg_${runId}_${counter}`;
      if (!names.includes(collectionName)) names.push(collectionName);
      return PgVectorStore.create({
        embedder: createHashEmbedder(),
        ...options,
        collectionName,
        client: getClient(),
      });
    };
    afterAll(async () => {
      for (const name of names) await dropPgCollection(getClient(), name);
    });
    /** The registry's folded chunk count and token total of a collection. */
    const registryCounts = async (collectionName: string) => {
      const res = await getClient().query<{ n: number; total: number }>(
        `SELECT chunk_count::int AS n, token_total::int AS total FROM ${REGISTRY_TABLE}
           WHERE name = lower($1)`,
        [collectionName],
      );
      return res.rows[0];
    };

    it('scores keyword search exactly like reference BM25, after upserts, changes and deletes', async () => {
      // Prepare
      const store = await create({ bm25: { reweightTolerance: 0 } });
      try {
        await store.addChunks(BM25_CORPUS.slice(0, 5));
        await store.addChunks(BM25_CORPUS.slice(3));
        // Act / Assess: full corpus
        await expectMatchesReference(store, BM25_CORPUS);
        // Act / Assess: one chunk's content replaced under the same id
        const changed = makeChunk('k1', 2, 'Chaperone proteins assist protein folding in cells');
        await store.addChunks([changed]);
        const corpus2 = BM25_CORPUS.map((c) => (c.id === changed.id ? changed : c));
        await expectMatchesReference(store, corpus2);
        // Act / Assess: deletes
        await store.deleteByDocument('k2', { keepIds: ['k2#3'] });
        await store.deleteByFilter({ document_id: 'k3', sequence_number: 1 });
        const corpus3 = corpus2.filter((c) => !['k2#1', 'k2#2', 'k3#1'].includes(c.id));
        await expectMatchesReference(store, corpus3);
      } finally {
        await store.close();
      }
    });

    it('keeps weights within the avgdl tolerance and re-weights once it is exceeded', async () => {
      // Prepare: default tolerance 10 %
      const store = await create();
      try {
        const base = BM25_CORPUS.slice(0, 6);
        await store.addChunks(base);
        const avgdl0 = base.reduce((s, c) => s + analyze(c.text).length, 0) / base.length;
        // Act: a chunk of average length keeps avgdl within 10 %
        const small = makeChunk('k9', 1, 'protein bond market folding yields');
        await store.addChunks([small]);
        // Assess: weights still use the recorded avgdl, idf uses current N and df
        await expectMatchesReference(store, [...base, small], avgdl0);
        // Act: a long chunk pushes avgdl beyond 10 %
        const long = makeChunk('k9', 2, `protein ${'lorem ipsum dolor sit amet '.repeat(8)}`);
        await store.addChunks([long]);
        // Assess: re-weighted with the current avgdl
        await expectMatchesReference(store, [...base, small, long]);
      } finally {
        await store.close();
      }
    });

    it('re-weights on the write side with refreshStatistics, bounded by maxRows, so a search writes nothing', async () => {
      // Prepare
      const logged: string[] = [];
      const recomputed = () => logged.filter((m) => m.includes('BM25 weights recomputed')).length;
      const store = await create({ logger: (m) => logged.push(m) });
      try {
        const base = BM25_CORPUS.slice(0, 6);
        await store.addChunks(base);
        expect(await store.refreshStatistics()).toEqual({ reweighted: false, deferred: false });
        const long = makeChunk('k9', 2, `protein ${'lorem ipsum dolor sit amet '.repeat(8)}`);
        await store.addChunks([long]);
        // Act / Assess: 7 rows, stale weights: left alone under maxRows 6, re-weighted without a bound
        expect(await store.refreshStatistics({ maxRows: 6 })).toEqual({
          reweighted: false,
          deferred: true,
        });
        expect(recomputed()).toBe(0);
        expect(await store.refreshStatistics({ maxRows: 7 })).toEqual({
          reweighted: true,
          deferred: false,
        });
        expect(recomputed()).toBe(1);
        // Assess: searches find current weights (scores as the reference at the current avgdl) and re-weight nothing
        await expectMatchesReference(store, [...base, long]);
        expect(recomputed()).toBe(1);
        expect(await store.refreshStatistics()).toEqual({ reweighted: false, deferred: false });
      } finally {
        await store.close();
      }
    });

    it('re-weights every version of a chunk, and writes each row its postings, across pages of 1,000 rows', async () => {
      // Prepare: 1,100 committed chunks, and all but the first (in id order) again in a staged write: its rows beside
      // the committed ones, two rows to an id, and one id's pair split by the re-weighting's first page boundary (the
      // 1,000th row); then a change of k1
      const chunks = Array.from({ length: 1100 }, (_, i) =>
        makeChunk(`p${i % 50}`, i, `term${i % 7} filler${i % 13} word${i}`),
      );
      const store = await create();
      const name = store.collectionName;
      try {
        await store.addChunks(chunks);
        const version = await store.beginWrite();
        const first = [...chunks].sort((a, b) => (a.id < b.id ? -1 : 1))[0]?.id;
        await store.addChunks(
          chunks.filter((c) => c.id !== first),
          { version },
        );
        await store.close();
        const reweighed = await create({ collectionName: name, bm25: { k1: 1.5 } });
        try {
          // Act
          expect(await reweighed.refreshStatistics()).toEqual({
            reweighted: true,
            deferred: false,
          });
          // Assess: 2,199 rows, each with its postings
          expect((await reweighed.checkIntegrity()).keywordIndexMismatch).toBe(0);
          const hits = await reweighed.keywordSearch('word1099', { k: 1 });
          expect(hits.map((h) => h.id)).toEqual([chunks[1099]?.id]);
        } finally {
          await reweighed.close();
        }
      } finally {
        await store.close().catch(() => undefined);
      }
    });

    it('keeps statistics exact under concurrent overlapping upserts on one store', async () => {
      // Prepare
      const store = await create({ bm25: { reweightTolerance: 0 } });
      try {
        // Act: two writers, overlapping ids (bounded: exactly two promises)
        await Promise.all([
          store.addChunks(BM25_CORPUS.slice(0, 6)),
          store.addChunks(BM25_CORPUS.slice(2)),
        ]);
        // Assess
        expect((await store.stats()).chunks).toBe(BM25_CORPUS.length);
        await expectMatchesReference(store, BM25_CORPUS);
      } finally {
        await store.close();
      }
    });

    it('keeps statistics exact with two stores (two writers, own connections) writing one collection at once', async () => {
      // Rounds, because the race is in the timing: before the write path row-locked what it found, 1 round in 4
      // counted chunks that two writers both took for new twice (N 8 for 6 chunks); 12 rounds then miss it with
      // probability about 3 %. pg-write-races.test.ts holds a writer at each step deterministically.
      for (let round = 0; round < RACE_ROUNDS; round += 1) {
        // Prepare: two processes' worth of writers, as two embed-batch Lambdas are
        const a = await create({ bm25: { reweightTolerance: 0 } });
        const b = await create({
          collectionName: a.collectionName,
          bm25: { reweightTolerance: 0 },
        });
        try {
          // Act: disjoint and overlapping batches at once, then a delete racing a write
          await Promise.all([
            a.addChunks(BM25_CORPUS.slice(0, 5)),
            b.addChunks(BM25_CORPUS.slice(3)),
            a.addChunks(BM25_CORPUS.slice(1, 4)),
          ]);
          await Promise.all([a.deleteByDocument('k3'), b.addChunks(BM25_CORPUS.slice(0, 2))]);
          // Assess: N, df and the postings index as if one writer had written what remains
          const remaining = BM25_CORPUS.filter((c) => c.metadata.document_id !== 'k3');
          expect((await b.stats()).chunks).toBe(remaining.length);
          await expectMatchesReference(a, remaining);
          await expectMatchesReference(b, remaining);
          expect(await registryCounts(a.collectionName), `round ${round}`).toEqual({
            n: remaining.length,
            total: remaining.reduce((sum, c) => sum + analyze(c.text).length, 0),
          });
          expect((await a.checkIntegrity()).keywordIndexMismatch).toBe(0);
        } finally {
          await a.close();
          await b.close();
        }
      }
    });

    it('rebuilds BM25 statistics when the analyzer version recorded differs', async () => {
      // Prepare
      const client = getClient();
      const first = await create();
      const name = first.collectionName;
      await first.addChunks(BM25_CORPUS);
      await first.close();
      await client.query(
        `UPDATE ai4rag_collections SET analyzer_version = 'old', token_total = 1 WHERE name = $1`,
        [name],
      );
      await client.query(`DELETE FROM "${auxiliaryName(name, 't')}"`);
      // Act
      const reopened = await create({ collectionName: name });
      // Assess
      try {
        await expectMatchesReference(reopened, BM25_CORPUS);
      } finally {
        await reopened.close();
      }
    });

    it('never builds an index in a search; buildIndex builds it once annMinRows is reached and search uses it', async () => {
      // Prepare
      const logs: string[] = [];
      const store = await create({ annMinRows: 0, logger: (m) => logs.push(m), distance: 'l2' });
      try {
        await store.addChunks(BM25_CORPUS);
        await store.search('protein', { k: 2 });
        const afterSearch = (await store.stats()).annIndex;
        // Act
        const build = await store.buildIndex();
        const again = await store.buildIndex();
        const hits = await store.search(BM25_CORPUS[4]?.text ?? '', { k: 3 });
        const filtered = await store.search('protein', { k: 5, filter: { document_id: 'k3' } });
        // Assess
        expect(afterSearch).toBe(false);
        expect(build).toMatchObject({ built: true, rows: BM25_CORPUS.length, reason: 'built' });
        expect(again).toMatchObject({ built: false, reason: 'exists' });
        expect((await store.stats()).annIndex).toBe(true);
        expect(hits[0]?.id).toBe('k2#2');
        expect(filtered.map((h) => h.id).sort()).toEqual(['k3#1', 'k3#2']);
        const idx = await getClient().query<{ indexdef: string }>(
          `SELECT indexdef FROM pg_indexes WHERE tablename = $1 AND indexdef LIKE '%USING hnsw%'`,
          [store.collectionName.toLowerCase()],
        );
        // One segment over every row so far: a partial index on the row-id range
        expect(idx.rows).toHaveLength(1);
        expect(idx.rows[0]?.indexdef).toMatch(
          new RegExp(
            `USING hnsw \\(embedding vector_l2_ops\\).* WHERE \\(\\(\\(rid \\+ 0\\) > 0\\) AND \\(\\(rid \\+ 0\\) <= ${BM25_CORPUS.length}\\)\\)$`,
          ),
        );
        expect(build).toMatchObject({ indexed: BM25_CORPUS.length, segments: 1 });
        expect(logs.some((m) => m.includes('HNSW index built'))).toBe(true);
      } finally {
        await store.close();
      }
    });

    it('counts rows not yet folded into the statistics when deciding on the index', async () => {
      // Prepare: exactly annMinRows rows, and no keyword search to fold the statistics log
      const store = await create({ annMinRows: BM25_CORPUS.length });
      try {
        await store.addChunks(BM25_CORPUS);
        // Act
        const r = await store.buildIndex();
        // Assess
        expect(r.built).toBe(true);
        expect((await store.stats()).annIndex).toBe(true);
      } finally {
        await store.close();
      }
    });

    it('answers searches correctly while the index is being built, and after', async () => {
      // Prepare: 2,000 distinct chunks; each query is a chunk's own text, so its chunk must come first
      const chunks = Array.from({ length: 2000 }, (_, i) =>
        makeChunk(
          `doc${i % 40}`,
          i,
          `w${i} x${(i * 31) % 2003} y${(i * 17) % 1999} z${(i * 7) % 1993}`,
        ),
      );
      const store = await create({
        annMinRows: 0,
        embedder: createHashEmbedder({ dimension: 256 }),
      });
      try {
        await store.addChunks(chunks);
        const probe = async () => {
          for (const i of [3, 250, 777, 1500, 1999]) {
            const hits = await store.search((chunks[i] as AI4RAGChunk).text, {
              k: 3,
              searchMode: 'vector',
            });
            expect(hits[0]?.id).toBe((chunks[i] as AI4RAGChunk).id);
          }
        };
        // Act
        const building = store.buildIndex();
        await probe();
        const result = await building;
        await probe();
        const many = await store.search('w5 x9 y7', { k: 100, searchMode: 'vector' });
        const setting = await getClient().query<{ ef: string; scan: string }>(
          `SELECT current_setting('hnsw.ef_search') AS ef, current_setting('hnsw.iterative_scan') AS scan`,
        );
        // Assess: k beyond the default ef_search (40) is served in full, and the statement's HNSW settings end
        // with it (nothing leaks into the pooled session)
        expect(many).toHaveLength(100);
        expect(setting.rows[0]).toEqual({ ef: '40', scan: 'off' });
        expect(result.built).toBe(true);
        expect((await store.stats()).annIndex).toBe(true);
      } finally {
        await store.close();
      }
    });

    it('does not build an index below annMinRows, unless forced', async () => {
      // Prepare
      const store = await create({ annMinRows: 100 });
      try {
        await store.addChunks(BM25_CORPUS);
        // Act
        const below = await store.buildIndex();
        const stillNone = (await store.stats()).annIndex;
        const forced = await store.buildIndex({ force: true });
        // Assess
        expect(below).toMatchObject({
          built: false,
          reason: `below threshold (${BM25_CORPUS.length} of 100 rows): exact scan`,
        });
        expect(stillNone).toBe(false);
        expect(forced.built).toBe(true);
      } finally {
        await store.close();
      }
    });

    it('scans exactly above 2000 dimensions and warns once', async () => {
      // Prepare
      const logs: string[] = [];
      const store = await create({
        annMinRows: 0,
        embedder: createHashEmbedder({ dimension: 2001 }),
        logger: (m) => logs.push(m),
      });
      try {
        await store.addChunks(BM25_CORPUS.slice(0, 3));
        // Act
        const first = await store.search(BM25_CORPUS[1]?.text ?? '', { k: 1 });
        await store.search('protein', { k: 1 });
        // Assess
        expect(first[0]?.id).toBe('k1#2');
        expect((await store.stats()).annIndex).toBe(false);
        expect(logs.filter((m) => m.includes('exact scan'))).toHaveLength(1);
      } finally {
        await store.close();
      }
    });

    it('refuses to reopen a collection with another distance metric', async () => {
      // Prepare
      const first = await create({ distance: 'cosine' });
      await first.close();
      // Act
      const act = create({ collectionName: first.collectionName, distance: 'inner_product' });
      // Assess
      await expect(act).rejects.toThrow(
        `collection ${first.collectionName} uses distance cosine, not inner_product`,
      );
    });

    it('wraps SQL failures in VectorStoreError without SQL text or values', async () => {
      // Prepare
      const store = await create();
      await store.addChunks(BM25_CORPUS.slice(0, 2));
      await getClient().query(`DROP TABLE "${store.collectionName}"`);
      try {
        // Act
        const error = await store
          .getChunksBySequence('secret-doc-id', 1, 2)
          .catch((e: unknown) => e as Error);
        // Assess
        expect(error).toBeInstanceOf(VectorStoreError);
        expect((error as Error).message).toBe(
          `read chunks failed on collection ${store.collectionName} (SQLSTATE 42P01)`,
        );
        expect((error as Error).cause).toBeInstanceOf(Error);
      } finally {
        await store.close();
      }
    });

    it("reports the collection's size on disk: every table named after it, with indexes and TOAST", async () => {
      // Prepare
      const store = await create();
      /** The tables the catalogue holds under the collection's name: found there, not from the store's list. */
      const onDisk = async () => {
        const res = await getClient().query<{ bytes: string | number }>(
          `SELECT COALESCE(sum(pg_total_relation_size(c.oid)), 0)::int8 AS bytes FROM pg_class c
             WHERE c.relkind = 'r' AND (c.relname = lower($1) OR c.relname LIKE lower($1) || '\\_%')`,
          [store.collectionName],
        );
        return Number(res.rows[0]?.bytes);
      };
      /** stats() between two equal catalogue readings (autovacuum may add a map fork meanwhile: read again). */
      const measured = async () => {
        for (let attempt = 0; ; attempt += 1) {
          const before = await onDisk();
          const stats = await store.stats();
          const after = await onDisk();
          if (before === after || attempt === 4)
            return { reported: stats.sizeBytes, before, after };
        }
      };
      try {
        await store.addChunks(BM25_CORPUS);
        // Act
        const small = await measured();
        const words = 'tables grow with every chunk and its postings '.repeat(20);
        await store.addChunks(
          Array.from({ length: 300 }, (_, i) => makeChunk('grow', i + 1, `chunk ${i} ${words}`)),
        );
        const grown = await measured();
        // Assess
        expect(small.before).toBe(small.after);
        expect(small.reported).toBe(small.before);
        expect(grown.before).toBe(grown.after);
        expect(grown.reported).toBe(grown.before);
        expect(grown.before).toBeGreaterThan(small.before);
      } finally {
        await store.close();
      }
    });

    it('rejects vectors of the wrong dimension', async () => {
      // Prepare
      const store = await create();
      try {
        // Act
        const act = store.upsert([{ chunk: makeChunk('x', 1, 'x'), vector: [1, 2, 3] }]);
        // Assess
        await expect(act).rejects.toThrow('vector must hold 8 finite numbers (got 3)');
      } finally {
        await store.close();
      }
    });
  });
}
