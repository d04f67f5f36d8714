// Once per run, before any test file: the PostgreSQL databases of the test workers (see test/support/pg.ts), and
// the bundled CLI rebuilt if a source changed since `npm ci` built it, so the tests that spawn `ai4rag` run the
// current code through the entry users run (bin/ai4rag.mjs; scripts/build-cli.ts).
import { ensureCli } from '../scripts/build-cli.js';
import { prepareWorkerDatabases } from './support/pg.js';

export default async function setup(): Promise<void> {
  await Promise.all([prepareWorkerDatabases(), ensureCli()]);
}
