/**
 * The `--scale` corpus at any size through the CLI, for runs longer than the bench's own loop:
 *
 * - `npm run bench -- --write-corpus FILE [--count 1000000]` writes the synthetic corpus as a `.jsonl` file
 *   (`{"id","title","text"}` per line, the same documents `--scale` generates), to ingest with
 *   `ai4rag ingest FILE --store pgvector --collection ai4rag_m1 --no-index` and index with `ai4rag index`;
 * - `npm run bench -- --probe COLLECTION [--queries 60] [--modes keyword,hybrid,vector] [--store pgvector|pglite]
 *   [--data-dir D]` times `--scale`'s queries on an existing collection (the first query of each mode warms up and
 *   is not counted) and prints its stats and p50 / p95 per mode.
 */
import { createWriteStream } from 'node:fs';
import { ENV } from '../shared/src/config.js';
import { createOfflineEmbedder } from '../shared/src/embeddings/local.js';
import { openStore } from '../shared/src/runtime/open-store.js';
import type { PgVectorStore } from '../shared/src/vectorstores/pgvector/pgvector-store.js';
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
  const store = await openStore({
    kind,
    embedder: createOfflineEmbedder('local'),
    collectionName,
    env: ENV,
    dataDir: value(argv, '--data-dir') ?? '.ai4rag',
    createIfMissing: false,
  });
  try {
    const stats = await store.stats();
    console.log(
      `${collectionName}: ${stats.chunks.toLocaleString('en-US')} chunks, HNSW index ${stats.annIndex ? 'valid' : 'absent (exact vector scan)'}; ${queries.length} queries per mode, k = 10`,
    );
    for (const mode of modes) {
      const ms: number[] = [];
      for (const [i, q] of queries.entries()) {
        const started = performance.now();
        if (mode === 'keyword') await (store as PgVectorStore).keywordSearch(q, { k: 10 });
        else if (mode === 'hybrid') {
          await store.search(q, { k: 10, searchMode: 'hybrid', rankerStrategy: 'rrf' });
        } else await store.search(q, { k: 10, searchMode: 'vector' });
        if (i > 0) ms.push(performance.now() - started);
      }
      ms.sort((a, b) => a - b);
      const at = (p: number) =>
        (ms[Math.min(ms.length - 1, Math.floor(ms.length * p))] as number).toFixed(2);
      console.log(`  ${mode.padEnd(8)} p50 ${at(0.5)} ms  p95 ${at(0.95)} ms`);
    }
  } finally {
    await store.close();
  }
}
