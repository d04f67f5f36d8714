/**
 * Custom-resource handler (behind the CDK Provider framework) that enables pgvector on the RDS database at
 * deploy time, so no manual first-run step is needed. It connects through the RDS Proxy with the generated
 * master secret. Delete is a no-op: dropping the extension would drop every vector column.
 */
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import pg from 'pg';
import { Ai4ragError, ValidationError } from '../../shared/src/errors.js';

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
  };
}

/** What the Provider framework expects back. */
export interface DbInitResult {
  PhysicalResourceId: string;
  Data?: { extension: string; version: string };
}

/** A connected client able to run one query and close (a `pg.Client` fits). */
export interface SqlConnection {
  query(sql: string): Promise<{ rows: Record<string, unknown>[] }>;
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
    let credentials: { username?: unknown; password?: unknown };
    try {
      credentials = JSON.parse(await deps.readSecret(props.secretArn)) as typeof credentials;
    } catch (error) {
      throw new ValidationError('database secret is not readable JSON', { cause: error });
    }
    if (typeof credentials.username !== 'string' || typeof credentials.password !== 'string') {
      throw new ValidationError('database secret lacks username/password');
    }
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
    try {
      await connection.query(`CREATE EXTENSION IF NOT EXISTS ${extension}`);
      const { rows } = await connection.query(
        `SELECT extversion FROM pg_extension WHERE extname = '${extension}'`,
      );
      const version = String(rows[0]?.extversion ?? '');
      if (version === '') throw new DbInitError(`extension ${extension} is not installed`);
      return { PhysicalResourceId: physicalId, Data: { extension, version } };
    } catch (error) {
      if (error instanceof DbInitError) throw error;
      throw new DbInitError(`CREATE EXTENSION ${extension} failed`, { cause: error });
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
    // RDS Proxy presents an Amazon-issued certificate that Node's default CAs verify.
    const client = new pg.Client({ ...options, ssl: true, connectionTimeoutMillis: 10_000 });
    await client.connect();
    return client;
  },
});
