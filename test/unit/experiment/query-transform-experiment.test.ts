import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runLocalExperiment } from '../../../bin/cli/local-state-machine.js';
import { createLocalRuntime, type LocalRuntime } from '../../../functions/_shared/runtime.js';
import { ledgerKeys, readState } from '../../../shared/src/experiment/ledger.js';
import type { ExperimentArtefacts } from '../../../shared/src/experiment/steps.js';
import type { LeaderboardEntry } from '../../../shared/src/experiment/types.js';
import { getJson, putJson } from '../../../shared/src/ports/object-store.js';

const DOCS = fileURLToPath(new URL('../../../examples/docs', import.meta.url));

const BENCHMARK = [
  {
    question: 'Which river does the cooperative operate on?',
    correct_answers: ['the Halvorsen river'],
    correct_answer_document_keys: ['about/company-overview.md'],
  },
  {
    question: 'How many days of annual leave do employees get?',
    correct_answers: ['25 days'],
    correct_answer_document_keys: ['people/leave-and-holidays.html'],
  },
];

/**
 * One chunking, hybrid rrf search, k 3, the local extractive model: rule 11 drops hyde (no chat model), so the
 * grid is none and rm3.
 */
const SEARCH_SPACE = {
  chunking_method: ['recursive'],
  chunk_size: [512],
  chunk_overlap: [128],
  number_of_chunks: [3],
  search_mode: ['hybrid'],
  ranker_strategy: ['rrf'],
  ranker_k: [60],
  ranker_alpha: [1],
  query_transform: ['none', 'hyde', 'rm3'],
};

describe('an experiment with query_transform in its search space, run through the local state machine', () => {
  let dir: string;
  let runtime: LocalRuntime;
  let artefacts: ExperimentArtefacts;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ai4rag-qt-exp-'));
    runtime = createLocalRuntime({ dataDir: dir, documentsDir: DOCS, inMemory: true });
    await putJson(runtime.objectStore, 'experiments/qt-1/input/benchmark.json', BENCHMARK);
    const out = await runLocalExperiment({
      runtime,
      input: {
        experimentId: 'qt-1',
        benchmarkKey: 'experiments/qt-1/input/benchmark.json',
        maxEvals: 3,
        searchSpace: SEARCH_SPACE,
      },
    });
    artefacts = (out.output as { artefacts: ExperimentArtefacts }).artefacts;
  }, 240_000);
  afterAll(async () => {
    await runtime?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('evaluates none and rm3 (hyde is ruled out without a chat model) on one index', async () => {
    // Prepare
    const state = await readState(runtime.objectStore, 'experiments/qt-1/');
    // Assess
    expect(state.maxCombinations).toBe(2);
    expect(artefacts).toMatchObject({ trials: 2, failed: 0 });
    expect(state.trials.map((t) => t.config.query_transform).sort()).toEqual(['none', 'rm3']);
  });

  it('lists the transform in the patterns, the leaderboard and the report', async () => {
    // Prepare
    const keys = ledgerKeys('experiments/qt-1/');
    const leaderboard = await getJson<LeaderboardEntry[]>(runtime.objectStore, keys.leaderboard);
    const report = new TextDecoder().decode(await runtime.objectStore.get(keys.report));
    // Act
    const transforms = leaderboard.map((e) => e.pattern.settings.retrieval.query_transform);
    // Assess: none keeps the pattern as before (no key); rm3 serves with it
    expect(transforms.sort()).toEqual(['rm3', undefined]);
    const rm3 = leaderboard.find((e) => e.pattern.settings.retrieval.query_transform === 'rm3');
    expect(rm3?.pattern.settings.retrieval).toEqual({
      method: 'simple',
      number_of_chunks: 3,
      search_mode: 'hybrid',
      ranker_strategy: 'rrf',
      ranker_k: 60,
      query_transform: 'rm3',
    });
    expect(report).toContain('<th scope="col">Query transform</th>');
    expect(report).toContain('query_transform');
  });
});
