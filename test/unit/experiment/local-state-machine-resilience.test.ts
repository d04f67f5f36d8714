// Retry, Catch and the loop bound of the synthesized definition as the local executor runs them.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type LocalExecutionError,
  type LocalHandler,
  runLocalExperiment,
} from '../../../bin/cli/local-state-machine.js';
import { createLocalRuntime, type LocalRuntime } from '../../../functions/_shared/runtime.js';
import { ROUND_LIMIT_ERROR } from '../../../lib/constructs/experiment-state-machine.js';

// biome-ignore lint/suspicious/noExplicitAny: task inputs are navigated freely in the fakes
type Json = any;

const REF = { experimentId: 'e1', prefix: 'experiments/e1/' };

/** The error Step Functions reports when the Lambda service throttles an invocation. */
function throttle(): Error {
  const error = new Error('Rate exceeded');
  error.name = 'Lambda.TooManyRequestsException';
  return error;
}

/**
 * Fake handlers of every function, recording each call's input; `fail` makes a function throw on given calls
 * (1-based), and the replies see only the calls that did not throw.
 */
function fakes(options: {
  proposals?: (call: number) => unknown;
  fail?: Partial<Record<string, (call: number, input: Json) => Error | undefined>>;
}) {
  const calls: Record<string, Json[]> = {};
  const reply: Record<string, (input: Json, call: number) => unknown> = {
    ExperimentPrepareFunction: () => ({ ...REF, trialConcurrency: 2, maxEvals: 3 }),
    ExperimentProposeFunction: (_input, call) =>
      options.proposals?.(call) ??
      (call === 1
        ? { done: false, trials: [{ trialId: 't0001' }, { trialId: 't0002' }] }
        : { done: true, trials: [] }),
    ExperimentIndexFunction: (input) => ({ collection: `c_${input.trialId}`, batches: ['b/1'] }),
    EmbedBatchFunction: () => ({ chunks: 1 }),
    EvaluateFunction: (input) => ({ trialId: input.trialId, ok: true, score: 0.5 }),
    ExperimentRecordFunction: () => ({ recorded: 2, failed: 0 }),
    ExperimentFinalizeFunction: () => ({ reportKey: 'experiments/e1/report.html' }),
  };
  const handlers: Record<string, LocalHandler> = {};
  for (const [id, fn] of Object.entries(reply)) {
    let served = 0;
    handlers[id] = async (input) => {
      calls[id] = [...(calls[id] ?? []), input];
      const error = options.fail?.[id]?.(calls[id].length, input);
      if (error !== undefined) throw error;
      served += 1;
      return fn(input, served);
    };
  }
  return { handlers, calls };
}

describe('the synthesized experiment state machine, locally, under failures', () => {
  let dir: string;
  let runtime: LocalRuntime;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ai4rag-sfn-resilience-'));
    runtime = createLocalRuntime({ dataDir: dir, inMemory: true });
  });
  afterAll(async () => {
    await runtime?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('retries a throttled control task and a throttled trial task, and the trial succeeds', async () => {
    // Prepare
    const { handlers, calls } = fakes({
      fail: {
        ExperimentProposeFunction: (call) => (call === 1 ? throttle() : undefined),
        EmbedBatchFunction: (call) => (call === 1 ? throttle() : undefined),
      },
    });

    // Act
    const result = await runLocalExperiment({ runtime, input: {}, handlers });

    // Assess
    expect(calls.ExperimentProposeFunction).toHaveLength(3);
    expect(calls.EmbedBatchFunction).toHaveLength(3);
    expect(calls.ExperimentIndexFunction).toHaveLength(2);
    expect(calls.ExperimentRecordFunction).toEqual([
      {
        ...REF,
        results: [
          { trialId: 't0001', ok: true, score: 0.5 },
          { trialId: 't0002', ok: true, score: 0.5 },
        ],
      },
    ]);
    expect(result.output).toMatchObject({ artefacts: { reportKey: 'experiments/e1/report.html' } });
  });

  it('records a trial that fails for good with its error and cause, without retrying it', async () => {
    // Prepare
    const { handlers, calls } = fakes({
      fail: {
        ExperimentIndexFunction: (_call, input) =>
          input.trialId === 't0002' ? new RangeError('chunk_size out of range') : undefined,
      },
    });

    // Act
    await runLocalExperiment({ runtime, input: {}, handlers });

    // Assess
    expect(calls.ExperimentIndexFunction).toHaveLength(2);
    expect(calls.ExperimentRecordFunction?.[0].results).toContainEqual({
      trialId: 't0002',
      ok: false,
      error: { Error: 'RangeError', Cause: 'chunk_size out of range' },
    });
  });

  it('ends the run naming Prepare and its cause when the real Prepare rejects the input', async () => {
    // Act
    const run = runLocalExperiment({ runtime, input: { experimentId: 'bad-input' } });

    // Assess
    const error = (await run.catch((e: unknown) => e)) as LocalExecutionError;
    expect(error.name).toBe('LocalExecutionError');
    expect(error.failure).toMatchObject({
      state: 'Prepare',
      error: 'ValidationError',
      cause: expect.stringMatching(/^Prepare failed: Invalid experiment input: benchmarkKey/),
    });
    expect(error.message).toContain('ValidationError: Prepare failed: Invalid experiment input');
  });

  it('ends the run naming Record when recording fails, after the trials ran', async () => {
    // Prepare
    const { handlers, calls } = fakes({
      fail: { ExperimentRecordFunction: () => new Error('ledger write refused') },
    });

    // Act
    const error = (await runLocalExperiment({ runtime, input: {}, handlers }).catch(
      (e: unknown) => e,
    )) as LocalExecutionError;

    // Assess
    expect(error.failure).toEqual({
      state: 'Record',
      error: 'Error',
      cause: 'Record failed: ledger write refused',
    });
    expect(calls.ExperimentRecordFunction).toHaveLength(1);
    expect(calls.ExperimentFinalizeFunction).toBeUndefined();
  });

  it('stops a Propose that never says done after maxEvals rounds', async () => {
    // Prepare
    const { handlers, calls } = fakes({
      proposals: (call) => ({ done: false, trials: [{ trialId: `t000${call}` }] }),
    });

    // Act
    const error = (await runLocalExperiment({ runtime, input: {}, handlers }).catch(
      (e: unknown) => e,
    )) as LocalExecutionError;

    // Assess: rounds 1..3 ran their trials; the 4th proposal exceeds maxEvals 3.
    expect(error.failure).toEqual({
      error: ROUND_LIMIT_ERROR,
      cause:
        'Propose proposed trials in 4 rounds without finishing (maxEvals 3): the loop was stopped.',
    });
    expect(calls.ExperimentProposeFunction).toHaveLength(4);
    expect(calls.ExperimentRecordFunction).toHaveLength(3);
    expect(calls.ExperimentFinalizeFunction).toBeUndefined();
  });
});
