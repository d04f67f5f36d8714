import { beforeAll, describe, expect, it } from 'vitest';
import { FUNCTION_IDS } from '../../lib/ai4rag-stack.js';
import {
  type ExperimentDefinition,
  localFunctionArn,
  synthExperimentDefinition,
} from '../../lib/local-definition.js';
import type { Json } from './template.js';

// aws-local-stepfunctions 3 targets Node 22; Node 20 lacks Promise.withResolvers.
const promiseStatics = Promise as unknown as { withResolvers?: unknown };
if (typeof promiseStatics.withResolvers !== 'function') {
  promiseStatics.withResolvers = function withResolvers<T>() {
    let resolve!: (value: T) => void;
    let reject!: (reason: unknown) => void;
    const promise = new Promise<T>((ok, fail) => {
      resolve = ok;
      reject = fail;
    });
    return { promise, resolve, reject };
  };
}

type Asl = Record<string, Json>;

describe('synthExperimentDefinition', () => {
  let result: ExperimentDefinition;
  beforeAll(() => {
    result = synthExperimentDefinition();
  });

  it('maps every Task resource to one of the experiment function ids', () => {
    // Assess
    expect(result.functionIds).toEqual({
      [localFunctionArn('ExperimentPrepareFunction')]: 'ExperimentPrepareFunction',
      [localFunctionArn('ExperimentProposeFunction')]: 'ExperimentProposeFunction',
      [localFunctionArn('ExperimentIndexFunction')]: 'ExperimentIndexFunction',
      [localFunctionArn('EmbedBatchFunction')]: 'EmbedBatchFunction',
      [localFunctionArn('EvaluateFunction')]: 'EvaluateFunction',
      [localFunctionArn('ExperimentRecordFunction')]: 'ExperimentRecordFunction',
      [localFunctionArn('ExperimentFinalizeFunction')]: 'ExperimentFinalizeFunction',
    });
    for (const id of Object.values(result.functionIds)) {
      expect(FUNCTION_IDS).toContain(id);
    }
    expect(localFunctionArn('ExperimentPrepareFunction')).toBe(
      'arn:aws:lambda:local:000000000000:function:ExperimentPrepareFunction',
    );
  });

  it('holds a Map with the trial pipeline inside the Propose loop', () => {
    // Prepare
    const states = (result.definition as Asl).States;

    // Assess
    expect(states.Record.Next).toBe('Propose');
    expect(states['BudgetLeft?'].Default).toBe('RunTrials');
    expect(states.RunTrials.Type).toBe('Map');
    expect(Object.keys(states.RunTrials.ItemProcessor.States)).toEqual(
      expect.arrayContaining(['IndexTrial', 'EmbedBatches', 'EvaluateTrial', 'TrialFailed']),
    );
    expect(
      states.RunTrials.ItemProcessor.States.EmbedBatches.ItemProcessor.States.EmbedBatch,
    ).toMatchObject({ Type: 'Task', Resource: localFunctionArn('EmbedBatchFunction') });
    expect(JSON.stringify(result.definition)).not.toMatch(/Fn::|"Ref"/);
  });

  it('follows the trialConcurrency context', () => {
    // Act
    const custom = synthExperimentDefinition({ context: { trialConcurrency: 7 } });

    // Assess
    expect((custom.definition as Asl).States.RunTrials.MaxConcurrency).toBe(7);
  });

  it('runs end to end in aws-local-stepfunctions with a failing trial caught', async () => {
    // Prepare
    const { StateMachine } = await import('aws-local-stepfunctions');
    const calls: Record<string, unknown[]> = {};
    const log =
      (name: string, reply: (input: Json) => unknown) =>
      (input: Json): Json => {
        calls[name] = [...(calls[name] ?? []), input];
        return reply(input);
      };
    let proposals = 0;
    const handlers = {
      Prepare: log('Prepare', () => ({
        experimentId: 'e1',
        prefix: 'experiments/e1/',
        trialConcurrency: 2,
        maxEvals: 2,
      })),
      Propose: log('Propose', () =>
        ++proposals === 1
          ? { done: false, trials: [{ trialId: 't1' }, { trialId: 't2' }] }
          : { done: true, trials: [] },
      ),
      IndexTrial: log('IndexTrial', (input) => {
        if (input.trialId === 't2') throw new Error('index exploded');
        return { collection: 'c_t1', batches: ['b/1.json', 'b/2.json'] };
      }),
      EmbedBatch: log('EmbedBatch', () => ({ upserted: 3 })),
      EvaluateTrial: log('EvaluateTrial', (input) => ({
        trialId: input.trialId,
        ok: true,
        score: 0.75,
      })),
      Record: log('Record', () => ({ ignored: true })),
      Finalize: log('Finalize', () => ({ leaderboard: 'experiments/e1/leaderboard.json' })),
    };
    const machine = new StateMachine(result.definition as never);

    // Act
    const output = await machine.run({ benchmark: 'bench.json' } as never, {
      overrides: { taskResourceLocalHandlers: handlers },
    }).result;

    // Assess
    expect(calls.Prepare).toEqual([{ benchmark: 'bench.json' }]);
    expect(calls.Propose).toEqual([
      { experimentId: 'e1', prefix: 'experiments/e1/' },
      { experimentId: 'e1', prefix: 'experiments/e1/' },
    ]);
    expect(calls.IndexTrial).toHaveLength(2);
    expect(calls.EmbedBatch).toEqual([
      {
        experimentId: 'e1',
        prefix: 'experiments/e1/',
        trialId: 't1',
        collection: 'c_t1',
        batchKey: 'b/1.json',
      },
      {
        experimentId: 'e1',
        prefix: 'experiments/e1/',
        trialId: 't1',
        collection: 'c_t1',
        batchKey: 'b/2.json',
      },
    ]);
    expect(calls.EvaluateTrial).toEqual([
      { experimentId: 'e1', prefix: 'experiments/e1/', trialId: 't1' },
    ]);
    expect(calls.Record).toEqual([
      {
        experimentId: 'e1',
        prefix: 'experiments/e1/',
        results: [
          { trialId: 't1', ok: true, score: 0.75 },
          {
            trialId: 't2',
            ok: false,
            error: { Error: 'Error', Cause: expect.stringContaining('index exploded') },
          },
        ],
      },
    ]);
    expect(calls.Finalize).toEqual([{ experimentId: 'e1', prefix: 'experiments/e1/' }]);
    expect(output).toEqual({
      experimentId: 'e1',
      prefix: 'experiments/e1/',
      trialConcurrency: 2,
      maxEvals: 2,
      rounds: { count: 2 },
      proposal: { done: true, trials: [] },
      results: expect.any(Array),
      artefacts: { leaderboard: 'experiments/e1/leaderboard.json' },
    });
  });
});
