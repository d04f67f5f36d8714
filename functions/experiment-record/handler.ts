/**
 * The Record state: folds a round's trial outcomes (scores, failures) into the ledger.
 */
import { ValidationError } from '../../shared/src/errors.js';
import { recordTrials, type TrialOutcome } from '../../shared/src/experiment/steps.js';
import {
  type ExperimentListeners,
  experimentDeps,
  experimentRef,
  taskHandler,
} from '../_shared/experiment.js';
import { lazyRuntime, type Runtime } from '../_shared/runtime.js';

/** Builds the handler over an injected runtime (tests, the local state machine) or the container's. */
export function createExperimentRecordHandler(
  deps: Partial<Runtime> = {},
  listeners: ExperimentListeners = {},
) {
  const runtime = lazyRuntime(deps);
  return taskHandler('experiment-record', async (event: unknown) => {
    const ref = experimentRef(event);
    const results = (event as { results?: unknown }).results;
    if (!Array.isArray(results))
      throw new ValidationError('Invalid task input: results must be an array.');
    return recordTrials(experimentDeps(runtime(), listeners), ref, results as TrialOutcome[]);
  });
}

export const handler = createExperimentRecordHandler();
