import { join } from 'node:path';
import pg from 'pg';
import type { Embedder } from '../embeddings/types.js';
import { ValidationError } from '../errors.js';
import { pgConnection, pgVectorConfigFromEnv } from '../vectorstores/config.js';
import { milvusConfigFromEnv } from '../vectorstores/milvus/config.js';
import { PgVectorStore } from '../vectorstores/pgvector/pgvector-store.js';
import { fromPgPool, openPglite, type SqlClient } from '../vectorstores/sql-client.js';
import type { DistanceMetric, VectorStore } from '../vectorstores/types.js';

/** Store backends the CLI and local runtime can open. */
export type StoreKind = 'pglite' | 'pgvector' | 'milvus';
export const STORE_KINDS: readonly StoreKind[] = ['pglite', 'pgvector', 'milvus'];

export interface OpenStoreOptions {
  kind: StoreKind;
  embedder: Embedder;
  collectionName: string;
  /** pglite: the data directory root (the database lives in `<dataDir>/pglite`); undefined = in memory. */
  dataDir?: string | undefined;
  /** pgvector / milvus: environment record holding PGVECTOR_* or MILVUS_* settings. */
  env?: Readonly<Record<string, string | undefined>>;
  distance?: DistanceMetric;
  logger?: (message: string) => void;
  /** Create the collection when missing (false for readers: a missing collection is a NotFoundError). @default true */
  createIfMissing?: boolean;
  /** pglite / pgvector: postings read per query term by a keyword search (0: the exact scan). @default 1000 */
  keywordDepth?: number;
  /** pglite / pgvector: read long postings lists from their packs (false: from the b-tree, to compare). @default true */
  packedReads?: boolean;
}

/** Closes the client when the store cannot be opened (an open PGlite would keep the process alive). */
async function createOrClose(
  client: SqlClient,
  create: () => Promise<VectorStore>,
): Promise<VectorStore> {
  try {
    return await create();
  } catch (error) {
    await client.close();
    throw error;
  }
}

/**
 * Opens a vector store for the local runtime: PGlite in-process (embedded default), a PostgreSQL server with
 * pgvector configured by `PGVECTOR_HOST/PORT/DB/USER/PASSWORD`, or Milvus / Zilliz Cloud configured by
 * `MILVUS_URI`, `MILVUS_TOKEN`, `MILVUS_SERVER_CERT`. The returned store owns its connection.
 * @throws ValidationError for an unknown kind or invalid PGVECTOR_* settings
 */
export async function openStore(options: OpenStoreOptions): Promise<VectorStore> {
  const common = {
    embedder: options.embedder,
    collectionName: options.collectionName,
    ownsClient: true,
    ...(options.createIfMissing !== undefined && { createIfMissing: options.createIfMissing }),
    ...(options.distance && { distance: options.distance }),
    ...(options.logger && { logger: options.logger }),
  };
  const depth = {
    ...(options.keywordDepth !== undefined && { keywordDepth: options.keywordDepth }),
    ...(options.packedReads !== undefined && { packedReads: options.packedReads }),
  };
  switch (options.kind) {
    case 'pglite': {
      const client = await openPglite(
        options.dataDir === undefined ? {} : { dataDir: join(options.dataDir, 'pglite') },
      );
      return createOrClose(client, () => PgVectorStore.create({ client, ...common, ...depth }));
    }
    case 'pgvector': {
      const config = pgVectorConfigFromEnv(options.env ?? {});
      const pool = new pg.Pool({
        ...pgConnection(config),
        max: config.poolMaxSize,
        connectionTimeoutMillis: 10_000,
        keepAlive: true,
      });
      const client = fromPgPool(pool, { ownsPool: true });
      return createOrClose(client, () => PgVectorStore.create({ client, ...common, ...depth }));
    }
    case 'milvus': {
      // The store builds, owns and closes its client from the config (MILVUS_URI, MILVUS_TOKEN, MILVUS_SERVER_CERT).
      // Loaded only for Milvus: the SDK (gRPC, protobuf) takes ~0.4 s to load.
      const { MilvusVectorStore } = await import('../vectorstores/milvus/milvus-store.js');
      return MilvusVectorStore.create({
        config: milvusConfigFromEnv(options.env ?? {}),
        ...common,
      });
    }
    default:
      throw new ValidationError(
        `unknown store "${String(options.kind)}" (expected one of ${STORE_KINDS.join(', ')})`,
      );
  }
}
