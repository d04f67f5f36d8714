import pg from 'pg';
import { afterAll, beforeAll, describe } from 'vitest';
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
