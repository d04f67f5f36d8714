import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  dropPgCollection,
  PgVectorStore,
} from '../../../shared/src/vectorstores/pgvector/pgvector-store.js';
import { fromPgPool, type SqlClient } from '../../../shared/src/vectorstores/sql-client.js';
import { clientOptions, probePgServer } from '../../support/pg.js';
import { runVectorStoreContract } from './contract.js';
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

  runVectorStoreContract(
    'pgvector on a PostgreSQL server',
    (opts) => {
      created.push(opts.collectionName);
      return PgVectorStore.create({ client, ...opts });
    },
    async () => {
      for (const name of created) {
        if (name.startsWith('ai4rag')) await dropPgCollection(client, name);
      }
    },
  );
  runStagedWriteContract('pgvector on a PostgreSQL server', (opts) => {
    created.push(opts.collectionName);
    return PgVectorStore.create({ client, ...opts });
  });
  runPgVectorSuite('PostgreSQL server', () => client);
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
