/**
 * `npm run bench -- --scale [--sizes 20000,50000] [--queries 60] [--stores pglite,pgvector] [--writers 1,2]
 * [--with COLLECTION,…]`: how search and ingest cost grow with the collection, measured side by side in one run on
 * PGlite and on the PostgreSQL server. `--with` adds existing collections on the server (a 1M-chunk one loaded
 * through the CLI from `--write-corpus`, see corpus-probe.ts) as further points, timed the same way.
 *
 * One collection per store grows through the sizes (the real pipeline: `ingestDocuments`, staged writes, BM25
 * statistics). At each size it reports: the ingest rate of that segment (the first into a fresh collection, the
 * next into one that may hold the HNSW index: the incremental rate, split between the `--writers` settings in turn,
 * each segment streamed through one `ingestDocuments` call), the first search after ingestion (it must
 * build nothing), the explicit `buildIndex` time, and p50 / p95 of keyword, hybrid and vector search with the
 * ratio to the raw SQL they issued (replayed alone). The last lines fit the growth exponent of each p50
 * (least squares on log p50 against log N; 1 = linear, the goal for keyword and hybrid is ≤ 0.3). Each size
 * line ends with the bench process's peak RSS so far (`peakRssBytes`: VmHWM on Linux): the corpus is generated
 * and ingested in windows of 2,000 documents (a high-water mark: with PGlite first it includes PGlite's heap).
 *
 * The corpus is synthetic and deterministic: documents of 120–250 words drawn from a Zipf(1.1) vocabulary of
 * 50,000 pseudo-words (the shape of natural text's term frequencies), queries of 3–6 mid-frequency words; the local
 * embedder. Latency, not quality, is measured here (quality: `ai4rag eval-retrieval` on SciFact).
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { createChunker } from '../shared/src/chunking/index.js';
import type { ChunkingOptions } from '../shared/src/chunking/types.js';
import { ENV } from '../shared/src/config.js';
import { DEFAULT_CHUNKING } from '../shared/src/defaults.js';
import { loadDocuments } from '../shared/src/documents/index.js';
import type { LoadedDocument } from '../shared/src/documents/types.js';
import { createEmbedder, DEFAULT_EMBEDDING_MODEL } from '../shared/src/embeddings/factory.js';
import type { Embedder } from '../shared/src/embeddings/types.js';
import { loadBenchmark } from '../shared/src/evaluation/benchmark.js';
import { evaluateRetrieval } from '../shared/src/evaluation/eval-retrieval.js';
import { ingestDocuments } from '../shared/src/ingest/pipeline.js';
import { peakRssBytes } from '../shared/src/util/peak-rss.js';
import { mulberry32 } from '../shared/src/util/random.js';
import { pgConnection, pgVectorConfigFromEnv } from '../shared/src/vectorstores/config.js';
import { PgVectorStore } from '../shared/src/vectorstores/pgvector/pgvector-store.js';
import { fromPgPool, openPglite, type SqlClient } from '../shared/src/vectorstores/sql-client.js';
import { recording, type SearchTiming, serverSettingsLine, timeSearch } from './measure.js';
import { startPostgres } from './postgres.js';

const DATA = resolve(import.meta.dirname, '../../shared/data');
const VOCABULARY = 50_000;
/** Larger than any synthetic document: one chunk per document, so the size is the chunk count. */
const CHUNKING: ChunkingOptions = { method: 'recursive', chunkSize: 2048, chunkOverlap: 0 };
const chunker = createChunker(CHUNKING);
const ZIPF_S = 1.1;

/** Options of {@link runScale}, from the command line. */
export interface ScaleOptions {
  sizes: number[];
  queries: number;
  stores: ('pglite' | 'pgvector')[];
  /** Ingest writers (`ingestDocuments`'s `writers`) each incremental segment is split between, in turn. */
  writers: number[];
  /**
   * Existing collections on the PostgreSQL server (loaded from `--write-corpus` files through the CLI) timed the
   * same way after the growth runs, as further points of the curve: the 1M point, too long to grow in one run.
   */
  with: string[];
}

/** Parses `--sizes`, `--queries`, `--stores` (defaults: 20000,50000; 60; pglite,pgvector). */
export function parseScaleArgs(argv: readonly string[]): ScaleOptions {
  const value = (flag: string) => {
    const i = argv.indexOf(flag);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const sizes = (value('--sizes') ?? '20000,50000').split(',').map((s) => Number(s.trim()));
  if (sizes.some((n) => !Number.isInteger(n) || n < 1000) || sizes.length === 0) {
    throw new Error(`--sizes must be integers ≥ 1000, got "${value('--sizes')}"`);
  }
  const queries = Number(value('--queries') ?? 60);
  if (!Number.isInteger(queries) || queries < 5) {
    throw new Error(`--queries must be an integer ≥ 5, got "${value('--queries')}"`);
  }
  const stores = (value('--stores') ?? 'pglite,pgvector').split(',').map((s) => s.trim());
  for (const s of stores) {
    if (s !== 'pglite' && s !== 'pgvector') {
      throw new Error(`--stores takes pglite and pgvector, got "${s}"`);
    }
  }
  const writers = (value('--writers') ?? '1,2').split(',').map((s) => Number(s.trim()));
  if (writers.length === 0 || writers.some((w) => !Number.isInteger(w) || w < 1 || w > 8)) {
    throw new Error(`--writers takes integers from 1 to 8, got "${value('--writers')}"`);
  }
  const withNames = (value('--with') ?? '')
    .split(',')
    .map((w) => w.trim())
    .filter((w) => w !== '');
  for (const w of withNames) {
    if (!/^ai4rag[A-Za-z0-9_]*$/.test(w)) {
      throw new Error(
        `--with takes collection names starting with "ai4rag" ([A-Za-z0-9_]), got "${w}"`,
      );
    }
  }
  if (withNames.length > 0 && !stores.includes('pgvector')) {
    throw new Error('--with needs the PostgreSQL server: add pgvector to --stores');
  }
  return {
    sizes: [...sizes].sort((a, b) => a - b),
    queries,
    stores: stores as ScaleOptions['stores'],
    writers,
    with: withNames,
  };
}

/** Pseudo-words, and a sampler of their indices with Zipf(s) frequencies. */
export function zipfSampler(seed: number): { word: (i: number) => string; draw: () => number } {
  const weights = Array.from({ length: VOCABULARY }, (_, i) => 1 / (i + 1) ** ZIPF_S);
  const cumulative = new Float64Array(VOCABULARY);
  let total = 0;
  for (let i = 0; i < VOCABULARY; i += 1) {
    total += weights[i] as number;
    cumulative[i] = total;
  }
  const random = mulberry32(seed);
  const syllables = ['ka', 'lo', 'mi', 'ne', 'ru', 'sa', 'ti', 'vo', 'ze', 'pa', 'qui', 'dor'];
  const word = (i: number) => {
    let n = i + 1;
    let out = '';
    while (n > 0) {
      out += syllables[n % syllables.length];
      n = Math.floor(n / syllables.length);
    }
    return out;
  };
  const draw = () => {
    const x = random() * total;
    let lo = 0;
    let hi = VOCABULARY - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((cumulative[mid] as number) < x) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  return { word, draw };
}

/** `count` synthetic documents starting at ordinal `from` (deterministic per ordinal range and seed). */
export function documents(
  from: number,
  count: number,
  sampler: ReturnType<typeof zipfSampler>,
): LoadedDocument[] {
  const random = mulberry32(from + 1);
  const docs: LoadedDocument[] = [];
  for (let d = from; d < from + count; d += 1) {
    const words = 120 + Math.floor(random() * 130);
    const text = Array.from({ length: words }, () => sampler.word(sampler.draw())).join(' ');
    const key = `synthetic/${String(d).padStart(8, '0')}.txt`;
    docs.push({
      key,
      title: key,
      format: 'txt',
      text,
      blocks: [{ type: 'paragraph', text }],
      contentHash: `h${d}`,
    });
  }
  return docs;
}

/** `count` documents from `from` on, generated 2,000 at a time as the pipeline reads them (memory stays flat). */
async function* documentStream(
  from: number,
  count: number,
  sampler: ReturnType<typeof zipfSampler>,
): AsyncGenerator<LoadedDocument> {
  for (let b = 0; b < count; b += 2000)
    yield* documents(from + b, Math.min(2000, count - b), sampler);
}

export function queriesOf(count: number, sampler: ReturnType<typeof zipfSampler>): string[] {
  const random = mulberry32(7);
  return Array.from({ length: count }, () => {
    const n = 3 + Math.floor(random() * 4);
    // Mid-frequency terms: ranks 50..5000 (stop-word-like heads and hapaxes excluded).
    return Array.from({ length: n }, () => sampler.word(50 + Math.floor(random() * 4950))).join(
      ' ',
    );
  });
}

/** Least-squares slope of log y against log x. */
export function growthExponent(points: readonly { n: number; y: number }[]): number {
  const xs = points.map((p) => Math.log(p.n));
  const ys = points.map((p) => Math.log(p.y));
  const mx = xs.reduce((a, b) => a + b, 0) / xs.length;
  const my = ys.reduce((a, b) => a + b, 0) / ys.length;
  let num = 0;
  let den = 0;
  for (let i = 0; i < xs.length; i += 1) {
    num += ((xs[i] as number) - mx) * ((ys[i] as number) - my);
    den += ((xs[i] as number) - mx) ** 2;
  }
  return den === 0 ? Number.NaN : num / den;
}

/** The three searches timed: BM25 alone, hybrid (RRF), dense. */
const MODES: [string, (store: PgVectorStore, q: string) => Promise<unknown>][] = [
  ['keyword', (store, q) => store.keywordSearch(q, { k: 10 })],
  ['hybrid', (store, q) => store.search(q, { k: 10, searchMode: 'hybrid', rankerStrategy: 'rrf' })],
  ['vector', (store, q) => store.search(q, { k: 10, searchMode: 'vector' })],
];

/** Mean share of the indexed keyword top 10 that the exact scan's top 10 holds too (1 = identical sets). */
async function keywordOverlap(
  indexed: PgVectorStore,
  exact: PgVectorStore,
  queries: readonly string[],
): Promise<number> {
  let sum = 0;
  for (const q of queries) {
    const want = new Set((await exact.keywordSearch(q, { k: 10 })).map((h) => h.id));
    const got = await indexed.keywordSearch(q, { k: 10 });
    sum += want.size === 0 ? 1 : got.filter((h) => want.has(h.id)).length / want.size;
  }
  return sum / queries.length;
}

/** nDCG@10 on SciFact dev of a keyword search and of a hybrid one (RRF) through the postings index and the exact scan. */
export interface ScifactQuality {
  exact: number;
  indexed: number;
  hybridExact: number;
  hybridIndexed: number;
  questions: number;
  chunks: number;
}

/**
 * Quality of the postings index against the exact scan on SciFact dev (100 chunks per question, documents ranked by
 * their best chunk): nDCG@10 of keyword-only retrieval and of hybrid retrieval (RRF, its keyword side through
 * either), on PGlite. Undefined without the dataset.
 */
export async function scifactQuality(
  embedder: Awaited<ReturnType<typeof createEmbedder>>,
): Promise<ScifactQuality | undefined> {
  const dir = join(DATA, 'scifact');
  if (!existsSync(join(dir, 'corpus.jsonl'))) return undefined;
  const loaded = await loadDocuments([join(dir, 'corpus.jsonl')]);
  const questions = await loadBenchmark(join(dir, 'benchmark.dev.json'));
  const client = await openPglite({});
  try {
    const name = 'ai4rag_scale_quality';
    const store = await PgVectorStore.create({ client, embedder, collectionName: name });
    const exact = await PgVectorStore.create({
      client,
      embedder,
      collectionName: name,
      keywordDepth: 0,
    });
    const chunker = createChunker(DEFAULT_CHUNKING);
    await ingestDocuments(loaded.documents, {
      store,
      chunking: DEFAULT_CHUNKING,
      chunk: (doc) => chunker.chunk(doc),
      buildIndex: false,
    });
    const keys = loaded.documents.map((d) => d.key);
    const score = async (s: PgVectorStore) =>
      evaluateRetrieval(
        { retrieve: async (q) => (await s.keywordSearch(q, { k: 100 })) as never },
        questions,
        keys,
      );
    const hybrid = async (s: PgVectorStore) =>
      evaluateRetrieval(
        {
          retrieve: async (q) =>
            (await s.search(q, { k: 100, searchMode: 'hybrid', rankerStrategy: 'rrf' })) as never,
        },
        questions,
        keys,
      );
    const [a, b] = [await score(exact), await score(store)];
    const [ha, hb] = [await hybrid(exact), await hybrid(store)];
    const chunks = (await store.stats()).chunks;
    return {
      exact: a.metrics['ndcg@10'],
      indexed: b.metrics['ndcg@10'],
      hybridExact: ha.metrics['ndcg@10'],
      hybridIndexed: hb.metrics['ndcg@10'],
      questions: a.questions,
      chunks,
    };
  } finally {
    await client.close();
  }
}

/** Chunks each writer configuration ingests in {@link parallelWriters}. */
const WRITER_CHUNKS = 8000;

/**
 * Ingest throughput of 1, 2 and 4 concurrent writers (each its own store and connections, as Lambda embed-batch
 * workers are) into one fresh collection on the PostgreSQL server, with the BM25 statistics checked exact after.
 */
async function parallelWriters(
  target: { label: string; open: () => Promise<SqlClient> },
  embedder: Awaited<ReturnType<typeof createEmbedder>>,
  sampler: ReturnType<typeof zipfSampler>,
): Promise<void> {
  const docs = documents(10_000_000, WRITER_CHUNKS, sampler);
  let base = Number.NaN;
  for (const writers of [1, 2, 4]) {
    const name = `ai4rag_writers_${writers}_${Date.now().toString(36)}`;
    const clients = await Promise.all(Array.from({ length: writers }, () => target.open()));
    const stores = await Promise.all(
      clients.map((client) => PgVectorStore.create({ client, embedder, collectionName: name })),
    );
    try {
      const t0 = performance.now();
      await Promise.all(
        stores.map((store, w) =>
          ingestDocuments(
            docs.filter((_, i) => i % writers === w),
            { store, chunking: CHUNKING, chunk: (doc) => chunker.chunk(doc), buildIndex: false },
          ),
        ),
      );
      const rate = WRITER_CHUNKS / ((performance.now() - t0) / 1000);
      if (writers === 1) base = rate;
      const stats = await (stores[0] as PgVectorStore).stats();
      const integrity = await (stores[0] as PgVectorStore).checkIntegrity();
      console.log(
        `writers  ${target.label.padEnd(10)} ${writers} writer${writers > 1 ? 's' : ' '} ${WRITER_CHUNKS} chunks  ingest ${f(rate, 0).padStart(5)}/s (×${f(rate / base, 2)} one writer)  chunks stored ${stats.chunks}, consistent ${integrity.clean}`,
      );
    } finally {
      await (stores[0] as PgVectorStore).drop().catch(() => undefined);
      for (const store of stores) await store.close();
    }
  }
}

interface Row {
  store: string;
  chunks: number;
  ingestRate: number;
  /** The segment's rate with each writer setting (a fresh segment is ingested with one writer). */
  writerRates: { writers: number; rate: number }[];
  segment: 'fresh' | 'incremental' | 'existing';
  firstSearchMs: number;
  indexSeconds: number;
  indexReason: string;
  timings: Record<string, SearchTiming>;
  /** Mean share of the keyword top 10 that the exact scan also returns. */
  overlap: number;
}

const f = (x: number, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : 'n/a');

/** Each of {@link MODES} timed over `queries` against the SQL it sent (`timeSearch`). */
async function timeModes(
  store: PgVectorStore,
  client: Parameters<typeof timeSearch>[1],
  queries: string[],
  embedder: Embedder,
): Promise<Record<string, SearchTiming>> {
  const timings: Record<string, SearchTiming> = {};
  for (const [mode, search] of MODES) {
    timings[mode] = await timeSearch(
      (q) => search(store, q),
      client,
      queries,
      1,
      mode === 'keyword' ? undefined : (q) => embedder.embedQuery(q),
    );
  }
  return timings;
}

/** `keyword p50 … / p95 … ms (×… raw)` for each mode. */
function modeSummary(timings: Record<string, SearchTiming>): string {
  return MODES.map(([m]) => {
    const t = timings[m] as SearchTiming;
    return `${m} p50 ${f(t.p50, 2)} / p95 ${f(t.p95, 2)} ms (×${f(t.p50 / t.rawP50, 2)} raw)`;
  }).join('  ');
}

/**
 * A point of the curve from an existing collection (`--with`): the same timings as a grown size, and the overlap
 * with the exact scan (whose own p50 is not timed here: at 1M chunks it is a second a query, three runs each).
 */
async function existingPoint(
  target: { label: string; open: () => Promise<SqlClient> },
  name: string,
  queries: string[],
  embedder: Embedder,
): Promise<Row> {
  const client = recording(await target.open());
  const open = (keywordDepth?: number) =>
    PgVectorStore.create({
      client,
      embedder,
      collectionName: name,
      createIfMissing: false,
      ...(keywordDepth !== undefined && { keywordDepth }),
    });
  const store = await open();
  const exact = await open(0);
  try {
    const stats = await store.stats();
    const timings = await timeModes(store, client, queries, embedder);
    const overlap = await keywordOverlap(store, exact, queries);
    console.log(
      `scale  ${target.label.padEnd(10)} ${String(stats.chunks).padStart(8)} chunks  existing collection ${name} (HNSW ${stats.annIndex ? 'valid' : 'absent'})  ` +
        modeSummary(timings) +
        `  keyword top-10 = exact scan's: ${f(overlap * 100, 1)} %`,
    );
    return {
      store: target.label,
      chunks: stats.chunks,
      ingestRate: Number.NaN,
      writerRates: [],
      segment: 'existing',
      firstSearchMs: Number.NaN,
      indexSeconds: Number.NaN,
      indexReason: 'existing',
      timings,
      overlap,
    };
  } finally {
    await exact.close();
    await store.close();
    await client.close();
  }
}

/** Runs the scale bench and prints its table. */
export async function runScale(argv: readonly string[]): Promise<void> {
  const options = parseScaleArgs(argv);
  const sampler = zipfSampler(42);
  const queries = queriesOf(options.queries, sampler);
  const embedder = await createEmbedder(DEFAULT_EMBEDDING_MODEL);
  console.log(
    `ai4rag bench --scale — sizes ${options.sizes.join(', ')} chunks; synthetic Zipf(${ZIPF_S}) corpus of ${VOCABULARY} pseudo-words; ${embedder.modelId}; ${queries.length} queries per mode; k = 10\n`,
  );
  const server = options.stores.includes('pgvector') ? startPostgres() : undefined;
  const targets: { label: string; open: () => Promise<SqlClient> }[] = [];
  if (options.stores.includes('pglite'))
    targets.push({ label: 'PGlite', open: () => openPglite({}) });
  if (server) {
    const cfg = pgVectorConfigFromEnv({ ...ENV, ...server.env });
    targets.push({
      label: 'PostgreSQL',
      open: async () =>
        fromPgPool(
          new pg.Pool({
            ...pgConnection(cfg),
            max: 4,
          }),
          { ownsPool: true },
        ),
    });
  } else if (options.stores.includes('pgvector')) {
    console.log('PostgreSQL: skipped (no PGVECTOR_HOST, and not root to start one)\n');
  }
  const rows: Row[] = [];
  const quality = await scifactQuality(embedder);
  console.log(
    quality === undefined
      ? 'quality  SciFact: skipped (../shared/data/scifact absent)\n'
      : `quality  SciFact dev keyword nDCG@10 (${quality.questions} questions, ${quality.chunks} chunks): postings index ${f(quality.indexed, 4)}, exact scan ${f(quality.exact, 4)} (difference ${f(quality.indexed - quality.exact, 4)}); hybrid (RRF) nDCG@10, its keyword side through the postings index ${f(quality.hybridIndexed, 4)}, through the exact scan ${f(quality.hybridExact, 4)} (difference ${f(quality.hybridIndexed - quality.hybridExact, 4)})\n`,
  );
  try {
    for (const target of targets) {
      const client = recording(await target.open());
      if (client.dialect === 'postgres') {
        console.log(
          `scale  ${target.label.padEnd(10)} server: ${await serverSettingsLine(client)}`,
        );
      }
      const name = `ai4rag_scale_${Date.now().toString(36)}`;
      const store = await PgVectorStore.create({ client, embedder, collectionName: name });
      // The same collection read by the exact BM25 scan: the reference the postings index is measured against.
      const exact = await PgVectorStore.create({
        client,
        embedder,
        collectionName: name,
        keywordDepth: 0,
      });
      try {
        let docsSoFar = 0;
        let chunks = 0;
        for (const [i, size] of options.sizes.entries()) {
          const count = size - chunks;
          const t0 = performance.now();
          // An incremental segment (into the indexed collection) is split between the writer settings, in turn.
          const settings = i === 0 ? [1] : options.writers;
          const writerRates: Row['writerRates'] = [];
          let done = 0;
          for (const [j, writers] of settings.entries()) {
            const n =
              j === settings.length - 1 ? count - done : Math.floor(count / settings.length);
            const ts = performance.now();
            await ingestDocuments(documentStream(docsSoFar + done, n, sampler), {
              store,
              chunking: CHUNKING,
              chunk: (doc) => chunker.chunk(doc),
              buildIndex: false,
              writers,
            });
            writerRates.push({ writers, rate: n / ((performance.now() - ts) / 1000) });
            done += n;
          }
          const ingestSeconds = (performance.now() - t0) / 1000;
          docsSoFar += count;
          chunks = (await store.stats()).chunks;
          const t1 = performance.now();
          await store.search(queries[0] as string, {
            k: 10,
            searchMode: 'hybrid',
            rankerStrategy: 'rrf',
          });
          const firstSearchMs = performance.now() - t1;
          // As the maintenance step builds (`ai4rag index`): the long postings lists packed too.
          const built = await store.buildIndex({ pack: true });
          const timings = await timeModes(store, client, queries, embedder);
          const overlap = await keywordOverlap(store, exact, queries);
          // The baseline side by side: the same keyword queries by the exact scan the index replaces.
          const exactTiming = await timeSearch(
            (q) => exact.keywordSearch(q, { k: 10 }),
            client,
            queries,
            1,
          );
          const row: Row = {
            store: target.label,
            chunks,
            ingestRate: count / ingestSeconds,
            writerRates,
            segment: i === 0 ? 'fresh' : 'incremental',
            firstSearchMs,
            indexSeconds: built.seconds,
            indexReason: built.reason,
            timings,
            overlap,
          };
          rows.push(row);
          const t = (m: string) => timings[m] as SearchTiming;
          console.log(
            `scale  ${row.store.padEnd(10)} ${String(chunks).padStart(8)} chunks  ingest ${f(row.ingestRate, 0).padStart(5)}/s (${row.segment}: ${writerRates.map((w) => `${w.writers} writer${w.writers > 1 ? 's' : ''} ${f(w.rate, 0)}/s`).join(', ')})  first search ${f(firstSearchMs)} ms  index ${f(built.seconds, 2)} s (${built.reason})  ` +
              modeSummary(timings) +
              `  keyword top-10 = exact scan's: ${f(overlap * 100, 1)} %; exact scan p50 ${f(exactTiming.p50, 2)} ms (index ×${f(exactTiming.p50 / t('keyword').p50, 1)} faster)` +
              `  process peak RSS ${f(peakRssBytes() / 2 ** 20, 0)} MiB`,
          );
          if ((built.segments ?? 0) > 1) {
            // Side by side: the same vector queries once the segments are merged into one index.
            const merged = await store.buildIndex({ merge: true });
            const one = await timeSearch(
              (q) => store.search(q, { k: 10, searchMode: 'vector' }),
              client,
              queries,
              1,
              (q) => embedder.embedQuery(q),
            );
            console.log(
              `scale  ${row.store.padEnd(10)} ${String(chunks).padStart(8)} chunks  vector p50 ${f(t('vector').p50, 2)} ms with ${built.segments} segments, ${f(one.p50, 2)} ms (p95 ${f(one.p95, 2)}) once merged into one (merge ${f(merged.seconds, 2)} s, ${merged.indexed} rows)`,
            );
          }
        }
      } finally {
        await exact.close();
        await store.drop().catch(() => undefined);
        await store.close();
        // The stores do not own it; left open, PGlite kept the process from exiting after the run.
        await client.close();
      }
      if (target.label === 'PostgreSQL') {
        for (const name of options.with)
          rows.push(await existingPoint(target, name, queries, embedder));
      }
    }
    if (server)
      await parallelWriters(targets.at(-1) as (typeof targets)[number], embedder, sampler);
  } finally {
    server?.stop();
  }
  console.log('');
  for (const target of targets) {
    const mine = rows.filter((r) => r.store === target.label);
    if (mine.length < 2) continue;
    const exponent = (m: string) =>
      growthExponent(mine.map((r) => ({ n: r.chunks, y: (r.timings[m] as SearchTiming).p50 })));
    const fresh = mine[0]?.ingestRate ?? Number.NaN;
    const incremental = mine
      .slice(1)
      .filter((r) => r.segment !== 'existing')
      .map(
        (r) =>
          `${r.chunks} chunks: ${r.writerRates.map((w) => `${w.writers} writer${w.writers > 1 ? 's' : ''} ${f(w.rate / fresh, 2)}`).join(', ')}`,
      );
    console.log(
      `scale  ${target.label.padEnd(10)} growth exponent of p50: ${MODES.map(([m]) => `${m} ${f(exponent(m), 2)}`).join(', ')}; incremental ingest / fresh (1 writer): ${incremental.join('; ') || 'no incremental size'}`,
    );
  }
}
