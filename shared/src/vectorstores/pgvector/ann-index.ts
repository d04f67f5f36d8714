/**
 * The HNSW index of a pgvector collection: whether a valid one exists, noticing one another process built, and
 * building it (`CREATE INDEX CONCURRENTLY` on its own session on a server; a plain `CREATE INDEX` on PGlite).
 */
import type { SqlClient } from '../sql-client.js';
import type { CollectionTables } from './names.js';

/** Whether the HNSW index exists and is valid (a failed concurrent build leaves an invalid one). */
export async function annIndexValid(client: SqlClient, t: CollectionTables): Promise<boolean> {
  const res = await client.query<{ valid: boolean }>(
    `SELECT i.indisvalid AS valid FROM pg_index i WHERE i.indexrelid = to_regclass($1)`,
    [t.hnswIndex.slice(1, -1)],
  );
  return res.rows[0]?.valid === true;
}
