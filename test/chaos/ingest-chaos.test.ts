/**
 * Chaos suite for ingestion (nothing lost, duplicated, orphaned or resurrected). The CLI runs as a child process
 * against PGlite (a data directory) and against the PostgreSQL server `.ci/run` starts; it is killed with SIGKILL at
 * seeded points, raced against a second writer, and fed an embedding outage. After each, the invariants are checked
 * independently of the store's own bookkeeping (see harness.ts). `npm run chaos` runs the same at a larger scale.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { probePgServer } from '../support/pg.js';
import {
  batchCalls,
  type ChaosFake,
  checkInvariants,
  docKeys,
  embeddingCalls,
  expectedVersions,
  ingestWith,
  killCampaign,
  lastJson,
  POISON_RSS_BOUND_BYTES,
  pgliteTarget,
  pgTarget,
  runCli,
  startChaosFake,
  type Target,
  type Versions,
  writeCorpus,
  writePoisonCorpus,
} from './harness.js';

const pgConfig = await probePgServer(2000);

const DOCS = 60;
const PARAGRAPHS = 50;

describe.each([
  ['PGlite', 6, 11],
  ['PostgreSQL', 6, 23],
] as const)('ingestion chaos on %s', (kind, kills, seed) => {
  const enabled = kind === 'PGlite' || pgConfig !== undefined;
  let root: string;
  let target: Target;
  let chaos: ChaosFake;
  const runId = Date.now().toString(36);

  beforeAll(async () => {
    if (!enabled) return;
    root = await mkdtemp(join(tmpdir(), `ai4rag-chaos-${kind}-`));
    target =
      pgConfig !== undefined && kind === 'PostgreSQL' ? pgTarget(pgConfig) : pgliteTarget(root);
    chaos = await startChaosFake();
  });
  afterAll(async () => {
    if (!enabled) return;
    await target.cleanup();
    await chaos.fake.close();
    await rm(root, { recursive: true, force: true });
  });

  it.skipIf(!enabled)(
    `survives ${kills} SIGKILLs at seeded points: no orphan visible, no document lost or mixed; the re-run completes clean`,
    async () => {
      // Act
      const result = await killCampaign({
        target,
        chaos,
        root,
        collection: `ai4rag_chaos_kill_${runId}`,
        docs: DOCS,
        paragraphs: PARAGRAPHS,
        kills,
        seed,
      });
      // Assess: after every kill, each document whole at one version and nothing else visible
      for (const [i, k] of result.kills.entries()) {
        const where = `kill ${i}: ${k.point.kind} call #${k.point.ordinal} +${k.point.delayMs} ms`;
        expect(k.report.documentsInconsistent, where).toEqual([]);
        expect(k.report.orphansVisible, where).toBe(0);
        expect(k.report.duplicates, where).toBe(0);
        expect(k.report.documents, where).toBe(DOCS);
        if (!k.killed) expect(k.exitCode, where).toBe(0);
      }
      expect(result.kills.filter((k) => k.killed).length).toBeGreaterThanOrEqual(kills - 1);
      // The re-run completes, every document at the last version, and the dead writers' chunks are swept.
      expect(result.final.code, result.final.stderr).toBe(0);
      expect(lastJson<{ indexed: number; failed: number }>(result.final)).toMatchObject({
        indexed: DOCS,
        failed: 0,
      });
      expect(result.finalReport.documentsInconsistent).toEqual([]);
      expect(result.finalReport.orphansVisible).toBe(0);
      expect(new Set(result.finalReport.versionOf.values())).toEqual(new Set(['final']));
      expect(result.integrity).toMatchObject({ clean: true, orphanChunks: 0, expiredWrites: [] });
    },
    300_000,
  );

  it.skipIf(!enabled)(
    'an embedding outage mid-ingest: documents committed before it stay whole, the rest keep their version, exit 1',
    async () => {
      // Prepare
      const collection = `ai4rag_chaos_outage_${runId}`;
      const keys = docKeys(DOCS);
      const dir = join(root, 'outage');
      const versions: Versions = new Map();
      await writeCorpus(dir, 'o1', keys, PARAGRAPHS);
      await expectedVersions([dir], versions);
      const before = embeddingCalls(chaos.fake);
      const first = await ingestWith(target, chaos, dir, collection);
      expect(first.code, first.stderr).toBe(0);
      const calls = batchCalls(chaos.fake, before);
      await writeCorpus(dir, 'o2', keys, PARAGRAPHS);
      await expectedVersions([dir], versions);
      // Act: from the last batch call on (the second write), every request answers 503 — a storm mid-ingest
      const stormAt = embeddingCalls(chaos.fake) + (calls.at(-1) ?? 1);
      chaos.onRequest = (n) => {
        if (n === stormAt) chaos.fake.failNext(503, 1_000_000, { retryAfterSeconds: 0 });
      };
      const run = await ingestWith(target, chaos, dir, collection);
      chaos.reset();
      chaos.fake.failNext(503, 0);
      // Assess
      expect(run.code).toBe(1);
      const summary = lastJson<{ indexed: number; failed: number }>(run);
      expect(summary.indexed + summary.failed).toBe(DOCS);
      expect(summary.indexed).toBeGreaterThan(0);
      expect(summary.failed).toBeGreaterThan(0);
      const end = await target.inspect(collection, async (store) => ({
        invariants: await checkInvariants(store, versions),
        integrity: await store.checkIntegrity(),
        records: await store.listDocuments(),
      }));
      expect(end.invariants.documentsInconsistent).toEqual([]);
      expect(end.invariants.orphansVisible).toBe(0);
      expect(end.invariants.documents).toBe(DOCS);
      expect(end.integrity).toMatchObject({ clean: true, orphanChunks: 0 });
      // Exactly the documents reported indexed are at the new version.
      const atNew = end.records.filter(
        (r) => [...(versions.get(r.documentId)?.keys() ?? [])][1] === r.contentHash,
      );
      expect(atNew.length).toBe(summary.indexed);
    },
    180_000,
  );
});

describe('two writers on one PGlite data directory', () => {
  let root: string;
  let chaos: ChaosFake;
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'ai4rag-pglite-race-'));
    chaos = await startChaosFake(20);
  });
  afterAll(async () => {
    await chaos.fake.close();
    await rm(root, { recursive: true, force: true });
  });

  it('refuses the second writer with a clear error while the first completes whole', async () => {
    // Prepare
    const target = pgliteTarget(root);
    const collection = 'ai4rag_pglite_race';
    const dirA = join(root, 'a');
    const dirB = join(root, 'b');
    await writeCorpus(dirA, 'a', docKeys(20), 30);
    await writeCorpus(dirB, 'b', docKeys(20), 30);
    const versions = await expectedVersions([dirA, dirB]);
    // Act: B starts while A holds the data directory (A's first embedding call waits until B has exited)
    let bDone: (() => void) | undefined;
    const bExited = new Promise<void>((r) => {
      bDone = r;
    });
    let started: (() => void) | undefined;
    const aStarted = new Promise<void>((r) => {
      started = r;
    });
    // The first batch call (after the model probes), when A holds the data directory.
    let held = false;
    chaos.onRequest = (n) => {
      const request = chaos.fake.requests.filter((r) => r.path === '/v1/embeddings')[n - 1];
      const input = (request?.body as { input?: unknown } | undefined)?.input;
      if (held || !Array.isArray(input) || input.length < 2) return;
      held = true;
      started?.();
      return bExited;
    };
    const a = ingestWith(target, chaos, dirA, collection);
    await aStarted;
    const b = await ingestWith(target, chaos, dirB, collection);
    bDone?.();
    const doneA = await a;
    chaos.reset();
    // Assess
    expect(doneA.code, doneA.stderr).toBe(0);
    expect(b.code).toBe(1);
    expect(b.stderr).toMatch(/data directory .* is (in use by process \d+|being locked)/);
    const report = await target.inspect(collection, (store) => checkInvariants(store, versions));
    expect(report.documentsInconsistent).toEqual([]);
    expect(report.orphansVisible).toBe(0);
    expect(report.documents).toBe(20);
  }, 120_000);
});

describe.skipIf(pgConfig === undefined)('two writers racing on one PostgreSQL collection', () => {
  let root: string;
  let target: Target;
  let chaos: ChaosFake;
  const runId = Date.now().toString(36);
  beforeAll(async () => {
    if (pgConfig === undefined) return;
    root = await mkdtemp(join(tmpdir(), 'ai4rag-race-'));
    target = pgTarget(pgConfig);
    chaos = await startChaosFake(5);
  });
  afterAll(async () => {
    if (pgConfig === undefined) return;
    await target.cleanup();
    await chaos.fake.close();
    await rm(root, { recursive: true, force: true });
  });

  it.each([
    [1, 0],
    [2, 250],
    [3, 700],
  ])(
    'interleaving %i (B starts %i ms after A): every document at one complete version, both reports truthful',
    async (i, offsetMs) => {
      // Prepare: A writes docs 0–59 at version a, B docs 30–89 at version b (30 overlap)
      const collection = `ai4rag_race_${runId}_${i}`;
      const dirA = join(root, `a${i}`);
      const dirB = join(root, `b${i}`);
      const keysA = docKeys(60, 0);
      const keysB = docKeys(60, 30);
      await writeCorpus(dirA, 'a', keysA, 40);
      await writeCorpus(dirB, 'b', keysB, 40);
      const versions = await expectedVersions([dirA, dirB]);
      const labelOf = (key: string, hash: string) => {
        const hashes = [...(versions.get(key)?.keys() ?? [])];
        if (hashes.length === 1) return keysA.includes(key) ? 'a' : 'b';
        return hash === hashes[0] ? 'a' : 'b';
      };
      // Act
      const [a, b] = await Promise.all([
        ingestWith(target, chaos, dirA, collection),
        new Promise((r) => setTimeout(r, offsetMs)).then(() =>
          ingestWith(target, chaos, dirB, collection),
        ),
      ]);
      // Assess
      expect(a.code, a.stderr).toBe(0);
      expect(b.code, b.stderr).toBe(0);
      const ra = lastJson<{ indexed: number; superseded: number }>(a);
      const rb = lastJson<{ indexed: number; superseded: number }>(b);
      expect(ra.indexed + ra.superseded).toBe(60);
      expect(rb.indexed + rb.superseded).toBe(60);
      const end = await target.inspect(collection, async (store) => ({
        invariants: await checkInvariants(store, versions, labelOf),
        integrity: await store.checkIntegrity(),
      }));
      expect(end.invariants.documentsInconsistent).toEqual([]);
      expect(end.invariants.orphansVisible).toBe(0);
      expect(end.invariants.duplicates).toBe(0);
      expect(end.invariants.documents).toBe(90);
      for (const k of docKeys(30, 0)) expect(end.invariants.versionOf.get(k)).toBe('a');
      for (const k of docKeys(30, 60)) expect(end.invariants.versionOf.get(k)).toBe('b');
      expect(end.integrity).toMatchObject({ clean: true, orphanChunks: 0, liveWrites: [] });
      // `ai4rag check` agrees, and exits 0.
      const check = await runCli(
        ['check', ...target.args(collection), '--embedding', 'fake-embedding'],
        {
          env: { ...target.env, OPENAI_BASE_URL: chaos.fake.baseURL, OPENAI_API_KEY: 'test-key' },
        },
      );
      expect(check.code, check.stderr).toBe(0);
      expect(check.stdout).toContain('clean');
    },
    180_000,
  );
});

describe('a poison corpus through `ai4rag ingest`', () => {
  let root: string;
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'ai4rag-poison-cli-'));
  });
  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('indexes every good document, fails each poison file with its reason, exits 1, within the memory bound', async () => {
    // Prepare
    const dir = join(root, 'docs');
    const { indexable, failing } = await writePoisonCorpus(dir, 30);
    const rssFile = join(root, 'rss');
    const dataDir = join(root, 'data');
    // PGlite's first start (initdb) alone peaks near 1 GB: create the data directory first, so the bound measures
    // ingestion, not initdb.
    const init = await runCli(['stats', '--data-dir', dataDir, '--collection', 'ai4rag_none']);
    expect(init.code).toBe(1);
    // Act
    const run = await runCli(
      ['ingest', dir, '--data-dir', dataDir, '--collection', 'ai4rag_poison', '--json'],
      { rssFile },
    );
    // Assess
    expect(run.code, run.stderr).toBe(1);
    const summary = lastJson<{
      indexed: number;
      failed: number;
      failures: { document_key: string; reason: string; message: string }[];
    }>(run);
    expect(summary.indexed).toBe(indexable.length);
    expect(summary.failed).toBe(failing.length);
    expect(Object.fromEntries(summary.failures.map((f) => [f.document_key, f.reason]))).toEqual({
      'bomb.docx': 'bomb',
      'liar.docx': 'bomb',
      'bomb.pdf': 'bomb',
      'deep.html': 'too_deep',
      'broken.docx': 'corrupt',
    });
    for (const f of summary.failures) expect(f.message).toContain(f.document_key);
    expect(run.stderr).toMatch(/warning: nul\.txt: stripped 2 NUL characters/);
    const peak = Number(await readFile(rssFile, 'utf8'));
    expect(peak).toBeGreaterThan(0);
    expect(peak).toBeLessThan(POISON_RSS_BOUND_BYTES);
    const docs = await runCli([
      'documents',
      '--data-dir',
      dataDir,
      '--collection',
      'ai4rag_poison',
      '--json',
    ]);
    expect(
      lastJson<{ document_key: string }[]>(docs)
        .map((d) => d.document_key)
        .sort(),
    ).toEqual([...indexable].sort());
  }, 120_000);
});
