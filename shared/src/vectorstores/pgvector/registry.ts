/**
 * Opening a pgvector collection: the registry row (inserted, read, row-locked), the compatibility check against the
 * store's embedder and distance, the schema migration of a writer (under an advisory lock and a lock timeout), and
 * what the server offers (pgvector version, PGlite or not, binary COPY, write privileges, an existing ANN index).
 */
import type { Embedder } from '../../embeddings/types.js';
import { NotFoundError } from '../../errors.js';
import { ANALYZER_VERSION } from '../../text/analyzer.js';
import { EmbeddingModelMismatchError, VectorStoreError } from '../errors.js';
import type { SqlClient } from '../sql-client.js';
import type { DistanceMetric } from '../types.js';
import { type AnnState, readAnnState } from './ann-index.js';
import type { CollectionTables } from './names.js';
import {
  createCollectionTables,
  createRegistry,
  missingSchema,
  packSchema,
  REGISTRY_TABLE,
  SCHEMA_LOCK_TIMEOUT_MS,
  writerOnlySchema,
} from './schema.js';

/** A collection's registry row (`n`, `total`: the folded chunk count and token total). */
export interface RegistryRow {
  dimension: number;
  distance: string;
  embedding_model: string;
  analyzer_version: string;
  bm25_k1: number;
  bm25_b: number;
  bm25_avgdl_weighted: number | null;
  n: number;
  total: number;
  df_pending: boolean;
}

/** Reads (and, inside a transaction, row-locks across processes) the registry row of collection `t`. */
export async function lockRegistry(
  tx: SqlClient,
  t: CollectionTables,
  collectionName: string,
  lock = true,
): Promise<RegistryRow> {
  const res = await tx.query<RegistryRow>(
    `SELECT dimension, distance, embedding_model, analyzer_version, bm25_k1, bm25_b, bm25_avgdl_weighted,
              chunk_count::float8 AS n, token_total::float8 AS total, df_pending
       FROM ${REGISTRY_TABLE} WHERE name = $1${lock ? ' FOR UPDATE' : ''}`,
    [t.key],
  );
  const row = res.rows[0];
  if (row === undefined) {
    throw new VectorStoreError(`collection ${collectionName} is missing from ${REGISTRY_TABLE}`);
  }
  return row;
}

/** What opening a collection needs. */
export interface OpenCollectionOptions {
  client: SqlClient;
  t: CollectionTables;
  collectionName: string;
  embedder: Embedder;
  distance: DistanceMetric;
  k1: number;
  b: number;
  /** Create the collection, or migrate its schema, when needed (false: a reader, which runs no DDL). */
  createIfMissing: boolean;
  logger: (message: string) => void;
}

/** What opening found out. */
export interface OpenedCollection {
  /** The registry row (the analyzer it was indexed with among it). */
  reg: RegistryRow;
  /** pgvector has iterative index scans (0.8+). */
  iterativeScan: boolean;
  /** A reader without write privileges. */
  readOnly: boolean;
  /** The HNSW indexes as the catalogue listed them. */
  ann: AnnState;
  pglite: boolean;
  useCopy: boolean;
  /** The packed postings exist (a reader of a collection not yet migrated reads every list from the b-tree). */
  packed: boolean;
}

/**
 * Opens (creating or migrating when allowed) a collection and checks it matches the embedder and distance.
 * @throws {NotFoundError} when a reader names a collection that does not exist.
 * @throws {VectorStoreError} for an incompatible collection, a missing extension or an out-of-date schema (reader).
 */
export async function openCollection(o: OpenCollectionOptions): Promise<OpenedCollection> {
  const c = o.client;
  if (!o.createIfMissing) {
    const exists = await c.query<{ t: string | null }>('SELECT to_regclass($1) AS t', [
      REGISTRY_TABLE,
    ]);
    const row =
      exists.rows[0]?.t == null
        ? undefined
        : (
            await c.query<{ name: string }>(`SELECT name FROM ${REGISTRY_TABLE} WHERE name = $1`, [
              o.t.key,
            ])
          ).rows[0];
    if (row === undefined) {
      throw new NotFoundError(
        `collection ${o.collectionName} does not exist (ingest documents into it first)`,
      );
    }
  }
  const ext = await c.query<{ extversion: string }>(
    `SELECT extversion FROM pg_extension WHERE extname = 'vector'`,
  );
  let version = ext.rows[0]?.extversion;
  if (version === undefined) {
    if (!o.createIfMissing) {
      throw new VectorStoreError(
        'the pgvector extension is not installed (the deployment creates it; locally, any writer does)',
      );
    }
    try {
      await c.query('CREATE EXTENSION IF NOT EXISTS vector');
    } catch (error: unknown) {
      throw new VectorStoreError('the pgvector extension is not installed and cannot be created', {
        cause: error,
      });
    }
    const again = await c.query<{ extversion: string }>(
      `SELECT extversion FROM pg_extension WHERE extname = 'vector'`,
    );
    version = again.rows[0]?.extversion ?? '0';
  }
  const [major = 0, minor = 0] = version.split('.').map((p) => Number.parseInt(p, 10));
  const iterativeScan = major > 0 || minor >= 8;

  // Schema changes only where something is missing (one catalogue read otherwise), and never by a reader:
  // DDL takes ACCESS EXCLUSIVE locks that would queue every search behind it.
  const missing = await missingSchema(c, o.t);
  if (
    missing.length > 0 &&
    (o.createIfMissing || !missing.every((m) => writerOnlySchema(m, o.t)))
  ) {
    if (!o.createIfMissing) {
      throw new VectorStoreError(
        `collection ${o.collectionName} needs a schema migration (missing ${missing.join(', ')}): ` +
          're-run an ingestion into it (unchanged documents are skipped) as a user allowed to change the schema (ai4rag_writer)',
      );
    }
    await c.transaction(async (tx) => {
      // Fail fast rather than queue behind (and in front of) running queries; the caller retries.
      await tx.query(`SET LOCAL lock_timeout = ${SCHEMA_LOCK_TIMEOUT_MS}`);
      // One schema change at a time across processes (concurrent CREATE TABLE IF NOT EXISTS races).
      await tx.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [
        `${REGISTRY_TABLE}:schema`,
      ]);
      await createRegistry(tx);
      // Checked before the tables are created, so a mismatching collection gets no table of the wrong dimension.
      checkCompatible(o, await registerCollection(tx, o));
      await createCollectionTables(tx, o.t, o.embedder.dimension, (m) =>
        o.logger(`collection ${o.collectionName}: ${m}`),
      );
    });
  }
  const reg = o.createIfMissing
    ? await c.transaction((tx) => registerCollection(tx, o))
    : await lockRegistry(c, o.t, o.collectionName, false);
  checkCompatible(o, reg);
  const readOnly = !o.createIfMissing && !(await canWrite(c, o.t));
  const ann: AnnState = {
    valid: false,
    legacy: false,
    segments: [],
    checkedAt: 0,
    warnedExactScan: false,
  };
  await readAnnState(c, o.t, ann);
  const serverVersion = await c.query<{ v: string }>('SELECT version() AS v');
  const pglite = c.dialect === 'pglite' || String(serverVersion.rows[0]?.v).includes('PGlite');
  let useCopy = false;
  if (c.copyFrom !== undefined) {
    useCopy = c.dialect === 'pglite' || !String(serverVersion.rows[0]?.v).includes('PGlite');
  }
  // A writer migrated whatever was missing above; a reader opened what it found.
  const packed = o.createIfMissing || !missing.some((m) => packSchema(m, o.t));
  return { reg, iterativeScan, readOnly, ann, pglite, useCopy, packed };
}

/** Whether this session may write the collection (a read-only role may not: it then never folds statistics). */
async function canWrite(client: SqlClient, t: CollectionTables): Promise<boolean> {
  const res = await client.query<{ ok: boolean }>(
    `SELECT has_table_privilege(to_regclass(quote_ident($1)), 'UPDATE')
          AND has_table_privilege(to_regclass(quote_ident($2)), 'INSERT')
          AND has_table_privilege(to_regclass(quote_ident($3)), 'DELETE') AS ok`,
    [REGISTRY_TABLE, t.table.slice(1, -1), t.dfLog.slice(1, -1)],
  );
  return res.rows[0]?.ok === true;
}

/** Inserts the collection's registry row when absent and returns it, row-locked (`tx` is a transaction). */
async function registerCollection(tx: SqlClient, o: OpenCollectionOptions): Promise<RegistryRow> {
  await tx.query(
    `INSERT INTO ${REGISTRY_TABLE} (name, dimension, distance, embedding_model, analyzer_version, bm25_k1, bm25_b)
       VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (name) DO NOTHING`,
    [o.t.key, o.embedder.dimension, o.distance, o.embedder.modelId, ANALYZER_VERSION, o.k1, o.b],
  );
  return lockRegistry(tx, o.t, o.collectionName);
}

/** Refuses to mix vectors: the registry row must match the store's dimension, distance and model. */
function checkCompatible(o: OpenCollectionOptions, row: RegistryRow): void {
  // The model first: a reader told which model the collection holds can reopen it with that one.
  if (row.embedding_model !== o.embedder.modelId) {
    throw new EmbeddingModelMismatchError(
      o.collectionName,
      row.embedding_model,
      o.embedder.modelId,
    );
  }
  if (row.dimension !== o.embedder.dimension) {
    throw new VectorStoreError(
      `collection ${o.collectionName} holds ${row.dimension}-dimensional vectors; the embedder produces ${o.embedder.dimension}`,
    );
  }
  if (row.distance !== o.distance) {
    throw new VectorStoreError(
      `collection ${o.collectionName} uses distance ${row.distance}, not ${o.distance}`,
    );
  }
}
