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
    question: 'What is the capital of Mongolia?',
    correct_answers: [],
    correct_answer_document_keys: [],
  },
];

describe('the synthesized experiment state machine, run locally', () => {
  let dir: string;
  let runtime: LocalRuntime;
  let result: Awaited<ReturnType<typeof runLocalExperiment>>;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ai4rag-sfn-'));
    runtime = createLocalRuntime({ dataDir: dir, documentsDir: DOCS, inMemory: true });
    await putJson(runtime.objectStore, 'experiments/sfn-test/input/benchmark.json', BENCHMARK);
    result = await runLocalExperiment({
      runtime,
      input: {
        experimentId: 'sfn-test',
        benchmarkKey: 'experiments/sfn-test/input/benchmark.json',
        maxEvals: 4,
        // A remote model with no endpoint configured: its trials fail and are caught, never fatal.
        foundationModels: ['local/extractive-v1', 'remote-model-without-endpoint'],
        searchSpace: { chunk_size: [512], chunk_overlap: [128], number_of_chunks: [3] },
      },
      context: { trialConcurrency: 2 },
    });
  }, 240_000);
  afterAll(async () => {
    await runtime?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('runs every state of the definition: prepare, the propose/map/record loop, finalize', () => {
    // Assess
    const names = result.states.map((s) => s.name);
    for (const state of [
      'Prepare',
      'Propose',
      'RunTrials',
      'IndexTrial',
      'EmbedBatches',
      'EmbedBatch',
      'EvaluateTrial',
      'Record',
      'Finalize',
    ]) {
      expect(names).toContain(state);
    }
    const count = (name: string) => result.states.find((s) => s.name === name)?.count ?? 0;
    expect(count('Prepare')).toBe(1);
    expect(count('Finalize')).toBe(1);
    expect(count('Propose')).toBe(count('Record') + 1);
    expect(count('IndexTrial')).toBe(4);
  });

  it('records the failing trials with their error and still publishes a leaderboard', async () => {
    // Prepare
    const artefacts = (result.output as { artefacts: ExperimentArtefacts }).artefacts;
    const state = await readState(runtime.objectStore, 'experiments/sfn-test/');

    // Assess
    const failed = state.trials.filter((t) => t.status === 'failed');
    expect(state.trials).toHaveLength(4);
    expect(failed.length).toBeGreaterThan(0);
    expect(failed.every((t) => t.error?.includes('remote-model-without-endpoint'))).toBe(true);
    expect(artefacts.trials).toBe(4);
    expect(artefacts.failed).toBe(failed.length);
    const leaderboard = await getJson<LeaderboardEntry[]>(
      runtime.objectStore,
      ledgerKeys('experiments/sfn-test/').leaderboard,
    );
    expect(leaderboard).toHaveLength(4 - failed.length);
    expect(
      leaderboard.every((e) => e.pattern.settings.generation.model_id === 'local/extractive-v1'),
    ).toBe(true);
    expect(await runtime.objectStore.exists(artefacts.reportKey)).toBe(true);
  });
});
