/**
 * The EvaluateTrial state: answers the benchmark with the trial's pattern and scores it (unitxt and retrieval metrics).
 */
import { ValidationError } from '../../shared/src/errors.js';
import { evaluateTrial } from '../../shared/src/experiment/steps.js';
import {
  type ExperimentListeners,
  experimentDeps,
  experimentRef,
  taskHandler,
} from '../_shared/experiment.js';
import { lazyRuntime, type Runtime } from '../_shared/runtime.js';

/** Builds the handler over an injected runtime (tests, the local state machine) or the container's. */
export function createEvaluateHandler(
  deps: Partial<Runtime> = {},
  listeners: ExperimentListeners = {},
) {
  const runtime = lazyRuntime(deps);
  return taskHandler('evaluate', async (event: unknown) => {
    const ref = experimentRef(event);
    if (ref.trialId === undefined)
      throw new ValidationError('Invalid task input: trialId is required.');
    return evaluateTrial(experimentDeps(runtime(), listeners), { ...ref, trialId: ref.trialId });
  });
}

export const handler = createEvaluateHandler();
