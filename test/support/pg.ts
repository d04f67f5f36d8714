import pg from 'pg';
import {
  type PgVectorConfig,
  pgConnection,
  pgVectorConfigFromEnv,
} from '../../shared/src/vectorstores/config.js';

/**
 * The PostgreSQL + pgvector server named by `PGVECTOR_HOST/PORT/DB/USER/PASSWORD`, if it answers `SELECT 1`
 * within `timeoutMs`; undefined when PGVECTOR_HOST is unset or the server is unreachable (tests then skip).
 */
export async function probePgServer(timeoutMs = 2000): Promise<PgVectorConfig | undefined> {
  if (!process.env.PGVECTOR_HOST) return undefined;
  const config = pgVectorConfigFromEnv(process.env);
  const client = new pg.Client({ ...clientOptions(config), connectionTimeoutMillis: timeoutMs });
  try {
    await Promise.race([
      client.connect().then(() => client.query('SELECT 1')),
      new Promise((_, reject) => setTimeout(() => reject(new Error('timeout')), timeoutMs).unref()),
    ]);
    return config;
  } catch {
    return undefined;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** `pg` connection options for a {@link PgVectorConfig}. */
export function clientOptions(config: PgVectorConfig): pg.ClientConfig {
  return pgConnection(config);
}

/** Databases made for test workers: one per vitest pool slot, `<PGVECTOR_DB>_w1` … `_w<WORKER_DATABASES>`. */
const WORKER_DATABASES = 4;

/**
 * Makes the databases of the test workers on the server `PGVECTOR_*` names (`<PGVECTOR_DB>_w<slot>`, each with
 * pgvector, made when missing), so that files running at the same time never share one: in a shared database a
 * `CREATE INDEX CONCURRENTLY` of one file waits for every older snapshot of another's. Files of one worker run one
 * after another and reuse its database. Sets `AI4RAG_TEST_WORKER_DB` (the base name) and `AI4RAG_TEST_WORKER_DBS`
 * (how many) for test/setup.ts, which points `PGVECTOR_DB` at the worker's own. Without `PGVECTOR_HOST`, or when a
 * database cannot be made (no CREATEDB right), nothing changes: every file uses `PGVECTOR_DB`.
 */
export async function prepareWorkerDatabases(): Promise<void> {
  if (!process.env.PGVECTOR_HOST || process.env.AI4RAG_TEST_WORKER_DB) return;
  const config = pgVectorConfigFromEnv(process.env);
  if (!/^[a-z_][a-z0-9_]{0,59}$/.test(config.database)) return;
  const names = Array.from({ length: WORKER_DATABASES }, (_, i) => `${config.database}_w${i + 1}`);
  const admin = new pg.Client({ ...clientOptions(config), connectionTimeoutMillis: 2000 });
  try {
    await admin.connect();
    const found = await admin.query<{ datname: string }>(
      'SELECT datname FROM pg_database WHERE datname = ANY($1)',
      [names],
    );
    const have = new Set(found.rows.map((r) => r.datname));
    for (const name of names) if (!have.has(name)) await admin.query(`CREATE DATABASE ${name}`);
    for (const name of names) {
      const own = new pg.Client({ ...clientOptions({ ...config, database: name }) });
      try {
        await own.connect();
        await own.query('CREATE EXTENSION IF NOT EXISTS vector');
      } finally {
        await own.end().catch(() => undefined);
      }
    }
  } catch {
    return;
  } finally {
    await admin.end().catch(() => undefined);
  }
  process.env.AI4RAG_TEST_WORKER_DB = config.database;
  process.env.AI4RAG_TEST_WORKER_DBS = String(WORKER_DATABASES);
}
