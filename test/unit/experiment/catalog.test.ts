import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from '../../../bin/cli/args.js';
import { cmdExperiment, EXPERIMENT_OPTIONS } from '../../../bin/cli/experiment.js';
import { runExperimentsCommand } from '../../../bin/cli/experiments-cmd.js';
import { createLocalRuntime } from '../../../functions/_shared/runtime.js';
import { NotFoundError, ValidationError } from '../../../shared/src/errors.js';
import {
  type ExperimentSummary,
  listCollections,
  listExperiments,
  type RemovalReport,
  readExperiment,
  readPattern,
  readPatternEvaluation,
} from '../../../shared/src/experiment/catalog.js';
import { FsObjectStore } from '../../../shared/src/ports/object-store.js';

const DOCS = fileURLToPath(new URL('../../../examples/docs', import.meta.url));
const BENCHMARK = [
  {
    question: 'When was the cooperative founded?',
    correct_answers: ['14 March 1987'],
    correct_answer_document_keys: ['about/company-overview.md'],
  },
  {
    question: 'Who currently chairs the Board?',
    correct_answers: ['Tomas Eklund'],
    correct_answer_document_keys: ['about/company-overview.md'],
  },
];
/** One index (chunk size 512), two retrieval settings: cat-a and cat-b share it. */
const SHARED_SPACE = {
  chunk_size: [512],
  chunk_overlap: [128],
  number_of_chunks: [3, 5],
  search_mode: ['hybrid'],
};
/** Another index (chunk size 1024): cat-c's own (its two trials differ in fusion). */
const OWN_SPACE = {
  chunk_size: [1024],
  chunk_overlap: [128],
  number_of_chunks: [3],
  search_mode: ['hybrid'],
};

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { out, err, io: { out: (l: string) => out.push(l), err: (l: string) => err.push(l) } };
}

describe('the experiment catalog and ai4rag experiments list|remove', () => {
  let dir = '';
  let store: FsObjectStore;

  async function runExperiment(id: string, space: object): Promise<void> {
    const spaceFile = join(dir, `${id}-space.json`);
    await writeFile(spaceFile, JSON.stringify(space));
    const c = capture();
    const code = await cmdExperiment(
      parse(
        [
          '--docs',
          DOCS,
          '--benchmark',
          join(dir, 'benchmark.json'),
          '--search-space',
          spaceFile,
          '--max-evals',
          '2',
          '--experiment-id',
          id,
          '--data-dir',
          dir,
          '--quiet',
        ],
        EXPERIMENT_OPTIONS,
      ),
      c.io,
    );
    expect(code, c.err.join('\n')).toBe(0);
  }

  async function collectionExists(name: string, model: string): Promise<boolean> {
    const runtime = createLocalRuntime({ dataDir: dir });
    try {
      await runtime.openStore(name, await runtime.embedder(model), { createIfMissing: false });
      return true;
    } catch (error) {
      if (error instanceof NotFoundError) return false;
      throw error;
    } finally {
      await runtime.close();
    }
  }

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ai4rag-catalog-'));
    await writeFile(join(dir, 'benchmark.json'), JSON.stringify(BENCHMARK));
    await runExperiment('cat-a', SHARED_SPACE);
    await runExperiment('cat-b', SHARED_SPACE);
    await runExperiment('cat-c', OWN_SPACE);
    store = new FsObjectStore(join(dir, 'artifacts'));
  }, 240_000);

  afterAll(async () => {
    if (dir !== '') await rm(dir, { recursive: true, force: true });
  });

  it('lists every experiment with its trials, best pattern and indexes', async () => {
    // Act
    const listed = await listExperiments(store);

    // Assess
    expect(listed.map((s) => s.experiment_id).sort()).toEqual(['cat-a', 'cat-b', 'cat-c']);
    for (const s of listed) {
      expect(s.status).toBe('finished');
      expect(s.max_evals).toBe(2);
      expect(s.trials.done).toBe(2);
      expect(s.trials.failed).toBe(0);
      expect(s.questions).toBe(2);
      expect(s.documents).toBe(17);
      expect(s.collections).toHaveLength(1);
      expect(s.best?.pattern_name).toMatch(/^Pattern[12]$/);
    }
    const byId = new Map(listed.map((s) => [s.experiment_id, s]));
    // cat-b ran the same configurations on the same documents and benchmark: answered from the result cache.
    expect(byId.get('cat-b')?.trials.cached).toBe(2);
    expect(byId.get('cat-a')?.trials.cached).toBe(0);
    expect(byId.get('cat-a')?.collections).toEqual(byId.get('cat-b')?.collections);
    expect(byId.get('cat-c')?.collections).not.toEqual(byId.get('cat-a')?.collections);
    const created = listed.map((s) => s.created_at);
    expect(created).toEqual([...created].sort().reverse());
  });

  it('reads one experiment: trials, leaderboard, events, patterns and their per-question results', async () => {
    // Act
    const detail = await readExperiment(store, 'cat-c');
    const best = detail.leaderboard?.[0];
    const pattern = await readPattern(store, 'cat-c', best?.pattern_name ?? '');
    const records = await readPatternEvaluation(store, 'cat-c', best?.pattern_name ?? '');

    // Assess
    expect(detail.trials_list.map((t) => t.status)).toEqual(['done', 'done']);
    expect(detail.trials_list.map((t) => t.config.chunk_size)).toEqual([1024, 1024]);
    expect(detail.trials_list.map((t) => t.collection)).toEqual([
      detail.collections[0],
      detail.collections[0],
    ]);
    expect(detail.leaderboard?.map((e) => e.rank)).toEqual([1, 2]);
    expect(detail.events.some((e) => e.message.includes('Building index'))).toBe(true);
    expect(pattern.settings.vector_store_binding.collection_name).toBe(detail.collections[0]);
    expect(records.map((r) => r.question)).toEqual(BENCHMARK.map((q) => q.question));
  });

  it.each([
    ['an id that is no experiment', 'nope', NotFoundError],
    ['an id with a path in it', '../cat-a', ValidationError],
  ])('refuses %s', async (_case, id, type) => {
    // Act & Assess
    await expect(readExperiment(store, id)).rejects.toBeInstanceOf(type);
  });

  it('refuses a pattern the experiment does not have', async () => {
    // Act & Assess
    await expect(readPattern(store, 'cat-c', 'Pattern9')).rejects.toThrow(
      'experiment "cat-c" has no Pattern9',
    );
  });

  it('lists the knowledge-base collection and the experiment indexes with their users', async () => {
    // Act
    const collections = await listCollections(store, 'ai4rag_served');
    const shared = (await readExperiment(store, 'cat-a')).collections[0];

    // Assess
    expect(collections[0]).toEqual({
      name: 'ai4rag_served',
      kind: 'knowledge_base',
      experiments: [],
    });
    const index = collections.find((c) => c.name === shared);
    expect(index?.kind).toBe('experiment_index');
    expect(index?.experiments).toEqual(['cat-a', 'cat-b']);
    expect(index?.embedding_model).toBe('local/feature-hash-v1-384');
    expect(index?.chunks).toBeGreaterThan(0);
  });

  it('prints the list as a table, and as JSON with --json', async () => {
    // Prepare
    const table = capture();
    const json = capture();

    // Act
    const tableCode = await runExperimentsCommand(['list', '--data-dir', dir], table.io);
    const jsonCode = await runExperimentsCommand(['list', '--json', '--data-dir', dir], json.io);

    // Assess
    expect(tableCode).toBe(0);
    expect(table.out[0]).toMatch(/^ID\s+CREATED\s+STATUS\s+TRIALS\s+BEST\s+INDEXES$/);
    expect(table.out.slice(1).map((l) => l.split(/\s+/)[0])).toEqual(
      (await listExperiments(store)).map((s) => s.experiment_id),
    );
    expect(table.out[1]).toMatch(/ finished {2}2\/2 {5}Pattern\d 0\.\d{4} overall_score {2}1$/);
    expect(jsonCode).toBe(0);
    const parsed = JSON.parse(json.out[0] ?? '') as ExperimentSummary[];
    expect(parsed).toEqual(await listExperiments(store));
  });

  it.each([
    [['remove', 'cat-a', 'no-such-exp', '--yes'], 'no experiment "no-such-exp" in'],
    [['remove', '--yes'], 'give the id of at least one experiment to remove'],
    [['remove', 'bad/id', '--yes'], 'experiment id "bad/id" is not valid'],
    [['remove', 'cat-a'], 'removing cat-a needs --yes when stdin is not a terminal'],
    [['prune'], 'unknown sub-command "prune" (use list or remove)'],
    [['list', 'extra'], 'list takes no arguments; got "extra"'],
  ])('exits 2 and removes nothing for %j', async (argv, message) => {
    // Prepare
    const c = capture();

    // Act
    const code = await runExperimentsCommand([...argv, '--data-dir', dir], c.io);

    // Assess
    expect(code).toBe(2);
    expect(c.err.join('\n')).toContain(message);
    expect((await listExperiments(store)).map((s) => s.experiment_id).sort()).toEqual([
      'cat-a',
      'cat-b',
      'cat-c',
    ]);
  });

  it('asks on a terminal and removes nothing when the answer is no', async () => {
    // Prepare
    const c = capture();
    const questions: string[] = [];

    // Act
    const code = await runExperimentsCommand(['remove', 'cat-a', '--data-dir', dir], {
      ...c.io,
      confirm: async (q) => {
        questions.push(q);
        return false;
      },
    });

    // Assess
    expect(code).toBe(1);
    expect(questions).toEqual(['Remove cat-a and the indexes only they use?']);
    expect(c.err).toEqual(['nothing removed']);
    expect((await listExperiments(store)).map((s) => s.experiment_id)).toContain('cat-a');
  });

  it('removes an experiment but keeps the index another experiment uses, then drops it with the last user', async () => {
    // Prepare
    const shared = (await readExperiment(store, 'cat-a')).collections[0] as string;
    const own = (await readExperiment(store, 'cat-c')).collections[0] as string;
    const model = 'local/feature-hash-v1-384';
    const cacheBefore = (await store.list('cache/results/')).length;
    const first = capture();
    const second = capture();

    // Act
    const firstCode = await runExperimentsCommand(
      ['remove', 'cat-a', '--yes', '--json', '--data-dir', dir],
      first.io,
    );
    const keptStill = await collectionExists(shared, model);
    const secondCode = await runExperimentsCommand(
      ['remove', 'cat-b', '--yes', '--data-dir', dir],
      second.io,
    );

    // Assess
    expect(firstCode).toBe(0);
    const [report] = JSON.parse(first.out[0] ?? '') as RemovalReport[];
    expect(report?.experiment_id).toBe('cat-a');
    expect(report?.collections_dropped).toEqual([]);
    expect(report?.collections_kept).toEqual([{ name: shared, used_by: ['cat-b'] }]);
    expect(report?.cache_entries_deleted).toBe(0);
    expect(report?.objects_deleted).toBeGreaterThan(5);
    expect(keptStill).toBe(true);
    expect(secondCode).toBe(0);
    expect(second.out[0]).toMatch(
      new RegExp(`^Removed cat-b: \\d+ objects, 1 index\\(es\\) dropped \\(${shared}\\)$`),
    );
    expect(second.out[1]).toBe('  2 cached result(s) bound to the dropped indexes removed');
    expect(await collectionExists(shared, model)).toBe(false);
    expect(await collectionExists(own, model)).toBe(true);
    expect(await store.exists(`indexes/${shared}.json`)).toBe(false);
    expect(await store.exists(`indexes/${own}.json`)).toBe(true);
    expect((await store.list('cache/results/')).length).toBe(cacheBefore - 2);
    expect(await store.list('experiments/cat-a/')).toEqual([]);
    expect(await store.list('experiments/cat-b/')).toEqual([]);
    expect((await listExperiments(store)).map((s) => s.experiment_id)).toEqual(['cat-c']);
  });
});
