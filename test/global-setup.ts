// Once per run, before any test file: the PostgreSQL databases of the test workers (see test/support/pg.ts).
import { prepareWorkerDatabases } from './support/pg.js';

export default async function setup(): Promise<void> {
  await prepareWorkerDatabases();
}
