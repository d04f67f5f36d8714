/**
 * The HNSW index of a pgvector collection: whether a valid one exists, noticing one another process built, and
 * building it (`CREATE INDEX CONCURRENTLY` on its own session on a server; a plain `CREATE INDEX` on PGlite).
 */

import { VectorStoreConfigError } from '../errors.js';
import type { SqlClient } from '../sql-client.js';
import type { BuildIndexOptions, DistanceMetric, IndexBuildResult } from '../types.js';
import { N_TERM } from './bm25-stats.js';
import type { CollectionTables } from './names.js';
import { REGISTRY_TABLE } from './schema.js';
import { checkNumber, type StoreContext } from './store-context.js';

/** How often a store without an ANN index asks the catalogue whether one was built meanwhile. */
const ANN_RECHECK_MS = 30_000;
/** `maintenance_work_mem` of an index build: HNSW builds slow down sharply once the graph outgrows it. */
const INDEX_BUILD_MEMORY = '256MB';
/** Largest dimension pgvector's HNSW index accepts for `vector`; above it the store scans exactly. */
export const MAX_HNSW_DIMENSION = 2000;

const OPCLASS: Record<DistanceMetric, string> = {
  cosine: 'vector_cosine_ops',
  l2: 'vector_l2_ops',
  l1: 'vector_l1_ops',
  inner_product: 'vector_ip_ops',
};

/** What a store knows of its HNSW index (it changes as the index is built or noticed). */
export interface AnnState {
  /** The index exists and is valid. */
  valid: boolean;
  /** When the catalogue was last asked whether another process built the index (ms since the epoch). */
  checkedAt: number;
  /** The exact-scan notice (dimension above HNSW's limit) was logged. */
  warnedExactScan: boolean;
}

/** Whether the HNSW index exists and is valid (a failed concurrent build leaves an invalid one). */
export async function annIndexValid(client: SqlClient, t: CollectionTables): Promise<boolean> {
  const res = await client.query<{ valid: boolean }>(
    `SELECT i.indisvalid AS valid FROM pg_index i WHERE i.indexrelid = to_regclass($1)`,
    [t.hnswIndex.slice(1, -1)],
  );
  return res.rows[0]?.valid === true;
}

/**
 * Notices an index another process built (at most every {@link ANN_RECHECK_MS}), never builds one: a search
 * scans exactly until the index is valid.
 */
export async function refreshAnnIndex(ctx: StoreContext, state: AnnState): Promise<void> {
  if (state.valid || ctx.dimension > MAX_HNSW_DIMENSION) {
    if (ctx.dimension > MAX_HNSW_DIMENSION && !state.warnedExactScan) {
      state.warnedExactScan = true;
      ctx.logger(
        `collection ${ctx.collectionName}: ${ctx.dimension} dimensions exceed HNSW's ${MAX_HNSW_DIMENSION}; using exact scan`,
      );
    }
    return;
  }
  if (Date.now() - state.checkedAt < ANN_RECHECK_MS) return;
  state.checkedAt = Date.now();
  state.valid = await annIndexValid(ctx.client, ctx.t);
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
 * Builds the HNSW index once the collection holds `annMinRows` rows (or with `force`): concurrently on a server's
 * own session, behind a per-collection advisory lock; plainly on PGlite (see `PgVectorStore.buildIndex`).
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
  const done = (built: boolean, rows: number, reason: string): IndexBuildResult => ({
    built,
    rows,
    seconds: Number(((performance.now() - started) / 1000).toFixed(2)),
    reason,
  });
  const memory = buildMemory(options.memory);
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
  if (await ctx.run('check index', () => annIndexValid(ctx.client, ctx.t))) {
    state.valid = true;
    return done(false, rows, 'exists');
  }
  const create = (concurrently: boolean) =>
    `CREATE INDEX ${concurrently ? 'CONCURRENTLY ' : ''}IF NOT EXISTS ${ctx.t.hnswIndex} ON ${ctx.t.table}
       USING hnsw (embedding ${OPCLASS[ctx.distance]}) WITH (m = 16, ef_construction = 64)`;
  if (ctx.pglite || ctx.client.session === undefined) {
    await ctx.exclusive(() =>
      ctx.run('build index', async () => {
        await ctx.client.query(`DROP INDEX IF EXISTS ${ctx.t.hnswIndex}`);
        await ctx.client.query(create(false));
      }),
    );
  } else {
    const outcome = await ctx.run('build index', () =>
      (ctx.client.session as NonNullable<SqlClient['session']>)(async (c) => {
        await c.query(`SET lock_timeout = ${lockTimeoutMs}`);
        await c.query(`SET maintenance_work_mem = '${memory}'`);
        // One builder per collection (two concurrent builds deadlock): a session-level advisory lock, released
        // with the connection, which a session never returns to the pool.
        const lock = await c.query<{ ok: boolean }>(
          'SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS ok',
          [`${ctx.t.key}:index`],
        );
        if (lock.rows[0]?.ok !== true) return 'busy';
        if (await annIndexValid(ctx.client, ctx.t)) return 'exists';
        const leftover = await c.query<{ valid: boolean }>(
          `SELECT i.indisvalid AS valid FROM pg_index i WHERE i.indexrelid = to_regclass($1)`,
          [ctx.t.hnswIndex.slice(1, -1)],
        );
        if (leftover.rows[0]?.valid === false) {
          await c.query(`DROP INDEX CONCURRENTLY IF EXISTS ${ctx.t.hnswIndex}`);
        }
        await c.query(create(true));
        return 'done';
      }),
    );
    if (outcome === 'busy') return done(false, rows, 'being built by another session');
    if (outcome === 'exists') {
      state.valid = true;
      return done(false, rows, 'exists');
    }
  }
  state.valid = await ctx.run('check index', () => annIndexValid(ctx.client, ctx.t));
  state.checkedAt = Date.now();
  const result = done(state.valid, rows, state.valid ? 'built' : 'build left no valid index');
  ctx.logger(
    `collection ${ctx.collectionName}: HNSW index ${result.reason} (${rows} rows, ${result.seconds} s)`,
  );
  return result;
}

/** Reads the catalogue now (stats do: an index another session built counts at once). */
export async function noticeAnnIndex(ctx: StoreContext, state: AnnState): Promise<void> {
  if (!state.valid && ctx.dimension <= MAX_HNSW_DIMENSION) {
    state.valid = await ctx.run('check index', () => annIndexValid(ctx.client, ctx.t));
    state.checkedAt = Date.now();
  }
}
