import * as z from 'zod';
import { VectorStoreConfigError } from './errors.js';

/** Connection settings of a PostgreSQL + pgvector server (ai4rag's `PGVectorConfig`, same defaults). */
export const PgVectorConfigSchema = z.object({
  host: z.string().min(1).default('localhost'),
  port: z.number().int().min(1).max(65535).default(5432),
  database: z.string().min(1).default('postgres'),
  user: z.string().min(1).default('postgres'),
  password: z.string().optional(),
  poolMaxSize: z.number().int().min(1).max(1000).default(10),
});

/** Parsed PostgreSQL connection settings. */
export type PgVectorConfig = z.output<typeof PgVectorConfigSchema>;

/** Settings of the in-process PGlite backend: `dataDir` undefined means in-memory. */
export interface PgliteConfig {
  dataDir?: string;
  /**
   * The template a new database is unpacked from (`pglite-template.ts`): a file, or `false` for initdb.
   * @default pgliteTemplateSetting() (AI4RAG_PGLITE_TEMPLATE, else a file in the OS temp folder)
   */
  template?: string | false;
  /**
   * In memory, grow files geometrically (`pglite-memfs.ts`) instead of MEMFS's 1.125× and exact resizes. Off only
   * to measure the difference (`npm run bench -- --memfs`).
   * @default true
   */
  amortizedGrowth?: boolean;
}

/**
 * Parses and defaults a {@link PgVectorConfig}, turning zod issues into one readable message.
 * @throws {VectorStoreConfigError} listing each bad field.
 * @example parsePgVectorConfig({ host: 'db', port: 5433 })
 */
export function parsePgVectorConfig(input: unknown): PgVectorConfig {
  const parsed = PgVectorConfigSchema.safeParse(input);
  if (!parsed.success) {
    const detail = parsed.error.issues
      .map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`)
      .join('; ');
    throw new VectorStoreConfigError(`invalid pgvector config: ${detail}`, { cause: parsed.error });
  }
  return parsed.data;
}

/**
 * Builds a {@link PgVectorConfig} from `PGVECTOR_HOST/PORT/DB/USER/PASSWORD` (ai4rag's variable names). The map
 * is passed in (no `process.env` read here); empty values count as unset.
 * @throws {VectorStoreConfigError} e.g. `PGVECTOR_PORT must be an integer in 1..65535, got "abc"`.
 * @example pgVectorConfigFromEnv({ PGVECTOR_HOST: '127.0.0.1', PGVECTOR_PORT: '55432' })
 */
export function pgVectorConfigFromEnv(env: Record<string, string | undefined>): PgVectorConfig {
  const get = (key: string): string | undefined => {
    const v = env[key];
    return v === undefined || v === '' ? undefined : v;
  };
  const portText = get('PGVECTOR_PORT');
  let port: number | undefined;
  if (portText !== undefined) {
    port = /^\d{1,5}$/.test(portText.trim()) ? Number(portText.trim()) : Number.NaN;
    if (!Number.isInteger(port) || port < 1 || port > 65535) {
      throw new VectorStoreConfigError(
        `PGVECTOR_PORT must be an integer in 1..65535, got ${JSON.stringify(portText)}`,
      );
    }
  }
  const input: Record<string, unknown> = {};
  const host = get('PGVECTOR_HOST');
  const database = get('PGVECTOR_DB');
  const user = get('PGVECTOR_USER');
  const password = get('PGVECTOR_PASSWORD');
  if (host !== undefined) input.host = host;
  if (port !== undefined) input.port = port;
  if (database !== undefined) input.database = database;
  if (user !== undefined) input.user = user;
  if (password !== undefined) input.password = password;
  return parsePgVectorConfig(input);
}

/** The connection part of `pg`'s client or pool options for a {@link PgVectorConfig} (no password when unset). */
export function pgConnection(config: PgVectorConfig): {
  host: string;
  port: number;
  database: string;
  user: string;
  password?: string;
} {
  return {
    host: config.host,
    port: config.port,
    database: config.database,
    user: config.user,
    ...(config.password !== undefined && { password: config.password }),
  };
}
