import { readdirSync, readFileSync } from 'node:fs';
import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The longest files (measured: 40–110 s each with 2 workers), started first so a fresh clone, which has no
 * duration cache for vitest to order by, does not end with one of them running alone.
 */
const LONGEST_FIRST = [
  'test/chaos/ingest-chaos.test.ts',
  'test/chaos/ingest-chaos-postgres.test.ts',
  'test/deployed/deployed-stack.test.ts',
  'test/unit/readme-examples.test.ts',
  'test/unit/cli/real-embeddings.test.ts',
  'test/unit/cli/real-model-recipes.test.ts',
];

class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (f: TestSpecification) => {
      const i = LONGEST_FIRST.findIndex((name) => f.moduleId.endsWith(name));
      return i < 0 ? LONGEST_FIRST.length : i;
    };
    return sorted
      .map((f, i) => ({ f, i }))
      .sort((a, b) => rank(a.f) - rank(b.f) || a.i - b.i)
      .map(({ f }) => f);
  }
}

/**
 * Files that need a process of their own: `process.chdir` (not available in a worker thread).
 */
const NEEDS_PROCESS = ['test/unit/readme-examples.test.ts'];

/**
 * Files that need a module graph of their own (a new thread per file):
 * - the chaos and deployed-stack files, long runs whose child processes, servers and module resets (local-cloud.ts
 *   gives each Lambda a graph of its own with `vi.resetModules`) should not share a thread with anything;
 * - files that set `process.env` before importing a module that reads it once at load (`shared/src/config.ts`), or
 *   reset the module registry.
 */
const NEEDS_OWN_GRAPH = (f: string) =>
  /^test\/(chaos|deployed)\//.test(f) ||
  ['test/unit/cli/cli-milvus.test.ts', 'test/unit/functions/failure-metrics.test.ts'].includes(f);

/**
 * Files that open PGlite (in process, through the CLI or the functions' test helpers) also get a thread of their own:
 * in a shared thread their tests ran 18 % slower (643 s → 759 s summed over the 65 such files, one full run each way).
 * So do files that reach module-level state: the CLI's and the functions' caches (`bin/`, `functions/`), the
 * experiment runner's and the synthesized definition's (`shared/src/experiment`, `lib/`), and the browser tests' server;
 * with a shared thread, two shuffled orders failed 4 such files.
 */
const NEEDS_OWN_THREAD =
  /pglite|runCli|helpers\.js|\/bin\/|\/functions\/|shared\/src\/experiment|\/lib\/|browser/i;

function testFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = `${dir}/${e.name}`;
    if (e.isDirectory()) return testFiles(path);
    return e.name.endsWith('.test.ts') ? [path] : [];
  });
}

/**
 * Every other file (the rest of `test/`: pure logic, mocked AWS clients, fake servers) runs in a shared thread (`isolate: false`): the
 * modules it imports are already loaded by the files before it. Measured on these files alone (76 then)
 * (`npx vitest run --project shared`, then with `--isolate`): 35.8 s shared against 66.0 s isolated, imports 5.1 s
 * against 17.4 s; three shuffled orders (`--sequence.shuffle --sequence.seed 7|99|1234`) passed. Their hooks restore
 * what they change (mocks, servers, temporary folders).
 */
const SHARES_A_THREAD = testFiles('test').filter(
  (f) =>
    !NEEDS_PROCESS.includes(f) &&
    !NEEDS_OWN_GRAPH(f) &&
    !NEEDS_OWN_THREAD.test(readFileSync(f, 'utf8')),
);

export default defineConfig({
  test: {
    setupFiles: ['test/setup.ts'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Two cores: PGlite instances are memory-heavy, keep parallelism modest.
    maxWorkers: 2,
    sequence: { sequencer: LongestFirst },
    coverage: { include: ['shared/src/**'], reporter: ['text-summary'] },
    projects: [
      {
        extends: true,
        test: {
          name: 'shared',
          include: SHARES_A_THREAD,
          pool: 'threads',
          isolate: false,
        },
      },
      {
        extends: true,
        test: {
          name: 'threads',
          include: ['test/**/*.test.ts'],
          exclude: [...NEEDS_PROCESS, ...SHARES_A_THREAD],
          pool: 'threads',
        },
      },
      { extends: true, test: { name: 'forks', include: NEEDS_PROCESS, pool: 'forks' } },
    ],
  },
});
