import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runLocalExperiment } from '../../../bin/cli/local-state-machine.js';
import { createLocalRuntime, type LocalRuntime } from '../../../functions/_shared/runtime.js';
import { ledgerKeys } from '../../../shared/src/experiment/ledger.js';
import type { ExperimentArtefacts } from '../../../shared/src/experiment/steps.js';
import type { EvaluationRecord, PatternPayload } from '../../../shared/src/experiment/types.js';
import { CANNOT_ANSWER } from '../../../shared/src/generation/local-extractive.js';
import { getJson, putJson } from '../../../shared/src/ports/object-store.js';

const CLAPNQ = resolve(import.meta.dirname, '../../../../shared/data/clapnq');
const present = existsSync(join(CLAPNQ, 'corpus.jsonl'));

function firstQuestions(file: string, n: number): unknown[] {
  return (JSON.parse(readFileSync(join(CLAPNQ, file), 'utf8')) as unknown[]).slice(0, n);
}

describe.skipIf(!present)('an experiment on ClapNQ dev through the local state machine', () => {
  let dir: string;
  let runtime: LocalRuntime;
  let artefacts: ExperimentArtefacts;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ai4rag-clapnq-'));
    runtime = createLocalRuntime({ dataDir: dir, documentsDir: CLAPNQ, inMemory: true });
    await putJson(runtime.objectStore, 'experiments/clapnq/input/benchmark.json', [
      ...firstQuestions('benchmark.dev.json', 15),
      ...firstQuestions('benchmark.unanswerable.dev.json', 15),
    ]);
    const result = await runLocalExperiment({
      runtime,
      input: {
        experimentId: 'clapnq',
        documentsPrefix: 'corpus.jsonl',
        benchmarkKey: 'experiments/clapnq/input/benchmark.json',
        maxEvals: 2,
        searchSpace: { chunk_size: [512], chunk_overlap: [128], number_of_chunks: [5] },
      },
    });
    artefacts = (result.output as { artefacts: ExperimentArtefacts }).artefacts;
  }, 600_000);
  afterAll(async () => {
    await runtime?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('indexes the 1,292 passages and scores every trial', async () => {
    // Prepare
    const pattern = await getJson<PatternPayload>(
      runtime.objectStore,
      artefacts.patternKey as string,
    );

    // Assess
    expect(artefacts.trials).toBe(2);
    expect(artefacts.failed).toBe(0);
    const metric = (name: string) =>
      pattern.evaluation.metrics.find((m) => m.name === name)?.scores.mean ?? Number.NaN;
    expect(metric('context_correctness')).toBeGreaterThan(0.8);
    expect(metric('overall_score')).toBeGreaterThan(0.4);
  });

  it('says it cannot answer most unanswerable questions, and answers most answerable ones', async () => {
    // Prepare
    const records = await getJson<EvaluationRecord[]>(
      runtime.objectStore,
      ledgerKeys('experiments/clapnq/').evaluationResults,
    );
    const abstained = (r: EvaluationRecord) => r.answer === CANNOT_ANSWER;
    const unanswerable = records.filter((r) => r.correct_answers.length === 0);
    const answerable = records.filter((r) => r.correct_answers.length > 0);

    // Assess
    expect(unanswerable).toHaveLength(15);
    expect(unanswerable.filter(abstained).length).toBeGreaterThanOrEqual(8);
    expect(answerable.filter(abstained).length).toBeLessThanOrEqual(4);
  });
});
