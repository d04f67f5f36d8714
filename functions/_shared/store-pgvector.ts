/**
 * The deployed functions' pgvector store: a small `pg.Pool` to the database (through the RDS Proxy) and
 * {@link PgVectorStore} on it. Loaded through `loadPgvectorOpener` (`bundle.ts`), so only the pgvector variant's
 * bundles carry pg.
 */
import pg from 'pg';
import type { Embedder } from '../../shared/src/embeddings/types.js';
import { PgVectorStore } from '../../shared/src/vectorstores/pgvector/pgvector-store.js';
import { fromPgPool, type SqlClient } from '../../shared/src/vectorstores/sql-client.js';
import type { VectorStore } from '../../shared/src/vectorstores/types.js';
import type { EnvRecord } from './env.js';
import { pgPoolConfig } from './pg-pool.js';
import { SecretError } from './secrets.js';

/**
 * The pool of the deployed functions, with {@link pgPoolConfig}'s options: PGVECTOR_HOST/PORT/DB win over the
 * database secret's host (the stack points them at the RDS Proxy); the user and password come from the secret,
 * else PGVECTOR_USER/PASSWORD; TLS verified against the RDS CA bundle unless PGVECTOR_SSLMODE opts out; with
 * `readSecret`, each new connection reads the password again (through the secret cache's TTL), so a rotated
 * password is picked up without a new container.
 * @param env the function's environment (`PGVECTOR_*`).
 * @param secret the parsed database secret (`{username, password, host, port, dbname}`); `{}` without one.
 * @param secretArn the secret's ARN, when there is one (named in errors).
 * @throws {SecretError} for a secret without a password.
 */
export function createPgPool(
  env: EnvRecord,
  secret: Readonly<Record<string, unknown>>,
  secretArn?: string,
  readSecret?: () => Promise<Readonly<Record<string, unknown>>>,
): pg.Pool {
  const config = pgPoolConfig(env, secret, readSecret === undefined ? {} : { readSecret });
  // Without this, pg fails deep in the SASL handshake ("client password must be a string").
  if (secretArn !== undefined && config.password === undefined) {
    throw new SecretError(`secret ${secretArn} has no password`);
  }
  return new pg.Pool(config);
}

/** A SqlClient over {@link createPgPool}'s pool, which it owns (closing the client ends the pool). */
export function openPgSqlClient(
  env: EnvRecord,
  secret: Readonly<Record<string, unknown>>,
  secretArn?: string,
  readSecret?: () => Promise<Readonly<Record<string, unknown>>>,
): SqlClient {
  return fromPgPool(createPgPool(env, secret, secretArn, readSecret), { ownsPool: true });
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
