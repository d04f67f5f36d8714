/**
 * The HNSW indexes of a pgvector collection, as segments: each a partial index over a range of row ids
 * (`lo < rid <= hi`). Rows written after the last segment are in none, so an insert never updates a graph (pgvector
 * maintains one at a twelfth of its build rate per row); they are scanned exactly through the row-id b-tree until
 * a build indexes them as a new segment ({@link wantsSegment}), and segments are merged as {@link planMerges} says
 * (log-structured: about log2 of the collection's size in segments, at most {@link MAX_SEGMENTS}). Also: reading the
 * catalogue, noticing what another process built, and converting the full-table index of older versions. Builds
 * run `CREATE INDEX CONCURRENTLY` on their own session on a server, a plain `CREATE INDEX` on PGlite.
 */

import { VectorStoreConfigError, VectorStoreError } from '../errors.js';
import { quoteIdent } from '../naming.js';
import type { SqlClient } from '../sql-client.js';
import type { BuildIndexOptions, DistanceMetric, IndexBuildResult } from '../types.js';
import { N_TERM } from './bm25-stats.js';
import type { CollectionTables } from './names.js';
import { REGISTRY_TABLE } from './schema.js';
import { checkNumber, type StoreContext, sqlState } from './store-context.js';

/** How often a store reads the catalogue for segments another process built or merged. */
const ANN_RECHECK_MS = 30_000;
/** `maintenance_work_mem` of an index build: HNSW builds slow down sharply once the graph outgrows it. */
const INDEX_BUILD_MEMORY = '256MB';
/** How often a build on a server reports its progress by default ({@link BuildIndexOptions.progressMs}). */
export const BUILD_PROGRESS_MS = 30_000;
/** Largest dimension pgvector's HNSW index accepts for `vector`; above it the store scans exactly. */
export const MAX_HNSW_DIMENSION = 2000;

/**
 * The session advisory lock (its key, hashed) that one index build in a database holds: builds of different
 * collections run one after another instead of each waiting for the other's snapshot.
 */
export const DATABASE_BUILD_LOCK = 'ai4rag:index-build';

/** SQLSTATE of a lock wait that reached lock_timeout. */
const LOCK_NOT_AVAILABLE = '55P03';

/** How often a build waiting for the database's build lock tries it again (ms). */
const BUILD_LOCK_POLL_MS = 100;

/**
 * Takes the session advisory lock `key` on `c` within `ms` (tried every {@link BUILD_LOCK_POLL_MS} ms, each try
 * a transaction of its own).
 * @returns whether the lock was taken.
 */
async function tryLockWithin(c: SqlClient, key: string, ms: number): Promise<boolean> {
  const until = performance.now() + ms;
  for (;;) {
    const res = await c.query<{ ok: boolean }>(
      'SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS ok',
      [key],
    );
    if (res.rows[0]?.ok === true) return true;
    const left = until - performance.now();
    if (left <= 0) return false;
    await new Promise((r) => setTimeout(r, Math.min(BUILD_LOCK_POLL_MS, left)));
  }
}

const OPCLASS: Record<DistanceMetric, string> = {
  cosine: 'vector_cosine_ops',
  l2: 'vector_l2_ops',
  l1: 'vector_l1_ops',
  inner_product: 'vector_ip_ops',
};

/** One HNSW segment index: it covers the chunk rows with `lo < rid <= hi`. */
export interface AnnSegment {
  lo: number;
  hi: number;
  /** Its quoted name. */
  name: string;
  /** Rows it held when built (the catalogue's `reltuples`; `hi − lo` when unknown). */
  rows: number;
}

/** What a store knows of its HNSW indexes (it changes as they are built or noticed). */
export interface AnnState {
  /** Some index serves searches: the legacy full-table index, or at least one segment. */
  valid: boolean;
  /** The full-table index of collections built before segments is valid (searches use it alone). */
  legacy: boolean;
  /** Valid segments that do not overlap, by `lo` (see {@link coverOf}). */
  segments: AnnSegment[];
  /** When the catalogue was last read (ms since the epoch). */
  checkedAt: number;
  /** The exact-scan notice (dimension above HNSW's limit) was logged. */
  warnedExactScan: boolean;
}

/** The collection's HNSW indexes as the catalogue lists them. */
interface AnnCatalogue {
  legacy: 'valid' | 'invalid' | 'none';
  /** Valid segments, by `lo` then widest first (they may overlap while a merge finishes). */
  segments: AnnSegment[];
  /** Quoted names of invalid segment indexes (a failed or interrupted concurrent build). */
  invalid: string[];
}

/**
 * The predicate of the segment over `lo < rid <= hi`, on `rid + 0` rather than `rid`: a query repeating it is
 * served by the segment's partial index (the planner proves the predicate from the query's constants, a narrower
 * range included), while the row-id b-tree cannot serve it. On `rid` itself the planner, estimating the range from
 * statistics a bulk load left stale, chose a b-tree scan and sorted the whole segment.
 */
export function segmentPredicate(rid: string, lo: number, hi: number): string {
  if (!Number.isSafeInteger(lo) || !Number.isSafeInteger(hi)) {
    throw new VectorStoreError('segment bounds must be integers');
  }
  return `(${rid} + 0) > ${lo} AND (${rid} + 0) <= ${hi}`;
}

/** The quoted name of the segment over `lo < rid <= hi`. */
export function segmentName(t: CollectionTables, lo: number, hi: number): string {
  return quoteIdent(`${t.hnswSegmentPrefix}${lo.toString(36)}_${hi.toString(36)}`);
}

/** The bounds a segment name encodes, or undefined for a name this code did not write. */
export function parseSegmentName(
  t: CollectionTables,
  name: string,
): { lo: number; hi: number } | undefined {
  if (!name.startsWith(t.hnswSegmentPrefix)) return undefined;
  const found = /^([0-9a-z]{1,13})_([0-9a-z]{1,13})$/.exec(name.slice(t.hnswSegmentPrefix.length));
  if (!found) return undefined;
  const lo = Number.parseInt(found[1] as string, 36);
  const hi = Number.parseInt(found[2] as string, 36);
  if (!Number.isSafeInteger(lo) || !Number.isSafeInteger(hi) || lo < 0 || hi <= lo)
    return undefined;
  // Only the canonical spelling (no leading zeros): one range, one name.
  if (`${lo.toString(36)}_${hi.toString(36)}` !== name.slice(t.hnswSegmentPrefix.length)) {
    return undefined;
  }
  return { lo, hi };
}

/** Reads the collection's HNSW indexes from the catalogue (one query). */
export async function readAnnCatalogue(
  client: SqlClient,
  t: CollectionTables,
): Promise<AnnCatalogue> {
  const res = await client.query<{ name: string; valid: boolean; rows: number }>(
    `SELECT c.relname AS name, i.indisvalid AS valid, c.reltuples::float8 AS rows
       FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
      WHERE i.indrelid = to_regclass($1) AND (c.relname = $2 OR starts_with(c.relname, $3))`,
    [t.table.slice(1, -1), t.hnswIndex.slice(1, -1), t.hnswSegmentPrefix],
  );
  const out: AnnCatalogue = { legacy: 'none', segments: [], invalid: [] };
  for (const r of res.rows) {
    if (r.name === t.hnswIndex.slice(1, -1)) {
      out.legacy = r.valid ? 'valid' : 'invalid';
      continue;
    }
    const range = parseSegmentName(t, r.name);
    if (range === undefined) continue;
    if (!r.valid) out.invalid.push(quoteIdent(r.name));
    else {
      const rows = Number(r.rows);
      out.segments.push({
        ...range,
        name: quoteIdent(r.name),
        rows: rows >= 0 ? rows : range.hi - range.lo,
      });
    }
  }
  out.segments.sort((a, b) => a.lo - b.lo || b.hi - a.hi);
  return out;
}

/**
 * The segments a search reads: by `lo`, skipping any that starts inside one already taken (the parts of a merge
 * whose merged index is valid too). Rows between or after them are scanned exactly.
 */
export function coverOf(segments: readonly AnnSegment[]): AnnSegment[] {
  const cover: AnnSegment[] = [];
  let cursor = 0;
  for (const s of segments) {
    if (s.lo < cursor) continue;
    cover.push(s);
    cursor = s.hi;
  }
  return cover;
}

/** Sets `state` from a catalogue read. */
function applyCatalogue(state: AnnState, cat: AnnCatalogue): void {
  state.legacy = cat.legacy === 'valid';
  state.segments = coverOf(cat.segments);
  state.valid = state.legacy || state.segments.length > 0;
  state.checkedAt = Date.now();
}

/** Reads the catalogue into `state` now. */
export async function readAnnState(
  client: SqlClient,
  t: CollectionTables,
  state: AnnState,
): Promise<void> {
  applyCatalogue(state, await readAnnCatalogue(client, t));
}

/**
 * Notices indexes another process built or merged (at most every {@link ANN_RECHECK_MS}), never builds one: rows
 * no known segment covers are scanned exactly, so a stale view costs speed, never results.
 */
export async function refreshAnnIndex(ctx: StoreContext, state: AnnState): Promise<void> {
  if (ctx.dimension > MAX_HNSW_DIMENSION) {
    if (!state.warnedExactScan) {
      state.warnedExactScan = true;
      ctx.logger(
        `collection ${ctx.collectionName}: ${ctx.dimension} dimensions exceed HNSW's ${MAX_HNSW_DIMENSION}; using exact scan`,
      );
    }
    return;
  }
  if (Date.now() - state.checkedAt < ANN_RECHECK_MS) return;
  state.checkedAt = Date.now();
  await readAnnState(ctx.client, ctx.t, state);
}

/**
 * A validated `maintenance_work_mem` value (it is written into the SET statement, which takes no parameter).
 * @throws {VectorStoreConfigError} naming the value and the accepted form.
 */
export function buildMemory(given: string | undefined): string {
  if (given === undefined) return INDEX_BUILD_MEMORY;
  const found = /^(\d{1,8})(kB|MB|GB)$/.exec(given);
  const kb = found
    ? Number(found[1]) * { kB: 1, MB: 1024, GB: 1024 ** 2 }[found[2] as 'kB']
    : Number.NaN;
  if (!(kb >= 64 * 1024 && kb <= 64 * 1024 ** 2)) {
    throw new VectorStoreConfigError(
      `index build memory must be a whole number of kB, MB or GB from 64MB to 64GB (e.g. 2GB), got "${given}"`,
    );
  }
  return given;
}

/** Rows in the collection: the registry's count plus the changes still in the statistics log. */
async function rowCount(ctx: StoreContext): Promise<number> {
  const rows = await ctx.client.query<{ n: number }>(
    `SELECT (r.chunk_count + COALESCE((SELECT sum(delta) FROM ${ctx.t.dfLog} WHERE term = ${N_TERM}), 0))::float8 AS n
       FROM ${REGISTRY_TABLE} r WHERE r.name = $1`,
    [ctx.t.key],
  );
  return Number(rows.rows[0]?.n ?? 0);
}

/**
 * Rows a new segment needs once the collection has one: fewer are scanned exactly, which at this size costs about
 * one HNSW probe (the exact scan reads 20,000 rows in 16–17 ms; one probe at ef_search 200 takes 3.5–6.3 ms,
 * `npm run bench -- --hnsw`).
 */
export const SEGMENT_MIN_ROWS = 5_000;
/**
 * A new segment also needs 1/16 of the rows already indexed, up to {@link SEGMENT_TAIL_MAX}: a small collection then
 * gets few small segments, and a large one never scans more than {@link SEGMENT_TAIL_MAX} rows exactly between builds.
 */
export const SEGMENT_GROWTH = 16;
/**
 * Rows after the last segment that always make a new one (once over {@link SEGMENT_MIN_ROWS}). Their exact scan costs
 * 16–17 ms in a small collection, about three or four segment probes (`npm run bench -- --hnsw`), and 27–60 ms at
 * 1.31M chunks of 2.7 KB rows (README, "Segments as a binary counter"). Without the cap the rows after the last
 * segment grew with the collection (1/16 of it: 40,000 rows at 1.29M chunks took the vector p50 to 111–123 ms).
 */
export const SEGMENT_TAIL_MAX = 20_000;
/**
 * A segment is merged with the one before it when it holds at least 1/{@link CARRY_RATIO} of that one's rows, the
 * newest such pair first, until none is left (a binary counter's carries): segments then halve in size from the
 * oldest, a search probes about log2(N / {@link SEGMENT_TAIL_MAX}) of them, and each row is rebuilt about as many
 * times. The ratio is not 1 because the catalogue's row counts drift with deletes and vacuum.
 */
export const CARRY_RATIO = 1.25;
/**
 * Most segments a search probes: beyond it the adjacent pair with the fewest rows is merged (rebuilt as one). Each
 * segment costs a search one HNSW probe (4.4–6.3 ms for a 20,000- or 40,000-row segment at 1.06M chunks, `EXPLAIN
 * ANALYZE` of hybrid searches' dense statements). Four, not six: replayed by `npm run bench -- --segments`, it takes
 * the most segments from 5–6 to 4 without a budget (builds every 20,000 rows, 0 → 2M) for 1–5 % more rows put into
 * graphs.
 */
export const MAX_SEGMENTS = 4;

/**
 * Whether `tail` rows after the last of `segments` segments (holding `indexed` rows) become a new segment now: the
 * first time whatever their number, then from {@link SEGMENT_MIN_ROWS} and 1/{@link SEGMENT_GROWTH} of `indexed`
 * (at most {@link SEGMENT_TAIL_MAX}), or with `force` (any rows).
 * @example wantsSegment(4_999, 20_000, 1, false) // false
 * @example wantsSegment(20_000, 1_000_000, 1, false) // true
 */
export function wantsSegment(
  tail: number,
  indexed: number,
  segments: number,
  force: boolean,
): boolean {
  if (tail <= 0) return false;
  if (segments === 0 || force) return true;
  return tail >= Math.max(SEGMENT_MIN_ROWS, Math.min(indexed / SEGMENT_GROWTH, SEGMENT_TAIL_MAX));
}

/**
 * The merges that bring segments of `rows` rows (oldest first) into shape, putting at most `budget` rows into
 * graphs: first the carries ({@link CARRY_RATIO}, the newest pair out of order first), then, while there are more than
 * {@link MAX_SEGMENTS}, the adjacent pair with the fewest rows. Each entry is the position of the pair's first
 * segment in the list as the merges before it left it; a merge over the budget ends the plan.
 * @example planMerges([100_000, 20_000, 20_000], Infinity) // [1]
 * @example planMerges([40_000, 20_000, 20_000], Infinity) // [1, 0]
 * @example planMerges([100_000, 60_000, 60_000], 100_000) // []
 */
export function planMerges(rows: readonly number[], budget: number): number[] {
  const sizes = [...rows];
  const plan: number[] = [];
  let used = 0;
  const merge = (at: number): boolean => {
    const sum = (sizes[at] as number) + (sizes[at + 1] as number);
    if (used + sum > budget) return false;
    used += sum;
    sizes.splice(at, 2, sum);
    plan.push(at);
    return true;
  };
  for (;;) {
    // The newest pair out of order: a carry, or one an earlier budget left (it is taken up again here)
    let at = sizes.length - 2;
    while (at >= 0 && (sizes[at + 1] as number) * CARRY_RATIO < (sizes[at] as number)) at--;
    if (at < 0 || !merge(at)) break;
  }
  while (sizes.length > MAX_SEGMENTS) if (!merge(cheapestPair(sizes))) break;
  return plan;
}

/**
 * The position of the adjacent pair of segments (`rows`, oldest first, at least two) with the fewest rows together,
 * the oldest such pair on a tie.
 * @example cheapestPair([900, 100, 110, 500]) // 1
 */
export function cheapestPair(rows: readonly number[]): number {
  const pair = (j: number) => (rows[j] as number) + (rows[j + 1] as number);
  let at = 0;
  for (let i = 1; i + 1 < rows.length; i++) if (pair(i) < pair(at)) at = i;
  return at;
}

/** Seconds since `started` (`performance.now()`), two decimals. */
function seconds(started: number): string {
  return ((performance.now() - started) / 1000).toFixed(2);
}

/**
 * Reports a server-side index build's progress every `everyMs` through the store's logger, from the build
 * session's row of `pg_stat_progress_create_index` (backend `pid`), read on another pooled connection: the phase,
 * the rows pgvector has put into the graph of the segment's `rows`, and the share of the table scanned. Best
 * effort: a read that fails reports nothing. `stop` ends it without waiting for a read in flight, which then reports
 * nothing: with a pool of one connection, which the build's session holds, that read waits for the build to end.
 */
function watchBuild(
  ctx: StoreContext,
  pid: number,
  what: string,
  rows: number,
  everyMs: number,
): { stop: () => void } {
  const started = performance.now();
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const read = async () => {
    const res = await ctx.client.query<{
      phase: string;
      tuples_done: string;
      blocks_done: string;
      blocks_total: string;
    }>(
      `SELECT phase, tuples_done::text, blocks_done::text, blocks_total::text
         FROM pg_stat_progress_create_index WHERE pid = $1`,
      [pid],
    );
    const r = res.rows[0];
    if (r === undefined || stopped) return;
    // The counts are the graph's while it is built; in the later phases (waiting for older snapshots, validation)
    // they count other things, so only the phase is said.
    let counts = '';
    if (r.phase.startsWith('building index')) {
      counts = `, ${r.tuples_done} of ${rows} rows in the graph`;
      if (Number(r.blocks_total) > 0) {
        counts += `, ${Math.floor((100 * Number(r.blocks_done)) / Number(r.blocks_total))} % of the table scanned`;
      }
    }
    ctx.logger(`${what}: ${r.phase}${counts} (${seconds(started)} s)`);
  };
  const tick = () => {
    timer = undefined;
    void read()
      .catch(() => {})
      .then(() => {
        if (!stopped) timer = setTimeout(tick, everyMs);
      });
  };
  timer = setTimeout(tick, everyMs);
  return {
    stop: () => {
      stopped = true;
      if (timer !== undefined) clearTimeout(timer);
    },
  };
}

/** What one builder's turn did. */
interface BuildOutcome {
  /** `built`, `merged`, `converted`, `exists`, `no rows to index`, or `exists; …` naming what the budget left. */
  reason: string;
  /** Rows put into HNSW graphs (new segment, conversion, merges). */
  indexed: number;
}

/**
 * One builder's turn, on `c` (its own session, holding the collection's index lock, or PGlite's connection):
 * drops what a failed build left, converts a legacy full-table index, indexes the rows after the last segment as a
 * new one (see {@link wantsSegment}), and merges as {@link planMerges} says, putting at most `maxRows` rows into
 * graphs. Each index is built before the ones it replaces are dropped, so every row stays searchable, and rows the
 * indexes do not cover are scanned exactly.
 */
async function buildSegments(
  ctx: StoreContext,
  c: SqlClient,
  concurrently: boolean,
  force: boolean,
  maxRows: number,
  merge: boolean,
  progressMs: number,
): Promise<BuildOutcome> {
  const cc = concurrently ? 'CONCURRENTLY ' : '';
  const drop = (name: string) => c.query(`DROP INDEX ${cc}IF EXISTS ${name}`);
  // The build session's backend, whose row of pg_stat_progress_create_index the progress reports read.
  const pid =
    concurrently && progressMs > 0
      ? Number((await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]?.pid)
      : undefined;
  const create = async (lo: number, hi: number, rows: number) => {
    const what = `collection ${ctx.collectionName}: HNSW segment (${lo}, ${hi}]`;
    ctx.logger(`${what}: indexing ${rows} rows`);
    const started = performance.now();
    const watch = pid === undefined ? undefined : watchBuild(ctx, pid, what, rows, progressMs);
    try {
      await c.query(`CREATE INDEX ${cc}IF NOT EXISTS ${segmentName(ctx.t, lo, hi)} ON ${ctx.t.table}
         USING hnsw (embedding ${OPCLASS[ctx.distance]}) WITH (m = 16, ef_construction = 64)
         WHERE ${segmentPredicate('rid', lo, hi)}`);
    } finally {
      watch?.stop();
    }
    ctx.logger(`${what}: ${rows} rows indexed in ${seconds(started)} s`);
  };
  const cat = await readAnnCatalogue(c, ctx.t);
  if (cat.legacy === 'invalid') await drop(ctx.t.hnswIndex);
  for (const name of cat.invalid) await drop(name);
  const segments = coverOf(cat.segments);
  // Segments inside a wider one: the parts of a merge interrupted before it dropped them.
  for (const s of cat.segments) if (!segments.includes(s)) await drop(s.name);
  const last = segments[segments.length - 1]?.hi ?? 0;
  const found = await c.query<{ max: string | null; tail: string }>(
    `SELECT (SELECT max(rid) FROM ${ctx.t.table})::text AS max,
            (SELECT count(*) FROM ${ctx.t.table} WHERE rid > $1)::text AS tail`,
    [last],
  );
  const max = Number(found.rows[0]?.max ?? 0);
  const tail = Number(found.rows[0]?.tail ?? 0);
  let outcome: BuildOutcome = { reason: 'exists', indexed: 0 };
  const total = segments.reduce((sum, seg) => sum + seg.rows, 0) + tail;
  if (
    merge &&
    cat.legacy !== 'valid' &&
    segments.length + (tail > 0 ? 1 : 0) > 1 &&
    total <= maxRows
  ) {
    // Everything, the newest rows included, as one segment built once; then the parts are dropped.
    await create(0, max, total);
    for (const seg of segments) await drop(seg.name);
    segments.splice(0, segments.length, {
      lo: 0,
      hi: max,
      name: segmentName(ctx.t, 0, max),
      rows: total,
    });
    outcome = { reason: 'merged', indexed: total };
  } else if (cat.legacy === 'valid' && max > maxRows) {
    // Too large for this call's budget: the full-table index keeps serving (and being updated by inserts).
    outcome = {
      reason: `exists; the full-table index of an older version covers ${max} rows, more than this build's ${maxRows}: "ai4rag index" converts it to segments`,
      indexed: 0,
    };
  } else if (cat.legacy === 'valid') {
    // A full-table index makes every insert update its graph: replaced by one segment over the same rows.
    for (const s of segments) await drop(s.name);
    segments.length = 0;
    if (max > 0) {
      await create(0, max, max);
      segments.push({ lo: 0, hi: max, name: segmentName(ctx.t, 0, max), rows: max });
    }
    await drop(ctx.t.hnswIndex);
    outcome = { reason: 'converted', indexed: max };
  } else if (wantsSegment(tail, total - tail, segments.length, force)) {
    // Within the budget: the oldest `maxRows` rows of the tail (the rest wait for the next call).
    let hi = max;
    let rows = tail;
    if (tail > maxRows) {
      // (The alias is not `rid`: ORDER BY would then sort the text.)
      const at = await c.query<{ at: string }>(
        `SELECT rid::text AS at FROM ${ctx.t.table} WHERE rid > $1 ORDER BY rid OFFSET $2 LIMIT 1`,
        [last, maxRows - 1],
      );
      hi = Number(at.rows[0]?.at ?? max);
      rows = maxRows;
    }
    await create(last, hi, rows);
    segments.push({ lo: last, hi, name: segmentName(ctx.t, last, hi), rows });
    outcome = { reason: 'built', indexed: rows };
  } else if (segments.length === 0) {
    outcome = { reason: 'no rows to index', indexed: 0 };
  }
  const merges = planMerges(
    segments.map((seg) => seg.rows),
    maxRows - outcome.indexed,
  );
  for (const at of merges) {
    const a = segments[at] as AnnSegment;
    const b = segments[at + 1] as AnnSegment;
    await create(a.lo, b.hi, a.rows + b.rows);
    await drop(a.name);
    await drop(b.name);
    segments.splice(at, 2, {
      lo: a.lo,
      hi: b.hi,
      name: segmentName(ctx.t, a.lo, b.hi),
      rows: a.rows + b.rows,
    });
    outcome = {
      reason: outcome.reason === 'converted' ? 'converted' : 'built',
      indexed: outcome.indexed + a.rows + b.rows,
    };
  }
  return outcome;
}

/**
 * Brings the HNSW segments up to date once the collection holds `annMinRows` rows (or with `force`): on a server on
 * its own session, concurrently, behind a per-collection advisory lock; plainly on PGlite (see
 * `PgVectorStore.buildIndex`).
 */
export async function buildIndex(
  ctx: StoreContext,
  state: AnnState,
  annMinRows: number,
  options: BuildIndexOptions = {},
): Promise<IndexBuildResult> {
  const started = performance.now();
  const lockTimeoutMs = checkNumber(
    'lockTimeoutMs',
    options.lockTimeoutMs ?? 5000,
    1,
    3_600_000,
    true,
  );
  const maxRows = checkNumber(
    'maxRows',
    options.maxRows ?? Number.MAX_SAFE_INTEGER,
    1,
    Number.MAX_SAFE_INTEGER,
    true,
  );
  const done = (
    built: boolean,
    rows: number,
    reason: string,
    indexed?: number,
  ): IndexBuildResult => ({
    built,
    rows,
    seconds: Number(((performance.now() - started) / 1000).toFixed(2)),
    reason,
    ...(indexed !== undefined && { indexed, segments: state.segments.length }),
  });
  const memory = buildMemory(options.memory);
  const progressMs = checkNumber(
    'progressMs',
    options.progressMs ?? BUILD_PROGRESS_MS,
    0,
    3_600_000,
    true,
  );
  const rows = await ctx.run('count rows', () => rowCount(ctx));
  if (ctx.dimension > MAX_HNSW_DIMENSION) {
    return done(
      false,
      rows,
      `dimension ${ctx.dimension} exceeds HNSW's ${MAX_HNSW_DIMENSION}: exact scan`,
    );
  }
  if (!options.force && rows < annMinRows) {
    return done(false, rows, `below threshold (${rows} of ${annMinRows} rows): exact scan`);
  }
  const force = options.force === true;
  let outcome: BuildOutcome | 'busy' | 'queued';
  if (ctx.pglite || ctx.client.session === undefined) {
    outcome = await ctx.exclusive(() =>
      ctx.run('build index', () =>
        buildSegments(ctx, ctx.client, false, force, maxRows, options.merge === true, 0),
      ),
    );
  } else {
    outcome = await ctx.run('build index', () =>
      (ctx.client.session as NonNullable<SqlClient['session']>)(async (c) => {
        await c.query(`SET lock_timeout = ${lockTimeoutMs}`);
        await c.query(`SET maintenance_work_mem = '${memory}'`);
        // One builder per collection (two concurrent builds deadlock): a session-level advisory lock, released
        // with the connection, which a session never returns to the pool.
        if (!(await tryLockWithin(c, `${ctx.t.key}:index`, 0))) return 'busy' as const;
        // Then one build at a time in the database, waited for here, before any work. A concurrent build of a
        // partial index (every segment is one) waits for each older snapshot in the database, another collection's
        // build among them, and gave up at lock_timeout after building the whole graph. The lock is tried, not
        // waited for: a statement waiting on it would hold a snapshot that the running build waits for (deadlock).
        const queued = !(await tryLockWithin(c, DATABASE_BUILD_LOCK, lockTimeoutMs));
        if (queued) return 'queued' as const;
        try {
          return await buildSegments(
            ctx,
            c,
            true,
            force,
            maxRows,
            options.merge === true,
            progressMs,
          );
        } catch (error: unknown) {
          if (sqlState(error) !== LOCK_NOT_AVAILABLE) throw error;
          throw new VectorStoreError(
            `index build on collection ${ctx.collectionName} gave up after waiting ${lockTimeoutMs} ms for a lock or ` +
              'for a transaction older than it to end (lock timeout): searches scan the rows it did not index ' +
              'exactly, and the next build drops what it left and tries again',
            { cause: error },
          );
        }
      }),
    );
  }
  await ctx.run('check index', () => readAnnState(ctx.client, ctx.t, state));
  if (outcome === 'busy') return done(false, rows, 'being built by another session');
  if (outcome === 'queued') {
    return done(
      false,
      rows,
      `another index build is running in this database (waited ${lockTimeoutMs} ms; the next build tries again)`,
    );
  }
  const built = ['built', 'converted', 'merged'].includes(outcome.reason);
  const result = done(built, rows, outcome.reason, outcome.indexed);
  if (built) {
    ctx.logger(
      `collection ${ctx.collectionName}: HNSW index ${outcome.reason} (${outcome.indexed} of ${rows} rows indexed, ${state.segments.length} segment(s), ${result.seconds} s)`,
    );
  }
  return result;
}

/** Reads the catalogue now (stats do: an index another session built counts at once). */
export async function noticeAnnIndex(ctx: StoreContext, state: AnnState): Promise<void> {
  if (ctx.dimension <= MAX_HNSW_DIMENSION) {
    await ctx.run('check index', () => readAnnState(ctx.client, ctx.t, state));
  }
}
