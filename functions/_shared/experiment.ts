/**
 * Wiring of the optimizer's state-machine tasks: the experiment steps of `shared/` over a handler runtime, and a
 * middy wrapper for direct (Step Functions) invocations.
 */
import middy from '@middy/core';
import type { Context } from 'aws-lambda';
import * as z from 'zod';
import { ValidationError } from '../../shared/src/errors.js';
import { EXPERIMENT_ID } from '../../shared/src/experiment/input.js';
import { buildLeaderboard } from '../../shared/src/experiment/leaderboard.js';
import { experimentPrefix } from '../../shared/src/experiment/ledger.js';
import { renderReport } from '../../shared/src/experiment/report.js';
import type { ExperimentDeps } from '../../shared/src/experiment/steps.js';
import type {
  EvaluationRecord,
  PatternPayload,
  StatusEvent,
} from '../../shared/src/experiment/types.js';
import { instrument } from './http.js';
import type { Runtime } from './runtime.js';

/** Renderers of the finalize step. */
export const EXPERIMENT_RENDER = Object.freeze({
  report: renderReport,
  leaderboard: buildLeaderboard,
});

/** Live callbacks of a local run (the terminal's progress display). */
export interface ExperimentListeners {
  onEvent?: (event: StatusEvent) => void;
  onPattern?: (payload: PatternPayload, evaluation: EvaluationRecord[]) => void;
  onQuestion?: ExperimentDeps['onQuestion'];
}

/** The experiment steps' dependencies from a handler runtime. */
export function experimentDeps(
  runtime: Runtime,
  listeners: ExperimentListeners = {},
): ExperimentDeps {
  const reranker = runtime.reranker;
  const deployed = runtime.config.deployedModels;
  return {
    // An experiment whose input names no models compares the deployment's.
    ...(deployed !== undefined && {
      defaultModels: {
        ...(deployed.embedding !== undefined && { embeddingModels: [deployed.embedding] }),
        ...(deployed.foundation !== undefined && { foundationModels: [deployed.foundation] }),
      },
    }),
    artifacts: runtime.objectStore,
    documents: runtime.documents,
    storeKind: runtime.config.store,
    embedder: (id) => runtime.embedder(id),
    model: (id, role) => runtime.model(id, role),
    localModel: (options) => runtime.localModel(options),
    // Patient: a trial's question fails when its reranker does, so it waits and retries longer than a query.
    ...(reranker !== undefined && { reranker: (id: string) => reranker(id, { patient: true }) }),
    openStore: (collection, embedder, options) => runtime.openStore(collection, embedder, options),
    ...(listeners.onEvent && { onEvent: listeners.onEvent }),
    ...(listeners.onQuestion && { onQuestion: listeners.onQuestion }),
    ...(listeners.onPattern && { onPattern: listeners.onPattern }),
  };
}

/**
 * Wraps a state-machine task: Powertools context, and errors thrown as they are so Step Functions sees their
 * name (`Error`) and message (in `Cause`) and the Catch of the trial records them.
 */
export function taskHandler<E, R>(
  name: string,
  fn: (event: E, context: Context) => Promise<R>,
): middy.MiddyfiedHandler<E, R> {
  const handler = middy<E, R>();
  instrument(handler as unknown as middy.MiddyfiedHandler<unknown, unknown>, name);
  return handler.handler(fn) as middy.MiddyfiedHandler<E, R>;
}

const RefSchema = z.object({
  experimentId: z.string().regex(EXPERIMENT_ID),
  prefix: z.string().optional(),
  trialId: z
    .string()
    .regex(/^t\d{4,}$/)
    .optional(),
});

/**
 * Validates the experiment reference a task receives; the prefix is derived from the id (a task never reads or
 * writes outside its experiment's prefix, whatever the event says).
 * @throws {ValidationError} for a missing or malformed id, or a prefix that is not the experiment's.
 */
export function experimentRef(event: unknown): {
  experimentId: string;
  prefix: string;
  trialConcurrency: number;
  trialId?: string;
} {
  const parsed = RefSchema.safeParse(event);
  if (!parsed.success) {
    throw new ValidationError(
      `Invalid task input: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
    );
  }
  const prefix = experimentPrefix(parsed.data.experimentId);
  if (parsed.data.prefix !== undefined && parsed.data.prefix !== prefix) {
    throw new ValidationError(`Invalid task input: prefix must be '${prefix}'.`);
  }
  return {
    experimentId: parsed.data.experimentId,
    prefix,
    trialConcurrency: 1,
    ...(parsed.data.trialId !== undefined && { trialId: parsed.data.trialId }),
  };
}
