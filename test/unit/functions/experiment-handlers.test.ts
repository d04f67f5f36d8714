import { GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEmbedBatchHandler } from '../../../functions/embed-batch/handler.js';
import { createEvaluateHandler } from '../../../functions/evaluate/handler.js';
import { createExperimentFinalizeHandler } from '../../../functions/experiment-finalize/handler.js';
import { createExperimentIndexHandler } from '../../../functions/experiment-index/handler.js';
import { createExperimentPrepareHandler } from '../../../functions/experiment-prepare/handler.js';
import { createExperimentProposeHandler } from '../../../functions/experiment-propose/handler.js';
import { createExperimentRecordHandler } from '../../../functions/experiment-record/handler.js';
import { readState } from '../../../shared/src/experiment/ledger.js';
import { putJson } from '../../../shared/src/ports/object-store.js';
import {
  context,
  createTestRuntime,
  FAQ,
  getTestEvent,
  LEAVE_POLICY,
  s3Body,
  type TestRuntime,
} from './helpers.js';

const s3Mock = mockClient(S3Client);
const DOCS: Record<string, string> = { 'hr/leave.md': LEAVE_POLICY, 'hr/faq.txt': FAQ };

describe('the optimizer task handlers, fed Step Functions events', () => {
  let rt: TestRuntime;
  const call = async <T>(handler: unknown, event: unknown): Promise<T> =>
    (handler as (e: unknown, c: typeof context) => Promise<T>)(event, context);

  beforeAll(async () => {
    s3Mock.reset();
    s3Mock.on(ListObjectsV2Command).resolves({
      Contents: Object.keys(DOCS).map((Key) => ({ Key })),
      IsTruncated: false,
    });
    for (const [Key, text] of Object.entries(DOCS)) {
      s3Mock.on(GetObjectCommand, { Key }).resolves({ Body: s3Body(text) });
    }
    rt = createTestRuntime();
    await putJson(rt.objectStore, 'experiments/hr-1/input/benchmark.json', [
      {
        question: 'How many days of annual leave do employees get?',
        correct_answers: ['25 days'],
        correct_answer_document_keys: ['leave.md'],
      },
    ]);
  });
  afterAll(async () => {
    await rt?.close();
    s3Mock.restore();
  });

  it('runs prepare → propose → index → embed-batch → evaluate → record → finalize on the documents in S3', async () => {
    // Act
    const ref = await call<{ experimentId: string; prefix: string }>(
      createExperimentPrepareHandler(rt),
      getTestEvent('sfn-experiment-input'),
    );
    const proposal = await call<{ done: boolean; trials: { trialId: string }[] }>(
      createExperimentProposeHandler(rt),
      ref,
    );
    const trialId = proposal.trials[0]?.trialId as string;
    const index = await call<{ collection: string; batches: string[] }>(
      createExperimentIndexHandler(rt),
      { ...ref, trialId },
    );
    for (const batchKey of index.batches) {
      await call(createEmbedBatchHandler(rt), {
        ...ref,
        trialId,
        collection: index.collection,
        batchKey,
      });
    }
    const outcome = await call<{ ok: boolean; score: number }>(createEvaluateHandler(rt), {
      ...ref,
      trialId,
    });
    await call(createExperimentRecordHandler(rt), { ...ref, results: [outcome] });
    const state = await readState(rt.objectStore, 'experiments/hr-1/');

    // Assess
    expect(ref).toEqual({
      experimentId: 'hr-1',
      prefix: 'experiments/hr-1/',
      trialConcurrency: 2,
      maxEvals: 2,
    });
    expect(state.corpus.documents).toBe(2);
    expect(proposal.done).toBe(false);
    expect(index.batches).toHaveLength(1);
    expect(outcome.ok).toBe(true);
    expect(state.trials[0]).toMatchObject({ trialId, status: 'done', score: outcome.score });
  });

  it('records a failure caught by the Map state with the Lambda error message', async () => {
    // Prepare: round 1 proposed both trials (two indexes); the budget is now spent.
    await call(createExperimentProposeHandler(rt), {
      experimentId: 'hr-1',
      prefix: 'experiments/hr-1/',
    });
    const event = getTestEvent<{ results: unknown[] }>('sfn-record-input');

    // Act
    const recorded = await call<{ recorded: number; failed: number }>(
      createExperimentRecordHandler(rt),
      event,
    );
    const state = await readState(rt.objectStore, 'experiments/hr-1/');
    const artefacts = await call<{ artefacts?: unknown; best: { pattern_name: string } | null }>(
      createExperimentFinalizeHandler(rt),
      { experimentId: 'hr-1', prefix: 'experiments/hr-1/' },
    );

    // Assess
    expect(recorded).toEqual({ recorded: 2, failed: 1 });
    expect(state.trials[1]).toMatchObject({
      trialId: 't0002',
      status: 'failed',
      score: null,
      error:
        "GenerationError: Unable to retrieve chunks and generate answers for foundation model: 'x' due to: 429",
    });
    expect(artefacts.best?.pattern_name).toBe('Pattern1');
  });

  it.each([
    [{ prefix: 'experiments/x/' }, 'experimentId'],
    [{ experimentId: 'hr-1', prefix: 'experiments/other/' }, "prefix must be 'experiments/hr-1/'"],
    [{ experimentId: '../etc' }, 'experimentId'],
  ])('rejects a task input %j', async (event, message) => {
    // Act / Assess
    await expect(call(createExperimentProposeHandler(rt), event)).rejects.toThrow(message);
  });

  it('requires a trial id for the per-trial tasks', async () => {
    // Act / Assess
    await expect(
      call(createEvaluateHandler(rt), { experimentId: 'hr-1', prefix: 'experiments/hr-1/' }),
    ).rejects.toThrow('trialId is required');
  });
});
