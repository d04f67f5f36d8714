/**
 * The `--scale` corpus at any size through the CLI, for runs longer than the bench's own loop:
 *
 * - `npm run bench -- --write-corpus FILE [--count 1000000]` writes the synthetic corpus as a `.jsonl` file
 *   (`{"id","title","text"}` per line, the same documents `--scale` generates), to ingest with
 *   `ai4rag ingest FILE --store pgvector --collection ai4rag_m1 --no-index` and index with `ai4rag index`;
 * - `npm run bench -- --probe COLLECTION [--queries 60] [--modes keyword,hybrid,vector] [--store pgvector|pglite]
 *   [--data-dir D] [--exact] [--packs]` times `--scale`'s queries on an existing collection, each twice: the first run (the
 *   very first of a mode not counted) and the repeat, whose pages are in the buffers (as `--scale` times them); it
 *   prints the stats, the server's version and cache settings (`serverSettingsLine`), and p50 / p95 per mode. With
 *   `--exact`, side by side, the exact BM25 scan's p50 and the share of its top 10 that the keyword index's top 10
 *   holds. With `--packs`, side by side, the keyword and hybrid p50 of a store reading every postings list from the
 *   b-tree (`packedReads: false`) against the one reading long lists from their packs.
 */
import { createWriteStream } from 'node:fs';
import pg from 'pg';
import { ENV } from '../shared/src/config.js';
import { createOfflineEmbedder } from '../shared/src/embeddings/local.js';
import { openStore } from '../shared/src/runtime/open-store.js';
import { pgConnection, pgVectorConfigFromEnv } from '../shared/src/vectorstores/config.js';
import type { PgVectorStore } from '../shared/src/vectorstores/pgvector/pgvector-store.js';
import { fromPgPool } from '../shared/src/vectorstores/sql-client.js';
import { serverSettingsLine } from './measure.js';
import { documents, queriesOf, zipfSampler } from './scale.js';

function value(argv: readonly string[], name: string): string | undefined {
  const i = argv.indexOf(name);
  return i < 0 ? undefined : argv[i + 1];
}

function count(argv: readonly string[], name: string, fallback: number): number {
  const given = value(argv, name);
  const n = given === undefined ? fallback : Number(given);
  if (!Number.isInteger(n) || n < 1)
    throw new Error(`${name} must be a positive integer, got "${given}"`);
  return n;
}

/** `--write-corpus FILE [--count N]`. */
export async function writeCorpus(argv: readonly string[]): Promise<void> {
  const file = value(argv, '--write-corpus');
  if (file === undefined || file.startsWith('--'))
    throw new Error('--write-corpus needs a file name');
  const total = count(argv, '--count', 1_000_000);
  const out = createWriteStream(file);
  const sampler = zipfSampler(42);
  for (let from = 0; from < total; from += 10_000) {
    for (const d of documents(from, Math.min(10_000, total - from), sampler)) {
      if (!out.write(`${JSON.stringify({ id: d.key, title: d.key, text: d.text })}\n`)) {
        await new Promise<void>((r) => out.once('drain', () => r()));
      }
    }
  }
  await new Promise<void>((resolvePromise, reject) => {
    out.once('error', reject);
    out.end(() => resolvePromise());
  });
  console.log(`${file}: ${total.toLocaleString('en-US')} documents`);
}

/** `--probe COLLECTION …`. */
export async function probeCollection(argv: readonly string[]): Promise<void> {
  const collectionName = value(argv, '--probe');
  if (collectionName === undefined || collectionName.startsWith('--')) {
    throw new Error('--probe needs a collection name');
  }
  const modes = (value(argv, '--modes') ?? 'keyword,hybrid,vector').split(',');
  for (const m of modes) {
    if (!['keyword', 'hybrid', 'vector'].includes(m)) {
      throw new Error(`--modes takes keyword, hybrid and vector, got "${m}"`);
    }
  }
  const kind = value(argv, '--store') ?? 'pgvector';
  if (kind !== 'pgvector' && kind !== 'pglite') {
    throw new Error(`--store must be pgvector or pglite, got "${kind}"`);
  }
  const queries = queriesOf(count(argv, '--queries', 60), zipfSampler(42));
  const open = (keywordDepth?: number, packedReads?: boolean) =>
    openStore({
      kind,
      embedder: createOfflineEmbedder('local'),
      collectionName,
      env: ENV,
      dataDir: value(argv, '--data-dir') ?? '.ai4rag',
      createIfMissing: false,
      ...(keywordDepth !== undefined && { keywordDepth }),
      ...(packedReads !== undefined && { packedReads }),
    });
  const store = await open();
  const exact = argv.includes('--exact') ? ((await open(0)) as PgVectorStore) : undefined;
  const btree = argv.includes('--packs') ? await open(undefined, false) : undefined;
  try {
    const stats = await store.stats();
    console.log(
      `${collectionName}: ${stats.chunks.toLocaleString('en-US')} chunks, HNSW index ${stats.annIndex ? 'valid' : 'absent (exact vector scan)'}; ${queries.length} queries per mode, k = 10`,
    );
    if (kind === 'pgvector') {
      const pool = new pg.Pool({ ...pgConnection(pgVectorConfigFromEnv(ENV)), max: 1 });
      const settings = fromPgPool(pool, { ownsPool: true });
      try {
        console.log(`  server: ${await serverSettingsLine(settings)}`);
      } finally {
        await settings.close();
      }
    }
    const p = (ms: number[], q: number) => {
      const sorted = [...ms].sort((a, b) => a - b);
      return (sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))] as number).toFixed(
        2,
      );
    };
    for (const mode of modes) {
      const run = (q: string, on = store) =>
        mode === 'keyword'
          ? (on as PgVectorStore).keywordSearch(q, { k: 10 })
          : on.search(q, {
              k: 10,
              searchMode: mode as 'hybrid' | 'vector',
              ...(mode === 'hybrid' && { rankerStrategy: 'rrf' as const }),
            });
      const ms: number[] = [];
      const firstMs: number[] = [];
      let overlap = 0;
      const exactMs: number[] = [];
      const btreeMs: number[] = [];
      for (const [i, q] of queries.entries()) {
        // The same query from the b-tree, run twice (the repeat timed): before the packed store's runs for even
        // queries, after them for odd ones, so neither side always finds the other's pages in the buffers.
        const fromBtree = async () => {
          if (btree === undefined || mode === 'vector') return;
          await run(q, btree);
          const t = performance.now();
          await run(q, btree);
          btreeMs.push(performance.now() - t);
        };
        if (i % 2 === 0) await fromBtree();
        // First run, then the same query again (its pages now in the buffers, as `--scale` times it).
        const first = performance.now();
        await run(q);
        firstMs.push(performance.now() - first);
        const started = performance.now();
        const got = await run(q);
        ms.push(performance.now() - started);
        if (i % 2 === 1) await fromBtree();
        if (exact !== undefined && mode === 'keyword') {
          const t = performance.now();
          const want = new Set((await exact.keywordSearch(q, { k: 10 })).map((h) => h.id));
          exactMs.push(performance.now() - t);
          overlap += want.size === 0 ? 1 : got.filter((h) => want.has(h.id)).length / want.size;
        }
      }
      let side =
        exactMs.length === 0
          ? ''
          : `; top 10 = exact scan's: ${((overlap / queries.length) * 100).toFixed(1)} %, exact scan p50 ${p(exactMs, 0.5)} ms`;
      if (btreeMs.length > 0) {
        side += `; every list from the b-tree: p50 ${p(btreeMs, 0.5)} ms, p95 ${p(btreeMs, 0.95)} ms`;
      }
      console.log(
        `  ${mode.padEnd(8)} p50 ${p(ms, 0.5)} ms  p95 ${p(ms, 0.95)} ms (first run of each query: p50 ${p(firstMs.slice(1), 0.5)} ms, p95 ${p(firstMs.slice(1), 0.95)} ms)${side}`,
      );
    }
  } finally {
    await store.close();
    await exact?.close();
    await btree?.close();
  }
}
