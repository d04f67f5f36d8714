import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rrfFuse } from '../../../shared/src/retrieval/fusion.js';
import { analyze } from '../../../shared/src/text/analyzer.js';
import { mulberry32 } from '../../../shared/src/util/random.js';
import { bm25Idf, termFrequencies } from '../../../shared/src/vectorstores/pgvector/bm25.js';
import { collectionTables } from '../../../shared/src/vectorstores/pgvector/names.js';
import { PgVectorStore } from '../../../shared/src/vectorstores/pgvector/pgvector-store.js';
import { exactKeywordSearch } from '../../../shared/src/vectorstores/pgvector/search.js';
import {
  fromPgPool,
  openPglite,
  type SqlClient,
} from '../../../shared/src/vectorstores/sql-client.js';
import { clientOptions, probePgServer } from '../../support/pg.js';
import { makeChunk } from './contract.js';
import { createHashEmbedder } from './fake-embedder.js';

const VOCAB = Array.from({ length: 40 }, (_, i) => `t${i}q`);
const QUERIES = ['t0q t3q', 't5q t17q t33q', 't39q', 't2q t2q t21q t8q', 't11q t12q t13q t14q'];

/** A client counting the statements sent outside and inside transactions. */
function counting(inner: SqlClient): SqlClient & { statements: string[] } {
  const statements: string[] = [];
  const wrap = (c: SqlClient): SqlClient => ({
    dialect: c.dialect,
    query: (text, params) => {
      statements.push(text);
      return c.query(text, params);
    },
    transaction: (fn) => c.transaction((tx) => fn(wrap(tx))),
    ...(c.session !== undefined && { session: c.session }),
    close: () => c.close(),
  });
  return Object.assign(wrap(inner), { statements });
}

/**
 * The search read path (issue 12: our overhead beyond the SQL): a keyword search on a quiet collection reads its
 * statistics and the query terms' df in one statement, and returns exactly what the exact scan gives for weights
 * computed from a direct read of the df table; a pending df log is folded first; hybrid is the RRF of its sides.
 */
function runReadPathSuite(label: string, getClient: () => SqlClient): void {
  describe(`pgvector search read path (${label})`, () => {
    const embedder = createHashEmbedder({ dimension: 8 });
    let client: SqlClient & { statements: string[] };
    let store: PgVectorStore;
    const name = `ai4rag_read_${Date.now().toString(36)}`;
    beforeAll(async () => {
      client = counting(getClient());
      store = await PgVectorStore.create({ client, embedder, collectionName: name });
      const rand = mulberry32(3);
      const chunks = Array.from({ length: 120 }, (_, i) => {
        const words = Array.from(
          { length: 6 + Math.floor(rand() * 10) },
          () => VOCAB[Math.floor(VOCAB.length * rand() ** 2)] as string,
        );
        return makeChunk(`d${i % 12}`, Math.floor(i / 12) + 1, words.join(' '));
      });
      await store.addChunks(chunks);
      // The first search folds the df log the ingest left (the path the second test takes again).
      await store.keywordSearch('t0q', { k: 1 });
    });
    afterAll(async () => {
      await store?.drop();
    });

    /** The exact scan's top k for weights from the df table read directly (n from the registry's stats). */
    const reference = async (query: string, k: number) => {
      const t = collectionTables(name);
      const qtf = termFrequencies(analyze(query));
      const df = await client.query<{ term: number; df: number }>(
        `SELECT term, df FROM ${t.dfTable} WHERE term = ANY($1::int4[]) ORDER BY term`,
        [[...qtf.keys()]],
      );
      const n = (await store.stats()).chunks;
      const weights = new Map(
        df.rows.map((r) => [r.term, bm25Idf(n, Number(r.df)) * (qtf.get(r.term) ?? 0)]),
      );
      const ctx = {
        client,
        t,
        distance: 'cosine' as const,
        annIndex: false,
        iterativeScan: false,
        efSearch: 200,
        keywordDepth: 0,
      };
      return (await exactKeywordSearch(ctx, weights, k, undefined)).map((r) => [r.id, r.score]);
    };

    it('keyword search: one statistics statement, one search statement, the exact scan’s ids, scores and order', async () => {
      for (const query of QUERIES) {
        // Act
        client.statements.length = 0;
        const hits = await store.keywordSearch(query, { k: 10 });
        // Assert
        expect(client.statements).toHaveLength(2);
        expect(hits.map((h) => [h.id, h.score])).toEqual(await reference(query, 10));
        expect(hits.length).toBeGreaterThan(0);
      }
    });

    it('a pending df log is folded before the search, and the result is the same', async () => {
      // Prepare: a log entry whose deltas cancel out (statistics unchanged, but the log must be folded).
      const t = collectionTables(name);
      const query = QUERIES[1] as string;
      const before = await store.keywordSearch(query, { k: 10 });
      await client.query(`INSERT INTO ${t.dfLog} (term, delta) VALUES (7, 1), (7, -1)`);
      // Act
      const after = await store.keywordSearch(query, { k: 10 });
      // Assert
      const log = await client.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${t.dfLog}`);
      expect(log.rows[0]?.n).toBe(0);
      expect(after).toEqual(before);
      expect(after.map((h) => [h.id, h.score])).toEqual(await reference(query, 10));
    });

    it('hybrid search is the RRF of the dense and keyword lists it reads', async () => {
      for (const query of QUERIES) {
        // Act
        const hybrid = await store.search(query, {
          k: 10,
          searchMode: 'hybrid',
          rankerStrategy: 'rrf',
          includeScores: true,
        });
        // Assert
        const dense = await store.search(query, {
          k: 100,
          searchMode: 'vector',
          includeScores: true,
        });
        const keyword = await store.keywordSearch(query, { k: 100 });
        const side = (hits: typeof dense) =>
          hits.map((h) => ({ id: h.id, score: h.score as number }));
        const fused = rrfFuse([side(dense), side(keyword)], 60).slice(0, 10);
        expect(hybrid.map((h) => [h.id, h.score])).toEqual(fused.map((f) => [f.id, f.score]));
      }
    });
  });
}

let lite: SqlClient;
beforeAll(async () => {
  lite = await openPglite();
});
afterAll(async () => {
  await lite?.close();
});
runReadPathSuite('in-memory PGlite', () => lite);

const config = await probePgServer(2000);
describe.skipIf(config === undefined)('real PostgreSQL server', () => {
  let server: SqlClient;
  beforeAll(() => {
    if (config === undefined) return;
    server = fromPgPool(new pg.Pool({ ...clientOptions(config), max: 2 }), { ownsPool: true });
  });
  afterAll(async () => {
    await server?.close();
  });
  runReadPathSuite('PostgreSQL server', () => server);
});
