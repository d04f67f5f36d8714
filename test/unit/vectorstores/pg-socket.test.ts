import { PGLiteSocketServer } from '@electric-sql/pglite-socket';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PgVectorStore } from '../../../shared/src/vectorstores/pgvector/pgvector-store.js';
import {
  fromPgPool,
  openPglite,
  type PgliteSqlClient,
  type SqlClient,
} from '../../../shared/src/vectorstores/sql-client.js';
import { runVectorStoreContract } from './contract.js';
import { runPgVectorSuite } from './pgvector-suite.js';
import { runStagedWriteContract } from './staged-contract.js';

const POOL_SIZE = 4;
let local: PgliteSqlClient;
let server: PGLiteSocketServer;
let client: SqlClient;

beforeAll(async () => {
  local = await openPglite();
  server = new PGLiteSocketServer({
    db: local.db,
    host: '127.0.0.1',
    port: 0,
    maxConnections: POOL_SIZE + 1,
  });
  await server.start();
  const [host, port] = server.getServerConn().split(':');
  const pool = new pg.Pool({
    host,
    port: Number(port),
    user: 'postgres',
    database: 'postgres',
    max: POOL_SIZE,
  });
  client = fromPgPool(pool, { ownsPool: true });
});
afterAll(async () => {
  await client?.close();
  await server?.stop();
  await local?.close();
});

runVectorStoreContract('pgvector over pglite-socket + pg.Pool', (opts) =>
  PgVectorStore.create({ client, ...opts }),
);
runStagedWriteContract('pgvector over pglite-socket + pg.Pool', (opts) =>
  PgVectorStore.create({ client, ...opts }),
);
runPgVectorSuite('pglite-socket + pg.Pool', () => client);

describe('fromPgPool transactions', () => {
  it('rolls back on error and releases the connection', async () => {
    // Prepare
    await client.query('CREATE TABLE IF NOT EXISTS tx_probe (v int)');
    // Act
    const failed = client.transaction(async (tx) => {
      await tx.query('INSERT INTO tx_probe VALUES (1)');
      throw new Error('boom');
    });
    // Assess
    await expect(failed).rejects.toThrow('boom');
    const rows = await client.query<{ n: number }>('SELECT count(*)::int AS n FROM tx_probe');
    expect(rows.rows[0]?.n).toBe(0);
    const committed = await client.transaction(async (tx) => {
      await tx.query('INSERT INTO tx_probe VALUES (2)');
      return (await tx.query<{ n: number }>('SELECT count(*)::int AS n FROM tx_probe')).rows[0]?.n;
    });
    expect(committed).toBe(1);
    await client.query('DROP TABLE tx_probe');
  });
});
