/**
 * `npm run bench -- --storage [--rounds 2] [--stores pglite,pgvector] [--docs 3000]`: where a collection keeps its
 * vectors, measured side by side in one run. Each round ingests the same SciFact abstracts (or the sample corpus)
 * into two new collections on each store through the real pipeline: one as collections are made now (embeddings and
 * BM25 weights in the chunk rows, STORAGE MAIN) and one with both columns set back to pgvector's default, EXTERNAL,
 * before any row is written (the layout of every collection made before). The two alternate (inline first in even rounds), so
 * drift in the machine's load falls on both. Per collection: the ingest rate, then (after ANALYZE, as any collection
 * a minute old has) vector (an exact scan: these collections are below the ANN threshold), keyword and hybrid search
 * p50 over the benchmark's questions, the buffers one exact scan reads, an HNSW build (`buildIndex({ force })`) and
 * the table's size. Prints the medians per layout and the ratios (external / inline: above 1, the inline layout is
 * faster or smaller).
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { createChunker } from '../shared/src/chunking/index.js';
import type { AI4RAGChunk } from '../shared/src/chunking/types.js';
import { ENV } from '../shared/src/config.js';
import { DEFAULT_CHUNKING } from '../shared/src/defaults.js';
import { loadDocuments } from '../shared/src/documents/index.js';
import type { LoadedDocument } from '../shared/src/documents/types.js';
import { createEmbedder, DEFAULT_EMBEDDING_MODEL } from '../shared/src/embeddings/factory.js';
import type { Embedder } from '../shared/src/embeddings/types.js';
import { loadBenchmark } from '../shared/src/evaluation/benchmark.js';
import { ingestDocuments } from '../shared/src/ingest/pipeline.js';
import { pgConnection, pgVectorConfigFromEnv } from '../shared/src/vectorstores/config.js';
import { collectionTables } from '../shared/src/vectorstores/pgvector/names.js';
import {
  dropPgCollection,
  PgVectorStore,
} from '../shared/src/vectorstores/pgvector/pgvector-store.js';
import { fromPgPool, openPglite, type SqlClient } from '../shared/src/vectorstores/sql-client.js';
import { type BenchStore, intFlag, storesFlag } from './args.js';
import { percentile } from './measure.js';
import { startPostgres } from './postgres.js';

const ROOT = resolve(import.meta.dirname, '..');
const DATA = resolve(ROOT, '../shared/data');

type Layout = 'inline' | 'external';

/** Options of {@link runStorage}, from the command line. */
export interface StorageOptions {
  rounds: number;
  stores: BenchStore[];
  docs: number;
}

/** Parses `--rounds` (1–10, default 2), `--stores` (default pglite,pgvector), `--docs` (100–5183, default 3000). */
export function parseStorageArgs(argv: readonly string[]): StorageOptions {
  return {
    rounds: intFlag(argv, '--rounds', 2, 1, 10),
    stores: storesFlag(argv),
    docs: intFlag(argv, '--docs', 3000, 100, 5183),
  };
}

/** One collection's measurements. */
interface Measured {
  chunksPerSecond: number;
  vectorMs: number;
  keywordMs: number;
  hybridMs: number;
  scanBuffers: number;
  buildSeconds: number;
  tableMiB: number;
}

async function corpus(
  maxDocs: number,
): Promise<{ name: string; docs: LoadedDocument[]; queries: string[] }> {
  const scifact = join(DATA, 'scifact');
  if (existsSync(join(scifact, 'corpus.jsonl'))) {
    const loaded = await loadDocuments([join(scifact, 'corpus.jsonl')]);
    const questions = await loadBenchmark(join(scifact, 'benchmark.dev.json'));
    return {
      name: `SciFact (first ${Math.min(maxDocs, loaded.documents.length)} abstracts, ${questions.length} questions)`,
      docs: loaded.documents.slice(0, maxDocs),
      queries: questions.map((q) => q.question),
    };
  }
  const loaded = await loadDocuments([join(ROOT, 'examples/docs')]);
  return {
    name: 'examples/docs (../shared/data absent)',
    docs: loaded.documents,
    queries: ['annual leave days', 'expense approval limit', 'password rules', 'vessel draft'],
  };
}

const p50 = (xs: number[]) =>
  percentile(
    [...xs].sort((a, b) => a - b),
    50,
  );

async function timeEach(queries: string[], search: (q: string) => Promise<unknown>) {
  for (const q of queries.slice(0, 5)) await search(q);
  const times: number[] = [];
  for (const q of queries) {
    const t0 = performance.now();
    await search(q);
    times.push(performance.now() - t0);
  }
  return p50(times);
}

/** Buffers one exact scan of the whole table reads (EXPLAIN ANALYZE, BUFFERS), for the first question. */
async function scanBuffers(
  client: SqlClient,
  embedder: Embedder,
  name: string,
  query: string,
): Promise<number> {
  const t = collectionTables(name);
  const vector = `[${(await embedder.embedQuery(query)).join(',')}]`;
  const plan = await client.query<{ 'QUERY PLAN': unknown }>(
    `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON)
     SELECT id FROM ${t.table} WHERE ${t.visible} ORDER BY embedding <=> '${vector}'::vector LIMIT 10`,
  );
  const raw = plan.rows[0]?.['QUERY PLAN'];
  const top = (
    (typeof raw === 'string' ? JSON.parse(raw) : raw) as { Plan: Record<string, number> }[]
  )[0]?.Plan;
  return (top?.['Shared Hit Blocks'] ?? 0) + (top?.['Shared Read Blocks'] ?? 0);
}

async function measure(
  client: SqlClient,
  embedder: Embedder,
  layout: Layout,
  docs: LoadedDocument[],
  chunks: Map<string, AI4RAGChunk[]>,
  queries: string[],
): Promise<Measured> {
  const name = `ai4rag_bench_storage_${layout}_${Date.now().toString(36)}`;
  const t = collectionTables(name);
  const store = await PgVectorStore.create({ client, embedder, collectionName: name });
  try {
    if (layout === 'external') {
      await client.query(
        `ALTER TABLE ${t.table} ALTER COLUMN embedding SET STORAGE EXTERNAL, ALTER COLUMN bm25 SET STORAGE EXTERNAL`,
      );
    }
    const total = [...chunks.values()].reduce((a, c) => a + c.length, 0);
    const t0 = performance.now();
    await ingestDocuments(docs, {
      store,
      chunking: DEFAULT_CHUNKING,
      chunk: (d) => chunks.get(d.key) ?? [],
    });
    const ingestSeconds = (performance.now() - t0) / 1000;
    // The first keyword search folds the statistics log; then statistics, as a collection a minute old has them.
    await store.search('first query after ingestion', {
      k: 10,
      searchMode: 'hybrid',
      rankerStrategy: 'rrf',
    });
    await client.query(`ANALYZE ${t.table}`);
    await client.query(`ANALYZE ${t.kw.postings}`);
    const vectorMs = await timeEach(queries, (q) => store.search(q, { k: 10 }));
    const keywordMs = await timeEach(queries, (q) => store.keywordSearch(q, { k: 10 }));
    const hybridMs = await timeEach(queries, (q) =>
      store.search(q, { k: 10, searchMode: 'hybrid', rankerStrategy: 'rrf', rankerK: 60 }),
    );
    const buffers = await scanBuffers(client, embedder, name, queries[0] ?? 'query');
    const t1 = performance.now();
    const built = await store.buildIndex({ force: true, lockTimeoutMs: 60_000 });
    const buildSeconds = (performance.now() - t1) / 1000;
    if (!built.built) throw new Error(`the index of ${name} was not built: ${built.reason}`);
    const size = await client.query<{ bytes: string }>(
      'SELECT pg_total_relation_size($1::regclass) AS bytes',
      [t.table.slice(1, -1)],
    );
    return {
      chunksPerSecond: total / ingestSeconds,
      vectorMs,
      keywordMs,
      hybridMs,
      scanBuffers: buffers,
      buildSeconds,
      tableMiB: Number(size.rows[0]?.bytes) / 2 ** 20,
    };
  } finally {
    await store.close();
    await dropPgCollection(client, name).catch(() => undefined);
  }
}

const f = (x: number, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : 'n/a');

export async function runStorage(argv: readonly string[]): Promise<void> {
  const options = parseStorageArgs(argv);
  const c = await corpus(options.docs);
  const embedder = await createEmbedder(DEFAULT_EMBEDDING_MODEL);
  const chunker = createChunker(DEFAULT_CHUNKING);
  const chunks = new Map(
    await Promise.all(c.docs.map(async (d) => [d.key, await chunker.chunk(d)] as const)),
  );
  const total = [...chunks.values()].reduce((a, x) => a + x.length, 0);
  // One embedding pass first: both layouts then embed with warm caches.
  const texts = [...chunks.values()].flat().map((x) => x.text);
  for (let i = 0; i < texts.length; i += 1024)
    await embedder.embedDocuments(texts.slice(i, i + 1024));
  process.stdout.write(
    `storage  ${c.name}: ${total} chunks, ${embedder.modelId}; ${options.rounds} round(s), layouts alternating\n`,
  );
  const server = options.stores.includes('pgvector') ? startPostgres('55442') : undefined;
  const summary: string[] = [];
  try {
    for (const kind of options.stores) {
      if (kind === 'pgvector' && server === undefined) {
        process.stdout.write(
          'storage  PostgreSQL: skipped (no server: set PGVECTOR_* or run as root)\n',
        );
        continue;
      }
      const label = kind === 'pglite' ? 'PGlite' : 'PostgreSQL';
      const open = async (): Promise<SqlClient> => {
        if (kind === 'pglite') return openPglite({});
        const cfg = pgVectorConfigFromEnv({ ...ENV, ...server?.env });
        return fromPgPool(new pg.Pool({ ...pgConnection(cfg), max: 4 }), { ownsPool: true });
      };
      const results: Record<Layout, Measured[]> = { inline: [], external: [] };
      for (let r = 0; r < options.rounds; r += 1) {
        const order: Layout[] = r % 2 === 0 ? ['inline', 'external'] : ['external', 'inline'];
        for (const layout of order) {
          const client = await open();
          try {
            const m = await measure(client, embedder, layout, c.docs, chunks, c.queries);
            results[layout].push(m);
            process.stdout.write(
              `storage  ${label.padEnd(10)} round ${r + 1} ${layout.padEnd(8)}  ingest ${f(m.chunksPerSecond, 0)} chunks/s` +
                `  vector ${f(m.vectorMs)} ms  keyword ${f(m.keywordMs)} ms  hybrid ${f(m.hybridMs)} ms` +
                `  exact scan ${m.scanBuffers} buffers  HNSW build ${f(m.buildSeconds)} s  table ${f(m.tableMiB, 1)} MiB\n`,
            );
          } finally {
            await client.close();
          }
        }
      }
      const med = (layout: Layout, key: keyof Measured) => p50(results[layout].map((m) => m[key]));
      const row = (
        key: keyof Measured,
        what: string,
        unit: string,
        d: number,
        faster: 'lower' | 'higher',
      ) => {
        const a = med('inline', key);
        const b = med('external', key);
        const ratio = faster === 'lower' ? b / a : a / b;
        return `storage  ${label.padEnd(10)} ${what.padEnd(22)} inline ${f(a, d)} ${unit}, external ${f(b, d)} ${unit}  (inline ×${f(ratio)})`;
      };
      summary.push(
        row('chunksPerSecond', 'ingest', 'chunks/s', 0, 'higher'),
        row('vectorMs', 'vector p50 (exact)', 'ms', 2, 'lower'),
        row('keywordMs', 'keyword p50', 'ms', 2, 'lower'),
        row('hybridMs', 'hybrid p50', 'ms', 2, 'lower'),
        row('scanBuffers', 'buffers of an exact scan', '', 0, 'lower'),
        row('buildSeconds', 'HNSW build', 's', 2, 'lower'),
        row('tableMiB', 'table with TOAST, indexes', 'MiB', 1, 'lower'),
      );
    }
  } finally {
    server?.stop();
  }
  process.stdout.write(`\nmedians per layout (×: how many times better the inline layout is)\n`);
  for (const line of summary) process.stdout.write(`${line}\n`);
}
