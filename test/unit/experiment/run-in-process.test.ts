import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildLeaderboard } from '../../../shared/src/experiment/leaderboard.js';
import { readEvents, readState } from '../../../shared/src/experiment/ledger.js';
import { renderReport } from '../../../shared/src/experiment/report.js';
import { runExperimentInProcess } from '../../../shared/src/experiment/run-in-process.js';
import type { ExperimentArtefacts } from '../../../shared/src/experiment/steps.js';
import type { LeaderboardEntry, PatternPayload } from '../../../shared/src/experiment/types.js';
import { getJson, putJson } from '../../../shared/src/ports/object-store.js';
import {
  createTestExperimentDeps,
  type TestExperimentDeps,
} from '../../support/experiment-deps.js';

const DOCS = fileURLToPath(new URL('../../../examples/docs', import.meta.url));

const BENCHMARK = [
  {
    question: 'How many paid leave days does a full-time employee get?',
    correct_answers: ['25 days'],
    // A gold key must name a document of the corpus (one that names none is a validation error).
    correct_answer_document_keys: ['people/leave-and-holidays.html'],
  },
  {
    question: 'What is the capital of Mongolia?',
    correct_answers: [],
    correct_answer_document_keys: [],
  },
];

describe('runExperimentInProcess', () => {
  let deps: TestExperimentDeps;
  let artefacts: ExperimentArtefacts;
  const patterns: PatternPayload[] = [];

  beforeAll(async () => {
    deps = await createTestExperimentDeps(DOCS);
    deps.onPattern = (p) => patterns.push(p);
    await putJson(deps.artifacts, 'experiments/inputs/benchmark.json', BENCHMARK);
    artefacts = await runExperimentInProcess({
      deps,
      input: {
        experimentId: 'exp-test',
        benchmarkKey: 'experiments/inputs/benchmark.json',
        maxEvals: 5,
        trialConcurrency: 2,
        searchSpace: { chunk_size: [512], chunk_overlap: [0, 128], number_of_chunks: [3, 5] },
      },
      embedBatch: deps.embedBatch,
      render: { report: renderReport, leaderboard: buildLeaderboard },
    });
  });
  afterAll(async () => {
    await deps?.close();
  });

  it('runs the budget of trials and writes the four artefacts', async () => {
    // Assess
    expect(artefacts.trials).toBe(5);
    expect(artefacts.failed).toBe(0);
    const leaderboard = await getJson<LeaderboardEntry[]>(deps.artifacts, artefacts.leaderboardKey);
    expect(leaderboard).toHaveLength(5);
    expect(leaderboard[0]?.pattern_name).toBe(artefacts.best?.pattern_name);
    const scores = leaderboard.map((e) => e.score);
    expect([...scores].sort((a, b) => b - a)).toEqual(scores);
    const pattern = await getJson<PatternPayload>(deps.artifacts, artefacts.patternKey as string);
    expect(pattern.settings.chunking.chunk_size).toBe(512);
    expect(pattern.max_combinations).toBeGreaterThanOrEqual(5);
    const evaluation = await getJson<unknown[]>(
      deps.artifacts,
      artefacts.evaluationResultsKey as string,
    );
    expect(evaluation).toHaveLength(2);
    const html = new TextDecoder().decode(await deps.artifacts.get(artefacts.reportKey));
    expect(html).toContain(artefacts.best?.pattern_name);
  });

  it('names patterns in evaluation order and streams each one', async () => {
    // Assess
    expect(patterns.map((p) => p.name).sort()).toEqual([
      'Pattern1',
      'Pattern2',
      'Pattern3',
      'Pattern4',
      'Pattern5',
    ]);
    const state = await readState(deps.artifacts, 'experiments/exp-test/');
    expect(state.trials.map((t) => t.iteration)).toEqual([0, 1, 2, 3, 4]);
    expect(state.finished).toBe(true);
  });

  it('builds each index once and reuses it (two chunking configurations)', async () => {
    // Assess
    const events = await readEvents(deps.artifacts, 'experiments/exp-test/');
    const building = events.filter((e) => e.message.includes('Building index'));
    const reusing = events.filter((e) => e.message.startsWith('Using index'));
    expect(building).toHaveLength(2);
    expect(reusing).toHaveLength(3);
    expect(events.at(-1)?.message).toBe('Experiment optimization process finished.');
  });

  it('resumes a finished experiment without re-running trials', async () => {
    // Act
    const again = await runExperimentInProcess({
      deps,
      input: { experimentId: 'exp-test', benchmarkKey: 'experiments/inputs/benchmark.json' },
      embedBatch: deps.embedBatch,
      render: { report: renderReport, leaderboard: buildLeaderboard },
    });

    // Assess
    expect(again.trials).toBe(5);
    expect(again.best).toEqual(artefacts.best);
  });

  it('resumes with a larger budget and runs only the new trials', async () => {
    // Act
    const more = await runExperimentInProcess({
      deps,
      input: {
        experimentId: 'exp-test',
        benchmarkKey: 'experiments/inputs/benchmark.json',
        maxEvals: 6,
      },
      embedBatch: deps.embedBatch,
      render: { report: renderReport, leaderboard: buildLeaderboard },
    });

    // Assess
    const state = await readState(deps.artifacts, 'experiments/exp-test/');
    expect(more.trials).toBe(6);
    expect(state.input.maxEvals).toBe(6);
    expect(state.trials.map((t) => t.pattern_name)).toEqual([
      'Pattern1',
      'Pattern2',
      'Pattern3',
      'Pattern4',
      'Pattern5',
      'Pattern6',
    ]);
  });

  it('re-runs the same input as a new experiment entirely from the result cache, same trials in the same order', async () => {
    // Act
    const again = await runExperimentInProcess({
      deps,
      input: {
        experimentId: 'exp-test-again',
        benchmarkKey: 'experiments/inputs/benchmark.json',
        maxEvals: 5,
        trialConcurrency: 2,
        searchSpace: { chunk_size: [512], chunk_overlap: [0, 128], number_of_chunks: [3, 5] },
      },
      embedBatch: deps.embedBatch,
      render: { report: renderReport, leaderboard: buildLeaderboard },
    });

    // Assess
    // The first five trials of exp-test (it was resumed to six above).
    const first = {
      trials: (await readState(deps.artifacts, 'experiments/exp-test/')).trials.slice(0, 5),
    };
    const second = await readState(deps.artifacts, 'experiments/exp-test-again/');
    expect(second.trials.map((t) => t.config)).toEqual(first.trials.map((t) => t.config));
    expect(second.trials.every((t) => t.cached === true)).toBe(true);
    expect(second.trials.map((t) => t.score)).toEqual(first.trials.map((t) => t.score));
    expect(again.best?.score).toBe(Math.max(...(first.trials.map((t) => t.score) as number[])));
  });

  it('answers the unanswerable question by saying it cannot answer', async () => {
    // Assess
    const evaluation = await getJson<{ question: string; answer: string }[]>(
      deps.artifacts,
      artefacts.evaluationResultsKey as string,
    );
    expect(evaluation[1]?.answer).toMatch(/cannot answer/);
  });
});

describe('runExperimentInProcess with an LLM judge', () => {
  it('adds answer_relevance per question and as an aggregate, and can optimize it', async () => {
    // Prepare
    const deps = await createTestExperimentDeps(DOCS);
    const local = deps.model;
    deps.model = async (id) =>
      id === 'judge-model'
        ? {
            modelId: 'judge-model',
            chat: async () => ({ content: "```json\n{'score': 4}\n```" }),
            async *chatStream() {
              yield '';
            },
          }
        : local(id);
    await putJson(deps.artifacts, 'experiments/inputs/benchmark.json', BENCHMARK);

    try {
      // Act
      const artefacts = await runExperimentInProcess({
        deps,
        input: {
          experimentId: 'exp-judge',
          benchmarkKey: 'experiments/inputs/benchmark.json',
          maxEvals: 1,
          judgeModel: 'judge-model',
          optimizationMetric: 'answer_relevance',
        },
        embedBatch: deps.embedBatch,
        render: { report: renderReport, leaderboard: buildLeaderboard },
      });

      // Assess
      const pattern = await getJson<PatternPayload>(deps.artifacts, artefacts.patternKey as string);
      const relevance = pattern.evaluation.metrics.find((m) => m.name === 'answer_relevance');
      expect(relevance).toMatchObject({
        evaluator: 'judge',
        model_id: 'judge-model',
        optimization_metric: true,
        scores: { mean: 0.75 },
      });
      expect(artefacts.best?.score).toBe(0.75);
      const evaluation = await getJson<{ metrics: { name: string; score: number | null }[] }[]>(
        deps.artifacts,
        artefacts.evaluationResultsKey as string,
      );
      expect(
        evaluation.map((q) => q.metrics.find((m) => m.name === 'answer_relevance')?.score),
      ).toEqual([0.75, 0.75]);
    } finally {
      await deps.close();
    }
  });
});

describe('runExperimentInProcess with known observations', () => {
  it('offsets pattern numbers by the known observations, never re-runs them, and spends no budget on them', async () => {
    // Prepare
    const deps = await createTestExperimentDeps(DOCS);
    await putJson(deps.artifacts, 'experiments/inputs/benchmark.json', BENCHMARK);
    const base = {
      foundation_model: 'local/extractive-v1',
      embedding_model: 'local/feature-hash-v1-384',
      chunking_method: 'recursive',
      chunk_size: 512,
      chunk_overlap: 0,
      retrieval_method: 'simple',
      window_size: 0,
      search_mode: 'vector',
      ranker_strategy: '',
      ranker_k: 0,
      ranker_alpha: 1,
    };

    try {
      // Act
      await runExperimentInProcess({
        deps,
        input: {
          experimentId: 'exp-known',
          benchmarkKey: 'experiments/inputs/benchmark.json',
          maxEvals: 2,
          optimizer: 'random',
          searchSpace: { chunk_size: [512], chunk_overlap: [0], number_of_chunks: [3, 5] },
          knownObservations: [
            { ...base, number_of_chunks: 3, score: 0.1 },
            { ...base, number_of_chunks: 5, score: 0.2 },
          ],
        },
        embedBatch: deps.embedBatch,
        render: { report: renderReport, leaderboard: buildLeaderboard },
      });

      // Assess
      const state = await readState(deps.artifacts, 'experiments/exp-known/');
      expect(state.trials.map((t) => t.pattern_name)).toEqual(['Pattern3', 'Pattern4']);
      expect(state.trials.map((t) => t.iteration)).toEqual([2, 3]);
      const known = (c: Record<string, unknown>) =>
        c.chunking_method === 'recursive' && c.search_mode === 'vector';
      expect(state.trials.some((t) => known(t.config))).toBe(false);
      expect(state.knownObservations).toHaveLength(2);
    } finally {
      await deps.close();
    }
  });
});
