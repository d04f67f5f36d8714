/**
 * BM25 statistics of a pgvector collection: writers append their changes to the collection's log (no lock); the
 * log is folded into the document-frequency table and the registry's counts before a keyword search.
 */
import type { SqlClient } from '../sql-client.js';
import { encodeInt4Pairs } from './copy-binary.js';
import type { CollectionTables } from './names.js';
import { REGISTRY_TABLE } from './schema.js';

/** Pseudo-terms of the df log that carry the chunk-count and token-total deltas (real term ids are ≥ 0). */
export const N_TERM = -1;
export const TOTAL_TERM = -2;
/** Rows per statement when the log or the df table is written without COPY. */
const DF_BATCH = 10_000;

/**
 * Records the statistics changes of a write: per-term document-frequency deltas and, under the pseudo-terms
 * {@link N_TERM} / {@link TOTAL_TERM}, the chunk-count and token-total deltas. Writers only append (binary COPY
 * where available) and take no collection-wide lock, so writers of different documents never wait on each
 * other; the log is folded into the df table and the registry once, before the next keyword search (`foldDf`).
 */
export async function logDf(
  tx: SqlClient,
  t: CollectionTables,
  useCopy: boolean,
  delta: Map<number, number>,
  chunks = 0,
  tokens = 0,
): Promise<void> {
  const terms: number[] = [];
  const deltas: number[] = [];
  if (chunks !== 0) {
    terms.push(N_TERM);
    deltas.push(chunks);
  }
  if (tokens !== 0) {
    terms.push(TOTAL_TERM);
    deltas.push(tokens);
  }
  for (const [term, d] of delta) {
    if (d === 0) continue;
    terms.push(term);
    deltas.push(d);
  }
  if (terms.length === 0) return;
  if (useCopy && tx.copyFrom) {
    await tx.copyFrom(t.dfLog, ['term', 'delta'], encodeInt4Pairs(terms, deltas));
  } else {
    for (let i = 0; i < terms.length; i += DF_BATCH) {
      await tx.query(
        `INSERT INTO ${t.dfLog} (term, delta) SELECT * FROM unnest($1::int4[], $2::int4[])`,
        [terms.slice(i, i + DF_BATCH), deltas.slice(i, i + DF_BATCH)],
      );
    }
  }
}
/**
 * Folds the df log into the df table and the registry's counts, and clears it — in one statement, so rows that
 * writers append meanwhile are neither lost nor counted twice. Caller holds the registry lock.
 */
export async function foldDf(tx: SqlClient, t: CollectionTables): Promise<void> {
  await tx.query(
    `WITH moved AS (DELETE FROM ${t.dfLog} RETURNING term, delta),
     agg AS (SELECT term, sum(delta)::bigint AS d FROM moved GROUP BY term),
     up AS (
       INSERT INTO ${t.dfTable} AS x (term, df)
       SELECT term, d::int FROM agg WHERE term >= 0 AND d <> 0
       ON CONFLICT (term) DO UPDATE SET df = x.df + EXCLUDED.df RETURNING 1)
     UPDATE ${REGISTRY_TABLE} SET
       chunk_count = GREATEST(0, chunk_count + COALESCE((SELECT d FROM agg WHERE term = ${N_TERM}), 0)),
       token_total = GREATEST(0, token_total + COALESCE((SELECT d FROM agg WHERE term = ${TOTAL_TERM}), 0)),
       df_pending = false
     WHERE name = $1`,
    [t.key],
  );
  await tx.query(`DELETE FROM ${t.dfTable} WHERE df <= 0`);
  await tx.query(
    `UPDATE ${REGISTRY_TABLE} SET bm25_avgdl_weighted = NULL WHERE name = $1 AND chunk_count = 0`,
    [t.key],
  );
}
export async function applyDf(
  tx: SqlClient,
  t: CollectionTables,
  delta: Map<number, number>,
): Promise<void> {
  const entries = [...delta.entries()].filter(([, d]) => d !== 0);
  for (let i = 0; i < entries.length; i += DF_BATCH) {
    const slice = entries.slice(i, i + DF_BATCH);
    await tx.query(
      `INSERT INTO ${t.dfTable} AS d (term, df)
       SELECT u.term, u.df FROM unnest($1::int4[], $2::int4[]) AS u(term, df)
       ON CONFLICT (term) DO UPDATE SET df = d.df + EXCLUDED.df`,
      [slice.map(([t]) => t), slice.map(([, d]) => d)],
    );
  }
  if (entries.some(([, d]) => d < 0)) await tx.query(`DELETE FROM ${t.dfTable} WHERE df <= 0`);
}
