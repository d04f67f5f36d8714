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
