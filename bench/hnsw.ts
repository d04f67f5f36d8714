/**
 * `npm run bench -- --hnsw [--rows 20000] [--add 5000]`: what pgvector's HNSW index costs and gives, measured in
 * plain SQL on the PostgreSQL server, with the local embedder.
 *
 * 1. Quality by `hnsw.ef_search` (the store's `efSearch` floor): vector-only nDCG@10 on SciFact dev
 *    (`../shared/data/scifact`; skipped when absent) with an exact scan and with HNSW (m 16, ef_construction 64)
 *    at ef_search 40 (pgvector's default), 100 and 200, and the overlap of each top 10 with the exact one.
 * 2. Cost: on `--rows` synthetic chunks (the `--scale` corpus), the index build in rows/s against `--add` more
 *    rows inserted into the indexed table, and into the same table without an index; and the probe p50 at each
 *    ef_search against the exact scan.
 * 3. Segments (the store's layout): insert rate after a partial index, and the probe p50 of one segment plus the
 *    rows after it, then of two segments, each against the exact scan.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { ENV } from '../shared/src/config.js';
import { createOfflineEmbedder } from '../shared/src/embeddings/local.js';
import { pgConnection, pgVectorConfigFromEnv } from '../shared/src/vectorstores/config.js';
import { vectorLiteral } from '../shared/src/vectorstores/pgvector/search.js';
import { startPostgres } from './postgres.js';
import { documents, zipfSampler } from './scale.js';

const SCIFACT = resolve(import.meta.dirname, '..', '..', 'shared', 'data', 'scifact');
const EF = [40, 100, 200];
const INDEX = 'USING hnsw (e vector_cosine_ops) WITH (m = 16, ef_construction = 64)';

function option(argv: readonly string[], name: string, fallback: number): number {
  const i = argv.indexOf(name);
  if (i < 0) return fallback;
  const n = Number(argv[i + 1]);
  if (!Number.isInteger(n) || n < 1000) {
    throw new Error(`${name} must be an integer ≥ 1000, got "${argv[i + 1]}"`);
  }
  return n;
}

async function insert(
  pool: pg.Pool,
  table: string,
  vecs: readonly number[][],
  from: number,
  to: number,
) {
  for (let s = from; s < to; s += 500) {
    const params: unknown[] = [];
    const values: string[] = [];
    for (let i = s; i < Math.min(to, s + 500); i += 1) {
      params.push(i, vectorLiteral(vecs[i] as number[]));
      values.push(`($${params.length - 1}, $${params.length}::vector)`);
    }
    await pool.query(`INSERT INTO ${table} (i, e) VALUES ${values.join(', ')}`, params);
  }
}

/** Top 10 ids and per-query milliseconds; `ef` 0 scans exactly; `sql` (default: the whole table) takes $1. */
async function topTen(
  pool: pg.Pool,
  table: string,
  queries: readonly number[][],
  ef: number,
  sql = `SELECT i FROM ${table} ORDER BY e <=> $1::vector LIMIT 10`,
) {
  const c = await pool.connect();
  const tops: number[][] = [];
  const ms: number[] = [];
  try {
    for (const q of queries) {
      await c.query('BEGIN');
      await c.query(
        ef === 0 ? 'SET LOCAL enable_indexscan = off' : `SET LOCAL hnsw.ef_search = ${ef}`,
      );
      const started = performance.now();
      const res = await c.query<{ i: number }>(sql, [vectorLiteral(q)]);
      ms.push(performance.now() - started);
      await c.query('COMMIT');
      tops.push(res.rows.map((r) => r.i));
    }
  } finally {
    c.release();
  }
  ms.sort((a, b) => a - b);
  return { tops, p50: ms[Math.floor(ms.length / 2)] as number };
}

const overlap = (a: readonly number[][], b: readonly number[][]) =>
  a.reduce((sum, top, q) => sum + top.filter((i) => b[q]?.includes(i)).length / 10, 0) / a.length;

async function quality(pool: pg.Pool): Promise<void> {
  if (!existsSync(join(SCIFACT, 'corpus.jsonl'))) {
    console.log('quality: skipped (../shared/data/scifact is absent)');
    return;
  }
  const corpus = readFileSync(join(SCIFACT, 'corpus.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { id: string; title: string; text: string });
  const bench = JSON.parse(readFileSync(join(SCIFACT, 'benchmark.dev.json'), 'utf8')) as {
    question: string;
    correct_answer_document_ids: string[];
  }[];
  const embedder = createOfflineEmbedder('local');
  const vecs: number[][] = [];
  for (let i = 0; i < corpus.length; i += 256) {
    vecs.push(
      ...(await embedder.embedDocuments(
        corpus.slice(i, i + 256).map((d) => `${d.title}\n${d.text}`),
      )),
    );
  }
  const queries = await Promise.all(bench.map((b) => embedder.embedQuery(b.question)));
  await pool.query('DROP TABLE IF EXISTS bench_hnsw_q');
  await pool.query(
    `CREATE TABLE bench_hnsw_q (i int PRIMARY KEY, e vector(${embedder.dimension}))`,
  );
  try {
    await insert(pool, 'bench_hnsw_q', vecs, 0, vecs.length);
    const ndcg = (tops: number[][]) =>
      tops.reduce((sum, top, q) => {
        const relevant = new Set(bench[q]?.correct_answer_document_ids);
        let dcg = 0;
        top.forEach((i, rank) => {
          if (relevant.has(corpus[i]?.id as string)) dcg += 1 / Math.log2(rank + 2);
        });
        let ideal = 0;
        for (let r = 0; r < Math.min(10, relevant.size); r += 1) ideal += 1 / Math.log2(r + 2);
        return sum + (ideal > 0 ? dcg / ideal : 0);
      }, 0) / tops.length;
    const exact = await topTen(pool, 'bench_hnsw_q', queries, 0);
    await pool.query(`SET maintenance_work_mem = '256MB'`);
    await pool.query(`CREATE INDEX ON bench_hnsw_q ${INDEX}`);
    console.log(
      `quality: SciFact dev, ${corpus.length} documents, ${bench.length} questions, ${embedder.modelId}, vector only, k = 10`,
    );
    console.log(`  exact scan          nDCG@10 ${ndcg(exact.tops).toFixed(4)}`);
    for (const ef of EF) {
      const r = await topTen(pool, 'bench_hnsw_q', queries, ef);
      console.log(
        `  HNSW ef_search ${String(ef).padEnd(4)} nDCG@10 ${ndcg(r.tops).toFixed(4)}  top 10 shared with the exact scan ${(100 * overlap(r.tops, exact.tops)).toFixed(1)} %`,
      );
    }
  } finally {
    await pool.query('DROP TABLE IF EXISTS bench_hnsw_q');
  }
}

async function cost(pool: pg.Pool, rows: number, add: number): Promise<void> {
  const embedder = createOfflineEmbedder('local');
  const docs = documents(0, rows + add + 100, zipfSampler(42));
  const vecs: number[][] = [];
  for (let i = 0; i < docs.length; i += 256) {
    vecs.push(...(await embedder.embedDocuments(docs.slice(i, i + 256).map((d) => d.text))));
  }
  const queries = vecs.slice(rows + add);
  const rate = (n: number, ms: number) => Math.round(n / (ms / 1000)).toLocaleString('en-US');
  console.log(
    `cost: ${rows.toLocaleString('en-US')} synthetic chunks (--scale corpus), then ${add} more`,
  );
  for (const indexed of [false, true]) {
    const table = `bench_hnsw_${indexed ? 'i' : 'p'}`;
    await pool.query(`DROP TABLE IF EXISTS ${table}`);
    await pool.query(`CREATE TABLE ${table} (i int PRIMARY KEY, e vector(${embedder.dimension}))`);
    try {
      await insert(pool, table, vecs, 0, rows);
      if (indexed) {
        await pool.query(`SET maintenance_work_mem = '256MB'`);
        const started = performance.now();
        await pool.query(`CREATE INDEX ON ${table} ${INDEX}`);
        console.log(`  index build            ${rate(rows, performance.now() - started)} rows/s`);
      }
      const started = performance.now();
      await insert(pool, table, vecs, rows, rows + add);
      console.log(
        `  insert ${indexed ? 'into the index    ' : 'without an index'} ${rate(add, performance.now() - started)} rows/s`,
      );
      const probes = indexed ? EF : [0];
      const exact = indexed ? await topTen(pool, table, queries, 0) : undefined;
      for (const ef of probes) {
        const r = await topTen(pool, table, queries, ef);
        const shared =
          exact === undefined
            ? ''
            : ` (top 10 = exact: ${(100 * overlap(r.tops, exact.tops)).toFixed(1)} %)`;
        console.log(
          `  probe p50 ${ef === 0 ? 'exact scan     ' : `ef_search ${String(ef).padEnd(4)} `} ${r.p50.toFixed(2)} ms${shared}`,
        );
      }
    } finally {
      await pool.query(`DROP TABLE IF EXISTS ${table}`);
    }
  }
  await segments(pool, vecs, queries, rows, add);
}

/**
 * The store's layout (`ann-index.ts`): a partial index over the first `rows` rows, `add` rows inserted after it
 * (in no index), searched as the store does (each segment's top 10 through its index, the rest exactly through
 * the primary key, the union ordered once); then the added rows indexed as a second segment. Probes at
 * ef_search 200 (the store's floor) with their top-10 overlap against the exact scan.
 */
async function segments(
  pool: pg.Pool,
  vecs: readonly number[][],
  queries: readonly number[][],
  rows: number,
  add: number,
): Promise<void> {
  const table = 'bench_hnsw_s';
  const part = (where: string) =>
    `(SELECT i, e <=> $1::vector AS d FROM ${table} WHERE ${where} ORDER BY e <=> $1::vector LIMIT 10)`;
  const union = (parts: string[]) =>
    `WITH u AS MATERIALIZED (${parts.join(' UNION ALL ')}) SELECT i FROM u ORDER BY d LIMIT 10`;
  const rate = (n: number, ms: number) => Math.round(n / (ms / 1000)).toLocaleString('en-US');
  await pool.query(`DROP TABLE IF EXISTS ${table}`);
  await pool.query(`CREATE TABLE ${table} (i int PRIMARY KEY, e vector(${vecs[0]?.length}))`);
  try {
    await insert(pool, table, vecs, 0, rows);
    await pool.query(`SET maintenance_work_mem = '256MB'`);
    let started = performance.now();
    await pool.query(`CREATE INDEX ON ${table} ${INDEX} WHERE (i + 0) >= 0 AND (i + 0) < ${rows}`);
    const first = performance.now() - started;
    started = performance.now();
    await insert(pool, table, vecs, rows, rows + add);
    console.log(
      `  segments: insert after the segment ${rate(add, performance.now() - started)} rows/s (first segment built at ${rate(rows, first)} rows/s)`,
    );
    const exact = await topTen(pool, table, queries, 0);
    const oneAndTail = await topTen(
      pool,
      table,
      queries,
      200,
      union([part(`(i + 0) >= 0 AND (i + 0) < ${rows}`), part(`i >= ${rows}`)]),
    );
    started = performance.now();
    await pool.query(
      `CREATE INDEX ON ${table} ${INDEX} WHERE (i + 0) >= ${rows} AND (i + 0) < ${rows + add}`,
    );
    const second = performance.now() - started;
    const two = await topTen(
      pool,
      table,
      queries,
      200,
      union([
        part(`(i + 0) >= 0 AND (i + 0) < ${rows}`),
        part(`(i + 0) >= ${rows} AND (i + 0) < ${rows + add}`),
        part(`i >= ${rows + add}`),
      ]),
    );
    const pct = (r: { tops: number[][] }) => `${(100 * overlap(r.tops, exact.tops)).toFixed(1)} %`;
    console.log(
      `  segments: probe p50 one segment + ${add} rows scanned ${oneAndTail.p50.toFixed(2)} ms (top 10 = exact: ${pct(oneAndTail)}), two segments ${two.p50.toFixed(2)} ms (${pct(two)}; second built at ${rate(add, second)} rows/s), exact scan ${exact.p50.toFixed(2)} ms`,
    );
  } finally {
    await pool.query(`DROP TABLE IF EXISTS ${table}`);
  }
}

/** Runs the section (see the module comment). */
export async function runHnsw(argv: readonly string[]): Promise<void> {
  const rows = option(argv, '--rows', 20_000);
  const add = option(argv, '--add', 5_000);
  const server = startPostgres();
  if (server === undefined) {
    console.log('hnsw: skipped (no PostgreSQL server: set PGVECTOR_* or run as root)');
    return;
  }
  const cfg = pgVectorConfigFromEnv({ ...ENV, ...server.env });
  const pool = new pg.Pool({
    ...pgConnection(cfg),
    max: 2,
  });
  try {
    await pool.query('CREATE EXTENSION IF NOT EXISTS vector');
    console.log(
      'ai4rag bench --hnsw — pgvector HNSW (m 16, ef_construction 64), plain SQL on PostgreSQL',
    );
    await quality(pool);
    await cost(pool, rows, add);
  } finally {
    await pool.end();
    server.stop();
  }
}
