/**
 * Custom-resource handler (behind the CDK Provider framework) that prepares the RDS database at deploy time, so
 * no manual first-run step is needed. It connects through the RDS Proxy with the generated master secret and:
 *
 * - enables pgvector (`CREATE EXTENSION IF NOT EXISTS vector`);
 * - when the roles are given, creates or updates the application roles, each with the password of its own
 *   Secrets Manager secret: a writer (owns the collection tables, may create tables in `public`) and a reader
 *   (`SELECT` on the writer's tables, present and future, through default privileges). Existing `ai4rag*`
 *   tables owned by the master user (stacks deployed before the roles existed) are handed to the writer.
 *
 * Passwords are sent as SCRAM-SHA-256 verifiers, so the clear text never reaches the server (nor its logs).
 * Every step is idempotent; an Update re-applies them (and so a changed role secret). Delete is a no-op:
 * dropping the extension would drop every vector column, dropping the roles would orphan their tables.
 */
import { createHash, createHmac, pbkdf2Sync, randomBytes } from 'node:crypto';
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import pg from 'pg';
import { Ai4ragError, ValidationError } from '../../shared/src/errors.js';
import { pgSslOptions } from '../_shared/pg-pool.js';

/** The extension could not be created (database unreachable, permission denied, …). */
export class DbInitError extends Ai4ragError {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'DbInitError';
  }
}

/** The subset of a CloudFormation custom-resource event the Provider framework passes on. */
export interface DbInitEvent {
  RequestType: 'Create' | 'Update' | 'Delete';
  PhysicalResourceId?: string;
  ResourceProperties: {
    host: string;
    port: string;
    database: string;
    secretArn: string;
    extension?: string;
    /** Role that owns the collection tables (ingestion, documents, experiments). */
    writerRole?: string;
    /** Secret (JSON with `password`) of {@link writerRole}. */
    writerSecretArn?: string;
    /** Role with SELECT only (the query functions). */
    readerRole?: string;
    /** Secret (JSON with `password`) of {@link readerRole}. */
    readerSecretArn?: string;
  };
}

/** What the Provider framework expects back. */
export interface DbInitResult {
  PhysicalResourceId: string;
  Data?: { extension: string; version: string; writerRole?: string; readerRole?: string };
}

/** A connected client able to run a query and close (a `pg.Client` fits). */
export interface SqlConnection {
  query(sql: string, params?: unknown[]): Promise<{ rows: Record<string, unknown>[] }>;
  end(): Promise<void>;
}

/** Injected I/O so the logic runs against PGlite in tests. */
export interface DbInitDeps {
  readSecret(secretArn: string): Promise<string>;
  connect(options: {
    host: string;
    port: number;
    database: string;
    user: string;
    password: string;
  }): Promise<SqlConnection>;
}

const EXTENSION_NAME = /^[a-z_][a-z0-9_]*$/;
/** Role names: lower-case identifiers (no quoting surprises), at most 63 bytes. */
const ROLE_NAME = /^[a-z_][a-z0-9_]{0,62}$/;
/** Iterations of the SCRAM verifier (PostgreSQL's `scram_iterations` default). */
const SCRAM_ITERATIONS = 4096;

/**
 * The SCRAM-SHA-256 verifier PostgreSQL stores for a password (RFC 5802/7677, as `psql \password` computes it):
 * `SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>`. ASCII passwords need no SASLprep, which is what
 * Secrets Manager generates here.
 * @example scramSha256Verifier('s3cret') // 'SCRAM-SHA-256$4096:…$…:…'
 */
export function scramSha256Verifier(
  password: string,
  salt: Buffer = randomBytes(16),
  iterations = SCRAM_ITERATIONS,
): string {
  const salted = pbkdf2Sync(password.normalize('NFKC'), salt, iterations, 32, 'sha256');
  const clientKey = createHmac('sha256', salted).update('Client Key').digest();
  const storedKey = createHash('sha256').update(clientKey).digest();
  const serverKey = createHmac('sha256', salted).update('Server Key').digest();
  return `SCRAM-SHA-256$${iterations}:${salt.toString('base64')}$${storedKey.toString('base64')}:${serverKey.toString('base64')}`;
}

interface RoleSpec {
  name: string;
  secretArn: string;
}

/** The role pair of the event, validated; undefined when the event names none (extension only). */
function rolesOf(
  props: DbInitEvent['ResourceProperties'],
): { writer: RoleSpec; reader: RoleSpec } | undefined {
  const given = [props.writerRole, props.writerSecretArn, props.readerRole, props.readerSecretArn];
  if (given.every((v) => v === undefined)) return undefined;
  const [writer, writerArn, reader, readerArn] = given;
  if (!writer || !writerArn || !reader || !readerArn) {
    throw new ValidationError(
      'writerRole, writerSecretArn, readerRole and readerSecretArn go together',
    );
  }
  for (const name of [writer, reader]) {
    if (!ROLE_NAME.test(name))
      throw new ValidationError(`invalid role name ${JSON.stringify(name)}`);
  }
  if (writer === reader) throw new ValidationError('the writer and reader roles must differ');
  return {
    writer: { name: writer, secretArn: writerArn },
    reader: { name: reader, secretArn: readerArn },
  };
}

/** Runs a statement built server-side with `format()` (identifiers %I, literals %L): DDL takes no bind parameters. */
async function runFormatted(c: SqlConnection, template: string, args: unknown[]): Promise<void> {
  const placeholders = args.map((_, i) => `$${i + 1}::text`).join(', ');
  const { rows } = await c.query(`SELECT format('${template}', ${placeholders}) AS sql`, args);
  await c.query(String(rows[0]?.sql));
}

/**
 * Creates or updates the writer and reader roles and their grants (see the module note). `database` is the
 * database the roles may connect to.
 */
async function applyRoles(
  c: SqlConnection,
  database: string,
  roles: { writer: RoleSpec & { password: string }; reader: RoleSpec & { password: string } },
): Promise<void> {
  for (const role of [roles.writer, roles.reader]) {
    const exists = await c.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [role.name]);
    await runFormatted(
      c,
      exists.rows.length > 0
        ? 'ALTER ROLE %I WITH LOGIN PASSWORD %L'
        : 'CREATE ROLE %I WITH LOGIN PASSWORD %L',
      [role.name, scramSha256Verifier(role.password)],
    );
    await runFormatted(c, 'GRANT CONNECT ON DATABASE %I TO %I', [database, role.name]);
  }
  const w = roles.writer.name;
  const r = roles.reader.name;
  // The master user must be a member of the writer to hand it tables and set its default privileges (RDS: the
  // master user is not a superuser; on PostgreSQL 16 creating a role gives only ADMIN OPTION on it).
  await runFormatted(c, 'GRANT %I TO CURRENT_USER', [w]);
  await runFormatted(c, 'GRANT USAGE, CREATE ON SCHEMA public TO %I', [w]);
  await runFormatted(c, 'GRANT USAGE ON SCHEMA public TO %I', [r]);
  await runFormatted(c, 'REVOKE CREATE ON SCHEMA public FROM %I', [r]);
  await runFormatted(
    c,
    'ALTER DEFAULT PRIVILEGES FOR ROLE %I IN SCHEMA public GRANT SELECT ON TABLES TO %I',
    [w, r],
  );
  await runFormatted(
    c,
    'ALTER DEFAULT PRIVILEGES FOR ROLE %I IN SCHEMA public GRANT SELECT ON SEQUENCES TO %I',
    [w, r],
  );
  const tables = await c.query(
    `SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename LIKE 'ai4rag%'
       AND tableowner IN (current_user, $1)`,
    [w],
  );
  for (const row of tables.rows) {
    const table = String(row.tablename);
    await runFormatted(c, 'ALTER TABLE public.%I OWNER TO %I', [table, w]);
    await runFormatted(c, 'GRANT SELECT ON public.%I TO %I', [table, r]);
  }
}

/**
 * Builds the handler around its I/O.
 *
 * @throws {ValidationError} when the properties or the secret are malformed.
 * @throws {DbInitError} when the extension cannot be created.
 * @example
 * export const handler = createDbInitHandler({ readSecret, connect });
 */
export function createDbInitHandler(
  deps: DbInitDeps,
): (event: DbInitEvent) => Promise<DbInitResult> {
  return async (event) => {
    const props = event.ResourceProperties;
    const extension = props.extension ?? 'vector';
    if (!EXTENSION_NAME.test(extension)) {
      throw new ValidationError(`invalid extension name ${JSON.stringify(extension)}`);
    }
    const physicalId = `ai4rag-extension-${extension}`;
    if (event.RequestType === 'Delete') {
      return { PhysicalResourceId: event.PhysicalResourceId ?? physicalId };
    }
    const roles = rolesOf(props);
    const readCredentials = async (arn: string, what: string) => {
      let credentials: { username?: unknown; password?: unknown };
      try {
        credentials = JSON.parse(await deps.readSecret(arn)) as typeof credentials;
      } catch (error) {
        throw new ValidationError(`${what} secret is not readable JSON`, { cause: error });
      }
      if (typeof credentials.username !== 'string' || typeof credentials.password !== 'string') {
        throw new ValidationError(`${what} secret lacks username/password`);
      }
      return { username: credentials.username, password: credentials.password };
    };
    const credentials = await readCredentials(props.secretArn, 'database');
    const rolePasswords =
      roles === undefined
        ? undefined
        : {
            writer: {
              ...roles.writer,
              password: (await readCredentials(roles.writer.secretArn, `${roles.writer.name}`))
                .password,
            },
            reader: {
              ...roles.reader,
              password: (await readCredentials(roles.reader.secretArn, `${roles.reader.name}`))
                .password,
            },
          };
    let connection: SqlConnection;
    try {
      connection = await deps.connect({
        host: props.host,
        port: Number(props.port),
        database: props.database,
        user: credentials.username,
        password: credentials.password,
      });
    } catch (error) {
      throw new DbInitError(`cannot connect to ${props.host}:${props.port}/${props.database}`, {
        cause: error,
      });
    }
    let step = `CREATE EXTENSION ${extension}`;
    try {
      try {
        await connection.query(`CREATE EXTENSION IF NOT EXISTS ${extension}`);
        const { rows } = await connection.query(
          'SELECT extversion FROM pg_extension WHERE extname = $1',
          [extension],
        );
        const version = String(rows[0]?.extversion ?? '');
        if (version === '') throw new DbInitError(`extension ${extension} is not installed`);
        if (rolePasswords !== undefined) {
          step = `creating roles ${rolePasswords.writer.name} and ${rolePasswords.reader.name}`;
          await connection.query('BEGIN');
          await applyRoles(connection, props.database, rolePasswords);
          await connection.query('COMMIT');
        }
        return {
          PhysicalResourceId: physicalId,
          Data: {
            extension,
            version,
            ...(rolePasswords !== undefined && {
              writerRole: rolePasswords.writer.name,
              readerRole: rolePasswords.reader.name,
            }),
          },
        };
      } catch (error) {
        await connection.query('ROLLBACK').catch(() => undefined);
        throw error;
      }
    } catch (error) {
      if (error instanceof DbInitError) throw error;
      // The cause carries the server's message; no statement text (it would hold a password verifier).
      throw new DbInitError(`${step} failed`, { cause: error });
    } finally {
      await connection.end();
    }
  };
}

const secrets = new SecretsManagerClient({});

/** Lambda entry: Secrets Manager for the credentials, `pg` over TLS to the RDS Proxy. */
export const handler = createDbInitHandler({
  async readSecret(secretArn) {
    const out = await secrets.send(new GetSecretValueCommand({ SecretId: secretArn }));
    if (out.SecretString === undefined) throw new ValidationError('database secret has no string');
    return out.SecretString;
  },
  async connect(options) {
    // Verified against the RDS / Amazon Trust CA bundle shipped in the bundle (RDS Proxy presents an ACM certificate).
    const client = new pg.Client({
      ...options,
      ssl: pgSslOptions('verify-full'),
      connectionTimeoutMillis: 10_000,
    });
    await client.connect();
    return client;
  },
});
