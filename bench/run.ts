/**
 * `npm run bench`: measured side by side in one run, on this machine.
 *
 * 1. Ingest throughput (chunks/s) of the real pipeline (`ingestDocuments` → `PgVectorStore.addChunks`:
 *    local embedding, BM25 analysis, statistics, batched upserts) on PGlite and on PostgreSQL, against the
 *    floor: the same embedding work plus ONE bulk COPY of the very rows our store wrote into a table of the
 *    same definition. Ratio = ours / floor throughput (1.0 = no overhead beyond the floor). A second floor also
 *    COPYs the keyword index's postings our store wrote. Then every document is changed and ingested again (the
 *    update rate: new versions written, old ones deleted). `--ingest [--rounds N]` runs this part alone, N times.
 * 2. Search latency p50/p95 of `store.search()` for vector and hybrid, against the floor: the query's embedding
 *    plus the exact statements the search issued (recorded), replayed with the same parameters on the same
 *    connection. Ratio = ours / raw (1.0 = no overhead beyond the model and the SQL).
 *
 * 3. Optimizer efficiency on a recorded score table.
 * 4. (`--serve`) `ai4rag serve` under concurrent load, with a health check on new connections (bench/serve-load.ts).
 * 5. (`--pglite`, and in the full run) Opening a new PGlite database, in memory and in a new data directory, by
 *    initdb and from the template (`pglite-template.ts`), alternating, in one warm process: medians and ratio.
 *    (`--memfs`, and in the full run) An in-memory collection written with MEMFS's file growth and with the
 *    amortized growth `openPglite` installs, alternating: medians and ratio (bench/memfs.ts).
 * 6. (`--trials`) `ai4rag experiment` with `--trial-concurrency` 1 and 2, side by side (bench/trials.ts).
 * 9. (`--write-corpus FILE`, `--probe COLLECTION`) the `--scale` corpus as a `.jsonl` file for the CLI, and search
 *    latency on an existing collection (bench/corpus-probe.ts).
 * 10. (`--storage`) where a collection keeps its embeddings: in the rows (now) against pgvector's default (TOAST),
 *    side by side: ingest, exact-scan, keyword and hybrid latency, HNSW build, size (bench/storage.ts).
 * 8. (`--hnsw`) pgvector's HNSW index in plain SQL: quality by ef_search on SciFact, build against insert rates,
 *    probe latency (bench/hnsw.ts). (`--segments`) the store's HNSW segment policy replayed on a growing
 *    collection beside the one it replaced: build work, segments probed, rows scanned exactly (bench/segments.ts).
 * 7. Lambda bundles: every function of both store variants, built as the stack builds it; its size and the time
 *    a fresh `node` takes to import it (bench/bundles.ts). `npm run bench -- --bundles` runs this section alone.
 *
 * PostgreSQL comes from PGVECTOR_HOST/PORT/DB/USER/PASSWORD, or is started with ../shared/tools/pg-with-pgvector
 * when running as root; without either, its rows are reported as skipped.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import pg from 'pg';
import { from as copyFrom, to as copyTo } from 'pg-copy-streams';
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
import { DEFAULT_OPTIMIZER, OPTIMIZER_NAMES } from '../shared/src/optimizer/optimizers.js';
import { parseScoreTable, simulateOptimizer } from '../shared/src/optimizer/simulate.js';
import { pgConnection, pgVectorConfigFromEnv } from '../shared/src/vectorstores/config.js';
import { keywordIndexNames } from '../shared/src/vectorstores/pgvector/keyword-index.js';
import { PgVectorStore } from '../shared/src/vectorstores/pgvector/pgvector-store.js';
import { fromPgPool, openPglite, type SqlClient } from '../shared/src/vectorstores/sql-client.js';
import type { SearchParams } from '../shared/src/vectorstores/types.js';
import { buildBundle, coldImportMs, type FunctionBundle, functionBundles } from './bundles.js';
import { percentile, recording, timeSearch } from './measure.js';
import { startPostgres } from './postgres.js';
import { serverCpuSeconds } from './proc-cpu.js';

const ROOT = resolve(import.meta.dirname, '..');
const DATA = resolve(ROOT, '../shared/data');
const MAX_DOCS = Number(ENV.BENCH_MAX_DOCS ?? 3000);
const QUERIES = Number(ENV.BENCH_QUERIES ?? 150);
const ROUNDS = Number(ENV.BENCH_ROUNDS ?? 3);
/** `--ingest`: only the ingest comparison, `--rounds N` times per store (default 3). */
const INGEST_ONLY = process.argv.includes('--ingest');
const INGEST_ROUNDS = (() => {
  if (!INGEST_ONLY) return 1;
  const i = process.argv.indexOf('--rounds');
  const n = i >= 0 ? Number(process.argv[i + 1]) : 3;
  if (!Number.isInteger(n) || n < 1 || n > 50) {
    throw new Error(`--rounds must be an integer from 1 to 50, got "${process.argv[i + 1]}"`);
  }
  return n;
})();
/** Fresh processes per bundle for the cold import time (its median is reported). */
const IMPORT_RUNS = Number(ENV.BENCH_IMPORT_RUNS ?? 3);

const fmt = (x: number, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : 'n/a');

async function loadCorpus(): Promise<{ name: string; docs: LoadedDocument[]; queries: string[] }> {
  const scifact = join(DATA, 'scifact');
  if (existsSync(join(scifact, 'corpus.jsonl'))) {
    const loaded = await loadDocuments([join(scifact, 'corpus.jsonl')]);
    const questions = await loadBenchmark(join(scifact, 'benchmark.dev.json'));
    return {
      name: `scifact (first ${MAX_DOCS} of ${loaded.documents.length} abstracts)`,
      docs: loaded.documents.slice(0, MAX_DOCS),
      queries: questions.map((q) => q.question),
    };
  }
  const loaded = await loadDocuments([join(ROOT, 'examples/docs')]);
  return {
    name: 'examples/docs (../shared/data absent)',
    docs: loaded.documents,
    queries: [
      'annual leave days',
      'expense approval limit',
      'password rules',
      'vessel maximum draft',
    ],
  };
}

interface Target {
  label: string;
  open: () => Promise<SqlClient>;
  /** Copies every row of `from` into `to` with one COPY; returns the rows loaded and the COPY FROM time. */
  copyRows: (
    client: SqlClient,
    from: string,
    to: string,
    format: 'binary' | 'text',
  ) => Promise<{ rows: number; seconds: number }>;
  /** CPU seconds the database server has used so far, when it runs in its own processes on this machine. */
  serverCpu?: () => number | undefined;
}

async function timeIngest(
  target: Target,
  embedder: Embedder,
  docs: LoadedDocument[],
  chunks: Map<string, AI4RAGChunk[]>,
) {
  const total = [...chunks.values()].reduce((a, c) => a + c.length, 0);
  const client = await target.open();
  const name = `ai4rag_bench_${Date.now().toString(36)}`;
  try {
    const store = await PgVectorStore.create({ client, embedder, collectionName: name });
    /** Seconds `ingestDocuments` takes over `list`, chunked as `byKey` says. */
    const timedIngest = async (list: LoadedDocument[], byKey: Map<string, AI4RAGChunk[]>) => {
      const t0 = performance.now();
      await ingestDocuments(list, {
        store,
        chunking: DEFAULT_CHUNKING,
        chunk: (d) => byKey.get(d.key) ?? [],
      });
      return (performance.now() - t0) / 1000;
    };
    const cpu0 = process.cpuUsage();
    const server0 = target.serverCpu?.();
    const ours = await timedIngest(docs, chunks);
    const clientUsage = process.cpuUsage(cpu0);
    const server1 = target.serverCpu?.();
    const oursCpu = {
      client: (clientUsage.user + clientUsage.system) / 1e6,
      server: server0 === undefined || server1 === undefined ? 0 : server1 - server0,
    };

    // The first keyword search folds the deferred document-frequency log (see PgVectorStore.logDf): timed
    // and reported, so no ingestion cost is hidden in it.
    const t3 = performance.now();
    await store.search('first query after ingestion', {
      k: 10,
      searchMode: 'hybrid',
      rankerStrategy: 'rrf',
    });
    const firstSearchMs = performance.now() - t3;

    // Floor: the same embedding work (same batches) + ONE COPY of the very rows our store wrote, into a table
    // of the same definition; binary COPY (the fastest load) is the floor, text COPY is shown for reference.
    const texts = [...chunks.values()].flat().map((c) => c.text);
    const t1 = performance.now();
    for (let i = 0; i < texts.length; i += 1024)
      await embedder.embedDocuments(texts.slice(i, i + 1024));
    const embedSeconds = (performance.now() - t1) / 1000;
    const copy: Record<'binary' | 'text', number> = { binary: 0, text: 0 };
    for (const format of ['binary', 'text'] as const) {
      await client.query(`CREATE TABLE ${name}_floor (LIKE ${name} INCLUDING ALL)`);
      const loaded = await target.copyRows(client, name, `${name}_floor`, format);
      if (loaded.rows !== total)
        throw new Error(`floor copied ${loaded.rows} rows, expected ${total}`);
      copy[format] = loaded.seconds;
      await client.query(`DROP TABLE ${name}_floor`);
    }
    // The keyword index's postings our store wrote too, into a table of the same definition (its b-tree included):
    // the floor of writing everything we write, not only the chunks.
    const { postings, fresh } = keywordIndexNames(name);
    // A collection this small writes its postings to the folded table (`FRESH_POSTINGS_FROM_ROW`); fresh ones
    // would be left out of the copy below.
    const left = await client.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${fresh}`);
    if ((left.rows[0]?.n ?? 0) > 0)
      throw new Error(`${fresh} holds postings: the floor would miss them`);
    await client.query(`CREATE TABLE ${name}_pfloor (LIKE ${postings} INCLUDING ALL)`);
    const loadedPostings = await target.copyRows(client, postings, `${name}_pfloor`, 'binary');
    await client.query(`DROP TABLE ${name}_pfloor`);

    // Every document changed and ingested again: each is written as a new version (COPY) and its old version's
    // rows and postings deleted, the path a re-sync of edited files takes.
    const revised = docs.map((d) => ({ ...d, contentHash: `${d.contentHash}:revised` }));
    const revisedChunks = new Map(
      [...chunks].map(([key, list]) => [
        key,
        list.map((c) => ({ ...c, text: `${c.text} (revised)` })),
      ]),
    );
    const updateSeconds = await timedIngest(revised, revisedChunks);
    const after = await store.stats();
    if (after.chunks !== total)
      throw new Error(
        `after the update the collection holds ${after.chunks} chunks, expected ${total}`,
      );
    return {
      store,
      client,
      name,
      total,
      ours,
      embedSeconds,
      copy,
      postings: loadedPostings,
      firstSearchMs,
      updateSeconds,
      oursCpu,
    };
  } catch (error) {
    await client.close();
    throw error;
  }
}

/**
 * The CPU our ingest used (this process's threads, and the server's processes when it has them) and what that allows:
 * on this machine's cores no schedule of that work finishes in under CPU / cores, so the ratio to the binary-COPY
 * floor cannot pass floor seconds / (CPU / cores) without less work.
 */
function cpuBound(target: Target, ingest: Awaited<ReturnType<typeof timeIngest>>): string {
  const { client, server } = ingest.oursCpu;
  const total = client + server;
  const cores = availableParallelism();
  const least = total / cores;
  const floorSeconds = ingest.embedSeconds + ingest.copy.binary;
  const split = target.serverCpu ? ` (ai4rag ${fmt(client)} + server ${fmt(server)})` : '';
  return `ours used ${fmt(total)} CPU-s${split}, ${fmt(total / ingest.ours)} cores busy; on ${cores} cores that work takes at least ${fmt(least)} s, so the ratio to the binary-COPY floor is at most ${fmt(floorSeconds / least)} without less work`;
}

/** Prints (and keeps in `rows`) one ingest measurement against its floors. */
function printIngest(
  target: Target,
  ingest: Awaited<ReturnType<typeof timeIngest>>,
  rows: string[],
): void {
  const oursRate = ingest.total / ingest.ours;
  const floorRate = ingest.total / (ingest.embedSeconds + ingest.copy.binary);
  const textRate = ingest.total / (ingest.embedSeconds + ingest.copy.text);
  const allRate =
    ingest.total / (ingest.embedSeconds + ingest.copy.binary + ingest.postings.seconds);
  rows.push(
    `ingest  ${target.label.padEnd(28)} ours ${fmt(oursRate, 0).padStart(7)} chunks/s | floor ${fmt(floorRate, 0).padStart(7)} chunks/s (embed ${fmt(ingest.embedSeconds)}s + binary COPY ${fmt(ingest.copy.binary)}s) | ratio ${fmt(oursRate / floorRate)} (target >= 0.8)`,
    `        ${''.padEnd(28)} vs a floor writing the keyword index's ${ingest.postings.rows} postings too (+ binary COPY ${fmt(ingest.postings.seconds)}s) ${fmt(allRate, 0)} chunks/s: ratio ${fmt(oursRate / allRate)}`,
    `        ${''.padEnd(28)} vs a text-COPY floor ${fmt(textRate, 0)} chunks/s: ratio ${fmt(oursRate / textRate)}; first keyword search after ingestion ${fmt(ingest.firstSearchMs, 1)} ms (folds deferred BM25 statistics)`,
    `        ${''.padEnd(28)} ${cpuBound(target, ingest)}`,
    `update  ${target.label.padEnd(28)} every document changed and ingested again: ${fmt(ingest.total / ingest.updateSeconds, 0)} chunks/s, ratio ${fmt(ingest.ours / ingest.updateSeconds)} of the first ingest's rate`,
  );
  console.log(rows.slice(-5).join('\n'));
}

async function main(): Promise<void> {
  const corpus = await loadCorpus();
  const embedder = await createEmbedder(DEFAULT_EMBEDDING_MODEL);
  const chunker = createChunker(DEFAULT_CHUNKING);
  const chunks = new Map(
    await Promise.all(corpus.docs.map(async (d) => [d.key, await chunker.chunk(d)] as const)),
  );
  const chunkCount = [...chunks.values()].reduce((a, c) => a + c.length, 0);
  console.log(
    `ai4rag bench — corpus: ${corpus.name}; ${corpus.docs.length} documents, ${chunkCount} chunks`,
  );
  console.log(
    `embedder ${embedder.modelId}; chunking ${DEFAULT_CHUNKING.method} ${DEFAULT_CHUNKING.chunkSize}/${DEFAULT_CHUNKING.chunkOverlap}; ${QUERIES} queries x ${ROUNDS} rounds\n`,
  );

  const pglite: Target = {
    label: 'PGlite (in-process)',
    open: () => openPglite({}),
    copyRows: async (client, from, to, format) => {
      const db = (client as Awaited<ReturnType<typeof openPglite>>).db;
      const out = await db.query(`COPY ${from} TO '/dev/blob' WITH (FORMAT ${format})`);
      const t0 = performance.now();
      const res = await db.query(`COPY ${to} FROM '/dev/blob' WITH (FORMAT ${format})`, [], {
        blob: out.blob as Blob,
      });
      return { rows: res.affectedRows ?? 0, seconds: (performance.now() - t0) / 1000 };
    },
  };
  const server = startPostgres();
  const targets: Target[] = [pglite];
  if (server) {
    const cfg = pgVectorConfigFromEnv({ ...ENV, ...server.env });
    const pools: pg.Pool[] = [];
    const serverDir = server.env.PGVECTOR_DATADIR ?? ENV.PGVECTOR_DATADIR;
    targets.push({
      label: `PostgreSQL ${cfg.host}:${cfg.port}`,
      serverCpu: () => serverCpuSeconds(serverDir),
      open: async () => {
        const pool = new pg.Pool({
          ...pgConnection(cfg),
          max: 4,
        });
        pools.push(pool);
        return fromPgPool(pool, { ownsPool: true });
      },
      copyRows: async (_client, from, to, format) => {
        const pool = pools.at(-1) as pg.Pool;
        const c = await pool.connect();
        try {
          const chunksOut: Buffer[] = [];
          const source = c.query(copyTo(`COPY ${from} TO STDOUT WITH (FORMAT ${format})`));
          for await (const b of source) chunksOut.push(b as Buffer);
          const t0 = performance.now();
          const ingest = c.query(copyFrom(`COPY ${to} FROM STDIN WITH (FORMAT ${format})`));
          await pipeline(Readable.from(chunksOut), ingest);
          return { rows: Number(ingest.rowCount), seconds: (performance.now() - t0) / 1000 };
        } finally {
          c.release();
        }
      },
    });
  } else {
    console.log(
      'PostgreSQL: skipped (set PGVECTOR_HOST, or run as root with ../shared/tools/pg-with-pgvector)\n',
    );
  }

  // Warm-up: one embedding pass over every chunk before any timing, so that ours and the floor embed with the
  // same (warm) word caches; otherwise whichever runs second gets a head start.
  const allTexts = [...chunks.values()].flat().map((c) => c.text);
  for (let i = 0; i < allTexts.length; i += 1024)
    await embedder.embedDocuments(allTexts.slice(i, i + 1024));

  const rows: string[] = [];
  try {
    for (const target of targets) {
      if (INGEST_ONLY) {
        // `--ingest [--rounds N]`: the ingest comparison alone, N times per store (new collections each time).
        for (let round = 0; round < INGEST_ROUNDS; round += 1) {
          const again = await timeIngest(target, embedder, corpus.docs, chunks);
          printIngest(target, again, rows);
          await again.store.drop();
          await again.client.close();
        }
        continue;
      }
      const ingest = await timeIngest(target, embedder, corpus.docs, chunks);
      printIngest(target, ingest, rows);
      await ingest.client.query(`DROP TABLE IF EXISTS ${ingest.name}_floor`);
      await ingest.store.close(); // the store does not own the client: the database stays open

      // Search: the same database and collection, through a recording client.
      const rec = recording(ingest.client);
      const store = await PgVectorStore.create({
        client: rec,
        embedder,
        collectionName: ingest.name,
        ownsClient: true,
        createIfMissing: false,
      });
      const stats = await store.stats();
      if (stats.chunks !== ingest.total)
        throw new Error(`search collection holds ${stats.chunks} chunks, expected ${ingest.total}`);
      const queries = corpus.queries.slice(0, QUERIES);
      for (const [mode, params] of [
        ['vector', { k: 10, searchMode: 'vector' }],
        ['hybrid', { k: 10, searchMode: 'hybrid', rankerStrategy: 'rrf', rankerK: 60 }],
      ] as const) {
        const s = await timeSearch(
          (q) => store.search(q, params as SearchParams),
          rec,
          queries,
          ROUNDS,
          (q) => embedder.embedQuery(q),
        );
        rows.push(
          `search  ${target.label.padEnd(28)} ${mode.padEnd(6)} p50 ${fmt(s.p50)} ms p95 ${fmt(s.p95)} ms | raw SQL p50 ${fmt(s.rawP50)} ms p95 ${fmt(s.rawP95)} ms | ratio p50 ${fmt(s.p50 / s.rawP50)} p95 ${fmt(s.p95 / s.rawP95)} (target <= 1.3)`,
        );
        console.log(rows.at(-1));
      }
      await store.drop();
    }
  } finally {
    server?.stop();
  }
  if (!INGEST_ONLY) optimizerRatios();
}

/**
 * Optimizer efficiency on the recorded ClapNQ score table (every configuration of the default search space,
 * scored by a real experiment): evaluations each optimizer needs to reach the best configuration, replayed side
 * by side over the same 50 seeds, as a ratio to random search.
 */
function optimizerRatios(): void {
  const table = parseScoreTable(
    JSON.parse(
      readFileSync(resolve(ROOT, 'test/fixtures/optimizer/clapnq-dev-scores.json'), 'utf8'),
    ),
  );
  const seeds = 50;
  const runs = OPTIMIZER_NAMES.map((name) =>
    simulateOptimizer(table, name, { maxEvals: table.length, seeds }),
  );
  const random = runs.find((r) => r.optimizer === 'random');
  for (const r of runs) {
    const ratio =
      r.medianEvalsToBest !== null && random?.medianEvalsToBest
        ? r.medianEvalsToBest / random.medianEvalsToBest
        : Number.NaN;
    console.log(
      `optimizer ${r.optimizer.padEnd(7)} median evaluations to the best of ${table.length} (ClapNQ table, ${seeds} seeds) ${fmt(r.medianEvalsToBest ?? Number.NaN, 1).padStart(5)} | ratio to random ${fmt(ratio)}${r.optimizer === DEFAULT_OPTIMIZER ? ' (default)' : ''}`,
    );
  }
}

/**
 * Every function of both store variants: its bundle's size (the whole asset: no source map) and the median time a
 * fresh `node` with a minimal environment takes to import it, over {@link IMPORT_RUNS} processes. Functions that
 * share an entry and contents (GenerateFunction and its streaming twin) are built once.
 */
async function bundleSizes(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'ai4rag-bundles-'));
  try {
    const built = new Map<string, { bytes: number; importMs: number }>();
    console.log(
      `\nbundle  ${'variant'.padEnd(8)} ${'function'.padEnd(28)} ${'store'.padEnd(8)} models ${'size'.padStart(9)}  cold import (median of ${IMPORT_RUNS})`,
    );
    for (const variant of ['pgvector', 'zilliz'] as const) {
      for (const fn of functionBundles(variant)) {
        const key = JSON.stringify([variant, fn.entry, fn.contents]);
        let result = built.get(key);
        if (result === undefined) {
          result = await measureBundle(fn, join(dir, variant, fn.id));
          built.set(key, result);
        }
        console.log(
          `bundle  ${variant.padEnd(8)} ${fn.id.padEnd(28)} ${(fn.contents.vectorStore ?? '-').padEnd(8)} ${(fn.contents.remoteModels ? 'remote' : 'local').padEnd(6)} ${`${fmt(result.bytes / 1e6, 3)} MB`.padStart(9)}  ${fmt(result.importMs, 0).padStart(5)} ms`,
        );
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function measureBundle(
  fn: FunctionBundle,
  outdir: string,
): Promise<{ bytes: number; importMs: number }> {
  const bundle = await buildBundle(fn, outdir);
  const times: number[] = [];
  for (let i = 0; i < IMPORT_RUNS; i += 1) times.push(await coldImportMs(bundle.file, ENV));
  times.sort((a, b) => a - b);
  return { bytes: bundle.bytes, importMs: percentile(times, 50) };
}

/** Median open time of a new PGlite database by initdb and from the template, in memory and on disk. */
async function pgliteOpen(): Promise<void> {
  const root = mkdtempSync(join(tmpdir(), 'ai4rag-bench-pglite-'));
  const template = join(root, 'template.tar');
  try {
    // Makes the template, and loads PGlite's WASM once, so neither side pays it.
    await (await openPglite({ template })).close();
    const runs = 5;
    for (const where of ['in memory', 'new data directory'] as const) {
      const times: Record<'initdb' | 'template', number[]> = { initdb: [], template: [] };
      for (let i = 0; i < runs * 2; i++) {
        const side = i % 2 === 0 ? 'initdb' : 'template';
        const dataDir = where === 'in memory' ? undefined : join(root, `data-${i}`);
        const t0 = performance.now();
        const client = await openPglite({
          ...(dataDir !== undefined && { dataDir }),
          template: side === 'initdb' ? false : template,
        });
        times[side].push(performance.now() - t0);
        if (client.origin !== side) throw new Error(`expected ${side}, opened by ${client.origin}`);
        await client.close();
        if (dataDir !== undefined) rmSync(dataDir, { recursive: true, force: true });
      }
      const med = (xs: number[]) =>
        percentile(
          [...xs].sort((a, b) => a - b),
          50,
        );
      const initdb = med(times.initdb);
      const fromTemplate = med(times.template);
      console.log(
        `pglite  open a new database ${where}: initdb ${fmt(initdb, 0)} ms, template ${fmt(fromTemplate, 0)} ms (×${fmt(initdb / fromTemplate)} faster; medians of ${runs}, alternating)`,
      );
    }
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

if (process.argv.includes('--scale')) {
  const { runScale } = await import('./scale.js');
  await runScale(process.argv.slice(2));
} else if (process.argv.includes('--serve')) {
  const { runServeLoad } = await import('./serve-load.js');
  await runServeLoad(process.argv.slice(2));
} else if (process.argv.includes('--trials')) {
  const { runTrials } = await import('./trials.js');
  await runTrials(process.argv.slice(2));
} else if (process.argv.includes('--write-corpus')) {
  const { writeCorpus } = await import('./corpus-probe.js');
  await writeCorpus(process.argv.slice(2));
} else if (process.argv.includes('--probe')) {
  const { probeCollection } = await import('./corpus-probe.js');
  await probeCollection(process.argv.slice(2));
} else if (process.argv.includes('--builds')) {
  const { runBuilds } = await import('./builds.js');
  await runBuilds(process.argv.slice(2));
} else if (process.argv.includes('--storage')) {
  const { runStorage } = await import('./storage.js');
  await runStorage(process.argv.slice(2));
} else if (process.argv.includes('--hnsw')) {
  const { runHnsw } = await import('./hnsw.js');
  await runHnsw(process.argv.slice(2));
} else if (process.argv.includes('--segments')) {
  const { runSegments } = await import('./segments.js');
  runSegments();
} else if (process.argv.includes('--bundles')) {
  await bundleSizes();
} else if (process.argv.includes('--pglite')) {
  await pgliteOpen();
} else if (process.argv.includes('--memfs')) {
  const { runMemfs } = await import('./memfs.js');
  await runMemfs(process.argv.slice(2));
} else if (INGEST_ONLY) {
  await main();
} else {
  await main();
  await pgliteOpen();
  await (await import('./memfs.js')).runMemfs([]);
  await bundleSizes();
}
