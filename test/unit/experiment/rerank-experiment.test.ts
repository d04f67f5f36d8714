import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runLocalExperiment } from '../../../bin/cli/local-state-machine.js';
import { experimentDeps } from '../../../functions/_shared/experiment.js';
import { createLocalRuntime, type LocalRuntime } from '../../../functions/_shared/runtime.js';
import { ValidationError } from '../../../shared/src/errors.js';
import { ledgerKeys, readState, type TrialPlan } from '../../../shared/src/experiment/ledger.js';
import type { ExperimentArtefacts } from '../../../shared/src/experiment/steps.js';
import { prepareExperiment } from '../../../shared/src/experiment/steps.js';
import type { LeaderboardEntry, PatternPayload } from '../../../shared/src/experiment/types.js';
import { getJson, putJson } from '../../../shared/src/ports/object-store.js';
import { type FakeTei, startFakeTei } from '../../support/fake-tei-server.js';

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

/** One chunking, vector search, k 3: the grid is the reranker dimension alone. */
const SEARCH_SPACE = {
  chunking_method: ['recursive'],
  chunk_size: [512],
  chunk_overlap: [128],
  number_of_chunks: [3],
  search_mode: ['vector'],
  reranker: ['none', 'fake-bge'],
  rerank_candidates: [0, 10],
};

function inputFor(experimentId: string) {
  return {
    experimentId,
    benchmarkKey: `experiments/${experimentId}/input/benchmark.json`,
    maxEvals: 4,
    searchSpace: SEARCH_SPACE,
  };
}

describe('an experiment whose search space reranks, run through the local state machine', () => {
  let dir: string;
  let tei: FakeTei;
  let runtime: LocalRuntime;
  let artefacts: ExperimentArtefacts;
  let teiCallsAfterFirstRun = 0;
  let rerun: ExperimentArtefacts;

  beforeAll(async () => {
    tei = await startFakeTei();
    dir = await mkdtemp(join(tmpdir(), 'ai4rag-rerank-exp-'));
    runtime = createLocalRuntime({
      dataDir: dir,
      documentsDir: DOCS,
      inMemory: true,
      env: { AI4RAG_RERANK_BASE_URL: tei.baseURL },
    });
    for (const id of ['rerank-1', 'rerank-2']) {
      await putJson(runtime.objectStore, `experiments/${id}/input/benchmark.json`, BENCHMARK);
    }
    const first = await runLocalExperiment({ runtime, input: inputFor('rerank-1') });
    artefacts = (first.output as { artefacts: ExperimentArtefacts }).artefacts;
    teiCallsAfterFirstRun = tei.requests.length;
    const second = await runLocalExperiment({ runtime, input: inputFor('rerank-2') });
    rerun = (second.output as { artefacts: ExperimentArtefacts }).artefacts;
  }, 240_000);
  afterAll(async () => {
    await runtime?.close();
    await tei?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('evaluates both configurations, the reranked one through the TEI endpoint', async () => {
    // Prepare
    const state = await readState(runtime.objectStore, 'experiments/rerank-1/');

    // Assess
    expect(state.maxCombinations).toBe(2);
    expect(artefacts).toMatchObject({ trials: 2, failed: 0 });
    expect(state.trials.map((t) => [t.config.reranker, t.config.rerank_candidates])).toEqual(
      expect.arrayContaining([
        ['none', 0],
        ['fake-bge', 10],
      ]),
    );
    // One /rerank call per benchmark question of the reranked trial, 10 candidates each.
    expect(tei.requests.map((r) => [r.path, (r.body as { texts: string[] }).texts.length])).toEqual(
      [
        ['/rerank', 10],
        ['/rerank', 10],
      ],
    );
    const questions = tei.requests.map((r) => (r.body as { query: string }).query).sort();
    expect(questions).toEqual(BENCHMARK.map((q) => q.question).sort());
  });

  it('records the reranker in the pattern, the leaderboard and the report', async () => {
    // Prepare
    const keys = ledgerKeys('experiments/rerank-1/');
    const leaderboard = await getJson<LeaderboardEntry[]>(runtime.objectStore, keys.leaderboard);
    const report = new TextDecoder().decode(await runtime.objectStore.get(keys.report));

    // Act
    const rerankers = leaderboard.map((e) => e.pattern.settings.retrieval.reranker ?? 'none');

    // Assess
    expect(leaderboard).toHaveLength(2);
    expect(rerankers).toEqual(
      expect.arrayContaining(['none', { model_id: 'fake-bge', candidates: 10 }]),
    );
    const reranked = leaderboard.find((e) => e.pattern.settings.retrieval.reranker)
      ?.pattern as PatternPayload;
    expect(reranked.settings.retrieval).toEqual({
      method: 'simple',
      number_of_chunks: 3,
      search_mode: 'vector',
      reranker: { model_id: 'fake-bge', candidates: 10 },
    });
    expect(report).toContain('<th scope="col">Reranker</th>');
    expect(report).toContain('fake-bge (10 candidates)');
  });

  it('caches the two configurations apart: a second experiment answers both from the cache', async () => {
    // Prepare
    const first = await readState(runtime.objectStore, 'experiments/rerank-1/');
    const second = await readState(runtime.objectStore, 'experiments/rerank-2/');
    const plans = await Promise.all(
      first.trials.map((t) =>
        getJson<TrialPlan>(
          runtime.objectStore,
          ledgerKeys('experiments/rerank-1/').trial(t.trialId),
        ),
      ),
    );

    // Assess
    expect(new Set(plans.map((p) => p.cacheKey)).size).toBe(2);
    expect(new Set(plans.map((p) => p.collection)).size).toBe(1);
    const reranked = plans.find((p) => p.config.reranker === 'fake-bge');
    expect(reranked?.rag).toMatchObject({
      retrieval: { reranker: { model_id: 'fake-bge', candidates: 10 } },
    });
    expect(rerun).toMatchObject({ trials: 2, failed: 0 });
    expect(second.trials.map((t) => t.cached)).toEqual([true, true]);
    expect(tei.requests).toHaveLength(teiCallsAfterFirstRun);
    const scores = (s: typeof first) =>
      Object.fromEntries(s.trials.map((t) => [String(t.config.reranker), t.score]));
    expect(scores(second)).toEqual(scores(first));
  });
});

describe('an experiment that reranks without a reranker endpoint', () => {
  it('fails in prepare, before any trial, naming the missing endpoint', async () => {
    // Prepare
    const dir = await mkdtemp(join(tmpdir(), 'ai4rag-rerank-prep-'));
    const runtime = createLocalRuntime({ dataDir: dir, documentsDir: DOCS, inMemory: true });
    await putJson(runtime.objectStore, 'experiments/no-tei/input/benchmark.json', BENCHMARK);

    try {
      // Act
      const outcome = prepareExperiment(experimentDeps(runtime), inputFor('no-tei'));

      // Assess
      await expect(outcome).rejects.toThrow(ValidationError);
      await expect(outcome).rejects.toThrow(
        'the rerank model "fake-bge" needs an endpoint: set AI4RAG_RERANK_BASE_URL, or name one with "fake-bge@<endpoint>"',
      );
    } finally {
      await runtime.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
