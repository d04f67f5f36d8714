/**
 * Freshness of a pgvector collection's BM25 statistics: folding the append-only log into the df table and the
 * registry's counts, the staleness test (analyzer, k1/b, avgdl drift beyond the tolerance), re-weighting every
 * row, and the statistics read of a keyword search (one statement in the common case). A read-only store folds
 * nothing: it adds the pending log in itself.
 */
import { type TermStats, termStatsFromCounts } from '../../generation/term-stats.js';
import { ANALYZER_VERSION, analyze } from '../../text/analyzer.js';
import { VectorStoreError } from '../errors.js';
import type { SqlClient } from '../sql-client.js';
import type { StatisticsRefresh } from '../types.js';
import { bm25DocWeights, termFrequencies, termId } from './bm25.js';
import { applyDf, foldDf, N_TERM, TOTAL_TERM } from './bm25-stats.js';
import { encodePostings } from './copy-binary.js';
import { keywordIndexBulk } from './keyword-index.js';
import { lockRegistry, type RegistryRow } from './registry.js';
import { REGISTRY_TABLE } from './schema.js';
import { type StoreContext, sqlState } from './store-context.js';
import { sortedLiteral, sortedPostings, sortedWeights } from './writes.js';

/** Rows read and re-weighted per statement. */
const REWEIGHT_BATCH = 1000;

/**
 * Term rarity over this collection's chunks, read from the BM25 document-frequency table (after folding pending
 * updates), so serving weighs question terms exactly as the keyword index does.
 */
export async function termStats(ctx: StoreContext): Promise<TermStats> {
  const reg = await ensureBm25Fresh(ctx);
  const rows = await ctx.client.query<{ term: number; df: number }>(
    ctx.readOnly
      ? `SELECT term, sum(df)::int AS df FROM (SELECT term, df FROM ${ctx.t.dfTable}
             UNION ALL SELECT term, delta FROM ${ctx.t.dfLog} WHERE term >= 0) s GROUP BY term HAVING sum(df) > 0`
      : `SELECT term, df FROM ${ctx.t.dfTable}`,
  );
  const df = new Map(rows.rows.map((r) => [Number(r.term), Number(r.df)]));
  return termStatsFromCounts(reg.n, (term) => df.get(termId(term)) ?? 0);
}

/**
 * The registry row and the document frequency of each of `terms` found, in one statement: for a reader always
 * (it counts the pending log in, as {@link ensureBm25Fresh} does), for a writer when the df log is empty and the
 * weights are current (the common case; else {@link ensureBm25Fresh} folds or re-weights, then the df lookup).
 */
export async function queryStatistics(
  ctx: StoreContext,
  terms: number[],
): Promise<{ reg: RegistryRow; df: Map<number, number> }> {
  const cols = `r.dimension, r.distance, r.embedding_model, r.analyzer_version, r.bm25_k1, r.bm25_b,
      r.bm25_avgdl_weighted, r.df_pending`;
  // A reader folds nothing, so it adds the pending log entries of the query's terms itself.
  const dfSql = (terms: string) =>
    ctx.readOnly
      ? `SELECT term, sum(df)::int AS df FROM (SELECT term, df FROM ${ctx.t.dfTable} WHERE term = ANY(${terms}::int4[])
             UNION ALL SELECT term, delta FROM ${ctx.t.dfLog} WHERE term = ANY(${terms}::int4[])) s
           GROUP BY term HAVING sum(df) > 0`
      : `SELECT term, df FROM ${ctx.t.dfTable} WHERE term = ANY(${terms}::int4[])`;
  const res = await ctx.client.query<
    RegistryRow & { pending: boolean; df_terms: number[] | null; df_values: number[] | null }
  >(
    `SELECT ${cols}, ${
      ctx.readOnly
        ? `(r.chunk_count + COALESCE(l.n, 0))::float8 AS n, (r.token_total + COALESCE(l.total, 0))::float8 AS total,
             false AS pending`
        : `r.chunk_count::float8 AS n, r.token_total::float8 AS total,
             EXISTS (SELECT 1 FROM ${ctx.t.dfLog}) AS pending`
    }, d.df_terms, d.df_values
       FROM ${REGISTRY_TABLE} r${
         ctx.readOnly
           ? ` CROSS JOIN (SELECT sum(delta) FILTER (WHERE term = ${N_TERM}) AS n,
               sum(delta) FILTER (WHERE term = ${TOTAL_TERM}) AS total FROM ${ctx.t.dfLog} WHERE term < 0) l`
           : ''
       }
       CROSS JOIN LATERAL (SELECT array_agg(term ORDER BY term) AS df_terms, array_agg(df ORDER BY term) AS df_values
         FROM (${dfSql('$2')}) f) d
       WHERE r.name = $1`,
    [ctx.t.key, terms],
  );
  const row = res.rows[0];
  if (row === undefined) {
    throw new VectorStoreError(
      `collection ${ctx.collectionName} is missing from ${REGISTRY_TABLE}`,
    );
  }
  if (!row.pending && (ctx.readOnly || !isStale(ctx, row))) {
    const { pending: _p, df_terms, df_values, ...reg } = row;
    const df = new Map<number, number>();
    (df_terms ?? []).forEach((term, i) => {
      df.set(Number(term), Number(df_values?.[i]));
    });
    return { reg, df };
  }
  const reg = await ensureBm25Fresh(ctx);
  const dfRows = await ctx.client.query<{ term: number; df: number }>(dfSql('$1'), [terms]);
  return { reg, df: new Map(dfRows.rows.map((r) => [Number(r.term), Number(r.df)])) };
}

/**
 * Re-weights documents when avgdl drifted beyond the tolerance or k1/b changed. A read-only store writes
 * nothing: it counts the pending log into the chunk and token totals, and keeps the stored weights until a
 * writer re-weights them (writers fold the log when they finish a write, and re-weight: {@link refreshStatistics}).
 */
export async function ensureBm25Fresh(ctx: StoreContext): Promise<RegistryRow> {
  return (await freshen(ctx, Number.POSITIVE_INFINITY)).reg;
}

/**
 * Brings the BM25 statistics up to date now, on the write side: folds the pending log and re-weights every row when
 * the weights are stale, unless the collection holds more than `maxRows` rows. Writers call it once their documents
 * are committed, so that the re-weighting a drift calls for is not done by the next keyword search, inside a request
 * (an upload service's first documents fix the average length from a few texts, and the next ones move it). A search
 * still does whatever is left. A read-only store changes nothing.
 */
export async function refreshStatistics(
  ctx: StoreContext,
  maxRows = Number.POSITIVE_INFINITY,
): Promise<StatisticsRefresh> {
  if (ctx.readOnly) return { reweighted: false, deferred: false };
  const { reweighted, deferred } = await freshen(ctx, maxRows);
  return { reweighted, deferred };
}

/** {@link ensureBm25Fresh} for a writer, re-weighting only up to `maxRows` rows; says what it did. */
async function freshen(
  ctx: StoreContext,
  maxRows: number,
): Promise<{ reg: RegistryRow; reweighted: boolean; deferred: boolean }> {
  if (ctx.readOnly) {
    const res = await ctx.client.query<RegistryRow>(
      `SELECT r.dimension, r.distance, r.embedding_model, r.analyzer_version, r.bm25_k1, r.bm25_b,
                r.bm25_avgdl_weighted, r.df_pending,
                (r.chunk_count + COALESCE(l.n, 0))::float8 AS n, (r.token_total + COALESCE(l.total, 0))::float8 AS total
         FROM ${REGISTRY_TABLE} r CROSS JOIN (SELECT sum(delta) FILTER (WHERE term = ${N_TERM}) AS n,
           sum(delta) FILTER (WHERE term = ${TOTAL_TERM}) AS total FROM ${ctx.t.dfLog} WHERE term < 0) l
         WHERE r.name = $1`,
      [ctx.t.key],
    );
    const row = res.rows[0];
    if (row === undefined) {
      throw new VectorStoreError(
        `collection ${ctx.collectionName} is missing from ${REGISTRY_TABLE}`,
      );
    }
    return { reg: row, reweighted: false, deferred: false };
  }
  const reg = await lockRegistry(ctx.client, ctx.t, ctx.collectionName, false);
  const log = await ctx.client.query<{ pending: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM ${ctx.t.dfLog}) AS pending`,
  );
  const pending = log.rows[0]?.pending === true;
  if (!pending && !isStale(ctx, reg)) return { reg, reweighted: false, deferred: false };
  if (pending) {
    await ctx.exclusive(() =>
      ctx.run('BM25 statistics', () =>
        ctx.client.transaction(async (tx) => {
          await lockRegistry(tx, ctx.t, ctx.collectionName);
          await foldDf(tx, ctx.t);
        }),
      ),
    );
    await compactLog(ctx);
  }
  const folded = pending ? await lockRegistry(ctx.client, ctx.t, ctx.collectionName, false) : reg;
  if (isStale(ctx, folded) && folded.n > maxRows) {
    return { reg: folded, reweighted: false, deferred: true };
  }
  const reweighted = isStale(ctx, folded) && (await refreshBm25(ctx, false));
  return {
    reg: await lockRegistry(ctx.client, ctx.t, ctx.collectionName, false),
    reweighted,
    deferred: false,
  };
}

function isStale(ctx: StoreContext, reg: RegistryRow): boolean {
  if (
    reg.analyzer_version !== ANALYZER_VERSION ||
    reg.bm25_k1 !== ctx.bm25.k1 ||
    reg.bm25_b !== ctx.bm25.b
  ) {
    return true;
  }
  if (reg.n === 0) return false;
  const current = reg.total > 0 ? reg.total / reg.n : 1;
  const weighted = reg.bm25_avgdl_weighted;
  if (weighted === null || weighted <= 0) return true;
  return Math.abs(current - weighted) / weighted > ctx.bm25.reweightTolerance;
}

/**
 * Recomputes every row's BM25 weights (and, after an analyzer change, token counts and df) in batches; resolves
 * false when, under the registry's lock, there was nothing to do (another session had just done it).
 */
export function refreshBm25(ctx: StoreContext, analyzerChanged: boolean): Promise<boolean> {
  return ctx.exclusive(() =>
    ctx.run('BM25 re-weighting', () =>
      ctx.client.transaction(async (tx) => {
        // The chunk table's SHARE lock before the registry row, the order writers take them in (their rows, then
        // the registry), so a re-weighting and a first write cannot deadlock.
        const bulk = keywordIndexBulk(ctx.t.kw);
        for (const sql of bulk.begin) await tx.query(sql);
        const reg = await lockRegistry(tx, ctx.t, ctx.collectionName);
        const rebuild = analyzerChanged || reg.analyzer_version !== ANALYZER_VERSION;
        if (!rebuild && !isStale(ctx, reg)) return false;
        let n = reg.n;
        let total = reg.total;
        if (rebuild) {
          const df = new Map<number, number>();
          n = 0;
          total = 0;
          await forEachRowBatch(ctx, tx, async (rows) => {
            const tcs = rows.map((r) => {
              const tokens = analyze(r.content);
              for (const id of termFrequencies(tokens).keys()) df.set(id, (df.get(id) ?? 0) + 1);
              return tokens.length;
            });
            n += rows.length;
            total += tcs.reduce((s, x) => s + x, 0);
            await tx.query(
              `UPDATE ${ctx.t.table} AS t SET token_count = u.tc
                 FROM unnest($1::int8[], $2::int4[]) AS u(rid, tc) WHERE t.rid = u.rid`,
              [rows.map((r) => r.rid), tcs],
            );
          });
          await tx.query(`DELETE FROM ${ctx.t.dfTable}`);
          await tx.query(`DELETE FROM ${ctx.t.dfLog}`);
          await tx.query(`UPDATE ${REGISTRY_TABLE} SET df_pending = false WHERE name = $1`, [
            ctx.t.key,
          ]);
          await applyDf(tx, ctx.t, df);
        }
        const avgdl = n > 0 && total > 0 ? total / n : 1;
        // Where the store writes through COPY (`useCopy`: not a pg client of pglite-socket, on which a COPY FROM
        // STDIN never finished), it sends each batch's new postings itself (sorted, binary) as the write path does,
        // instead of the server parsing every row's weights back from their text at the end: a re-weighting of 6,343
        // SciFact chunks on the server spent 1.24 s of its 2.95 s in that parse (pg_stat_statements, a scratch run).
        const copy = ctx.useCopy ? tx.copyFrom?.bind(tx) : undefined;
        if (copy !== undefined) for (const sql of bulk.clear) await tx.query(sql);
        await forEachRowBatch(ctx, tx, async (rows) => {
          const weights = rows.map((r) => {
            const tokens = analyze(r.content);
            return sortedWeights(
              bm25DocWeights(
                termFrequencies(tokens),
                tokens.length,
                avgdl,
                ctx.bm25.k1,
                ctx.bm25.b,
              ),
            );
          });
          await tx.query(
            `UPDATE ${ctx.t.table} AS t SET bm25 = u.bm::sparsevec
               FROM unnest($1::int8[], $2::text[]) AS u(rid, bm) WHERE t.rid = u.rid`,
            [rows.map((r) => r.rid), weights.map(sortedLiteral)],
          );
          if (copy === undefined) return;
          const postings = sortedPostings(weights, () => true);
          await copy(
            ctx.t.kw.postings,
            ['term', 'w', 'rid'],
            encodePostings({
              term: postings.term,
              w: postings.w,
              rid: Float64Array.from(postings.row, (i) => (rows[i] as { rid: number }).rid),
            }),
          );
        });
        if (copy !== undefined) await tx.query(bulk.resume);
        else for (const sql of bulk.end) await tx.query(sql);
        await tx.query(
          `UPDATE ${REGISTRY_TABLE} SET chunk_count = $2, token_total = $3, bm25_avgdl_weighted = $4,
               analyzer_version = $5, bm25_k1 = $6, bm25_b = $7 WHERE name = $1`,
          [ctx.t.key, n, total, n > 0 ? avgdl : null, ANALYZER_VERSION, ctx.bm25.k1, ctx.bm25.b],
        );
        ctx.logger(
          `collection ${ctx.collectionName}: BM25 weights recomputed (avgdl ${avgdl.toFixed(2)})`,
        );
        return true;
      }),
    ),
  );
}

async function forEachRowBatch(
  ctx: StoreContext,
  tx: SqlClient,
  fn: (rows: { rid: number; content: string }[]) => Promise<void>,
): Promise<void> {
  // By row id, which is unique: a chunk id is shared by its versions (a staged write's rows beside the committed
  // ones), so paging by it skipped a version that fell just past a page's end.
  let after = -1;
  for (;;) {
    const res = await tx.query<{ rid: number; content: string }>(
      `SELECT rid::float8 AS rid, content FROM ${ctx.t.table} WHERE rid > $1 ORDER BY rid LIMIT ${REWEIGHT_BATCH}`,
      [after],
    );
    if (res.rows.length === 0) return;
    const rows = res.rows.map((r) => ({ ...r, rid: Number(r.rid) }));
    await fn(rows);
    after = rows[rows.length - 1]?.rid ?? after;
    if (rows.length < REWEIGHT_BATCH) return;
  }
}

/**
 * Folds the statistics log unless another session holds the registry row (it folds then): keeps the log short
 * for read-only searchers, which add it up on every keyword search, without making writers wait on each other.
 */
export async function foldIfIdle(ctx: StoreContext): Promise<void> {
  try {
    const folded = await ctx.client.transaction(async (tx) => {
      const row = await tx.query<{ one: number }>(
        `SELECT 1 AS one FROM ${REGISTRY_TABLE} WHERE name = $1 AND EXISTS (SELECT 1 FROM ${ctx.t.dfLog})
           FOR UPDATE SKIP LOCKED`,
        [ctx.t.key],
      );
      if (row.rows.length > 0) await foldDf(tx, ctx.t);
      return row.rows.length > 0;
    });
    if (folded) await compactLog(ctx);
  } catch (error: unknown) {
    // The write is committed; the next fold (or a writer's keyword search) catches up.
    ctx.logger(
      `collection ${ctx.collectionName}: folding BM25 statistics failed (SQLSTATE ${sqlState(error) ?? '?'})`,
    );
  }
}

/** Size of the statistics log's table above which a fold is followed by a VACUUM of it (see {@link compactLog}). */
export const LOG_VACUUM_BYTES = 1024 * 1024;

/** The VACUUM options for the statistics log on a server: skip it when another VACUUM holds it, and never truncate. */
export const LOG_VACUUM_SERVER = '(SKIP_LOCKED, TRUNCATE false)';

/**
 * VACUUMs the statistics log's table once a fold has emptied it and it holds more than {@link LOG_VACUUM_BYTES}.
 * A fold deletes the rows it moves; until they are vacuumed, every keyword search's "anything pending?" probe (and
 * a reader's sum of the log) scans them: 10.8 ms a search on the server after a 100k-chunk ingest, until autovacuum
 * came a minute later. PGlite has no autovacuum, so there the dead rows stayed. The VACUUM runs after the fold's
 * transaction and takes no lock that writers wait on; a role that may not vacuum it gets a warning from PostgreSQL,
 * and any failure is logged, not thrown (the fold is committed).
 *
 * On PGlite (one connection) it also truncates the emptied table. On a server it neither truncates nor waits
 * ({@link LOG_VACUUM_SERVER}): truncating needs an ACCESS EXCLUSIVE lock, which PostgreSQL tries for up to 5 s while
 * other writers hold the log, and a second writer's VACUUM queued behind the first. With 4 writers into one
 * collection on the server, those waits (5.0 s each, `log_lock_waits`) halved the ingest rate (README, "Growth with
 * the collection"). Autovacuum truncates the table later, without blocking anyone; the empty pages are reused.
 */
export async function compactLog(ctx: StoreContext): Promise<void> {
  try {
    const size = await ctx.client.query<{ bytes: string | number }>(
      'SELECT pg_relation_size($1::regclass) AS bytes',
      [ctx.t.dfLog],
    );
    if (Number(size.rows[0]?.bytes ?? 0) <= LOG_VACUUM_BYTES) return;
    await ctx.client.query(`VACUUM ${ctx.pglite ? '' : `${LOG_VACUUM_SERVER} `}${ctx.t.dfLog}`);
  } catch (error: unknown) {
    ctx.logger(
      `collection ${ctx.collectionName}: vacuuming the BM25 statistics log failed (SQLSTATE ${sqlState(error) ?? '?'})`,
    );
  }
}
