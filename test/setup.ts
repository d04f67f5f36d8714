// Test-wide setup: keep tests offline and quiet, and on a PostgreSQL server give each test worker its own
// database (made by test/global-setup.ts; `prepareWorkerDatabases` in test/support/pg.ts says why).
process.env.AI4RAG_LOG_LEVEL ??= 'silent';
const workerDb = process.env.AI4RAG_TEST_WORKER_DB;
const slot = process.env.VITEST_POOL_ID;
if (workerDb && slot && Number(slot) <= Number(process.env.AI4RAG_TEST_WORKER_DBS ?? 0)) {
  process.env.PGVECTOR_DB = `${workerDb}_w${slot}`;
}
