import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AI4RAGChunk } from '../../../shared/src/chunking/types.js';
import {
  cheapestPair,
  coverOf,
  DATABASE_BUILD_LOCK,
  MAX_SEGMENTS,
  parseSegmentName,
  planMerges,
  SEGMENT_TAIL_MAX,
  segmentName,
  wantsSegment,
} from '../../../shared/src/vectorstores/pgvector/ann-index.js';
import { collectionTables } from '../../../shared/src/vectorstores/pgvector/names.js';
import {
  dropPgCollection,
  PgVectorStore,
} from '../../../shared/src/vectorstores/pgvector/pgvector-store.js';
import {
  fromPgPool,
  openPglite,
  type SqlClient,
} from '../../../shared/src/vectorstores/sql-client.js';
import type { IndexBuildResult } from '../../../shared/src/vectorstores/types.js';
import { clientOptions, probePgServer } from '../../support/pg.js';
import { recordingClient } from '../../support/recording-client.js';
import { makeChunk } from './contract.js';
import { createHashEmbedder } from './fake-embedder.js';

/**
 * HNSW segments (`ann-index.ts`): rows written after the last segment are in no graph and are scanned exactly,
 * a build indexes them as a new segment, merges keep at most MAX_SEGMENTS, and every row stays findable through
 * every step (a stale view of the segments included). Each query is a chunk's own text, so with the hash
 * embedder that chunk must come first.
 */
const embedder = createHashEmbedder({ dimension: 64 });

/**
 * Chunks whose hash embeddings are spread out: 24 seeded pseudo-random words each, beside a word of their own. With
 * only four words (a few non-zero components, many exact distance ties) HNSW leaves a node unreachable now and then,
 * in a plain single build too (checked against a copy of the rows indexed by plain `CREATE INDEX`): graph
 * degeneracy, not a lost row.
 */
function chunks(from: number, count: number): AI4RAGChunk[] {
  return Array.from({ length: count }, (_, j) => {
    const i = from + j;
    let x = (i + 1) * 2654435761;
    const words = [`w${i}`];
    for (let k = 0; k < 24; k++) {
      x = (Math.imul(x ^ (x >>> 15), 0x2c1b3c6d) + 0x9e3779b9) >>> 0;
      words.push(`t${x % 5000}`);
    }
    return makeChunk(`doc${i % 40}`, i, words.join(' '));
  });
}

/**
 * Each probed chunk is its own query's first vector hit: a sample, the last chunk, and the rows on both sides of
 * every segment bound in the catalogue (the first and last rid of each range, and the first row after them).
 */
async function expectFindable(
  store: PgVectorStore,
  all: AI4RAGChunk[],
  client: SqlClient,
): Promise<void> {
  const byId = new Map(all.map((c) => [c.id, c]));
  const probes = new Set<AI4RAGChunk>();
  const step = Math.max(1, Math.floor(all.length / 12));
  for (let i = 0; i < all.length; i += step) probes.add(all[i] as AI4RAGChunk);
  probes.add(all[all.length - 1] as AI4RAGChunk);
  const table = `"${store.collectionName.toLowerCase()}"`;
  const bounds = (await hnswIndexes(client, store.collectionName)).flatMap((i) =>
    i.partial ? [(i.lo as number) + 1, i.hi as number, (i.hi as number) + 1] : [],
  );
  const edge = await client.query<{ id: string }>(
    `SELECT id FROM ${table} WHERE rid = ANY($1::bigint[])`,
    [bounds],
  );
  for (const r of edge.rows) {
    const c = byId.get(r.id);
    if (c !== undefined) probes.add(c);
  }
  for (const c of probes) {
    const hits = await store.search(c.text, { k: 3, searchMode: 'vector' });
    expect(hits[0]?.id, `query ${c.id}`).toBe(c.id);
  }
}

/** Adds chunks `sizes` at a time to `store` (and to `all`), each batch followed by a forced build; its results. */
async function growWithBuilds(
  store: PgVectorStore,
  all: AI4RAGChunk[],
  sizes: readonly number[],
): Promise<IndexBuildResult[]> {
  const results: IndexBuildResult[] = [];
  for (const size of sizes) {
    const next = chunks(all.length, size);
    await store.addChunks(next);
    all.push(...next);
    results.push(await store.buildIndex({ force: true }));
  }
  return results;
}

/** The collection's HNSW indexes: name and the predicate's row-id range. */
async function hnswIndexes(
  client: SqlClient,
  name: string,
): Promise<{ name: string; lo?: number; hi?: number; partial: boolean }[]> {
  const res = await client.query<{ indexname: string; indexdef: string }>(
    `SELECT indexname, indexdef FROM pg_indexes WHERE tablename = $1 AND indexdef LIKE '%USING hnsw%'
      ORDER BY indexname`,
    [name.toLowerCase()],
  );
  return res.rows
    .map((r) => {
      const m = /WHERE \(\(\(rid \+ 0\) > (\d+)\) AND \(\(rid \+ 0\) <= (\d+)\)\)$/.exec(
        r.indexdef,
      );
      return m
        ? { name: r.indexname, lo: Number(m[1]), hi: Number(m[2]), partial: true }
        : { name: r.indexname, partial: false };
    })
    .sort((a, b) => (a.lo ?? -1) - (b.lo ?? -1));
}

async function maxRid(client: SqlClient, name: string): Promise<number> {
  const res = await client.query<{ max: string }>(
    `SELECT max(rid)::text AS max FROM "${name.toLowerCase()}"`,
  );
  return Number(res.rows[0]?.max);
}

describe('segment policy (pure)', () => {
  it('makes a new segment the first time, then from 5,000 rows and 1/16 of the indexed rows up to 20,000, or when forced', () => {
    expect(wantsSegment(1, 0, 0, false)).toBe(true);
    expect(wantsSegment(0, 0, 0, true)).toBe(false);
    expect(wantsSegment(4_999, 20_000, 1, false)).toBe(false);
    expect(wantsSegment(5_000, 20_000, 1, false)).toBe(true);
    expect(wantsSegment(6_249, 100_000, 1, false)).toBe(false);
    expect(wantsSegment(6_250, 100_000, 1, false)).toBe(true);
    // Past 320,000 indexed rows the cap decides: the exact scan never grows past 20,000 rows
    expect(wantsSegment(19_999, 1_000_000, 1, false)).toBe(false);
    expect(wantsSegment(SEGMENT_TAIL_MAX, 1_000_000, 1, false)).toBe(true);
    expect(wantsSegment(SEGMENT_TAIL_MAX, 50_000_000, 5, false)).toBe(true);
    expect(wantsSegment(1, 1_000_000, 3, true)).toBe(true);
  });

  it('merges the newest segment into the one before while within 1/1.25 of its size, then the cheapest pair beyond four, within the budget', () => {
    expect(planMerges([], Number.POSITIVE_INFINITY)).toEqual([]);
    expect(planMerges([20_000], Number.POSITIVE_INFINITY)).toEqual([]);
    // A binary counter's carries: 20k + 20k, then 40k + 40k
    expect(planMerges([100_000, 20_000, 20_000], Number.POSITIVE_INFINITY)).toEqual([1]);
    expect(planMerges([40_000, 20_000, 20_000], Number.POSITIVE_INFINITY)).toEqual([1, 0]);
    // Within the ratio: 16,000 × 1.25 reaches 20,000; 15,999 does not
    expect(planMerges([20_000, 16_000], Number.POSITIVE_INFINITY)).toEqual([0]);
    expect(planMerges([20_000, 15_999], Number.POSITIVE_INFINITY)).toEqual([]);
    // The big first segment is not rebuilt for a small newer one
    expect(planMerges([1_000_000, 640_000, 320_000, 40_000], Number.POSITIVE_INFINITY)).toEqual([]);
    // Over the budget: nothing (a merge never goes half-way), the carry that fits still does
    expect(planMerges([100_000, 60_000, 60_000], 100_000)).toEqual([]);
    expect(planMerges([100_000, 60_000, 60_000], 120_000)).toEqual([1]);
    // A carry cascades while the merged segment reaches the one before
    expect(
      planMerges(
        [700, 600, 100, 110, 500].map((n) => n * 1000),
        Number.POSITIVE_INFINITY,
      ),
    ).toEqual([3, 2, 1, 0]);
    // A pair out of order behind the newest one (a carry an earlier budget left) is taken up
    expect(planMerges([200, 200, 100, 150, 50], Number.POSITIVE_INFINITY)).toEqual([2, 1, 0]);
    expect(planMerges([200, 200, 100, 150, 50], 300)).toEqual([2]);
    // Seven segments that carry nothing: the adjacent pair with the fewest rows, until four are left (100 + 50,
    // then 200 + 150, then 300 + 350); a merge over the budget ends it
    expect(planMerges([900, 700, 500, 300, 200, 100, 50], Number.POSITIVE_INFINITY)).toEqual([
      5, 4, 3,
    ]);
    expect(planMerges([900, 700, 500, 300, 200, 100, 50], 500)).toEqual([5, 4]);
    expect(planMerges([900, 700, 500, 300], Number.POSITIVE_INFINITY)).toEqual([]);
    expect(cheapestPair([900, 100, 110, 500])).toBe(1);
    expect(cheapestPair([100, 100, 100])).toBe(0);
    expect(MAX_SEGMENTS).toBe(4);
  });

  it('keeps the segments few and the exact scan bounded as a collection grows to 1M chunks by 20,000 a build', () => {
    // The store's own rules, replayed: each build takes the rows after the last segment, then merges
    const segments: number[] = [];
    let tail = 0;
    let rebuilt = 0;
    let mostSegments = 0;
    let largestTail = 0;
    for (let total = 20_000; total <= 1_000_000; total += 20_000) {
      tail += 20_000;
      const indexed = total - tail;
      if (wantsSegment(tail, indexed, segments.length, false)) {
        segments.push(tail);
        rebuilt += tail;
        tail = 0;
      }
      for (const at of planMerges(segments, Number.POSITIVE_INFINITY)) {
        const merged = (segments[at] as number) + (segments[at + 1] as number);
        segments.splice(at, 2, merged);
        rebuilt += merged;
      }
      mostSegments = Math.max(mostSegments, segments.length);
      largestTail = Math.max(largestTail, tail);
    }
    // Golden values of this policy (the former one: 4 segments, up to 40,000 rows scanned exactly, 4.08 builds a row)
    expect(segments).toEqual([640_000, 320_000, 40_000]);
    expect(mostSegments).toBe(4);
    expect(largestTail).toBe(0);
    expect(rebuilt / 1_000_000).toBeCloseTo(5.56, 2);
  });

  it('names a segment by its bounds in base 36 and reads back only names it wrote', () => {
    const t = collectionTables('ai4rag_a_rather_long_collection_name_for_names');
    const name = segmentName(t, 20_000, 1_000_000).slice(1, -1);
    expect(name).toBe(`${t.hnswSegmentPrefix}ffk_lfls`);
    expect(name.length).toBeLessThanOrEqual(63);
    expect(segmentName(t, 2 ** 53 - 2, 2 ** 53 - 1).length - 2).toBeLessThanOrEqual(63);
    expect(parseSegmentName(t, name)).toEqual({ lo: 20_000, hi: 1_000_000 });
    for (const bad of [
      `${t.hnswSegmentPrefix}0ffk_lfls`,
      `${t.hnswSegmentPrefix}lfls_ffk`,
      `${t.hnswSegmentPrefix}ffk`,
      'other_h0_1',
    ]) {
      expect(parseSegmentName(t, bad)).toBeUndefined();
    }
  });

  it('covers rows with non-overlapping segments, the widest first where a merge left its parts', () => {
    const seg = (lo: number, hi: number) => ({ lo, hi, name: `"s${lo}_${hi}"`, rows: hi - lo });
    expect(
      coverOf([seg(0, 300), seg(0, 100), seg(100, 300), seg(300, 400)]).map((s) => [s.lo, s.hi]),
    ).toEqual([
      [0, 300],
      [300, 400],
    ]);
  });
});

const pgConfig = await probePgServer(2000);
interface Backend {
  name: string;
  client: () => SqlClient;
}
let pglite: SqlClient;
let server: SqlClient | undefined;
const backends: Backend[] = [
  { name: 'PGlite', client: () => pglite },
  ...(pgConfig === undefined
    ? []
    : [{ name: 'the PostgreSQL server', client: () => server as SqlClient }]),
];
const created: [Backend, string][] = [];

beforeAll(async () => {
  pglite = await openPglite();
  if (pgConfig !== undefined) {
    server = fromPgPool(new pg.Pool({ ...clientOptions(pgConfig), max: 4 }), { ownsPool: true });
  }
});
afterAll(async () => {
  for (const [b, name] of created) await dropPgCollection(b.client(), name);
  await pglite?.close();
  await server?.close();
});

describe.each(backends)('HNSW segments on $name', (backend) => {
  const open = async (name: string, logger?: (message: string) => void) => {
    if (!created.some(([b, n]) => b === backend && n === name)) created.push([backend, name]);
    return PgVectorStore.create({
      client: backend.client(),
      embedder,
      collectionName: name,
      annMinRows: 0,
      ...(logger !== undefined && { logger }),
    });
  };

  it('writes rows after the last segment into no graph, finds them by the exact tail scan, then indexes them as a new segment', async () => {
    // Prepare
    const name = `ai4rag_seg_tail_${Date.now().toString(36)}`;
    const store = await open(name);
    try {
      const first = chunks(0, 600);
      await store.addChunks(first);
      const built = await store.buildIndex();
      const afterFirst = await hnswIndexes(backend.client(), name);
      // Act: more rows, below the new-segment minimum, then a forced build
      const second = chunks(600, 400);
      await store.addChunks(second);
      const small = await store.buildIndex();
      const beforeSecond = await hnswIndexes(backend.client(), name);
      await expectFindable(store, [...first, ...second], backend.client());
      const forced = await store.buildIndex({ force: true });
      // Assess
      const top = await maxRid(backend.client(), name);
      expect(built).toMatchObject({ built: true, reason: 'built', indexed: 600, segments: 1 });
      expect(afterFirst).toEqual([
        {
          name: segmentName(collectionTables(name), 0, 600).slice(1, -1),
          lo: 0,
          hi: 600,
          partial: true,
        },
      ]);
      // The 400 newer rows are in no index's range: their inserts updated no graph
      expect(small).toMatchObject({ built: false, reason: 'exists' });
      expect(beforeSecond).toEqual(afterFirst);
      expect(forced).toMatchObject({ built: true, indexed: 400, segments: 2 });
      expect(await hnswIndexes(backend.client(), name)).toMatchObject([
        { lo: 0, hi: 600 },
        { lo: 600, hi: top },
      ]);
      expect(await store.stats()).toMatchObject({ annIndex: true, annSegments: 2 });
      await expectFindable(store, [...first, ...second], backend.client());
      // Filtered search reads every segment and the tail too
      const third = chunks(1000, 50);
      await store.addChunks(third);
      const filtered = await store.search((third[7] as AI4RAGChunk).text, {
        k: 3,
        searchMode: 'vector',
        filter: { document_id: (third[7] as AI4RAGChunk).metadata.document_id },
      });
      expect(filtered[0]?.id).toBe((third[7] as AI4RAGChunk).id);
    } finally {
      await store.close();
    }
  });

  it('plans each segment on its own partial index, in one statement', async () => {
    // Prepare: two segments and a tail, searched through a client that records the statements
    const name = `ai4rag_seg_plan_${Date.now().toString(36)}`;
    const t = collectionTables(name.toLowerCase());
    const setup = await open(name);
    await setup.addChunks(chunks(0, 2000));
    await setup.buildIndex();
    // 1,500 rows: under 1/1.25 of the first segment, so no carry merges them
    await setup.addChunks(chunks(2000, 1500));
    await setup.buildIndex({ force: true });
    await setup.addChunks(chunks(3500, 100));
    await setup.close();
    const statements: [string, readonly unknown[] | undefined][] = [];
    const store = await PgVectorStore.create({
      client: recordingClient(backend.client(), (text, params) => statements.push([text, params])),
      embedder,
      collectionName: name,
      annMinRows: 0,
    });
    try {
      // Act
      statements.length = 0;
      const hits = await store.search(chunks(42, 1)[0]?.text ?? '', { k: 5, searchMode: 'vector' });
      const searches = statements.filter(([text]) => text.includes('WITH u AS MATERIALIZED'));
      const [text, params] = searches[0] ?? ['', []];
      const plan = await backend
        .client()
        .query<{ 'QUERY PLAN': string }>(`EXPLAIN ${text}`, [...(params ?? [])]);
      // Assess
      const lines = plan.rows.map((r) => r['QUERY PLAN']).join('\n');
      expect(hits[0]?.id).toBe(chunks(42, 1)[0]?.id);
      expect(searches).toHaveLength(1);
      expect(lines).toContain(`Index Scan using ${segmentName(t, 0, 2000).slice(1, -1)}`);
      expect(lines).toContain(`Index Scan using ${t.hnswSegmentPrefix}1jk_`);
      // The tail (rows after the last segment) through the row-id b-tree; the chunk table is never read whole
      expect(lines).toContain(`Index Scan on ${t.kw.ridIndex.slice(1, -1)}`);
      expect(lines).not.toMatch(new RegExp(`Seq Scan on ${t.table.slice(1, -1)}(?!_)`));
    } finally {
      await store.close();
    }
  });

  it('merges the newest segments while similar in size (a carry), keeps the big first one, and every row stays findable', async () => {
    // Prepare
    const name = `ai4rag_seg_merge_${Date.now().toString(36)}`;
    const store = await open(name);
    const all: AI4RAGChunk[] = [];
    try {
      // Act: one big first segment, then four small ones
      const results = await growWithBuilds(store, all, [800, 100, 100, 100, 100]);
      // Assess
      const indexes = await hnswIndexes(backend.client(), name);
      const top = await maxRid(backend.client(), name);
      expect(indexes.every((i) => i.partial)).toBe(true);
      // 800 | 100 → 800 | 100 100 → 800 | 200 → 800 | 200 100 → 800 | 200 100 100 → 800 | 200 200 → 800 | 400
      expect(results.map((r) => r.segments)).toEqual([1, 2, 2, 3, 2]);
      expect(results.map((r) => r.indexed)).toEqual([800, 100, 300, 100, 700]);
      // Contiguous from 0 to the last row; the big first segment was never rebuilt
      expect(indexes.map((i) => [i.lo, i.hi])).toEqual([
        [0, 800],
        [800, top],
      ]);
      await expectFindable(store, all, backend.client());
      // merge: every segment (and any newer rows) rebuilt as one
      const extra = chunks(all.length, 30);
      await store.addChunks(extra);
      all.push(...extra);
      const merged = await store.buildIndex({ merge: true });
      const top2 = await maxRid(backend.client(), name);
      expect(merged).toMatchObject({
        built: true,
        reason: 'merged',
        indexed: all.length,
        segments: 1,
      });
      expect((await hnswIndexes(backend.client(), name)).map((i) => [i.lo, i.hi])).toEqual([
        [0, top2],
      ]);
      await expectFindable(store, all, backend.client());
    } finally {
      await store.close();
    }
  });

  it(`keeps at most ${MAX_SEGMENTS} segments: beyond it the cheapest adjacent pair is merged`, async () => {
    // Prepare
    const name = `ai4rag_seg_most_${Date.now().toString(36)}`;
    const store = await open(name);
    const all: AI4RAGChunk[] = [];
    try {
      // Act: each segment under 1/1.25 of the one before (no carry), five of them
      const results = await growWithBuilds(store, all, [640, 320, 160, 80, 40]);
      // Assess
      const indexes = await hnswIndexes(backend.client(), name);
      const top = await maxRid(backend.client(), name);
      expect(results.map((r) => r.segments)).toEqual([1, 2, 3, 4, MAX_SEGMENTS]);
      // The fifth build indexed its 40 rows and merged the pair 80 + 40
      expect(results[4]?.indexed).toBe(160);
      expect(indexes.map((i) => [i.lo, i.hi])).toEqual([
        [0, 640],
        [640, 960],
        [960, 1120],
        [1120, top],
      ]);
      expect(top).toBe(1240);
      await expectFindable(store, all, backend.client());
    } finally {
      await store.close();
    }
  });

  it('says what each build does: every segment it indexes when it starts and ends, and on a server its progress meanwhile', async () => {
    // Prepare
    const name = `ai4rag_seg_progress_${Date.now().toString(36)}`;
    const logs: string[] = [];
    const store = await open(name, (m) => logs.push(m));
    try {
      await store.addChunks(chunks(0, 3000));
      const bad = await store.buildIndex({ progressMs: -1 }).then(
        () => 'built',
        (error: Error) => error.message,
      );
      // Act: a build with a report every 10 ms
      const result = await store.buildIndex({ progressMs: 10 });
      // Assess
      const top = await maxRid(backend.client(), name);
      const segment = `collection ${name}: HNSW segment (0, ${top}]`;
      expect(result).toMatchObject({ built: true, indexed: 3000, segments: 1 });
      expect(bad).toMatch(/^progressMs must be an integer in \[0, 3600000\], got -1/);
      const mine = logs.filter((m) => m.startsWith(segment));
      expect(mine[0]).toBe(`${segment}: indexing 3000 rows`);
      expect(mine.at(-1)).toMatch(/: 3000 rows indexed in \d+\.\d\d s$/);
      const progress = mine.slice(1, -1);
      if (backend.name === 'PGlite') {
        // One connection, busy with the build: nothing reads its progress
        expect(progress).toEqual([]);
      } else {
        // pg_stat_progress_create_index, read on another connection while the CREATE INDEX CONCURRENTLY runs
        expect(progress.length).toBeGreaterThan(0);
        // While the graph is built: its rows so far; in the phases after it, the phase alone
        for (const line of progress) {
          expect(line).toMatch(
            /^collection \S+: HNSW segment \(0, \d+\]: (building index[a-z :]*, \d+ of 3000 rows in the graph(, \d+ % of the table scanned)?|[a-z :]+) \(\d+\.\d\d s\)$/,
          );
          if (!line.includes(': building index')) expect(line).not.toContain('rows in the graph');
        }
        expect(progress.some((line) => line.includes(': building index'))).toBe(true);
      }
    } finally {
      await store.close();
    }
  });

  it('a store that has not seen a merge still finds every row (the merged index serves its narrower ranges)', async () => {
    // Prepare: a reader that knows two segments, and a writer that then merges them away
    const name = `ai4rag_seg_stale_${Date.now().toString(36)}`;
    const writer = await open(name);
    const all = chunks(0, 400);
    await writer.addChunks(all.slice(0, 200));
    await writer.buildIndex();
    await writer.addChunks(all.slice(200, 300));
    await writer.buildIndex({ force: true });
    const reader = await open(name);
    try {
      expect((await hnswIndexes(backend.client(), name)).map((i) => [i.lo, i.hi])).toEqual([
        [0, 200],
        [200, 300],
      ]);
      // Act: 100 more rows carry into the 100 before, and the 200 into the first 200, dropping both indexes the
      // reader knows
      await writer.addChunks(all.slice(300));
      const built = await writer.buildIndex({ force: true });
      // Assess
      const top = await maxRid(backend.client(), name);
      expect(built).toMatchObject({ built: true, indexed: 100 + 200 + 400, segments: 1 });
      expect((await hnswIndexes(backend.client(), name)).map((i) => [i.lo, i.hi])).toEqual([
        [0, top],
      ]);
      await expectFindable(reader, all, backend.client());
    } finally {
      await reader.close();
      await writer.close();
    }
  });

  it('puts at most maxRows rows into graphs per call: the oldest of the tail first, merges and conversions beyond it left for later', async () => {
    // Prepare
    const name = `ai4rag_seg_budget_${Date.now().toString(36)}`;
    const t = collectionTables(name.toLowerCase());
    const store = await open(name);
    const all = chunks(0, 700);
    try {
      await store.addChunks(all.slice(0, 500));
      // Act: a budget of 200 rows a call
      const first = await store.buildIndex({ maxRows: 200 });
      const second = await store.buildIndex({ maxRows: 200, force: true });
      const afterTwo = await hnswIndexes(backend.client(), name);
      await expectFindable(store, all.slice(0, 500), backend.client());
      const third = await store.buildIndex({ maxRows: 200, force: true });
      await store.addChunks(all.slice(500));
      const fourth = await store.buildIndex({ maxRows: 150, force: true });
      const fifth = await store.buildIndex({ maxRows: 150, force: true });
      const bad = store.buildIndex({ maxRows: 0 }).then(
        () => 'built',
        (error: Error) => error.message,
      );
      // Assess
      expect(first).toMatchObject({ built: true, indexed: 200, segments: 1 });
      // The carry 200 + 200 does not fit the budget either
      expect(second).toMatchObject({ built: true, indexed: 200, segments: 2 });
      // Contiguous, 200 rows each, the oldest rows first
      expect(afterTwo[0]?.lo).toBe(0);
      expect(afterTwo[1]?.lo).toBe(afterTwo[0]?.hi);
      for (const seg of afterTwo) {
        const n = await backend
          .client()
          .query<{ n: number }>(
            `SELECT count(*)::int AS n FROM ${t.table} WHERE rid > $1 AND rid <= $2`,
            [seg.lo, seg.hi],
          );
        expect(n.rows[0]?.n).toBe(200);
      }
      expect(third).toMatchObject({ built: true, indexed: 100, segments: 3 });
      // 150 rows of the 200 new ones; the carry 100 + 150 does not fit
      expect(fourth).toMatchObject({ built: true, indexed: 150, segments: 4 });
      // The last 50 rows fit; the carries do not: five kept (200 | 200 | 100 | 150 | 50)
      expect(fifth).toMatchObject({ built: true, indexed: 50, segments: 5 });
      const indexes = await hnswIndexes(backend.client(), name);
      expect(indexes).toHaveLength(5);
      expect(indexes[0]?.name).toBe(afterTwo[0]?.name);
      await expectFindable(store, all, backend.client());
      expect(await bad).toMatch(/maxRows must be an integer in \[1, /);
      // Without the bound, the carries left behind are taken up: 100 + 150, then 200 + 250, then 200 + 450
      const top = await maxRid(backend.client(), name);
      expect(await store.buildIndex()).toMatchObject({
        built: true,
        indexed: 250 + 450 + 650,
        segments: 2,
      });
      expect((await hnswIndexes(backend.client(), name)).map((i) => i.hi)).toEqual([
        indexes[3]?.hi,
        top,
      ]);
      await expectFindable(store, all, backend.client());
    } finally {
      await store.close();
    }
  });

  it('converts the full-table index of older versions into one segment, and drops what an interrupted merge left', async () => {
    // Prepare: the index as versions before segments built it, and a leftover inside the future segment
    const name = `ai4rag_seg_legacy_${Date.now().toString(36)}`;
    const t = collectionTables(name.toLowerCase());
    const setup = await open(name);
    const all = chunks(0, 400);
    await setup.addChunks(all);
    await setup.close();
    await backend
      .client()
      .query(`CREATE INDEX ${t.hnswIndex} ON ${t.table} USING hnsw (embedding vector_cosine_ops)`);
    const store = await open(name);
    try {
      const before = await store.stats();
      await expectFindable(store, all, backend.client());
      // Act: a budget below the collection's size leaves the full-table index alone, then no budget converts it
      const budgeted = await store.buildIndex({ maxRows: 100 });
      const legacyKept = (await hnswIndexes(backend.client(), name)).map((i) => i.partial);
      const converted = await store.buildIndex();
      const top = await maxRid(backend.client(), name);
      await backend.client().query(
        `CREATE INDEX ${segmentName(t, 0, 100)} ON ${t.table} USING hnsw (embedding vector_cosine_ops)
           WHERE (rid + 0) > 0 AND (rid + 0) <= 100`,
      );
      const cleaned = await store.buildIndex();
      // Assess
      expect(before.annIndex).toBe(true);
      expect(budgeted).toMatchObject({ built: false, segments: 0 });
      expect(budgeted.reason).toMatch(
        /^exists; the full-table index .* "ai4rag index" converts it/,
      );
      expect(legacyKept).toEqual([false]);
      expect(converted).toMatchObject({
        built: true,
        reason: 'converted',
        indexed: top,
        segments: 1,
      });
      expect(cleaned).toMatchObject({ built: false, reason: 'exists', segments: 1 });
      expect(await hnswIndexes(backend.client(), name)).toEqual([
        { name: segmentName(t, 0, top).slice(1, -1), lo: 0, hi: top, partial: true },
      ]);
      await expectFindable(store, all, backend.client());
    } finally {
      await store.close();
    }
  });
});

describe.skipIf(pgConfig === undefined)(
  'HNSW segments under concurrent writers (PostgreSQL server)',
  () => {
    /** A collection on the server with `annMinRows` 0 (dropped after the file), holding `rows` chunks. */
    const openOnServer = async (name: string, rows = 0): Promise<PgVectorStore> => {
      const backend = backends[1] as Backend;
      created.push([backend, name]);
      const store = await PgVectorStore.create({
        client: backend.client(),
        embedder,
        collectionName: name,
        annMinRows: 0,
      });
      if (rows > 0) await store.addChunks(chunks(0, rows));
      return store;
    };
    /** Another session on the server (its own connection, outside the store's pool). */
    const otherSession = async (): Promise<pg.Client> => {
      const c = new pg.Client(clientOptions(pgConfig as NonNullable<typeof pgConfig>));
      await c.connect();
      return c;
    };

    it('builds with progress reports on a pool of one connection, which the build holds (no report, no deadlock)', async () => {
      // Prepare: a store whose pool has one connection: the build's session takes it, so a progress read must wait
      const name = `ai4rag_seg_pool1_${Date.now().toString(36)}`;
      created.push([backends[1] as Backend, name]);
      const logs: string[] = [];
      const store = await PgVectorStore.create({
        client: fromPgPool(
          new pg.Pool({ ...clientOptions(pgConfig as NonNullable<typeof pgConfig>), max: 1 }),
          { ownsPool: true },
        ),
        embedder,
        collectionName: name,
        annMinRows: 0,
        logger: (m) => logs.push(m),
      });
      try {
        await store.addChunks(chunks(0, 2000));
        // Act
        const result = await store.buildIndex({ progressMs: 5 });
        // Assess: built, the start and the end said, and no progress read got a connection while it ran
        expect(result).toMatchObject({ built: true, indexed: 2000, segments: 1 });
        const mine = logs.filter((m) => m.includes(': HNSW segment ('));
        expect(mine).toHaveLength(2);
        expect(mine[0]).toMatch(/: indexing 2000 rows$/);
        expect(mine[1]).toMatch(/: 2000 rows indexed in \d+\.\d\d s$/);
        expect(
          (await store.search(chunks(7, 1)[0]?.text ?? '', { k: 1, searchMode: 'vector' }))[0]?.id,
        ).toBe(chunks(7, 1)[0]?.id);
      } finally {
        await store.close();
      }
    });

    it('drops the invalid index a failed concurrent build left under a segment name, and builds that segment again', async () => {
      // Prepare: a concurrent build that fails half way leaves an invalid index behind (as a killed builder does).
      // A unique index over duplicate values fails that way deterministically; it takes the name of the next segment.
      const name = `ai4rag_seg_invalid_${Date.now().toString(36)}`;
      const backend = backends[1] as Backend;
      created.push([backend, name]);
      const t = collectionTables(name.toLowerCase());
      const store = await PgVectorStore.create({
        client: backend.client(),
        embedder,
        collectionName: name,
        annMinRows: 0,
      });
      try {
        const all = chunks(0, 200);
        await store.addChunks(all);
        const top = await maxRid(backend.client(), name);
        const failed = await backend
          .client()
          .query(
            `CREATE UNIQUE INDEX CONCURRENTLY ${segmentName(t, 0, top)} ON ${t.table} (document_id)`,
          )
          .then(
            () => 'created',
            (error: Error) => error.message,
          );
        const left = await backend
          .client()
          .query<{ valid: boolean }>(
            'SELECT i.indisvalid AS valid FROM pg_index i WHERE i.indexrelid = to_regclass($1)',
            [segmentName(t, 0, top).slice(1, -1)],
          );
        // Act
        const built = await store.buildIndex();
        // Assess
        expect(failed).toMatch(/could not create unique index/);
        expect(left.rows).toEqual([{ valid: false }]);
        expect(built).toMatchObject({ built: true, reason: 'built', segments: 1 });
        expect(await hnswIndexes(backend.client(), name)).toEqual([
          { name: segmentName(t, 0, top).slice(1, -1), lo: 0, hi: top, partial: true },
        ]);
        await expectFindable(store, all, backend.client());
      } finally {
        await store.close();
      }
    });

    it('loses no row: two writers add chunks while builds run concurrently, and every chunk is its own first hit', async () => {
      // Prepare
      const name = `ai4rag_seg_race_${Date.now().toString(36)}`;
      const backend = backends[1] as Backend;
      created.push([backend, name]);
      const open = () =>
        PgVectorStore.create({
          client: backend.client(),
          embedder,
          collectionName: name,
          annMinRows: 0,
        });
      const [a, b, builder] = [await open(), await open(), await open()];
      const all: AI4RAGChunk[] = [];
      try {
        await a.addChunks(chunks(0, 300));
        all.push(...chunks(0, 300));
        await builder.buildIndex();
        let writing = true;
        const writer = async (store: PgVectorStore, from: number) => {
          for (let i = 0; i < 12; i++) {
            const next = chunks(from + i * 40, 40);
            await store.addChunks(next);
            all.push(...next);
          }
        };
        // Act: builds back to back (each a CREATE INDEX CONCURRENTLY, merges included) while both write
        const builds: string[] = [];
        const building = (async () => {
          while (writing) builds.push((await builder.buildIndex({ force: true })).reason);
        })();
        await Promise.all([writer(a, 1000), writer(b, 5000)]);
        writing = false;
        await building;
        await builder.buildIndex({ force: true });
        // Assess: the segments tile every row, and each chunk is found through them
        const indexes = await hnswIndexes(backend.client(), name);
        const top = await maxRid(backend.client(), name);
        expect(indexes[0]?.lo).toBe(0);
        for (let i = 1; i < indexes.length; i++) expect(indexes[i]?.lo).toBe(indexes[i - 1]?.hi);
        expect(indexes[indexes.length - 1]?.hi).toBe(top);
        expect(indexes.length).toBeLessThanOrEqual(MAX_SEGMENTS);
        expect(builds.filter((r) => r === 'built').length).toBeGreaterThanOrEqual(1);
        const reader = await open();
        try {
          expect((await reader.stats()).chunks).toBe(all.length);
          for (let i = 0; i < all.length; i += 1) {
            const c = all[i] as AI4RAGChunk;
            const hits = await reader.search(c.text, { k: 2, searchMode: 'vector' });
            expect(hits[0]?.id, `chunk ${c.id}`).toBe(c.id);
          }
        } finally {
          await reader.close();
        }
      } finally {
        await a.close();
        await b.close();
        await builder.close();
      }
    }, 120_000);

    it("builds one index at a time in a database: a build waits for another collection's, before any work, and says so when that outlasts its lock timeout", async () => {
      // Prepare: two collections, and a session holding the database's build lock as a running build does
      const stamp = Date.now().toString(36);
      const backend = backends[1] as Backend;
      const a = await openOnServer(`ai4rag_seg_one_a_${stamp}`, 300);
      const b = await openOnServer(`ai4rag_seg_one_b_${stamp}`, 300);
      const holder = await otherSession();
      try {
        await holder.query('SELECT pg_advisory_lock(hashtextextended($1, 0))', [
          DATABASE_BUILD_LOCK,
        ]);
        // Act: one build gives up after its lock timeout; another is let through when the lock is released
        const started = performance.now();
        const refused = await a.buildIndex({ lockTimeoutMs: 300 });
        const waited = performance.now() - started;
        const leftAfterRefusal = await hnswIndexes(backend.client(), a.collectionName);
        const through = b.buildIndex({ lockTimeoutMs: 30_000 });
        await new Promise((r) => setTimeout(r, 300));
        await holder.query('SELECT pg_advisory_unlock(hashtextextended($1, 0))', [
          DATABASE_BUILD_LOCK,
        ]);
        const built = await through;
        // And two collections' builds started together, each with rows to index, both finish, one after the other
        await b.addChunks(chunks(300, 100));
        const both = await Promise.all([a.buildIndex(), b.buildIndex({ force: true })]);
        // Assess
        expect(refused).toMatchObject({ built: false });
        expect(refused.reason).toBe(
          'another index build is running in this database (waited 300 ms; the next build tries again)',
        );
        expect(waited).toBeGreaterThanOrEqual(250);
        expect(leftAfterRefusal).toEqual([]);
        expect(built).toMatchObject({ built: true, reason: 'built', segments: 1 });
        expect(both.map((r) => [r.reason, r.indexed])).toEqual([
          ['built', 300],
          ['built', 100],
        ]);
        expect(await hnswIndexes(backend.client(), a.collectionName)).toHaveLength(1);
        await expectFindable(a, chunks(0, 300), backend.client());
      } finally {
        await holder.end();
        await a.close();
        await b.close();
      }
    });

    it('a build that an older transaction outlasts gives up at its lock timeout with a clear error, and the next build replaces what it left', async () => {
      // Prepare: a collection, and another session's transaction holding a snapshot older than the build
      const name = `ai4rag_seg_old_tx_${Date.now().toString(36)}`;
      const backend = backends[1] as Backend;
      const store = await openOnServer(name, 300);
      const holder = await otherSession();
      try {
        await holder.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
        await holder.query('SELECT 1');
        // Act
        const failed = await store.buildIndex({ lockTimeoutMs: 500 }).then(
          () => 'built',
          (error: Error) => error.message,
        );
        await holder.query('COMMIT');
        const again = await store.buildIndex();
        // Assess
        expect(failed).toBe(
          `index build on collection ${name} gave up after waiting 500 ms for a lock or for a transaction older than it to end (lock timeout): searches scan the rows it did not index exactly, and the next build drops what it left and tries again`,
        );
        expect(again).toMatchObject({ built: true, reason: 'built', segments: 1 });
        const valid = await backend.client().query<{ valid: boolean }>(
          `SELECT i.indisvalid AS valid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
              WHERE c.relname = ANY($1)`,
          [(await hnswIndexes(backend.client(), name)).map((i) => i.name)],
        );
        expect(valid.rows).toEqual([{ valid: true }]);
        await expectFindable(store, chunks(0, 300), backend.client());
      } finally {
        await holder.end();
        await store.close();
      }
    });
  },
);
