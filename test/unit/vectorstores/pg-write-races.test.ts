import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AI4RAGChunk } from '../../../shared/src/chunking/types.js';
import { analyze } from '../../../shared/src/text/analyzer.js';
import {
  dropPgCollection,
  PgVectorStore,
} from '../../../shared/src/vectorstores/pgvector/pgvector-store.js';
import { REGISTRY_TABLE } from '../../../shared/src/vectorstores/pgvector/schema.js';
import { fromPgPool, type SqlClient } from '../../../shared/src/vectorstores/sql-client.js';
import { clientOptions, probePgServer } from '../../support/pg.js';
import { hookedClient } from '../../support/recording-client.js';
import { makeChunk } from './contract.js';
import { createHashEmbedder } from './fake-embedder.js';

// Writer races on a real PostgreSQL server, made deterministic: one writer is held at a chosen statement while
// the other acts, then let go. Each test failed before the write path took its locks in the order it now does.
const config = await probePgServer(2000);

const K1 = 1.2;
const B = 0.75;
const WORDS =
  'alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike oscar papa quebec romeo sierra tango'.split(
    ' ',
  );

/** `count` chunks of document `doc`, each of `length` distinct words (every one analyzed to one token). */
function chunks(doc: string, count: number, length: number, offset = 0): AI4RAGChunk[] {
  return Array.from({ length: count }, (_, i) =>
    makeChunk(
      doc,
      i + 1,
      Array.from({ length }, (_, w) => WORDS[(offset + i * 3 + w) % WORDS.length]).join(' '),
    ),
  );
}

const avgLength = (docs: AI4RAGChunk[]) =>
  docs.reduce((s, c) => s + analyze(c.text).length, 0) / docs.length;

/** Reference Okapi BM25 score of every chunk of `docs` for `query` (avgdl as given, else the corpus's). */
function referenceScores(docs: AI4RAGChunk[], query: string, avgdl = avgLength(docs)) {
  const analyzed = docs.map((d) => ({ id: d.id, tokens: analyze(d.text) }));
  const df = new Map<string, number>();
  for (const d of analyzed) for (const t of new Set(d.tokens)) df.set(t, (df.get(t) ?? 0) + 1);
  const scores = new Map<string, number>();
  for (const d of analyzed) {
    let score = 0;
    for (const t of new Set(analyze(query))) {
      const f = d.tokens.filter((x) => x === t).length;
      const n = df.get(t) ?? 0;
      if (f === 0 || n === 0) continue;
      const idf = Math.log(1 + (analyzed.length - n + 0.5) / (n + 0.5));
      score += idf * ((f * (K1 + 1)) / (f + K1 * (1 - B + (B * d.tokens.length) / avgdl)));
    }
    if (score > 0) scores.set(d.id, score);
  }
  return scores;
}

describe.skipIf(config === undefined)('concurrent writers on a PostgreSQL server', () => {
  let client: SqlClient;
  const names: string[] = [];
  let counter = 0;
  const runId = `${Date.now().toString(36)}${Math.floor(Math.random() * 1e6).toString(36)}`;
  beforeAll(() => {
    if (config === undefined) return;
    client = fromPgPool(new pg.Pool({ ...clientOptions(config), max: 8 }), { ownsPool: true });
  });
  afterAll(async () => {
    for (const name of names) await dropPgCollection(client, name);
    await client?.close();
  });

  /** A fresh collection's name. */
  const newName = () => {
    counter += 1;
    const name = `ai4rag_race_${runId}_${counter}`;
    names.push(name);
    return name;
  };
  const open = (collectionName: string, on: SqlClient, bm25: { reweightTolerance?: number } = {}) =>
    PgVectorStore.create({ client: on, embedder: createHashEmbedder(), collectionName, bm25 });

  /**
   * A gate at the first statement matching `at`: `reached` resolves when a writer arrives there, which then waits
   * until `release()`.
   */
  const gate = (at: RegExp) => {
    let armed = false;
    let arrive: () => void = () => undefined;
    let open: () => void = () => undefined;
    const reached = new Promise<void>((resolve) => {
      arrive = resolve;
    });
    const released = new Promise<void>((resolve) => {
      open = resolve;
    });
    return {
      arm: () => {
        armed = true;
      },
      before: async (text: string) => {
        if (!armed || !at.test(text)) return;
        armed = false;
        arrive();
        await released;
      },
      reached,
      release: () => open(),
    };
  };

  /** Resolves once `work` settles or another session of this database waits on a lock (then `work` is blocked). */
  const settledOrBlocked = async (work: Promise<unknown>) => {
    let settled = false;
    void work.then(
      () => {
        settled = true;
      },
      () => {
        settled = true;
      },
    );
    for (let i = 0; i < 400 && !settled; i += 1) {
      const waiting = await client.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity
           WHERE datname = current_database() AND wait_event_type = 'Lock'`,
      );
      if ((waiting.rows[0]?.n ?? 0) > 0) return;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  };

  const registry = async (name: string) =>
    (
      await client.query<{ n: number; total: number; avgdl: number | null }>(
        `SELECT chunk_count::int AS n, token_total::int AS total, bm25_avgdl_weighted AS avgdl
           FROM ${REGISTRY_TABLE} WHERE name = $1`,
        [name],
      )
    ).rows[0];

  /** Every hit of `query` scores as the reference over `docs` (avgdl as given, else the corpus's). */
  const expectScores = async (
    store: PgVectorStore,
    docs: AI4RAGChunk[],
    query: string,
    avgdl?: number,
  ) => {
    const want = referenceScores(docs, query, avgdl);
    const got = await store.keywordSearch(query, { k: docs.length });
    expect(got.length, query).toBe(want.size);
    for (const h of got) {
      expect(Math.abs((h.score ?? 0) - (want.get(h.id) ?? 0)), `${query}: ${h.id}`).toBeLessThan(
        1e-4,
      );
    }
  };

  it('a re-weighting while a batch is being written leaves none of its rows weighted with the old avgdl', async () => {
    // Prepare: 4 chunks of 4 tokens (avgdl 4, recorded), then 2 of 10 that move it to 6 (not yet re-weighted)
    const name = newName();
    const g = gate(/FROM "[^"]+" WHERE version = \$2 AND id = ANY/);
    const writer = await open(name, hookedClient(client, g.before), { reweightTolerance: 0 });
    const searcher = await open(name, client, { reweightTolerance: 0 });
    const base = chunks('base', 4, 4);
    const drift = chunks('drift', 2, 10, 5);
    const held = chunks('held', 3, 6, 9);
    expect([avgLength(base), avgLength([...base, ...drift]), avgLength(held)]).toEqual([4, 6, 6]);
    try {
      await writer.addChunks(base);
      await writer.addChunks(drift);
      expect((await registry(name))?.avgdl).toBe(4);
      // Act: hold a batch (6 tokens a chunk: it keeps avgdl at 6) after it began; a search re-weights meanwhile
      g.arm();
      const writing = writer.addChunks(held);
      await g.reached;
      const searching = searcher.keywordSearch('alpha', { k: 5 });
      await settledOrBlocked(searching);
      g.release();
      await Promise.all([writing, searching]);
      // Assess: avgdl stays 6, so no later re-weighting hides a row weighted with 4
      const all = [...base, ...drift, ...held];
      for (const q of ['alpha', 'golf hotel', 'papa quebec']) await expectScores(searcher, all, q);
      expect(await registry(name)).toEqual({ n: 9, total: 54, avgdl: 6 });
      expect((await searcher.checkIntegrity()).keywordIndexMismatch).toBe(0);
    } finally {
      await writer.close();
      await searcher.close();
    }
  });

  it('two first writes of a collection weigh their rows with the one avgdl recorded', async () => {
    // Prepare: two writers of an empty collection; the default tolerance (10 %) keeps the first avgdl recorded
    const name = newName();
    const g = gate(/FROM "[^"]+" WHERE version = \$2 AND id = ANY/);
    const first = await open(name, hookedClient(client, g.before));
    const second = await open(name, client);
    const a = chunks('a', 4, 5);
    const b = chunks('b', 4, 6, 7);
    expect([avgLength(a), avgLength(b)]).toEqual([5, 6]);
    try {
      // Act: the first writer is held after it began; the second writes meanwhile
      g.arm();
      const writing = first.addChunks(a);
      await g.reached;
      const other = second.addChunks(b);
      await settledOrBlocked(other);
      g.release();
      await Promise.all([writing, other]);
      // Assess: every row weighted with the avgdl recorded (5.5, the mean, is within 10 % of either)
      const recorded = (await registry(name))?.avgdl ?? Number.NaN;
      expect([5, 6]).toContain(recorded);
      for (const q of ['alpha', 'hotel india', 'kilo']) {
        await expectScores(second, [...a, ...b], q, recorded);
      }
    } finally {
      await first.close();
      await second.close();
    }
  });

  it('a chunk another writer inserted after this batch looked for it is counted once', async () => {
    // Prepare: a collection with one chunk (its avgdl recorded); writer one (no COPY: the INSERT path) is held
    // after it found none of the chunks
    const name = newName();
    const g = gate(/^\s*INSERT INTO "[^"]+" \(id, document_id/);
    const one = await open(name, hookedClient(client, g.before, { copy: false }), {
      reweightTolerance: 0,
    });
    const two = await open(name, client, { reweightTolerance: 0 });
    const seed = chunks('seed', 1, 5, 11);
    const docs = chunks('same', 4, 5);
    try {
      await two.addChunks(seed);
      // Act: writer two writes the same chunks and commits; then writer one goes on
      g.arm();
      const writing = one.addChunks(docs);
      await g.reached;
      await two.addChunks(docs);
      g.release();
      await writing;
      // Assess: five chunks, counted once each
      const all = [...seed, ...docs];
      for (const q of ['alpha', 'echo foxtrot', 'lima']) await expectScores(two, all, q);
      expect(await registry(name)).toMatchObject({ n: 5, total: 25 });
      expect((await two.stats()).chunks).toBe(5);
    } finally {
      await one.close();
      await two.close();
    }
  });
  /** A client whose `LOCK TABLE … ROW EXCLUSIVE` (the first statement of each batch attempt) fails with a deadlock
   * (SQLSTATE 40P01, as the server reports one) the first `failures` times; `attempts` counts them all. */
  const deadlocking = (failures: number) => {
    const seen = { attempts: 0 };
    const on = hookedClient(client, (text) => {
      if (!/^LOCK TABLE .* IN ROW EXCLUSIVE MODE$/.test(text)) return;
      seen.attempts += 1;
      if (seen.attempts <= failures) {
        throw Object.assign(new Error('deadlock detected'), { code: '40P01' });
      }
    });
    return { on, seen };
  };

  it('a batch that deadlocks is rerun from the start and counted once', async () => {
    // Prepare: a collection with one chunk; the next batch deadlocks twice
    const name = newName();
    const seed = chunks('seed', 1, 5, 11);
    const docs = chunks('next', 4, 5);
    const two = await open(name, client, { reweightTolerance: 0 });
    await two.addChunks(seed);
    const { on, seen } = deadlocking(2);
    const one = await open(name, on, { reweightTolerance: 0 });
    try {
      // Act
      await one.addChunks(docs);
      // Assert: the third attempt wrote the batch, once
      expect(seen.attempts).toBe(3);
      const all = [...seed, ...docs];
      for (const q of ['alpha', 'echo foxtrot', 'lima']) await expectScores(two, all, q);
      expect(await registry(name)).toMatchObject({ n: 5, total: 25 });
      expect((await two.stats()).chunks).toBe(5);
    } finally {
      await one.close();
      await two.close();
    }
  });

  it('a batch that deadlocks five times fails with the deadlock, and nothing of it is written', async () => {
    // Prepare
    const name = newName();
    const seed = chunks('seed', 1, 5, 11);
    const two = await open(name, client, { reweightTolerance: 0 });
    await two.addChunks(seed);
    const { on, seen } = deadlocking(Number.POSITIVE_INFINITY);
    const one = await open(name, on, { reweightTolerance: 0 });
    try {
      // Act
      const failed = await one.addChunks(chunks('next', 4, 5)).then(
        () => undefined,
        (error: unknown) => error as Error & { cause?: { code?: string } },
      );
      // Assert: five attempts, the server's deadlock surfaced, the collection as it was
      expect(seen.attempts).toBe(5);
      expect(failed?.cause?.code ?? (failed as { code?: string } | undefined)?.code).toBe('40P01');
      await expectScores(two, seed, 'alpha'); // (folds the statistics log first)
      expect(await registry(name)).toMatchObject({ n: 1, total: 5 });
      expect((await two.stats()).chunks).toBe(1);
    } finally {
      await one.close();
      await two.close();
    }
  });
});
