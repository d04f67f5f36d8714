/**
 * The chaos campaign shared by the PGlite and PostgreSQL chaos files (see ingest-chaos.test.ts).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PgVectorConfig } from '../../shared/src/vectorstores/config.js';
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
  pgliteTarget,
  pgTarget,
  startChaosFake,
  type Target,
  type Versions,
  writeCorpus,
} from './harness.js';

const DOCS = 60;
/** Paragraphs per document of the kill campaign (3,636 chunks per version: dozens of embedding batches to kill in). */
const PARAGRAPHS = 30;
/**
 * Paragraphs per document of the outage: the storm begins at the first ingest's last batch call, which must fall
 * inside the second ingest's writes with some documents committed before it (6,060 chunks per version).
 */
const OUTAGE_PARAGRAPHS = 50;

/**
 * The SIGKILL campaign and the embedding outage on one store, as a suite. Each store has its own test file so the
 * two run on separate workers; `npm run chaos` runs the same campaigns with CHAOS_KILLS (20) kills each.
 * @param kills seeded kill points, alternating a kill after a write's response and one during an embedding request
 */
export function ingestionChaosSuite(
  kind: 'PGlite' | 'PostgreSQL',
  kills: number,
  seed: number,
  pgConfig: PgVectorConfig | undefined,
): void {
  describe(`ingestion chaos on ${kind}`, () => {
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
        await writeCorpus(dir, 'o1', keys, OUTAGE_PARAGRAPHS);
        await expectedVersions([dir], versions);
        const before = embeddingCalls(chaos.fake);
        const first = await ingestWith(target, chaos, dir, collection);
        expect(first.code, first.stderr).toBe(0);
        const calls = batchCalls(chaos.fake, before);
        await writeCorpus(dir, 'o2', keys, OUTAGE_PARAGRAPHS);
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
}
