/**
 * Chaos suite for ingestion (issue: nothing lost, duplicated, orphaned or resurrected). The CLI runs as a child
 * process against PGlite (a data directory) and against the PostgreSQL server `.ci/run` starts; it is killed with
 * SIGKILL at seeded points, raced against a second writer, and fed an embedding outage. After each, the invariants
 * are checked independently of the store's own bookkeeping (see harness.ts).
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  dropPgCollection,
  PgVectorStore,
} from '../../shared/src/vectorstores/pgvector/pgvector-store.js';
import {
  fromPgPool,
  openPglite,
  type SqlClient,
} from '../../shared/src/vectorstores/sql-client.js';
import { type FakeOpenAI, startFakeOpenAI } from '../support/fake-openai-server.js';
import { clientOptions, probePgServer } from '../support/pg.js';
import {
  CHUNKING_ARGS,
  checkInvariants,
  docKeys,
  expectedVersions,
  FAKE_MODEL,
  fakeEmbedder,
  lastJson,
  prng,
  runCli,
  type Versions,
  writeCorpus,
} from './harness.js';

const pgConfig = await probePgServer(2000);

/** A place the CLI can ingest into, and a way for the test to look at it between runs. */
interface Target {
  name: string;
  args: (collection: string) => string[];
  env: Record<string, string | undefined>;
  /** Opens the collection in this process, runs `fn`, closes it (PGlite: releases the data directory). */
  inspect: <T>(collection: string, fn: (store: PgVectorStore) => Promise<T>) => Promise<T>;
  cleanup: () => Promise<void>;
}

async function pgliteTarget(root: string): Promise<Target> {
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

function pgTarget(): Target {
  if (pgConfig === undefined) throw new Error('no PostgreSQL server');
  const pool = new pg.Pool({ ...clientOptions(pgConfig), max: 4 });
  const client: SqlClient = fromPgPool(pool, { ownsPool: false });
  const created = new Set<string>();
  return {
    name: 'PostgreSQL',
    args: (collection) => {
      created.add(collection);
      return ['--store', 'pgvector', '--collection', collection];
    },
    env: {
      PGVECTOR_HOST: pgConfig.host,
      PGVECTOR_PORT: String(pgConfig.port),
      PGVECTOR_DB: pgConfig.database,
      PGVECTOR_USER: pgConfig.user,
      ...(pgConfig.password !== undefined ? { PGVECTOR_PASSWORD: pgConfig.password } : {}),
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

interface KillPoint {
  /** `embedding`: while the n-th embedding request waits; `write`: `delayMs` after its answer (storing). */
  kind: 'embedding' | 'write';
  ordinal: number;
  delayMs: number;
}

/** Seeded kill points at the given embedding calls (1-based within a run). */
function killPoints(seed: number, count: number, ordinals: readonly number[]): KillPoint[] {
  const rand = prng(seed);
  return Array.from({ length: count }, (_, i) => ({
    kind: i % 2 === 0 ? 'write' : 'embedding',
    ordinal: ordinals[Math.floor(rand() * ordinals.length)] as number,
    delayMs: Math.floor(rand() * 400),
  }));
}

/** 1-based positions, among the embedding requests since `from`, of the batch calls (more than one input). */
function batchCalls(fake: FakeOpenAI, from: number): number[] {
  const calls = fake.requests.filter((r) => r.path === '/v1/embeddings').slice(from);
  return calls.flatMap((r, i) => {
    const input = (r.body as { input?: unknown } | undefined)?.input;
    return Array.isArray(input) && input.length > 1 ? [i + 1] : [];
  });
}

const embeddingCalls = (fake: FakeOpenAI) =>
  fake.requests.filter((r) => r.path === '/v1/embeddings').length;

const DOCS = 90;
const PARAGRAPHS = 50;

describe.each([
  ['PGlite', 5, 11],
  ['PostgreSQL', 8, 23],
] as const)('ingestion chaos on %s', (kind, kills, seed) => {
  const enabled = kind === 'PGlite' || pgConfig !== undefined;
  let root: string;
  let target: Target;
  let fake: FakeOpenAI;
  let onRequest: (ordinal: number) => void = () => undefined;
  let afterResponse: (ordinal: number) => void = () => undefined;
  const runId = Date.now().toString(36);

  beforeAll(async () => {
    if (!enabled) return;
    root = await mkdtemp(join(tmpdir(), `ai4rag-chaos-${kind}-`));
    target = kind === 'PGlite' ? await pgliteTarget(root) : pgTarget();
    fake = await startFakeOpenAI({
      onEmbeddingRequest: (n) => onRequest(n),
      afterEmbeddingResponse: (n) => afterResponse(n),
    });
  });
  afterAll(async () => {
    if (!enabled) return;
    await target.cleanup();
    await fake.close();
    await rm(root, { recursive: true, force: true });
  });

  const ingest = (
    dir: string,
    collection: string,
    extra: { onSpawn?: (c: ChildProcess) => void } = {},
  ) =>
    runCli(
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
        env: { ...target.env, OPENAI_BASE_URL: fake.baseURL, OPENAI_API_KEY: 'test-key' },
        ...extra,
      },
    );

  it.skipIf(!enabled)(
    `survives ${kills} SIGKILLs at seeded points: no orphan visible, no document lost or mixed; the re-run completes clean`,
    async () => {
      // Prepare: version v1 stored completely
      const collection = `ai4rag_chaos_kill_${runId}`;
      const keys = docKeys(DOCS);
      const dir = join(root, 'docs');
      const versions: Versions = new Map();
      const labels = new Map<string, string>();
      const label = (l: string) => async () => {
        await writeCorpus(dir, l, keys, PARAGRAPHS);
        const before = new Set([...versions.values()].flatMap((m) => [...m.keys()]));
        await expectedVersions([dir], versions);
        for (const m of versions.values())
          for (const h of m.keys()) if (!before.has(h)) labels.set(h, l);
      };
      await label('v1')();
      const before = embeddingCalls(fake);
      const first = await ingest(dir, collection);
      expect(first.code, first.stderr).toBe(0);
      const calls = batchCalls(fake, before);
      expect(calls.length).toBeGreaterThanOrEqual(4);
      let killed = 0;
      // Act + Assess: each kill during an update to a new version
      for (const [i, point] of killPoints(seed, kills, calls).entries()) {
        await label(`k${i}`)();
        let child: ChildProcess | undefined;
        const startOrdinal = embeddingCalls(fake);
        // Ordinals count from the server's start: shift the point to this run.
        const shifted = { ...point, ordinal: point.ordinal + startOrdinal };
        onRequest = (n) => {
          if (shifted.kind === 'embedding' && n === shifted.ordinal) child?.kill('SIGKILL');
        };
        afterResponse = (n) => {
          if (shifted.kind === 'write' && n === shifted.ordinal) {
            setTimeout(() => child?.kill('SIGKILL'), shifted.delayMs);
          }
        };
        const run = await ingest(dir, collection, {
          onSpawn: (c) => {
            child = c;
          },
        });
        onRequest = () => undefined;
        afterResponse = () => undefined;
        if (run.signal === 'SIGKILL') killed += 1;
        else expect(run.code, run.stderr).toBe(0);
        const report = await target.inspect(collection, (store) =>
          checkInvariants(store, versions, (_k, h) => labels.get(h) ?? '?'),
        );
        expect(
          { point, inconsistent: report.documentsInconsistent, orphans: report.orphansVisible },
          `after kill ${i} (${point.kind} #${point.ordinal} +${point.delayMs}ms)`,
        ).toEqual({ point, inconsistent: [], orphans: 0 });
        expect(report.duplicates).toBe(0);
        expect(report.documents).toBe(DOCS);
      }
      // The re-run completes and sweeps what the dead writers left.
      await label('final')();
      const final = await ingest(dir, collection);
      expect(final.code, final.stderr).toBe(0);
      expect(lastJson<{ indexed: number; failed: number }>(final)).toMatchObject({
        indexed: DOCS,
        failed: 0,
      });
      const end = await target.inspect(collection, async (store) => ({
        invariants: await checkInvariants(store, versions, (_k, h) => labels.get(h) ?? '?'),
        integrity: await store.checkIntegrity(),
      }));
      expect(end.invariants.documentsInconsistent).toEqual([]);
      expect(end.invariants.orphansVisible).toBe(0);
      expect(new Set(end.invariants.versionOf.values())).toEqual(new Set(['final']));
      expect(end.integrity).toMatchObject({ clean: true, orphanChunks: 0, expiredWrites: [] });
      expect(killed).toBeGreaterThanOrEqual(kills - 1);
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
      const before = embeddingCalls(fake);
      const first = await ingest(dir, collection);
      expect(first.code, first.stderr).toBe(0);
      const calls = batchCalls(fake, before);
      await writeCorpus(dir, 'o2', keys, PARAGRAPHS);
      await expectedVersions([dir], versions);
      const start = embeddingCalls(fake);
      // Act: from the last batch call on (the second write), every request answers 503 — a storm mid-ingest
      const stormAt = start + (calls.at(-1) ?? 1);
      onRequest = (n) => {
        if (n === stormAt) fake.failNext(503, 1_000_000, { retryAfterSeconds: 0 });
      };
      const run = await ingest(dir, collection);
      onRequest = () => undefined;
      fake.failNext(503, 0);
      // Assess
      expect(run.code).toBe(1);
      const summary = lastJson<{ indexed: number; failed: number; documents: number }>(run);
      expect(summary.indexed + summary.failed).toBe(DOCS);
      expect(summary.indexed).toBeGreaterThan(0);
      expect(summary.failed).toBeGreaterThan(0);
      const report = await target.inspect(collection, async (store) => ({
        invariants: await checkInvariants(store, versions),
        integrity: await store.checkIntegrity(),
      }));
      expect(report.invariants.documentsInconsistent).toEqual([]);
      expect(report.invariants.orphansVisible).toBe(0);
      expect(report.invariants.documents).toBe(DOCS);
      expect(report.integrity).toMatchObject({ clean: true, orphanChunks: 0 });
      // Exactly the documents reported indexed are at the new version.
      const hashes = new Map<string, string>();
      await target.inspect(collection, async (store) => {
        for (const r of await store.listDocuments()) hashes.set(r.documentId, r.contentHash);
      });
      const atNew = keys.filter((k) => {
        const byHash = versions.get(k) as Map<string, string[]>;
        return [...byHash.keys()][1] === hashes.get(k);
      });
      expect(atNew.length).toBe(summary.indexed);
    },
    180_000,
  );
});

describe.skipIf(pgConfig === undefined)('two writers racing on one PostgreSQL collection', () => {
  let root: string;
  let target: Target;
  let fake: FakeOpenAI;
  const runId = Date.now().toString(36);
  beforeAll(async () => {
    if (pgConfig === undefined) return;
    root = await mkdtemp(join(tmpdir(), 'ai4rag-race-'));
    target = pgTarget();
    fake = await startFakeOpenAI({ latencyMs: 5 });
  });
  afterAll(async () => {
    if (pgConfig === undefined) return;
    await target.cleanup();
    await fake.close();
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
        return hashes.length === 1
          ? keysA.includes(key)
            ? 'a'
            : 'b'
          : hash === hashes[0]
            ? 'a'
            : 'b';
      };
      const env = { ...target.env, OPENAI_BASE_URL: fake.baseURL, OPENAI_API_KEY: 'test-key' };
      const args = (dir: string) => [
        'ingest',
        dir,
        ...target.args(collection),
        '--embedding',
        FAKE_MODEL,
        ...CHUNKING_ARGS,
        '--json',
      ];
      // Act
      const [a, b] = await Promise.all([
        runCli(args(dirA), { env }),
        new Promise((r) => setTimeout(r, offsetMs)).then(() => runCli(args(dirB), { env })),
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
    },
    180_000,
  );
});
