import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  FOLD_COUNT_PAGES,
  keywordIndexFold,
  keywordIndexNames,
} from '../../../shared/src/vectorstores/pgvector/keyword-index.js';
import { collectionTables } from '../../../shared/src/vectorstores/pgvector/names.js';
import {
  dropPgCollection,
  PgVectorStore,
} from '../../../shared/src/vectorstores/pgvector/pgvector-store.js';
import { fromPgPool, type SqlClient } from '../../../shared/src/vectorstores/sql-client.js';
import { clientOptions, probePgServer } from '../../support/pg.js';
import { recordingClient } from '../../support/recording-client.js';
import { makeChunk, runVectorStoreContract } from './contract.js';
import { createHashEmbedder } from './fake-embedder.js';
import { runKeywordIndexSuite } from './keyword-index-suite.js';
import { runPgVectorSuite } from './pgvector-suite.js';
import { runStagedWriteContract } from './staged-contract.js';

// A real PostgreSQL + pgvector from PGVECTOR_* (e.g. ../shared/tools/pg-with-pgvector); skipped otherwise.
const config = await probePgServer(2000);

describe.skipIf(config === undefined)('real PostgreSQL server', () => {
  let client: SqlClient;
  const created: string[] = [];
  beforeAll(() => {
    if (config === undefined) return;
    const pool = new pg.Pool({ ...clientOptions(config), max: config.poolMaxSize });
    client = fromPgPool(pool, { ownsPool: true });
  });
  afterAll(async () => {
    await client?.close();
  });

  // Each contract drops the collections it created when it ends (the server outlives the test run).
  const dropCreated = async () => {
    for (const name of created.splice(0)) {
      if (name.startsWith('ai4rag')) await dropPgCollection(client, name);
    }
  };
  runVectorStoreContract(
    'pgvector on a PostgreSQL server',
    (opts) => {
      created.push(opts.collectionName);
      return PgVectorStore.create({ client, ...opts });
    },
    dropCreated,
  );
  runStagedWriteContract(
    'pgvector on a PostgreSQL server',
    (opts) => {
      created.push(opts.collectionName);
      return PgVectorStore.create({ client, ...opts });
    },
    dropCreated,
  );
  runPgVectorSuite('PostgreSQL server', () => client);
  runKeywordIndexSuite('PostgreSQL server', () => client);
});

describe.skipIf(config === undefined)('pg.Pool adapter when the server drops connections', () => {
  it('survives idle connections closed by the server, and the next statement and transaction run', async () => {
    // Prepare: a pool with two idle connections, tagged so that only they are terminated
    if (config === undefined) return;
    const pool = new pg.Pool({
      ...clientOptions(config),
      max: 2,
      application_name: 'ai4rag-idle-test',
    });
    const idleErrors: string[] = [];
    const client = fromPgPool(pool, {
      ownsPool: true,
      onIdleError: (e) => idleErrors.push(e.message),
    });
    await Promise.all([client.query('SELECT pg_sleep(0.05)'), client.query('SELECT 1')]);
    const admin = new pg.Client(clientOptions(config));
    await admin.connect();
    try {
      // Act: what RDS Proxy does to idle clients after its timeout
      const killed = await admin.query(
        `SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity
         WHERE application_name = 'ai4rag-idle-test'`,
      );
      await new Promise((r) => setTimeout(r, 200));
      const one = await client.query<{ one: number }>('SELECT 1 AS one');
      const tx = await client.transaction(
        async (t) => (await t.query<{ two: number }>('SELECT 2 AS two')).rows,
      );
      // Assess
      expect(killed.rows[0]?.n).toBe(2);
      expect(idleErrors.length).toBeGreaterThanOrEqual(1);
      expect(one.rows).toEqual([{ one: 1 }]);
      expect(tx).toEqual([{ two: 2 }]);
    } finally {
      await admin.end();
      await client.close();
    }
  });
});

describe.skipIf(config === undefined)('concurrent index builds on a PostgreSQL server', () => {
  it('two sessions building the same index at once: one builds, the other leaves it be, no error', async () => {
    // Prepare
    if (config === undefined) return;
    const pool = new pg.Pool({ ...clientOptions(config), max: 6 });
    const client = fromPgPool(pool, { ownsPool: true });
    const name = `ai4rag_idx_race_${Date.now().toString(36)}`;
    const embedder = createHashEmbedder({ dimension: 64 });
    const a = await PgVectorStore.create({ client, embedder, collectionName: name, annMinRows: 0 });
    const b = await PgVectorStore.create({ client, embedder, collectionName: name, annMinRows: 0 });
    try {
      await a.addChunks(
        Array.from({ length: 3000 }, (_, i) =>
          makeChunk(`d${i % 30}`, i, `w${i} x${(i * 31) % 2003}`),
        ),
      );
      // Act
      const results = await Promise.all([a.buildIndex(), b.buildIndex()]);
      // Assess
      expect(results.filter((r) => r.built).length).toBeGreaterThanOrEqual(1);
      for (const r of results) {
        expect(['built', 'exists', 'being built by another session']).toContain(r.reason);
      }
      expect((await b.buildIndex()).reason).toBe('exists');
      expect((await a.stats()).annIndex).toBe(true);
    } finally {
      await a.close();
      await b.close();
      await dropPgCollection(client, name);
      await client.close();
    }
  });
});

/** `store.buildIndex()`'s result, or `blocked` when it has not returned within 10 s. */
function buildWithin10s(store: PgVectorStore) {
  return Promise.race([
    store.buildIndex(),
    new Promise<'blocked'>((r) => setTimeout(() => r('blocked'), 10_000)),
  ]);
}

/** A connection whose open transaction has deleted document d5's rows (holding their postings). */
async function writerDeletingD5(pool: pg.Pool, n: { table: string }) {
  const writer = await pool.connect();
  await writer.query('BEGIN');
  await writer.query(`DELETE FROM ${n.table} WHERE document_id = 'd5'`);
  return writer;
}

describe.skipIf(config === undefined)('keyword-index fold on a PostgreSQL server', () => {
  /**
   * A collection on its own pool whose every posting is fresh (the store treats it as large, folding from one
   * posting): 20 documents of 10 chunks; `done` drops it and closes the pool.
   */
  async function freshCollection(prefix: string) {
    if (config === undefined) throw new Error('no server');
    const pool = new pg.Pool({ ...clientOptions(config), max: 4 });
    const client = fromPgPool(pool, { ownsPool: true });
    const name = `${prefix}_${Date.now().toString(36)}`;
    const store = await PgVectorStore.create({
      client,
      embedder: createHashEmbedder({ dimension: 8 }),
      collectionName: name,
      keywordIndex: { freshFromRow: 0, foldMin: 1 },
    });
    await store.addChunks(
      Array.from({ length: 200 }, (_, i) =>
        makeChunk(`d${i % 20}`, i, `w${i % 7}x w${i % 13}x w${i % 29}x shared`),
      ),
    );
    const count = async (sql: string) => Number((await pool.query(sql)).rows[0]?.n);
    const done = async () => {
      await store.close();
      await dropPgCollection(client, name);
      await client.close();
    };
    return { pool, store, name, n: keywordIndexNames(name.toLowerCase()), count, done };
  }

  it('a delete racing with a fold of its postings waits for it and leaves no posting behind', async () => {
    // Prepare: a fold moving every posting, its transaction still open
    if (config === undefined) return;
    const { pool, store, n, count, done } = await freshCollection('ai4rag_fold_race');
    const fold = keywordIndexFold(n);
    const conn = await pool.connect();
    try {
      await conn.query('BEGIN');
      await conn.query(fold.lock);
      const moved = (await conn.query<{ moved: number }>(fold.fold)).rows[0]?.moved;

      // Act: a document deleted meanwhile (its rows' postings are the fold's, locked), then the fold commits
      const deleting = store.deleteDocument('d3');
      let waited = false;
      for (let i = 0; i < 100 && !waited; i += 1) {
        await new Promise((r) => setTimeout(r, 20));
        waited =
          (await count(
            `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()`,
          )) > 0;
      }
      await conn.query('COMMIT');
      const deleted = await deleting;

      // Assert: the delete had to wait for the fold, removed its 10 rows, and no posting of them survives
      expect(moved).toBeGreaterThan(0);
      expect(waited).toBe(true);
      expect(deleted).toBe(10);
      expect((await store.checkIntegrity()).keywordIndexMismatch).toBe(0);
      expect(await count(`SELECT count(*)::int AS n FROM ${n.fresh}`)).toBe(0);
    } finally {
      conn.release();
      await done();
    }
  });

  it('a fold gives way at once to a writer holding some fresh postings, and folds once that writer is done', async () => {
    // Prepare: a writer's transaction deleting one document's rows, left open
    if (config === undefined) return;
    const { pool, store, n, count, done } = await freshCollection('ai4rag_fold_skip');
    const total = await count(`SELECT count(*)::int AS n FROM ${n.fresh}`);
    const writer = await writerDeletingD5(pool, n);
    try {
      // Act: a build while the writer's transaction is open (bounded at 10 s); the writer then deletes one more
      // document and commits; then another build
      const during = await buildWithin10s(store);
      await writer.query(`DELETE FROM ${n.table} WHERE document_id = 'd6'`);
      await writer.query('COMMIT');
      const left = await count(`SELECT count(*)::int AS n FROM ${n.fresh}`);
      const after = await store.buildIndex();

      // Assert: the first build gave way at once and moved nothing; the writer committed; the second folded the rest
      expect(during).not.toBe('blocked');
      expect((during as { postingsFolded?: number }).postingsFolded).toBeUndefined();
      expect(left).toBeLessThan(total);
      expect(after.postingsFolded).toBe(left);
      expect(await count(`SELECT count(*)::int AS n FROM ${n.fresh}`)).toBe(0);
      expect(
        await count(`SELECT count(*)::int AS n FROM ${n.table} WHERE document_id IN ('d5', 'd6')`),
      ).toBe(0);
      expect((await store.checkIntegrity()).keywordIndexMismatch).toBe(0);
    } finally {
      writer.release();
      await done();
    }
  });

  it('a swap of the postings tables gives way at once to a writer holding them, and swaps once that writer is done', async () => {
    // Prepare: every posting fresh, none folded (a swap is due at any size); a writer's delete left open
    if (config === undefined) return;
    const { pool, name, n, count, done } = await freshCollection('ai4rag_swap_wait');
    const swapping = await PgVectorStore.create({
      client: fromPgPool(pool),
      embedder: createHashEmbedder({ dimension: 8 }),
      collectionName: name,
      keywordIndex: { freshFromRow: 0, foldMin: 1, swapMinBytes: 0 },
    });
    const total = await count(`SELECT count(*)::int AS n FROM ${n.fresh}`);
    const writer = await writerDeletingD5(pool, n);
    try {
      // Act: a build while the writer's transaction is open (bounded at 10 s), the writer commits, another build
      const during = await buildWithin10s(swapping);
      const heldBack = await count(`SELECT count(*)::int AS n FROM ${n.fresh}`);
      await writer.query('COMMIT');
      const left = await count(`SELECT count(*)::int AS n FROM ${n.fresh}`);
      const after = await swapping.buildIndex();

      // Assert: the first build neither swapped nor folded; the second swapped, leaving nothing fresh and every
      // posting exact
      expect(during).not.toBe('blocked');
      expect((during as { postingsSwapped?: true }).postingsSwapped).toBeUndefined();
      expect((during as { postingsFolded?: number }).postingsFolded).toBeUndefined();
      expect(heldBack).toBe(total);
      expect(after.postingsSwapped).toBe(true);
      expect(after.postingsFolded).toBeUndefined();
      expect([
        await count(`SELECT count(*)::int AS n FROM ${n.postings}`),
        await count(`SELECT count(*)::int AS n FROM ${n.fresh}`),
      ]).toEqual([left, 0]);
      expect((await swapping.checkIntegrity()).keywordIndexMismatch).toBe(0);
    } finally {
      writer.release();
      await swapping.close();
      await done();
    }
  });

  it('a build samples a large fresh table before counting it: well below the minimum it counts nothing, at it the fold moves every posting', async () => {
    // Prepare: 300,000 more fresh postings (rows the store never wrote: only their number matters here), so the
    // table is past FOLD_COUNT_PAGES; stores on the same collection whose statements are recorded
    if (config === undefined) return;
    const { pool, name, n, count, done } = await freshCollection('ai4rag_fold_sample');
    const sent: string[] = [];
    const client = recordingClient(fromPgPool(pool), (text) => {
      if (text.includes('TABLESAMPLE')) sent.push('sample');
      else if (text.includes('AS due')) sent.push('count');
      else if (text.includes('WITH moved AS')) sent.push('fold');
    });
    const open = (foldMin: number) =>
      PgVectorStore.create({
        client,
        embedder: createHashEmbedder({ dimension: 8 }),
        collectionName: name,
        keywordIndex: { freshFromRow: 0, foldMin },
      });
    try {
      await pool.query(
        `INSERT INTO ${n.fresh} (term, w, rid) SELECT g % 1000, 1, 1000000 + g FROM generate_series(1, 300000) g`,
      );
      const total = await count(`SELECT count(*)::int AS n FROM ${n.fresh}`);
      const bytes = Number(
        (await pool.query('SELECT pg_relation_size($1::regclass) AS b', [n.fresh])).rows[0]?.b,
      );
      expect(bytes).toBeGreaterThan(FOLD_COUNT_PAGES * 8192);

      // Act: a build with a minimum of 2,000,000, then one with a minimum of 300,000
      const far = await open(2_000_000);
      const skipped = await far.buildIndex();
      await far.close();
      const farSent = sent.splice(0);
      const near = await open(300_000);
      const folded = await near.buildIndex();
      await near.close();

      // Assert: the first sampled and stopped (no count, no fold); the second sampled, counted and folded them all
      expect(farSent).toEqual(['sample']);
      expect(skipped.postingsFolded).toBeUndefined();
      expect(sent).toEqual(['sample', 'count', 'fold']);
      expect(folded.postingsFolded).toBe(total);
      expect(await count(`SELECT count(*)::int AS n FROM ${n.fresh}`)).toBe(0);
    } finally {
      await done();
    }
  });
});

describe.skipIf(config === undefined)(
  'the statistics log beside other writers on a PostgreSQL server',
  () => {
    it('a writer vacuuming the emptied log goes on while another writer holds the log', async () => {
      // Prepare: a log over LOG_VACUUM_BYTES (zero-delta rows, which change no statistics), and another session holding
      // it in ROW EXCLUSIVE mode, as a writer mid-write does. Truncating the emptied table needs ACCESS EXCLUSIVE,
      // which PostgreSQL tries for 5 s before giving up: 4 writers into one collection lost half their rate to it.
      if (config === undefined) return;
      const pool = new pg.Pool({ ...clientOptions(config), max: 4 });
      const client = fromPgPool(pool, { ownsPool: true });
      const name = `ai4rag_logvac_${Date.now().toString(36)}`;
      const store = await PgVectorStore.create({
        client,
        embedder: createHashEmbedder({ dimension: 8 }),
        collectionName: name,
      });
      const log = collectionTables(name).dfLog;
      const holder = await pool.connect();
      try {
        await store.addChunks([makeChunk('d1', 1, 'alpha beta'), makeChunk('d2', 1, 'beta gamma')]);
        await pool.query(
          `INSERT INTO ${log} (term, delta) SELECT g, 0 FROM generate_series(1, 40000) g`,
        );
        await holder.query('BEGIN');
        await holder.query(`LOCK TABLE ${log} IN ROW EXCLUSIVE MODE`);

        // Act: a keyword search folds the log and vacuums it (bounded at 4 s)
        const outcome = await Promise.race([
          store.keywordSearch('beta', { k: 2 }).then((hits) => hits.length),
          new Promise<'waited'>((r) => setTimeout(() => r('waited'), 4000)),
        ]);

        // Assert: it answered while the other writer still held the log, and the log holds no rows
        expect(outcome).toBe(2);
        expect(Number((await pool.query(`SELECT count(*)::int AS n FROM ${log}`)).rows[0]?.n)).toBe(
          0,
        );
      } finally {
        await holder.query('ROLLBACK');
        holder.release();
        await store.close();
        await dropPgCollection(client, name);
        await client.close();
      }
    });
  },
);

describe.skipIf(config === undefined)(
  'new collections beside busy ones on a PostgreSQL server',
  () => {
    it('opens a new collection while another session holds a transaction reading the registry', async () => {
      // Prepare: a writer of another collection mid-transaction (it has read the registry, as every upsert does)
      if (config === undefined) return;
      const pool = new pg.Pool({ ...clientOptions(config), max: 4 });
      const client = fromPgPool(pool, { ownsPool: true });
      const embedder = createHashEmbedder({ dimension: 8 });
      const busyName = `ai4rag_busy_${Date.now().toString(36)}`;
      const freshName = `ai4rag_fresh_${Date.now().toString(36)}`;
      const busy = await PgVectorStore.create({ client, embedder, collectionName: busyName });
      const holder = new pg.Client(clientOptions(config));
      await holder.connect();
      try {
        await holder.query('BEGIN');
        await holder.query('SELECT count(*) FROM ai4rag_collections');
        // Act: before the fix, the registry ALTER waited on that transaction and failed at the lock timeout
        const fresh = await PgVectorStore.create({ client, embedder, collectionName: freshName });
        await fresh.addChunks([makeChunk('d1', 1, 'opened beside a busy writer')]);
        // Assess
        expect((await fresh.stats()).chunks).toBe(1);
        await fresh.close();
      } finally {
        await holder.query('ROLLBACK').catch(() => undefined);
        await holder.end();
        await busy.close();
        await dropPgCollection(client, busyName);
        await dropPgCollection(client, freshName);
        await client.close();
      }
    });
  },
);
