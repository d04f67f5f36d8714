/**
 * The IndexTrial state: reuses the trial's index or chunks the documents into batches for the EmbedBatches fan-out.
 */
import { ValidationError } from '../../shared/src/errors.js';
import { indexTrial } from '../../shared/src/experiment/steps.js';
import {
  type ExperimentListeners,
  experimentDeps,
  experimentRef,
  taskHandler,
} from '../_shared/experiment.js';
import { lazyRuntime, type Runtime } from '../_shared/runtime.js';

/** Builds the handler over an injected runtime (tests, the local state machine) or the container's. */
export function createExperimentIndexHandler(
  deps: Partial<Runtime> = {},
  listeners: ExperimentListeners = {},
) {
  const runtime = lazyRuntime(deps);
  return taskHandler('experiment-index', async (event: unknown) => {
    const ref = experimentRef(event);
    if (ref.trialId === undefined)
      throw new ValidationError('Invalid task input: trialId is required.');
    return indexTrial(experimentDeps(runtime(), listeners), { ...ref, trialId: ref.trialId });
  });
}

export const handler = createExperimentIndexHandler();
