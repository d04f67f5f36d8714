/**
 * Chaos harness: corpora with several versions of the same documents, the CLI as a child process (killable), and
 * an independent check of the ingestion invariants I1–I2 through the store's read paths — every visible chunk is
 * one of the chunks its document's recorded version is made of, and every recorded document has exactly those.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { createChunker } from '../../shared/src/chunking/index.js';
import type { ChunkingOptions } from '../../shared/src/chunking/types.js';
import { loadDocuments } from '../../shared/src/documents/load.js';
import { featureHashVector } from '../../shared/src/embeddings/feature-hash.js';
import type { Embedder } from '../../shared/src/embeddings/types.js';
import type { VectorStore } from '../../shared/src/vectorstores/types.js';

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

/** A deterministic PRNG (mulberry32). */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

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
        chunker.chunk(doc).map((c) => c.id),
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
