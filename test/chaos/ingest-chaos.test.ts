/**
 * Chaos suite for ingestion (nothing lost, duplicated, orphaned or resurrected), PGlite side. The CLI runs as a child
 * process against a PGlite data directory; it is killed with SIGKILL at seeded points, raced against a second writer,
 * fed an embedding outage and a poison corpus. After each, the invariants are checked independently of the store's
 * own bookkeeping (see harness.ts). The PostgreSQL side is ingest-chaos-postgres.test.ts; `npm run chaos` runs the
 * same campaigns at a larger scale.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ingestionChaosSuite } from './campaign-suite.js';
import {
  type ChaosFake,
  checkInvariants,
  docKeys,
  expectedVersions,
  ingestWith,
  lastJson,
  POISON_RSS_BOUND_BYTES,
  pgliteTarget,
  runCli,
  startChaosFake,
  writeCorpus,
  writePoisonCorpus,
} from './harness.js';

ingestionChaosSuite('PGlite', 3, 11, undefined);

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
