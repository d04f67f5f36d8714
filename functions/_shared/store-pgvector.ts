/**
 * The deployed functions' pgvector store: a small `pg.Pool` to the database (through the RDS Proxy) and
 * {@link PgVectorStore} on it. Loaded through `loadPgvectorOpener` (`bundle.ts`), so only the pgvector variant's
 * bundles carry pg.
 */
import pg from 'pg';
import type { Embedder } from '../../shared/src/embeddings/types.js';
import { pgVectorConfigFromEnv } from '../../shared/src/vectorstores/config.js';
import { PgVectorStore } from '../../shared/src/vectorstores/pgvector/pgvector-store.js';
import { fromPgPool, type SqlClient } from '../../shared/src/vectorstores/sql-client.js';
import type { VectorStore } from '../../shared/src/vectorstores/types.js';
import type { EnvRecord } from './env.js';
import { SecretError } from './secrets.js';

const text = (v: unknown): string | undefined =>
  typeof v === 'string' && v !== '' ? v : undefined;

/**
 * The pool of the deployed functions: PGVECTOR_HOST/PORT/DB win over the database secret's host (the stack
 * points them at the RDS Proxy); the user and password come from the secret, else PGVECTOR_USER/PASSWORD.
 * @param env the function's environment (`PGVECTOR_*`).
 * @param secret the parsed database secret (`{username, password, host, port, dbname}`); `{}` without one.
 * @param secretArn the secret's ARN, when there is one (named in errors).
 * @throws {SecretError} for a secret without a password.
 */
export function createPgPool(
  env: EnvRecord,
  secret: Readonly<Record<string, unknown>>,
  secretArn?: string,
): pg.Pool {
  const base = pgVectorConfigFromEnv(env);
  const password = text(secret.password) ?? base.password;
  // Without this, pg fails deep in the SASL handshake ("client password must be a string").
  if (secretArn !== undefined && password === undefined) {
    throw new SecretError(`secret ${secretArn} has no password`);
  }
  const sslMode = env.PGVECTOR_SSLMODE ?? 'require';
  return new pg.Pool({
    host: env.PGVECTOR_HOST ? base.host : (text(secret.host) ?? base.host),
    port: env.PGVECTOR_PORT ? base.port : Number(secret.port ?? base.port),
    database: env.PGVECTOR_DB ? base.database : (text(secret.dbname) ?? base.database),
    user: text(secret.username) ?? base.user,
    ...(password !== undefined && { password }),
    // One Lambda container serves one request at a time: a small pool keeps RDS connections bounded.
    max: 2,
    connectionTimeoutMillis: 10_000,
    keepAlive: true,
    ...(sslMode !== 'disable' && { ssl: { rejectUnauthorized: sslMode === 'verify-full' } }),
  });
}

/** A SqlClient over {@link createPgPool}'s pool, which it owns (closing the client ends the pool). */
export function openPgSqlClient(
  env: EnvRecord,
  secret: Readonly<Record<string, unknown>>,
  secretArn?: string,
): SqlClient {
  return fromPgPool(createPgPool(env, secret, secretArn), { ownsPool: true });
}

/** Opens a collection on the shared client (which the store does not own). */
export function openPgVectorStore(options: {
  client: SqlClient;
  embedder: Embedder;
  collectionName: string;
  createIfMissing: boolean;
}): Promise<VectorStore> {
  return PgVectorStore.create(options);
}
