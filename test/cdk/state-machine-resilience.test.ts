// Retry, Catch and the loop bound of the experiment state machine, read from the synthesized definition.
import { beforeAll, describe, expect, it } from 'vitest';
import {
  LAMBDA_TRANSIENT_ERRORS,
  MAX_EXPERIMENT_ROUNDS,
  ROUND_LIMIT_ERROR,
} from '../../lib/constructs/experiment-state-machine.js';
import { parseExperimentInput } from '../../shared/src/experiment/input.js';
import { byConstructId, type Json, parseDefinition, synthesize } from './template.js';

type States = Record<string, Json>;

/** Every state of the definition, nested Map processors included, by name. */
function allStates(states: States, into: States = {}): States {
  for (const [name, state] of Object.entries(states)) {
    into[name] = state;
    const processor = state.ItemProcessor ?? state.Iterator;
    if (processor !== undefined) allStates(processor.States, into);
  }
  return into;
}

const CONTROL_STATES = ['Prepare', 'Propose', 'RunTrials', 'Record', 'Finalize'];

describe('the experiment state machine (resilience)', () => {
  let top: States;
  let every: States;
  beforeAll(() => {
    const { resources } = synthesize({ vectorStore: 'pgvector' });
    const { properties } = byConstructId(resources, 'ExperimentStateMachine');
    top = parseDefinition(properties.DefinitionString).States;
    every = allStates(top);
  });

  it('retries Lambda throttling and service errors on every Task, with capped full-jitter backoff', () => {
    // Prepare
    const tasks = Object.entries(every).filter(([, s]) => s.Type === 'Task');

    // Assess
    expect(tasks.map(([name]) => name).sort()).toEqual(
      [
        'EmbedBatch',
        'EvaluateTrial',
        'Finalize',
        'IndexTrial',
        'Prepare',
        'Propose',
        'Record',
      ].sort(),
    );
    expect(LAMBDA_TRANSIENT_ERRORS).toContain('Lambda.TooManyRequestsException');
    for (const [name, task] of tasks) {
      // One retrier only: CDK's default one (without TooManyRequests, without jitter) is replaced.
      expect(task.Retry, name).toEqual([
        {
          ErrorEquals: [...LAMBDA_TRANSIENT_ERRORS],
          IntervalSeconds: 2,
          BackoffRate: 2,
          MaxAttempts: 8,
          MaxDelaySeconds: 60,
          JitterStrategy: 'FULL',
        },
      ]);
    }
  });

  it('retries a trial Task before its Catch records it as failed with its error and cause', () => {
    // Prepare
    const trial = top.RunTrials.ItemProcessor.States;

    // Assess
    for (const name of ['IndexTrial', 'EvaluateTrial']) {
      expect(trial[name].Retry, name).toHaveLength(1);
      expect(trial[name].Catch, name).toEqual([
        { ErrorEquals: ['States.ALL'], ResultPath: '$.error', Next: 'TrialFailed' },
      ]);
    }
    expect(trial.EmbedBatches.ItemProcessor.States.EmbedBatch.Retry).toHaveLength(1);
    expect(trial.TrialFailed.Parameters).toEqual({
      'trialId.$': '$.trialId',
      ok: false,
      'error.$': '$.error',
    });
  });

  it.each(CONTROL_STATES)('catches %s into a state naming it, then ExperimentFailed', (name) => {
    // Prepare
    const failed = top[`${name}Failed`];

    // Assess
    expect(top[name].Catch).toEqual([
      { ErrorEquals: ['States.ALL'], ResultPath: '$.failure', Next: `${name}Failed` },
    ]);
    expect(failed).toEqual({
      Type: 'Pass',
      ResultPath: '$.failure',
      Parameters: {
        state: name,
        'error.$': '$.failure.Error',
        'cause.$': `States.Format('${name} failed: {}', $.failure.Cause)`,
      },
      Next: 'ExperimentFailed',
    });
  });

  it('ends a failed execution with the original error name and the located cause', () => {
    // Assess
    expect(top.ExperimentFailed).toEqual({
      Type: 'Fail',
      ErrorPath: '$.failure.error',
      CausePath: '$.failure.cause',
    });
    const controlOrTerminal = new Set([
      ...CONTROL_STATES.flatMap((n) => [n, `${n}Failed`]),
      'StartRounds',
      'CountRound',
      'BudgetLeft?',
      'RoundLimitReached',
      'ExperimentFailed',
      'Done',
    ]);
    // Every top-level state is a control state, its failure handler or part of the loop bound.
    expect(Object.keys(top).filter((n) => !controlOrTerminal.has(n))).toEqual([]);
  });

  it('bounds the Propose loop by the execution maxEvals and a hard cap', () => {
    // Assess
    expect(top.StartRounds).toMatchObject({ Result: { count: 0 }, ResultPath: '$.rounds' });
    expect(top.Propose.Next).toBe('CountRound');
    expect(top.CountRound).toMatchObject({
      Parameters: { 'count.$': 'States.MathAdd($.rounds.count, 1)' },
      ResultPath: '$.rounds',
      Next: 'BudgetLeft?',
    });
    const [done, limit] = top['BudgetLeft?'].Choices;
    expect(done).toEqual({ Variable: '$.proposal.done', BooleanEquals: true, Next: 'Finalize' });
    expect(limit).toEqual({
      Or: [
        { Variable: '$.rounds.count', NumericGreaterThanPath: '$.maxEvals' },
        { Variable: '$.rounds.count', NumericGreaterThan: MAX_EXPERIMENT_ROUNDS },
      ],
      Next: 'RoundLimitReached',
    });
    expect(top.RoundLimitReached).toMatchObject({
      Parameters: { state: 'Propose', error: ROUND_LIMIT_ERROR },
      Next: 'ExperimentFailed',
    });
  });

  it('caps rounds at the largest maxEvals an experiment input accepts', () => {
    // Prepare
    const input = (maxEvals: number) => ({
      benchmarkKey: 'experiments/e1/input/benchmark.json',
      maxEvals,
    });

    // Act / Assess
    expect(parseExperimentInput(input(MAX_EXPERIMENT_ROUNDS)).maxEvals).toBe(MAX_EXPERIMENT_ROUNDS);
    expect(() => parseExperimentInput(input(MAX_EXPERIMENT_ROUNDS + 1))).toThrow(/maxEvals/);
  });
});
