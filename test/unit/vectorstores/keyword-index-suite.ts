import { describe, expect, it } from 'vitest';
import type { AI4RAGChunk } from '../../../shared/src/chunking/types.js';
import { analyze } from '../../../shared/src/text/analyzer.js';
import { mulberry32 } from '../../../shared/src/util/random.js';
import { sparseLiteral, termFrequencies } from '../../../shared/src/vectorstores/pgvector/bm25.js';
import {
  LOG_VACUUM_BYTES,
  LOG_VACUUM_SERVER,
} from '../../../shared/src/vectorstores/pgvector/bm25-refresh.js';
import {
  allPostings,
  BULK_SETTING,
  DELETE_PLAN_MARK,
  keywordIndexNames,
  keywordPostingsRead,
  keywordQueryUnbounded,
  keywordRescore,
} from '../../../shared/src/vectorstores/pgvector/keyword-index.js';
import { collectionTables } from '../../../shared/src/vectorstores/pgvector/names.js';
import {
  dropPgCollection,
  PgVectorStore,
} from '../../../shared/src/vectorstores/pgvector/pgvector-store.js';
import { mergeCandidates } from '../../../shared/src/vectorstores/pgvector/postings-merge.js';
import type { SqlClient } from '../../../shared/src/vectorstores/sql-client.js';
import { recordingClient } from '../../support/recording-client.js';
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
    `SELECT (SELECT count(*) FROM ${allPostings(n)} a)::int AS n`,
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
    /** Each term's postings in collection `name` (its df), read from both postings tables. */
    const listLengths = async (name: string) =>
      new Map(
        (
          await getClient().query<{ term: number; n: number }>(
            `SELECT term, count(*)::int AS n FROM ${allPostings(keywordIndexNames(name))} a GROUP BY term`,
          )
        ).rows.map((r) => [r.term, r.n]),
      );
    /**
     * A new collection of 60 chunks (no list longer than 60) read at depth 10 (`shallow`, its keyword statements
     * named in `sent`; `onRescore` sees the rescoring's params) and by the exact scan (`exact`), with each term's
     * list length.
     */
    const sixtyChunks = async (
      onRescore: (params: readonly unknown[] | undefined) => void = () => {},
    ) => {
      const name = fresh();
      const sent: string[] = [];
      const shallow = await PgVectorStore.create({
        client: recordingClient(getClient(), (text, params) => {
          if (text.includes('AS bound')) sent.push('first');
          else if (text.includes('int8send')) sent.push(`deeper ${String(params?.[1])}`);
          else if (text.includes('AS u(rid, up, i)')) {
            onRescore(params);
            sent.push('rescore');
          } else if (text.includes('sparsevec) < 0')) sent.push('exact');
        }),
        embedder,
        collectionName: name,
        keywordDepth: 10,
      });
      const exact = await open(name, 0);
      const close = async () => {
        await shallow.close();
        await exact.close();
        await dropPgCollection(getClient(), name);
      };
      try {
        await shallow.addChunks(corpus(60, 6, 5));
        return { sent, shallow, exact, lengths: await listLengths(name), close };
      } catch (error) {
        await close();
        throw error;
      }
    };

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

    it('a large collection writes fresh postings; a build folds them; searches and the check read both', async () => {
      // Prepare: a store that treats every collection as large (fresh postings from the first row), folding from
      // 500 postings; depth 5 so the keyword reads cut lists in both tables
      const name = fresh();
      const large = await PgVectorStore.create({
        client: getClient(),
        embedder,
        collectionName: name,
        keywordDepth: 5,
        keywordIndex: { freshFromRow: 0, foldMin: 500 },
      });
      const exact = await open(name, 0);
      const n = keywordIndexNames(name);
      const scalar = async (sql: string) =>
        Number((await getClient().query<{ n: number }>(sql)).rows[0]?.n);
      const count = (table: string) => scalar(`SELECT count(*)::int AS n FROM ${table}`);
      const hits = async () => {
        const out: string[][] = [];
        for (const q of QUERIES)
          out.push((await large.keywordSearch(q, { k: 10 })).map((h) => h.id));
        return out;
      };
      try {
        await large.addChunks(corpus(200, 20, 3));
        const total = await postingCount(getClient(), name);
        expect(await count(n.postings)).toBe(0);
        expect(await count(n.fresh)).toBe(total);
        const before = await hits();
        for (const q of QUERIES.slice(0, 3)) {
          const want = (await exact.keywordSearch(q, { k: 10 })).map((h) => h.id);
          const got = (
            await PgVectorStore.create({
              client: getClient(),
              embedder,
              collectionName: name,
            }).then(async (s) => {
              try {
                return await s.keywordSearch(q, { k: 10 });
              } finally {
                await s.close();
              }
            })
          ).map((h) => h.id);
          expect(got, q).toEqual(want);
        }
        expect((await large.checkIntegrity()).keywordIndexMismatch).toBe(0);

        // Act: a build below the fold's threshold, then more rows and a build above it
        const below = await PgVectorStore.create({
          client: getClient(),
          embedder,
          collectionName: name,
          keywordIndex: { foldMin: total + 1 },
        });
        const notFolded = await below.buildIndex();
        await below.close();
        const folded = await large.buildIndex();

        // Assert: every posting moved once, the same hits, the check clean
        expect(notFolded.postingsFolded).toBeUndefined();
        expect(folded.postingsFolded).toBe(total);
        expect([await count(n.postings), await count(n.fresh)]).toEqual([total, 0]);
        expect(await hits()).toEqual(before);
        expect((await large.checkIntegrity()).keywordIndexMismatch).toBe(0);

        // Act: new rows (fresh again), then a delete of a document whose rows' postings are in both tables
        await large.addChunks(
          corpus(40, 20, 5).map((c, i) =>
            makeChunk(String(c.metadata.document_id), 100 + i, c.text),
          ),
        );
        const ofDoc1 = (table: string) =>
          scalar(
            `SELECT count(*)::int AS n FROM ${table} WHERE rid IN (SELECT rid FROM ${n.table} WHERE document_id = 'doc1')`,
          );
        const inBoth = [await ofDoc1(n.postings), await ofDoc1(n.fresh)];
        await large.deleteDocument('doc1');

        // Assert: doc1's postings were in both tables; none of its rows' postings is left in either
        expect(inBoth.every((x) => x > 0)).toBe(true);
        expect((await large.checkIntegrity()).keywordIndexMismatch).toBe(0);
        expect(await postingCount(getClient(), name)).toBe(
          await scalar(
            `SELECT count(*)::int AS n FROM ${n.table} t,
               LATERAL unnest(string_to_array(btrim(split_part(t.bm25::text, '/', 1), '{}'), ',')) e`,
          ),
        );

        // Act: `merge` folds whatever is fresh; then two fresh postings, under a fold minimum of 3
        const left = await count(n.fresh);
        const merged = await large.buildIndex({ merge: true });
        await large.addChunks([makeChunk('doc99', 1, 'w0x w1x')]);
        const eager = await PgVectorStore.create({
          client: getClient(),
          embedder,
          collectionName: name,
          keywordIndex: { freshFromRow: 0, foldMin: 3 },
        });
        const small = await eager.buildIndex();
        const forced = await eager.buildIndex({ merge: true });
        await eager.close();

        // Assert: the minimum holds a small fold back; `merge` does not wait for it
        expect(merged.postingsFolded).toBe(left);
        expect(small.postingsFolded).toBeUndefined();
        expect(forced.postingsFolded).toBe(2);
        expect(await count(n.fresh)).toBe(0);
        expect((await large.checkIntegrity()).keywordIndexMismatch).toBe(0);
      } finally {
        await large.close();
        await exact.close();
        await dropPgCollection(getClient(), name);
      }
    });

    it('a fold whose fresh postings outgrew the folded ones trades the two tables and moves the smaller; every later write, delete and search finds its postings', async () => {
      // Prepare: 60 rows' postings folded, then 200 more rows' fresh (every posting is written fresh, then folded
      // from one posting), one row rewritten and a document deleted; depth 5 so the keyword reads cut lists in both
      // tables
      const name = fresh();
      const settings = { freshFromRow: 0, foldMin: 1 };
      const open2 = (swapMinBytes: number) =>
        PgVectorStore.create({
          client: getClient(),
          embedder,
          collectionName: name,
          keywordDepth: 5,
          keywordIndex: { ...settings, swapMinBytes },
        });
      const noSwap = await open2(Number.MAX_SAFE_INTEGER);
      const exact = await open(name, 0);
      const n = keywordIndexNames(name);
      const scalar = async (sql: string, params: unknown[] = []) =>
        String((await getClient().query<{ v: unknown }>(sql, params)).rows[0]?.v);
      const count = async (table: string) =>
        Number(await scalar(`SELECT count(*)::int AS v FROM ${table}`));
      const oid = (table: string) => scalar('SELECT to_regclass($1)::oid::text AS v', [table]);
      const indexOn = (index: string) =>
        scalar(
          'SELECT indrelid::regclass::oid::text AS v FROM pg_index WHERE indexrelid = to_regclass($1)',
          [index],
        );
      const agrees = async (store: PgVectorStore) => {
        for (const q of QUERIES) {
          const want = (await exact.keywordSearch(q, { k: 10 })).map((h) => h.id);
          expect(
            (await store.keywordSearch(q, { k: 10 })).map((h) => h.id),
            q,
          ).toEqual(want);
        }
      };
      const chunks = corpus(260, 20, 11);
      let swapper: PgVectorStore | undefined;
      try {
        await noSwap.addChunks(chunks.slice(0, 60));
        const first = await noSwap.buildIndex();
        const foldedFirst = await count(n.postings);
        await noSwap.addChunks(chunks.slice(60));
        // the trigger's statements and the searches' run once before the swap (PostgreSQL caches their plans)
        await noSwap.addChunks([makeChunk('doc4', 1, 'w1x w2x w2x w40x')]);
        await noSwap.deleteDocument('doc2');
        await agrees(noSwap);
        const folded = await count(n.postings);
        const freshCount = await count(n.fresh);
        const [foldedOid, freshOid] = [await oid(n.postings), await oid(n.fresh)];
        expect(first.postingsFolded).toBe(foldedFirst);
        expect(first.postingsSwapped).toBeUndefined();
        expect(freshCount).toBeGreaterThan(folded);

        // Act: a build that may swap (any size), on a store opened after the writes
        swapper = await open2(0);
        const swapped = await swapper.buildIndex();

        // Assert: the fresh table is now the folded one (same relation, its index with it), the formerly folded
        // postings moved into it, the fresh table empty; every posting once; the same hits as the exact scan
        expect(swapped.postingsSwapped).toBe(true);
        expect(swapped.postingsFolded).toBe(folded);
        expect(await oid(n.postings)).toBe(freshOid);
        expect(await oid(n.fresh)).toBe(foldedOid);
        expect(await indexOn(n.postingsIndex)).toBe(freshOid);
        expect(await indexOn(n.freshIndex)).toBe(foldedOid);
        expect([await count(n.postings), await count(n.fresh)]).toEqual([folded + freshCount, 0]);
        expect((await swapper.checkIntegrity()).keywordIndexMismatch).toBe(0);
        await agrees(swapper);

        // Act: writes on both stores' sessions after the swap (new rows, a document rewritten, one deleted)
        await noSwap.addChunks(
          corpus(30, 20, 12).map((c, i) => makeChunk('doc5', 100 + i, c.text)),
        );
        await swapper.addChunks([makeChunk('doc7', 1, 'w0x w9x w9x w33x')]);
        await noSwap.deleteDocument('doc3');
        await swapper.deleteDocument('doc8');

        // Assert: the new postings are fresh, nothing is missing or left over, the hits still exact
        expect(await count(n.fresh)).toBeGreaterThan(0);
        expect((await noSwap.checkIntegrity()).keywordIndexMismatch).toBe(0);
        await agrees(noSwap);
        await agrees(swapper);
      } finally {
        await swapper?.close();
        await noSwap.close();
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

    it('reads deeper when the first read proves nothing, or straight away past two long lists; covering the lists, exactly', async () => {
      // Prepare: 60 chunks, so no list is longer than 60; depth 10 cuts the common words' lists, and the deeper
      // read (deeperDepth(10, ·) = 160 postings a list for ≤ 6 cut lists) takes every posting of these queries
      const { sent, shallow, exact, lengths, close } = await sixtyChunks((params) => {
        // The rescoring: every candidate, ordered by partial score, with a bound at least its score
        const rids = params?.[0] as number[];
        expect(new Set(rids).size).toBe(rids.length);
        expect(rids.length).toBeLessThanOrEqual(400);
      });
      try {
        const seen = new Set<string>();
        for (const q of QUERIES) {
          const long = [...termFrequencies(analyze(q)).keys()].filter(
            (t) => (lengths.get(t) ?? 0) > 40,
          ).length;
          sent.length = 0;
          // Act
          const got = await shallow.keywordSearch(q, { k: 10 });
          const want = await exact.keywordSearch(q, { k: 10 });
          // Assert: the exact scan's ids, order and scores
          expect(
            got.map((h) => h.id),
            q,
          ).toEqual(want.map((h) => h.id));
          got.forEach((h, i) => {
            expect(h.score).toBeCloseTo(want[i]?.score as number, 5);
          });
          // Two lists over 4 × 10 postings: no first read; else a first read, and a deeper one unless it proved
          if (long >= 2) expect(sent, q).toEqual(['deeper 160', 'rescore']);
          else expect([['first'], ['first', 'deeper 160', 'rescore']], q).toContainEqual(sent);
          seen.add(sent.join('+'));
        }
        // The sample covers the three paths
        expect([...seen].sort()).toEqual([
          'deeper 160+rescore',
          'first',
          'first+deeper 160+rescore',
        ]);
      } finally {
        await close();
      }
    });

    it('a hybrid search’s keyword side reads deeper at once when a list is cut, and first when none is: the same hits as with the exact scan, and no exact scan', async () => {
      // Prepare: 60 chunks and depth 10, as above; a hybrid search takes 100 candidates a side, more than match
      const { sent, shallow, exact, lengths, close } = await sixtyChunks();
      try {
        const seen = new Set<string>();
        for (const q of QUERIES) {
          const cut = [...termFrequencies(analyze(q)).keys()].some(
            (t) => (lengths.get(t) ?? 0) > 10,
          );
          for (const rankerStrategy of ['rrf', 'weighted'] as const) {
            sent.length = 0;
            // Act
            const params = {
              k: 10,
              searchMode: 'hybrid',
              rankerStrategy,
              includeScores: true,
            } as const;
            const got = await shallow.search(q, params);
            const want = await exact.search(q, params);
            // Assert: the hybrid hits of the exact scan's keyword side, in order, from one read of each kind
            expect(
              got.map((h) => h.id),
              q,
            ).toEqual(want.map((h) => h.id));
            got.forEach((h, i) => {
              expect(h.score).toBeCloseTo(want[i]?.score as number, 6);
            });
            expect(sent, q).toEqual(cut ? ['deeper 160', 'rescore'] : ['first']);
            seen.add(sent.join('+'));
          }
        }
        // The sample covers both paths
        expect([...seen].sort()).toEqual(['deeper 160+rescore', 'first']);
      } finally {
        await close();
      }
    });

    it('the deeper read bounds every candidate and rescores only those that can reach the top k: the same hits as rescoring them all, and as summing in SQL', async () => {
      // Prepare: 400 chunks; each sample query with random weights, its lists cut at 5 or 20 postings, with and
      // without a predicate on the rows (as a filter would add)
      const name = fresh();
      const store = await open(name);
      const n = keywordIndexNames(name);
      const visible = collectionTables(name).visible;
      const rand = mulberry32(11);
      let pruned = 0;
      try {
        await store.addChunks(corpus(400, 40, 7));
        for (const q of QUERIES) {
          const terms = [...termFrequencies(analyze(q)).keys()];
          const weights = new Map(terms.map((t) => [t, 0.5 + 2.5 * rand()]));
          for (const depth of [5, 20]) {
            const read = await getClient().query<{
              folded: Uint8Array | null;
              fresh: Uint8Array | null;
            }>(keywordPostingsRead(n), [terms, depth]);
            const picked = mergeCandidates(
              read.rows.map((r, i) => ({
                qw: weights.get(terms[i] as number) as number,
                lists: [r.folded, r.fresh],
              })),
              depth,
              400,
            );
            const rescore = async (extra: string, first: number, k: number) =>
              (
                await getClient().query<{ id: string; score: number }>(
                  keywordRescore(n, visible, extra, 'ids'),
                  [picked.rids, picked.uppers, first, sparseLiteral(weights), k],
                )
              ).rows;
            // Act: every candidate's exact score
            const every = await rescore('', picked.rids.length, picked.rids.length);
            // Assert: each candidate scores between its partial score and its bound
            const at = new Map(picked.rids.map((rid, i) => [rid, i]));
            const ridOf = new Map(
              (
                await getClient().query<{ id: string; rid: string }>(
                  `SELECT id, rid FROM ${n.table} WHERE rid = ANY($1::int8[])`,
                  [picked.rids],
                )
              ).rows.map((r) => [r.id, Number(r.rid)]),
            );
            expect(every.length, q).toBe(picked.rids.length);
            for (const h of every) {
              const i = at.get(ridOf.get(h.id) as number) as number;
              expect(h.score, q).toBeGreaterThanOrEqual(
                (picked.partials[i] as number) * (1 - 1e-5),
              );
              expect(h.score, q).toBeLessThanOrEqual((picked.uppers[i] as number) * (1 + 1e-5));
            }
            for (const extra of ['', `AND ${n.table}.rid % 3 <> 0`]) {
              for (const k of [3, 10]) {
                // Act: the top k rescoring them all, and rescoring k first and the rest only above the bar
                const all = await rescore(extra, picked.rids.length, k);
                const some = await rescore(extra, k, k);
                // The same read summed by the server (the path of a read too long to send)
                const sql = (
                  await getClient().query<{ id: string; score: number }>(
                    keywordQueryUnbounded(n, visible, extra, 'ids'),
                    [
                      terms,
                      terms.map((t) => weights.get(t)),
                      depth,
                      400,
                      sparseLiteral(weights),
                      k,
                    ],
                  )
                ).rows;
                // Assert
                expect(some, `${q} depth ${depth} k ${k} ${extra}`).toEqual(all);
                expect(sql, `${q} depth ${depth} k ${k} ${extra}`).toEqual(all);
                const bar = all[k - 1]?.score ?? Number.NEGATIVE_INFINITY;
                pruned += picked.uppers.slice(k).filter((u) => u < bar).length;
              }
            }
          }
        }
        // The sample has candidates the bar leaves out
        expect(pruned).toBeGreaterThan(0);
      } finally {
        await store.close();
        await dropPgCollection(getClient(), name);
      }
    });

    it('a fold that empties a large statistics log vacuums it, from a search and from a writer', async () => {
      // Prepare: 40,000 zero-delta log rows (about 1.4 MB) appended behind the store's back; they change no
      // statistics when folded, so only the table tells whether it was compacted
      const name = fresh();
      const vacuums: string[] = [];
      const client = recordingClient(getClient(), (text) => {
        if (text.startsWith('VACUUM')) vacuums.push(text);
      });
      const store = await PgVectorStore.create({ client, embedder, collectionName: name });
      const log = collectionTables(name).dfLog;
      const size = async () =>
        Number(
          (
            await getClient().query<{ b: string }>('SELECT pg_relation_size($1::regclass) AS b', [
              log,
            ])
          ).rows[0]?.b,
        );
      const flood = () =>
        getClient().query(
          `INSERT INTO ${log} (term, delta) SELECT g, 0 FROM generate_series(1, 40000) g`,
        );
      // On a server, another session's open snapshot can keep the dead rows (and the pages) a while; PGlite has
      // no other session, and no autovacuum either, so there the table must be empty at once.
      const emptied = async () => {
        if (getClient().dialect === 'pglite') expect(await size()).toBe(0);
      };
      try {
        await store.addChunks(corpus(20, 2, 1));
        const before = await store.keywordSearch('w0x w1x', { k: 5 });
        expect(vacuums).toEqual([]);
        await flood();
        expect(await size()).toBeGreaterThan(LOG_VACUUM_BYTES);

        // Act 1: a keyword search folds the log before it reads the statistics
        const after = await store.keywordSearch('w0x w1x', { k: 5 });
        // Assert 1: the emptied table was vacuumed (truncated on PGlite; on a server without waiting for a lock);
        // the statistics did not move
        const vacuum =
          getClient().dialect === 'pglite' ? `VACUUM ${log}` : `VACUUM ${LOG_VACUUM_SERVER} ${log}`;
        expect(vacuums).toEqual([vacuum]);
        await emptied();
        expect(after).toEqual(before);

        // Act 2: a staged write folds the log once it is finished (as every ingest's write does)
        await flood();
        const version = await store.beginWrite({ owner: 'test' });
        await store.finishWrite(version, []);
        // Assert 2
        expect(vacuums).toEqual([vacuum, vacuum]);
        await emptied();
      } finally {
        await store.close();
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

    it('a delete or a re-weighting update finds each of its postings by one index probe, however many share its weight', async () => {
      // Prepare: 1,200 chunks of four texts, so every posting of a term shares its weight with 300 others (the case
      // where the planner, left to itself, read them all for each probe or hashed the whole postings table)
      const name = fresh();
      const store = await open(name);
      const n = keywordIndexNames(name);
      const texts = [
        'w0x w1x w2x w3x w4x',
        'w0x w5x w6x w7x w8x',
        'w1x w9x w10x w11x',
        'w2x w12x w13x w14x',
      ];
      try {
        await store.addChunks(
          Array.from({ length: 1200 }, (_, i) =>
            makeChunk(`doc${i % 40}`, Math.floor(i / 40) + 1, texts[i % 4] as string),
          ),
        );
        const t = collectionTables(name).table;
        const ownPostings = async (doc: string) =>
          Number(
            (
              await getClient().query<{ n: number }>(
                `SELECT count(*)::int AS n FROM ${allPostings(n)} a WHERE rid IN (SELECT rid FROM ${t} WHERE document_id = $1)`,
                [doc],
              )
            ).rows[0]?.n,
          );
        const readsOf = (sql: string, params: unknown[]) =>
          getClient().transaction(async (tx) => {
            // The backend's counts not yet flushed, before and after (they can include earlier statements)
            const counts = async () =>
              (
                await tx.query<{ seq: number; fetched: number }>(
                  `SELECT sum(seq_scan)::int AS seq, sum(idx_tup_fetch)::int AS fetched
                   FROM pg_stat_xact_user_tables WHERE relid IN (to_regclass($1), to_regclass($2))`,
                  [n.postings, n.fresh],
                )
              ).rows[0] ?? { seq: -1, fetched: -1 };
            const before = await counts();
            await tx.query(sql, params);
            const after = await counts();
            return { seq: after.seq - before.seq, fetched: after.fetched - before.fetched };
          });
        const deleted = await ownPostings('doc0');
        const reweighed = await ownPostings('doc1');
        expect([deleted, reweighed]).toEqual([150, 150]); // 30 chunks each, all of one 5-word text

        // Act: a delete of one document's rows, and an update giving another's rows the weights of a third text
        const del = await readsOf(`DELETE FROM ${t} WHERE document_id = $1`, ['doc0']);
        const upd = await readsOf(
          `UPDATE ${t} SET bm25 = (SELECT bm25 FROM ${t} WHERE document_id = 'doc3' LIMIT 1) WHERE document_id = $1`,
          ['doc1'],
        );

        // Assert: no scan of either postings table, one posting fetched per posting removed, and the index still exact
        expect(del).toEqual({ seq: 0, fetched: deleted });
        expect(upd).toEqual({ seq: 0, fetched: reweighed });
        expect((await store.checkIntegrity()).keywordIndexMismatch).toBe(0);
      } finally {
        await store.close();
        await dropPgCollection(getClient(), name);
      }
    });

    it('a batch of new and changed rows keeps every posting; a writer whose avgdl is stale weighs with the collection’s', async () => {
      // Prepare: a collection, and a second store on it whose re-weighting will move the avgdl under the first
      const name = fresh();
      const writer = await open(name);
      const other = await open(name);
      const t = collectionTables(name);
      try {
        const chunks = corpus(120, 12, 11);
        await writer.addChunks(chunks);
        const bm25Of = async (id: string) =>
          (
            await getClient().query<{ b: string }>(
              `SELECT bm25::text AS b FROM ${t.table} WHERE id = $1`,
              [id],
            )
          ).rows[0]?.b;

        // Act: one batch holding changed rows (updated in place, their postings by the trigger) and new rows
        // (copied with the postings the writer computed); then long texts and a search re-weighting the
        // collection from the other store, and one more row from each store with the same text
        const mixed = [
          ...chunks.slice(0, 10).map((c) => ({ ...c, text: `${c.text} w50x w51x` })),
          ...corpus(10, 2, 12).map((c, i) => ({ ...c, id: `mixed-${i}` })),
        ];
        await writer.addChunks(mixed);
        const afterMixed = await writer.checkIntegrity();
        await other.addChunks(
          corpus(120, 12, 13).map((c, i) => ({
            ...c,
            id: `long-${i}`,
            text: `${c.text} ${c.text} ${c.text} ${c.text} ${c.text}`,
          })),
        );
        const avgdlBefore = await getClient().query<{ a: number }>(
          'SELECT bm25_avgdl_weighted AS a FROM ai4rag_collections WHERE name = $1',
          [t.key],
        );
        await other.keywordSearch('w1x', { k: 5 }); // folds statistics, re-weights every row
        const avgdlAfter = await getClient().query<{ a: number }>(
          'SELECT bm25_avgdl_weighted AS a FROM ai4rag_collections WHERE name = $1',
          [t.key],
        );
        const text = 'w3x w17x w42x w3x w0x';
        await writer.addChunks([makeChunk('late', 1, text)].map((c) => ({ ...c, id: 'late-a' })));
        const third = await open(name); // knows no avgdl: weighs its row with the registry's, read in its write
        await third.addChunks([makeChunk('late', 2, text)].map((c) => ({ ...c, id: 'late-b' })));
        await third.close();

        // Assert: no posting out of step after the mixed batch or at the end; the avgdl did move, and the writer
        // holding the old one weighed its row exactly as a store opened after the re-weighting
        expect(afterMixed.keywordIndexMismatch).toBe(0);
        expect(Number(avgdlAfter.rows[0]?.a)).not.toBe(Number(avgdlBefore.rows[0]?.a));
        expect(await bm25Of('late-a')).toBe(await bm25Of('late-b'));
        expect((await writer.checkIntegrity()).keywordIndexMismatch).toBe(0);
      } finally {
        await writer.close();
        await other.close();
        await dropPgCollection(getClient(), name);
      }
    });

    it('a trigger function of an older version (no setting to stand aside, or deletes without the bounded probe) is replaced by the next writer', async () => {
      // Prepare: a collection whose trigger function always writes postings, as the first version did
      const name = fresh();
      const first = await open(name);
      await first.addChunks(corpus(40, 4, 21));
      await first.close();
      const n = keywordIndexNames(name);
      const source = async () =>
        (
          await getClient().query<{ src: string }>(
            'SELECT prosrc AS src FROM pg_proc WHERE oid = to_regprocedure($1)',
            [`${n.fn}()`],
          )
        ).rows[0]?.src ?? '';
      const current = await source();
      await getClient().query(
        `CREATE OR REPLACE FUNCTION ${n.fn}() RETURNS trigger LANGUAGE plpgsql AS $fn$ ${current.replaceAll(BULK_SETTING, 'ai4rag.no_such_setting')} $fn$`,
      );
      expect(await source()).not.toContain(BULK_SETTING);
      // A function that would write postings twice is not opened without its migration, even to read
      if (label.includes('PGlite')) {
        await expect(
          PgVectorStore.create({
            client: getClient(),
            embedder,
            collectionName: name,
            createIfMissing: false,
          }),
        ).rejects.toThrow(/needs a schema migration \(missing .*ai4rag\.postings_bulk\)\)/);
      }
      // Act: a writer opens the collection and adds rows through COPY
      const writer = await open(name);
      try {
        await writer.addChunks(corpus(40, 4, 22).map((c, i) => ({ ...c, id: `again-${i}` })));
        // Assert: the function honours the setting again, and no posting was written twice
        expect(await source()).toContain(BULK_SETTING);
        expect((await writer.checkIntegrity()).keywordIndexMismatch).toBe(0);
        // And the next version: one that deletes postings without the bounded probe is replaced too
        await getClient().query(
          `CREATE OR REPLACE FUNCTION ${n.fn}() RETURNS trigger LANGUAGE plpgsql AS $fn$ ${current.replaceAll(DELETE_PLAN_MARK, 'an older plan')} $fn$`,
        );
        expect(await source()).not.toContain(DELETE_PLAN_MARK);
        // A reader (which may not change the schema) opens and searches as it is; the function stays old
        const reader = await PgVectorStore.create({
          client: getClient(),
          embedder,
          collectionName: name,
          createIfMissing: false,
        });
        expect((await reader.keywordSearch('w0x w1x', { k: 3 })).length).toBe(3);
        await reader.close();
        expect(await source()).not.toContain(DELETE_PLAN_MARK);
        const next = await open(name);
        await next.deleteDocument('doc1');
        await next.close();
        expect(await source()).toContain(DELETE_PLAN_MARK);
        expect((await writer.checkIntegrity()).keywordIndexMismatch).toBe(0);
      } finally {
        await writer.close();
        await dropPgCollection(getClient(), name);
      }
    });

    it('a build packs the long folded lists: a read from the packs returns the b-tree’s bytes, searches the exact top 10; an addition to the folded postings empties them, a delete does not, and a build waits for a writer adding to them', async () => {
      // Prepare: a large collection (fresh postings from the first row, folded from one posting), depth 5 (packs of
      // at most 16 × 5 = 80 postings), terms of more than 10 postings packed
      const name = fresh();
      const n = keywordIndexNames(name);
      const settings = { freshFromRow: 0, foldMin: 1, packMinDf: 10 };
      const sent: string[] = [];
      const store = await PgVectorStore.create({
        client: recordingClient(getClient(), (text) => {
          if (text.includes('int8send') && !text.includes('INSERT')) sent.push(text);
        }),
        embedder,
        collectionName: name,
        keywordDepth: 5,
        keywordIndex: settings,
      });
      const exact = await open(name, 0);
      const scalar = async (sql: string, params?: unknown[]) =>
        Number((await getClient().query<{ n: number }>(sql, params)).rows[0]?.n);
      const packs = () => scalar(`SELECT count(*)::int AS n FROM ${n.packed}`);
      const terms = async () => [
        ...new Set(QUERIES.flatMap((q) => [...termFrequencies(analyze(q)).keys()])),
      ];
      /** The deeper read of every query term at `depth`, from the packs and from the b-tree. */
      const reads = async (depth: number) => {
        const t = await terms();
        const bytes = async (packed: boolean) =>
          (
            await getClient().query<{ folded: Uint8Array | null; fresh: Uint8Array | null }>(
              keywordPostingsRead(n, packed),
              [t, depth],
            )
          ).rows.map((r) => [
            r.folded === null ? null : Buffer.from(r.folded).toString('hex'),
            r.fresh === null ? null : Buffer.from(r.fresh).toString('hex'),
          ]);
        return { packed: await bytes(true), btree: await bytes(false) };
      };
      const sameAsExact = async () => {
        for (const q of QUERIES) {
          const want = (await exact.keywordSearch(q, { k: 10 })).map((h) => h.id);
          expect(
            (await store.keywordSearch(q, { k: 10 })).map((h) => h.id),
            q,
          ).toEqual(want);
        }
      };
      try {
        await store.addChunks(corpus(300, 30, 7));
        await store.refreshStatistics();

        // Act: a build of an ingestion (no packs), then a maintenance build (fold, then packs)
        const ingestion = await store.buildIndex();
        const packsAfterIngestion = await packs();
        const built = await store.buildIndex({ pack: true });

        // Assert: one pack per term of more than 10 postings, each the head of its list in the b-tree's order
        const long = [...(await listLengths(name)).values()].filter((len) => len > 10).length;
        expect(long).toBeGreaterThan(5);
        expect(ingestion.postingsPacked).toBeUndefined();
        expect(packsAfterIngestion).toBe(0);
        expect(built.postingsPacked).toBe(long);
        expect(await packs()).toBe(long);
        for (const depth of [5, 80, 200]) {
          const r = await reads(depth);
          expect(r.packed, `depth ${depth}`).toEqual(r.btree);
        }
        expect(
          await scalar(`SELECT count(*)::int AS n FROM ${n.packed} WHERE NOT whole AND n <> 80`),
        ).toBe(0);
        sent.length = 0;
        await sameAsExact();
        expect(sent.length).toBeGreaterThan(0);
        expect(sent.every((text) => text.includes(n.packed))).toBe(true);

        // Act: a document deleted (its postings leave the b-tree, not the packs)
        await store.deleteDocument('doc3');

        // Assert: the packs stay; searches still give the exact top 10 (the deleted rows are rescored away)
        expect(await packs()).toBe(long);
        await sameAsExact();

        // Act: postings added to the folded table (a writer of a collection it counts as small)
        const small = await PgVectorStore.create({
          client: getClient(),
          embedder,
          collectionName: name,
          keywordDepth: 5,
          keywordIndex: { ...settings, freshFromRow: 1e9 },
        });
        await small.addChunks(corpus(20, 5, 8).map((c, i) => makeChunk('doc77', i, c.text)));
        await small.close();

        // Assert: no pack is left to miss them; the b-tree serves, exactly
        expect(await packs()).toBe(0);
        await sameAsExact();

        // Act: the next build packs again
        const again = await store.buildIndex({ pack: true });

        // Assert: packs equal to the b-tree once more, and a build with packs in place leaves them
        expect(again.postingsPacked).toBe(await packs());
        expect(await packs()).toBeGreaterThan(0);
        const r = await reads(80);
        expect(r.packed).toEqual(r.btree);
        expect((await store.buildIndex({ pack: true })).postingsPacked).toBeUndefined();
        await sameAsExact();

        if (getClient().dialect !== 'pglite') {
          // Act: a writer adding to the folded postings holds its transaction open while a build packs
          await getClient().query(`DELETE FROM ${n.packed}`);
          const term = (await terms())[0] as number;
          let release = () => {};
          const gate = new Promise<void>((resolve) => {
            release = resolve;
          });
          const writer = getClient().transaction(async (tx) => {
            await tx.query(`INSERT INTO ${n.postings} (term, w, rid) VALUES ($1, 1e6, 1e12)`, [
              term,
            ]);
            await gate;
          });
          await new Promise((resolve) => setTimeout(resolve, 100));
          const packing = store.buildIndex({ lockTimeoutMs: 30_000, pack: true });
          let waiting = 0;
          for (let i = 0; i < 100 && waiting === 0; i += 1) {
            await new Promise((resolve) => setTimeout(resolve, 50));
            waiting = await scalar(
              `SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
                 AND ((classid::int8 << 32) | objid::int8) = hashtextextended($1, 0)`,
              [n.packLock],
            );
          }
          release();
          await writer;
          const raced = await packing;

          // Assert: the build waited for the writer and packed its posting, at the head of its list
          expect(waiting).toBe(1);
          expect(raced.postingsPacked).toBeGreaterThan(0);
          const head = await getClient().query<{ h: string }>(
            `SELECT encode(substring(data FROM 1 FOR 12), 'hex') AS h FROM ${n.packed} WHERE term = $1`,
            [term],
          );
          expect(head.rows[0]?.h).toBe(
            Buffer.concat([
              Buffer.from([0, 0, 0, 0xe8, 0xd4, 0xa5, 0x10, 0x00]),
              Buffer.from([0x49, 0x74, 0x24, 0x00]),
            ]).toString('hex'),
          );
          await getClient().query(`DELETE FROM ${n.postings} WHERE rid = 1e12`);
        }
      } finally {
        await store.close();
        await exact.close();
        await dropPgCollection(getClient(), name);
      }
      const left = await getClient().query<{ t: string | null; f: string | null }>(
        `SELECT to_regclass($1) AS t, to_regprocedure($2) AS f`,
        [n.packed.slice(1, -1), `${n.packFn}()`],
      );
      expect(left.rows[0]).toEqual({ t: null, f: null });
    });

    it('a pack build takes the longest lists first, within its budget of postings', async () => {
      // Prepare: packs of at most 16 × 5 = 80 postings, 200 postings a build: the two longest lists fit, not three
      const name = fresh();
      const n = keywordIndexNames(name);
      const store = await PgVectorStore.create({
        client: getClient(),
        embedder,
        collectionName: name,
        keywordDepth: 5,
        keywordIndex: { freshFromRow: 0, foldMin: 1, packMinDf: 10, packMaxPostings: 200 },
      });
      try {
        await store.addChunks(corpus(300, 30, 7));
        await store.refreshStatistics();

        // Act
        const built = await store.buildIndex({ pack: true });

        // Assert: the two terms of most postings (all over 80), each packed to 80
        const longest = [...(await listLengths(name)).entries()]
          .sort((a, b) => b[1] - a[1] || a[0] - b[0])
          .slice(0, 3);
        expect(longest.every(([, len]) => len > 80)).toBe(true);
        const packed = await getClient().query<{ term: number; n: number }>(
          `SELECT term, n FROM ${n.packed} ORDER BY term`,
        );
        expect(built.postingsPacked).toBe(2);
        expect(packed.rows).toEqual(
          longest
            .slice(0, 2)
            .map(([term]) => ({ term, n: 80 }))
            .sort((a, b) => a.term - b.term),
        );
      } finally {
        await store.close();
        await dropPgCollection(getClient(), name);
      }
    });

    it('a collection from before the packs opens for a reader as it is (every list from the b-tree) and gets them from its next index build', async () => {
      // Prepare: a collection whose packs' table and trigger function are dropped, as before they existed
      const name = fresh();
      const n = keywordIndexNames(name);
      const writer = await open(name);
      const regclass = async () =>
        (
          await getClient().query<{ t: string | null }>('SELECT to_regclass($1)::text AS t', [
            n.packed.slice(1, -1),
          ])
        ).rows[0]?.t ?? null;
      try {
        await writer.addChunks(corpus(80, 8, 4));
        await writer.close();
        await getClient().query(`DROP TABLE ${n.packed}`);
        await getClient().query(`DROP FUNCTION ${n.packFn}() CASCADE`);

        // Act: a reader (lists cut at 5 postings, so it reads deeper) searches; then a writer opens it
        const reader = await PgVectorStore.create({
          client: getClient(),
          embedder,
          collectionName: name,
          keywordDepth: 5,
          createIfMissing: false,
        });
        const got: string[][] = [];
        let afterReader: string | null = 'not read';
        try {
          for (const q of QUERIES)
            got.push((await reader.keywordSearch(q, { k: 10 })).map((h) => h.id));
          afterReader = await regclass();
          await reader.buildIndex({ pack: true });
        } finally {
          await reader.close();
        }
        const afterBuild = await regclass();
        const exact = await open(name, 0);
        const want: string[][] = [];
        try {
          for (const q of QUERIES)
            want.push((await exact.keywordSearch(q, { k: 10 })).map((h) => h.id));
        } finally {
          await exact.close();
        }

        // Assert: the reader's searches ran no DDL and found the exact scan's top 10; its index build created the
        // packs
        expect(afterReader).toBeNull();
        expect(got).toEqual(want);
        expect(afterBuild).not.toBeNull();
      } finally {
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
        await getClient().query(`DELETE FROM ${n.fresh} WHERE term % 3 = 0`);

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
