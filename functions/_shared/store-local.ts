/**
 * The local runtime's store: PGlite (with pgvector) in process and {@link PgVectorStore} on it. Loaded through
 * `loadLocalStore` (`bundle.ts`), so no Lambda bundle carries PGlite.
 */
export { PgVectorStore } from '../../shared/src/vectorstores/pgvector/pgvector-store.js';
export { openPglite } from '../../shared/src/vectorstores/sql-client.js';
