/**
 * Runs the optimizer's state machine on one machine: the definition synthesized from the CDK stack (the same one
 * `cdk deploy` ships), executed by aws-local-stepfunctions with each Task bound to the real handler of its
 * function over the local runtime (a folder for S3, PGlite for the vector store).
 */

import type { Context } from 'aws-lambda';
import type { ExperimentListeners } from '../../functions/_shared/experiment.js';
import { localContext } from '../../functions/_shared/local.js';
import type { Runtime } from '../../functions/_shared/runtime.js';
import { createEmbedBatchHandler } from '../../functions/embed-batch/handler.js';
import { createEvaluateHandler } from '../../functions/evaluate/handler.js';
import { createExperimentFinalizeHandler } from '../../functions/experiment-finalize/handler.js';
import { createExperimentIndexHandler } from '../../functions/experiment-index/handler.js';
import { createExperimentPrepareHandler } from '../../functions/experiment-prepare/handler.js';
import { createExperimentProposeHandler } from '../../functions/experiment-propose/handler.js';
import { createExperimentRecordHandler } from '../../functions/experiment-record/handler.js';
import { Ai4ragError } from '../../shared/src/errors.js';
import { experimentDefinition } from './definition-cache.js';

// aws-local-stepfunctions 3 targets Node 22; Node 20 lacks Promise.withResolvers.
const P = Promise as unknown as { withResolvers?: unknown };
if (typeof P.withResolvers !== 'function') {
  P.withResolvers = <T>() => {
    let resolve!: (value: T | PromiseLike<T>) => void;
    let reject!: (reason?: unknown) => void;
    const promise = new Promise<T>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    return { promise, resolve, reject };
  };
}

/** What a failed local execution reports: the ASL `Error` and `Cause`, and the control state that failed. */
export interface LocalFailure {
  /** The error name (the failing handler's error, e.g. `ValidationError`, or the round bound's). */
  error: string;
  /** The cause, naming the state (`"Prepare failed: …"`). */
  cause: string;
  /** The top-level state whose failure was caught into ExperimentFailed, when one was. */
  state?: string;
}

/** The local execution failed (a state failed and nothing caught it). */
export class LocalExecutionError extends Ai4ragError {
  /** The execution's error and cause; absent when the engine itself failed before any state did. */
  readonly failure?: LocalFailure;

  constructor(message: string, options?: ErrorOptions & { failure?: LocalFailure }) {
    super(message, options);
    this.name = 'LocalExecutionError';
    if (options?.failure !== undefined) this.failure = options.failure;
  }
}

/** A function's handler as the local executor calls it. */
export type LocalHandler = (event: unknown, context: Context) => Promise<unknown>;

/** Options of {@link runLocalExperiment}. */
export interface LocalExperimentOptions {
  runtime: Runtime;
  input: Record<string, unknown>;
  listeners?: ExperimentListeners;
  /** Deploy context for the synthesis (e.g. trialConcurrency, the Map's MaxConcurrency). */
  context?: Record<string, unknown>;
  /** Called when a state is entered (its name, and its type). */
  onState?: (name: string, type: string) => void;
  /**
   * Handlers by function construct id (e.g. `ExperimentProposeFunction`) replacing the real ones: fault
   * injection in tests.
   */
  handlers?: Readonly<Record<string, LocalHandler>>;
  /**
   * Wait before each Retry attempt, in ms, replacing the definition's backoff (seconds to a minute, meant for
   * a throttled Lambda service, which has no local counterpart). @default 0
   */
  retryIntervalMs?: number;
}

/** The result of a local execution. */
export interface LocalExperimentResult {
  output: unknown;
  /** States entered, with how many times, in first-entered order. */
  states: { name: string; type: string; count: number }[];
}

/**
 * `"ResultPath": "$"` means "the result replaces the input" (the ASL default). aws-local-stepfunctions 3.0.0 instead
 * writes a key named `$`; dropping the field gives the same semantics on both engines.
 */
export function normalizeResultPaths(states: Record<string, Record<string, unknown>>): void {
  for (const state of Object.values(states)) {
    if (state.ResultPath === '$') delete state.ResultPath;
    for (const catcher of (state.Catch as Record<string, unknown>[] | undefined) ?? []) {
      if (catcher.ResultPath === '$') delete catcher.ResultPath;
    }
    const processor = (state.ItemProcessor ?? state.Iterator) as
      | { States?: Record<string, Record<string, unknown>> }
      | undefined;
    if (processor?.States) normalizeResultPaths(processor.States);
  }
}

function collectTasks(
  states: Record<string, Record<string, unknown>>,
  into: Map<string, string>,
): void {
  for (const [name, state] of Object.entries(states)) {
    if (state.Type === 'Task' && typeof state.Resource === 'string') into.set(name, state.Resource);
    const processor = (state.ItemProcessor ?? state.Iterator) as
      | { States?: Record<string, Record<string, unknown>> }
      | undefined;
    if (processor?.States) collectTasks(processor.States, into);
    for (const branch of (state.Branches as {
      States: Record<string, Record<string, unknown>>;
    }[]) ?? []) {
      collectTasks(branch.States, into);
    }
  }
}

/**
 * Executes the synthesized experiment state machine locally and returns its output (the Finalize result).
 * @throws {LocalExecutionError} when the execution fails, with the failing state's error and cause.
 */
export async function runLocalExperiment(
  options: LocalExperimentOptions,
): Promise<LocalExperimentResult> {
  const { StateMachine } = await import('aws-local-stepfunctions');
  // Synthesized once per version of lib/ and context, then read from a cache file (definition-cache.ts).
  const { definition, functionIds } = await experimentDefinition(
    options.context === undefined ? {} : { context: options.context },
  );
  const rt = options.runtime;
  const listeners = options.listeners ?? {};
  const byFunction: Record<string, LocalHandler> = {
    ExperimentPrepareFunction: createExperimentPrepareHandler(rt, listeners) as LocalHandler,
    ExperimentProposeFunction: createExperimentProposeHandler(rt, listeners) as LocalHandler,
    ExperimentIndexFunction: createExperimentIndexHandler(rt, listeners) as LocalHandler,
    EmbedBatchFunction: createEmbedBatchHandler(rt) as unknown as LocalHandler,
    EvaluateFunction: createEvaluateHandler(rt, listeners) as LocalHandler,
    ExperimentRecordFunction: createExperimentRecordHandler(rt, listeners) as LocalHandler,
    ExperimentFinalizeFunction: createExperimentFinalizeHandler(rt, listeners) as LocalHandler,
    ...options.handlers,
  };
  normalizeResultPaths(definition.States as Record<string, Record<string, unknown>>);
  const tasks = new Map<string, string>();
  collectTasks(definition.States as Record<string, Record<string, unknown>>, tasks);
  const overrides: Record<string, (input: never) => Promise<never>> = {};
  const retryIntervals: Record<string, number> = {};
  for (const [stateName, resource] of tasks) {
    retryIntervals[stateName] = options.retryIntervalMs ?? 0;
    const functionId = functionIds[resource];
    const handler = functionId === undefined ? undefined : byFunction[functionId];
    if (functionId === undefined || handler === undefined) {
      throw new LocalExecutionError(
        `State '${stateName}' invokes ${resource}, which has no local handler.`,
      );
    }
    overrides[stateName] = (async (input: unknown) =>
      (await handler(input, localContext(functionId))) ?? null) as never;
  }
  const machine = new StateMachine(definition as never, {
    validationOptions: { checkArn: false, checkPaths: true },
  });
  const execution = machine.run(options.input as never, {
    overrides: {
      taskResourceLocalHandlers: overrides as never,
      retryIntervalOverrides: retryIntervals,
    },
  });
  const topLevel = new Set(Object.keys(definition.States as Record<string, unknown>));
  const seen = new Map<string, { name: string; type: string; count: number }>();
  let failure: { Error: string; Cause: unknown } | undefined;
  let caughtState: string | undefined;
  const logs = (async () => {
    for await (const event of execution.eventLogs) {
      if (event.type === 'StateEntered') {
        const entry = seen.get(event.state.name) ?? {
          name: event.state.name,
          type: event.state.type,
          count: 0,
        };
        entry.count += 1;
        seen.set(event.state.name, entry);
        options.onState?.(event.state.name, event.state.type);
      } else if (event.type === 'StateCaught' && topLevel.has(event.state.name)) {
        // Trial states are caught inside the RunTrials Map; only a control state's catch ends the execution.
        caughtState = event.state.name;
      } else if (event.type === 'ExecutionFailed') {
        failure = { Error: event.Error, Cause: event.Cause };
      }
    }
  })();
  try {
    const output = await execution.result;
    await logs;
    return { output, states: [...seen.values()] };
  } catch (error) {
    await logs.catch(() => undefined);
    const cause = failure?.Cause ?? (error as Error).message;
    const text = typeof cause === 'string' ? cause : JSON.stringify(cause);
    const name = failure?.Error ?? (error as Error).name;
    throw new LocalExecutionError(`The experiment state machine failed: ${name}: ${text}`, {
      cause: error,
      ...(failure !== undefined && {
        failure: {
          error: name,
          cause: text,
          ...(caughtState !== undefined && { state: caughtState }),
        },
      }),
    });
  }
}
