/**
 * The local runtime's stores: PGlite (with pgvector) in process and {@link PgVectorStore} on it, or a PostgreSQL
 * server / Milvus through the CLI's opener (`ai4rag serve --store pgvector|milvus`). Loaded through
 * `loadLocalStore` (`bundle.ts`), so no Lambda bundle carries PGlite.
 */

export { openStore as openServerStore } from '../../shared/src/runtime/open-store.js';
export { PgVectorStore } from '../../shared/src/vectorstores/pgvector/pgvector-store.js';
export { openPglite } from '../../shared/src/vectorstores/sql-client.js';
