/**
 * Chaos suite for ingestion, PostgreSQL side (the server `.ci/run` starts; skipped without one): the SIGKILL campaign
 * and the embedding outage, and two writers racing on one collection at three interleavings. See ingest-chaos.test.ts
 * for the PGlite side.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { probePgServer } from '../support/pg.js';
import { ingestionChaosSuite } from './campaign-suite.js';
import {
  type ChaosFake,
  checkInvariants,
  docKeys,
  expectedVersions,
  ingestWith,
  lastJson,
  pgTarget,
  runCli,
  startChaosFake,
  type Target,
  writeCorpus,
} from './harness.js';

const pgConfig = await probePgServer(2000);

ingestionChaosSuite('PostgreSQL', 3, 23, pgConfig);

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
