/**
 * Chaos harness: corpora with several versions of the same documents, the CLI as a child process (killable), and
 * an independent check of the ingestion invariants I1–I2 through the store's read paths — every visible chunk is
 * one of the chunks its document's recorded version is made of, and every recorded document has exactly those.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { createChunker } from '../../shared/src/chunking/index.js';
import type { ChunkingOptions } from '../../shared/src/chunking/types.js';
import { loadDocuments } from '../../shared/src/documents/load.js';
import { featureHashVector } from '../../shared/src/embeddings/feature-hash.js';
import type { Embedder } from '../../shared/src/embeddings/types.js';
import { mulberry32 } from '../../shared/src/util/random.js';
import type { PgVectorConfig } from '../../shared/src/vectorstores/config.js';
import {
  dropPgCollection,
  PgVectorStore,
} from '../../shared/src/vectorstores/pgvector/pgvector-store.js';
import {
  fromPgPool,
  openPglite,
  type SqlClient,
} from '../../shared/src/vectorstores/sql-client.js';
import type { IntegrityReport, VectorStore } from '../../shared/src/vectorstores/types.js';
import { type FakeOpenAI, startFakeOpenAI } from '../support/fake-openai-server.js';
import { clientOptions } from '../support/pg.js';

export const REPO = resolve(import.meta.dirname, '../..');
/** Small chunks, so a modest corpus spans several embedding calls and several staged writes. */
export const CHAOS_CHUNKING: ChunkingOptions = {
  method: 'recursive',
  chunkSize: 128,
  chunkOverlap: 0,
};
export const CHUNKING_ARGS = [
  '--chunking',
  'recursive',
  '--chunk-size',
  '128',
  '--chunk-overlap',
  '0',
];
/** The fake OpenAI server's default vector length. */
export const FAKE_DIMENSION = 16;
export const FAKE_MODEL = 'fake-embedding';

/** A deterministic PRNG (the project's mulberry32). */
export const prng = mulberry32;

const WORDS =
  'protein enzyme market bond river garden policy leave budget travel expense password server cluster index vector query answer document version staged commit lease sweep orphan record chunk token model batch'.split(
    ' ',
  );

/** Text of one document version: `paragraphs` paragraphs of seeded words, tagged with the version label. */
export function documentText(key: string, label: string, paragraphs: number, seed: number): string {
  const rand = prng(seed);
  const parts = [`# ${key} (${label})`];
  for (let p = 0; p < paragraphs; p++) {
    const words: string[] = [];
    for (let w = 0; w < 90; w++) words.push(WORDS[Math.floor(rand() * WORDS.length)] as string);
    parts.push(`${label} paragraph ${p}: ${words.join(' ')}.`);
  }
  return `${parts.join('\n\n')}\n`;
}

/** Writes `count` documents `doc-NNN.md` of version `label` into `dir` (replacing it). */
export async function writeCorpus(
  dir: string,
  label: string,
  keys: readonly string[],
  paragraphs: number,
): Promise<void> {
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  for (const [i, key] of keys.entries()) {
    await writeFile(join(dir, key), documentText(key, label, paragraphs, 1000 * i + label.length));
  }
}

export const docKeys = (n: number, from = 0): string[] =>
  Array.from({ length: n }, (_, i) => `doc-${String(from + i).padStart(3, '0')}.md`);

/** Per document key, per content hash: the chunk ids that version is made of. */
export type Versions = Map<string, Map<string, string[]>>;

/** Chunk ids of every document version in the given folders (what the CLI would store for each). */
export async function expectedVersions(dirs: readonly string[], into: Versions = new Map()) {
  const chunker = createChunker(CHAOS_CHUNKING);
  for (const dir of dirs) {
    const { documents } = await loadDocuments([dir]);
    for (const doc of documents) {
      let byHash = into.get(doc.key);
      if (!byHash) {
        byHash = new Map();
        into.set(doc.key, byHash);
      }
      byHash.set(
        doc.contentHash,
        (await chunker.chunk(doc)).map((c) => c.id),
      );
    }
  }
  return into;
}

/** An embedder with the fake server's model id and vectors, for opening the same collection in the test. */
export function fakeEmbedder(): Embedder {
  return {
    modelId: FAKE_MODEL,
    dimension: FAKE_DIMENSION,
    contextLength: 8192,
    embedDocuments: async (texts) => texts.map((t) => featureHashVector(t, FAKE_DIMENSION)),
    embedQuery: async (t) => featureHashVector(t, FAKE_DIMENSION),
  } as Embedder;
}

/** What {@link checkInvariants} found; all counters 0 means I1–I2 hold. */
export interface InvariantReport {
  documents: number;
  visibleChunks: number;
  /** Recorded documents whose visible chunks are not exactly their recorded version's (lost or mixed). */
  documentsInconsistent: string[];
  /** Visible chunks that belong to no recorded version (orphans or a second version). */
  orphansVisible: number;
  /** Chunk ids seen twice in one document. */
  duplicates: number;
  /** Documents by the version label of their recorded content. */
  versionOf: Map<string, string>;
}

/**
 * Checks I1–I2 through the read paths users see (documents, chunk reads by document, search, stats), against
 * `versions` computed independently from the files.
 */
export async function checkInvariants(
  store: VectorStore,
  versions: Versions,
  labelOf: (key: string, hash: string) => string = (_k, h) => h,
): Promise<InvariantReport> {
  const records = await store.listDocuments();
  const report: InvariantReport = {
    documents: records.length,
    visibleChunks: 0,
    documentsInconsistent: [],
    orphansVisible: 0,
    duplicates: 0,
    versionOf: new Map(),
  };
  const allowed = new Set<string>();
  for (const r of records) {
    const expected = versions.get(r.documentId)?.get(r.contentHash);
    const hits = await store.getChunksBySequence(r.documentId, -1, 1_000_000_000);
    const ids = hits.map((h) => h.id);
    report.visibleChunks += ids.length;
    report.duplicates += ids.length - new Set(ids).size;
    const exact =
      expected !== undefined &&
      r.chunkCount === expected.length &&
      ids.length === expected.length &&
      [...ids].sort().join('\n') === [...expected].sort().join('\n');
    if (!exact) report.documentsInconsistent.push(r.documentId);
    for (const id of expected ?? []) allowed.add(id);
    report.versionOf.set(r.documentId, labelOf(r.documentId, r.contentHash));
  }
  // Search sees nothing else (orphans of no record, a second version of a document).
  const stats = await store.stats();
  report.orphansVisible += Math.max(0, stats.chunks - report.visibleChunks);
  for (const q of ['protein enzyme market', 'staged commit lease orphan', 'v1 paragraph 3']) {
    const hits = await store.search(q, { k: 200 });
    report.orphansVisible += hits.filter((h) => !allowed.has(h.id)).length;
  }
  return report;
}

/** Outcome of a CLI child process. */
export interface CliRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `ai4rag <args>` as a child process. `onSpawn` receives the child (a test kills it from a fault hook).
 * `rssFile`: the child writes its peak RSS (bytes) there on exit.
 */
export function runCli(
  args: readonly string[],
  options: {
    env?: Record<string, string | undefined>;
    onSpawn?: (child: ChildProcess) => void;
    timeoutMs?: number;
    rssFile?: string;
  } = {},
): Promise<CliRun> {
  const entry = options.rssFile
    ? [join(REPO, 'test/chaos/cli-with-rss.mjs'), options.rssFile]
    : [join(REPO, 'bin/ai4rag.mjs')];
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, [...entry, ...args], {
      cwd: REPO,
      env: { ...process.env, ...options.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (b: Buffer) => {
      stdout += b.toString();
    });
    child.stderr.on('data', (b: Buffer) => {
      stderr += b.toString();
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 120_000);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolvePromise({ code, signal, stdout, stderr });
    });
    options.onSpawn?.(child);
  });
}

/** The last JSON line a `--json` command printed. */
export function lastJson<T>(run: CliRun): T {
  const line = run.stdout.trim().split('\n').filter(Boolean).pop() ?? '';
  try {
    return JSON.parse(line) as T;
  } catch {
    throw new Error(
      `no JSON on stdout (exit ${run.code}, signal ${run.signal}); stderr: ${run.stderr.slice(-2000)}`,
    );
  }
}

/** A place the CLI can ingest into, and a way to look at it between runs. */
export interface Target {
  name: string;
  args: (collection: string) => string[];
  env: Record<string, string | undefined>;
  /** Opens the collection in this process, runs `fn`, closes it (PGlite: releases the data directory). */
  inspect: <T>(collection: string, fn: (store: PgVectorStore) => Promise<T>) => Promise<T>;
  cleanup: () => Promise<void>;
}

/** PGlite in `<root>/pglite` (the CLI's `--data-dir`). */
export function pgliteTarget(root: string): Target {
  const dataDir = join(root, 'pglite');
  return {
    name: 'PGlite',
    args: (collection) => ['--store', 'pglite', '--data-dir', dataDir, '--collection', collection],
    env: {},
    inspect: async (collection, fn) => {
      // The CLI keeps PGlite's files in <data-dir>/pglite.
      const client = await openPglite({ dataDir: join(dataDir, 'pglite') });
      try {
        const store = await PgVectorStore.create({
          client,
          embedder: fakeEmbedder(),
          collectionName: collection,
          createIfMissing: false,
        });
        return await fn(store);
      } finally {
        await client.close();
      }
    },
    cleanup: async () => undefined,
  };
}

/** A PostgreSQL server; the collections the CLI wrote are dropped by `cleanup`. */
export function pgTarget(config: PgVectorConfig): Target {
  const pool = new pg.Pool({ ...clientOptions(config), max: 4 });
  const client: SqlClient = fromPgPool(pool, { ownsPool: false });
  const created = new Set<string>();
  return {
    name: 'PostgreSQL',
    args: (collection) => {
      created.add(collection);
      return ['--store', 'pgvector', '--collection', collection];
    },
    env: {
      PGVECTOR_HOST: config.host,
      PGVECTOR_PORT: String(config.port),
      PGVECTOR_DB: config.database,
      PGVECTOR_USER: config.user,
      ...(config.password !== undefined ? { PGVECTOR_PASSWORD: config.password } : {}),
    },
    inspect: async (collection, fn) => {
      const store = await PgVectorStore.create({
        client,
        embedder: fakeEmbedder(),
        collectionName: collection,
        createIfMissing: false,
      });
      try {
        return await fn(store);
      } finally {
        await store.close();
      }
    },
    cleanup: async () => {
      for (const c of created) await dropPgCollection(client, c);
      await pool.end();
    },
  };
}

/** Where a kill lands: while the n-th embedding request of a run waits, or `delayMs` after its answer. */
export interface KillPoint {
  kind: 'embedding' | 'write';
  ordinal: number;
  delayMs: number;
}

/** Seeded kill points at the given embedding calls (1-based within a run). */
export function killPoints(seed: number, count: number, ordinals: readonly number[]): KillPoint[] {
  const rand = prng(seed);
  return Array.from({ length: count }, (_, i) => ({
    kind: i % 2 === 0 ? 'write' : 'embedding',
    ordinal: ordinals[Math.floor(rand() * ordinals.length)] as number,
    delayMs: Math.floor(rand() * 400),
  }));
}

export const embeddingCalls = (fake: FakeOpenAI): number =>
  fake.requests.filter((r) => r.path === '/v1/embeddings').length;

/** 1-based positions, among the embedding requests since `from`, of the batch calls (more than one input). */
export function batchCalls(fake: FakeOpenAI, from: number): number[] {
  const calls = fake.requests.filter((r) => r.path === '/v1/embeddings').slice(from);
  return calls.flatMap((r, i) => {
    const input = (r.body as { input?: unknown } | undefined)?.input;
    return Array.isArray(input) && input.length > 1 ? [i + 1] : [];
  });
}

/** Fault hooks the fake embedding server calls (see `startChaosFake`). */
export interface ChaosFake {
  fake: FakeOpenAI;
  onRequest: (ordinal: number) => void | Promise<void>;
  afterResponse: (ordinal: number) => void;
  reset(): void;
}

/** A fake OpenAI-compatible server whose embedding requests call replaceable hooks. */
export async function startChaosFake(latencyMs = 0): Promise<ChaosFake> {
  const hooks: ChaosFake = {
    fake: undefined as unknown as FakeOpenAI,
    onRequest: () => undefined,
    afterResponse: () => undefined,
    reset() {
      hooks.onRequest = () => undefined;
      hooks.afterResponse = () => undefined;
    },
  };
  hooks.fake = await startFakeOpenAI({
    latencyMs,
    onEmbeddingRequest: (n) => hooks.onRequest(n),
    afterEmbeddingResponse: (n) => hooks.afterResponse(n),
  });
  return hooks;
}

/** Runs `ai4rag ingest` of `dir` into a target's collection with the fake embedding model. */
export function ingestWith(
  target: Target,
  chaos: ChaosFake,
  dir: string,
  collection: string,
  extra: { onSpawn?: (c: ChildProcess) => void; rssFile?: string } = {},
): Promise<CliRun> {
  return runCli(
    [
      'ingest',
      dir,
      ...target.args(collection),
      '--embedding',
      FAKE_MODEL,
      ...CHUNKING_ARGS,
      '--json',
    ],
    {
      env: { ...target.env, OPENAI_BASE_URL: chaos.fake.baseURL, OPENAI_API_KEY: 'test-key' },
      ...extra,
    },
  );
}

/** One kill of a campaign: where, whether the child died of it, and what the invariants check found. */
export interface KillResult {
  point: KillPoint;
  killed: boolean;
  exitCode: number | null;
  report: InvariantReport;
}

/** Outcome of {@link killCampaign}. */
export interface CampaignResult {
  kills: KillResult[];
  final: CliRun;
  finalReport: InvariantReport;
  integrity: IntegrityReport;
}

/**
 * Ingests version v1 of `docs` documents, then for each seeded point ingests a new version and SIGKILLs the child
 * there, checking the invariants after each; then completes a last version and checks again (with the store's own
 * integrity check).
 */
export async function killCampaign(options: {
  target: Target;
  chaos: ChaosFake;
  root: string;
  collection: string;
  docs: number;
  paragraphs: number;
  kills: number;
  seed: number;
}): Promise<CampaignResult> {
  const { target, chaos, collection } = options;
  const keys = docKeys(options.docs);
  const dir = join(options.root, `docs-${collection}`);
  const versions: Versions = new Map();
  const labels = new Map<string, string>();
  const labelOf = (_k: string, h: string) => labels.get(h) ?? '?';
  const writeVersion = async (label: string) => {
    await writeCorpus(dir, label, keys, options.paragraphs);
    const before = new Set([...versions.values()].flatMap((m) => [...m.keys()]));
    await expectedVersions([dir], versions);
    for (const m of versions.values())
      for (const h of m.keys()) if (!before.has(h)) labels.set(h, label);
  };
  await writeVersion('v1');
  const before = embeddingCalls(chaos.fake);
  const first = await ingestWith(target, chaos, dir, collection);
  if (first.code !== 0) throw new Error(`the first ingest failed: ${first.stderr.slice(-2000)}`);
  const calls = batchCalls(chaos.fake, before);
  const kills: KillResult[] = [];
  for (const [i, point] of killPoints(options.seed, options.kills, calls).entries()) {
    await writeVersion(`k${i}`);
    let child: ChildProcess | undefined;
    const at = point.ordinal + embeddingCalls(chaos.fake);
    chaos.onRequest = (n) => {
      if (point.kind === 'embedding' && n === at) child?.kill('SIGKILL');
    };
    chaos.afterResponse = (n) => {
      if (point.kind === 'write' && n === at)
        setTimeout(() => child?.kill('SIGKILL'), point.delayMs);
    };
    const run = await ingestWith(target, chaos, dir, collection, {
      onSpawn: (c) => {
        child = c;
      },
    });
    chaos.reset();
    const report = await target.inspect(collection, (store) =>
      checkInvariants(store, versions, labelOf),
    );
    kills.push({ point, killed: run.signal === 'SIGKILL', exitCode: run.code, report });
  }
  await writeVersion('final');
  const final = await ingestWith(target, chaos, dir, collection);
  const end = await target.inspect(collection, async (store) => ({
    report: await checkInvariants(store, versions, labelOf),
    integrity: await store.checkIntegrity(),
  }));
  return { kills, final, finalReport: end.report, integrity: end.integrity };
}

/**
 * Peak RSS `ai4rag ingest` may reach on the poison corpus with an existing PGlite data directory: about 515 MiB of
 * Node, tsx and PGlite (measured: the same run over the good documents alone), plus the loaders' per-file bounds
 * (shared/src/documents/README.md), with the bombs refused before they inflate.
 */
export const POISON_RSS_BOUND_BYTES = 768 * 1024 * 1024;

/**
 * Writes a poison corpus next to `good` good documents: a NUL-laden text (loads, stripped), a DOCX whose XML
 * inflates to 300 MiB, one whose directory lies about it, a PDF stream bomb, HTML 100,000 elements deep and a
 * .docx that is no zip. Returns the keys of the documents that must index and of the files that must fail.
 */
export async function writePoisonCorpus(
  dir: string,
  good: number,
): Promise<{ indexable: string[]; failing: string[] }> {
  const fixtures = await import('../unit/documents/bomb-fixtures.js');
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  const keys = docKeys(good);
  for (const [i, key] of keys.entries()) {
    await writeFile(join(dir, key), documentText(key, 'good', 12, i));
  }
  const piece = Buffer.alloc(1024 * 1024, fixtures.wordParagraph('bomb'));
  const bomb = fixtures.repeatedEntry('word/document.xml', piece, 300);
  await writeFile(
    join(dir, 'nul.txt'),
    'Visitors sign in at the desk.\u0000\u0000 Badges go back on exit.\n',
  );
  await writeFile(join(dir, 'bomb.docx'), fixtures.minimalDocx(bomb));
  await writeFile(join(dir, 'liar.docx'), fixtures.minimalDocx({ ...bomb, declaredSize: 4096 }));
  await writeFile(join(dir, 'bomb.pdf'), fixtures.flateBombPdf(300));
  await writeFile(join(dir, 'deep.html'), `<html><body>${'<div>'.repeat(100_000)}x</body></html>`);
  await writeFile(join(dir, 'broken.docx'), 'not a zip archive');
  return {
    indexable: [...keys, 'nul.txt'],
    failing: ['bomb.docx', 'liar.docx', 'bomb.pdf', 'deep.html', 'broken.docx'],
  };
}
