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
        // Each hit's text and metadata are the chunk's own.
        const byId = new Map([...dense, ...keyword].map((h) => [h.id, h]));
        for (const h of hybrid) {
          expect(h.text).toBe(byId.get(h.id)?.text);
          expect(h.metadata).toEqual(byId.get(h.id)?.metadata);
        }
      }
    });

    it('hybrid search reads its candidates as ids and the text of the fused top k only, in one statement', async () => {
      for (const query of QUERIES) {
        // Act
        client.statements.length = 0;
        const hits = await store.search(query, {
          k: 5,
          searchMode: 'hybrid',
          rankerStrategy: 'weighted',
          rankerAlpha: 0.5,
        });
        // Assert: statistics, dense ids, keyword ids, then one read of the 5 hits' rows.
        const sides = client.statements.filter((t) => /<=>|WITH q\(term/.test(t));
        const reads = client.statements.filter((t) => /id = ANY\(\$1::text\[\]\)/.test(t));
        expect(sides).toHaveLength(2);
        // Neither side reads a chunk's text (the chunk table's `content` column).
        for (const t of sides) expect(t).not.toMatch(/SELECT id, content, metadata, \(|"\.content/);
        expect(reads).toHaveLength(1);
        expect(client.statements).toHaveLength(4);
        expect(hits).toHaveLength(5);
      }
    });
  });
}

/**
 * A hybrid search reads its hits' text in a statement after the one that ranked them: a document deleted in between
 * must not leave a hit without text, or a short answer. The delete runs for real, from inside the client, just
 * before the read of the text.
 */
function runVanishingHitSuite(label: string, getClient: () => SqlClient): void {
  describe(`pgvector hybrid search while a hit is deleted (${label})`, () => {
    const embedder = createHashEmbedder({ dimension: 8 });
    const name = `ai4rag_vanish_${Date.now().toString(36)}`;
    let store: PgVectorStore;
    let beforeRead: (() => Promise<void>) | undefined;
    const reads: string[] = [];
    beforeAll(async () => {
      const inner = getClient();
      const hooked: SqlClient = {
        dialect: inner.dialect,
        query: async (text, params) => {
          if (/id = ANY\(\$1::text\[\]\)/.test(text)) {
            reads.push(text);
            const hook = beforeRead;
            beforeRead = undefined;
            await hook?.();
          }
          return inner.query(text, params);
        },
        transaction: (fn) => inner.transaction(fn),
        ...(inner.session !== undefined && { session: inner.session }),
        ...(inner.copyFrom !== undefined && { copyFrom: inner.copyFrom }),
        close: () => inner.close(),
      };
      store = await PgVectorStore.create({ client: hooked, embedder, collectionName: name });
      const rand = mulberry32(11);
      await store.addChunks(
        Array.from({ length: 60 }, (_, i) => {
          const words = Array.from(
            { length: 5 + Math.floor(rand() * 8) },
            () => VOCAB[Math.floor(VOCAB.length * rand() ** 2)] as string,
          );
          return makeChunk(`v${i % 15}`, Math.floor(i / 15) + 1, words.join(' '));
        }),
      );
    });
    afterAll(async () => {
      await store?.drop();
    });

    it('searches again: k hits, each with its text, none from the deleted document, as a search after the delete', async () => {
      const params = {
        k: 6,
        searchMode: 'hybrid' as const,
        rankerStrategy: 'rrf' as const,
        includeScores: true,
      };
      const query = QUERIES[1] as string;
      const first = await store.search(query, params);
      const victim = first[0]?.metadata.document_id as string;
      expect(victim).toBeDefined();
      beforeRead = async () => {
        expect(await store.deleteByDocument(victim)).toBeGreaterThan(0);
      };
      reads.length = 0;
      // Act
      const hits = await store.search(query, params);
      // Assert
      expect(beforeRead).toBeUndefined();
      expect(hits).toHaveLength(6);
      for (const h of hits) {
        expect(h.metadata.document_id).not.toBe(victim);
        expect(typeof h.text).toBe('string');
        expect(h.text.length).toBeGreaterThan(0);
      }
      // Exactly what a search after the delete answers (by its fast path: one read of the text).
      reads.length = 0;
      expect(hits).toEqual(await store.search(query, params));
      expect(reads).toHaveLength(1);
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
runVanishingHitSuite('in-memory PGlite', () => lite);

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
  runVanishingHitSuite('PostgreSQL server', () => server);
});
