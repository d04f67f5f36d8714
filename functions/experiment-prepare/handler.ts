/**
 * The optimizer's Prepare state: validates the execution input, loads the documents and benchmark, builds the search space and the ledger (or resumes it).
 */
import { prepareExperiment } from '../../shared/src/experiment/steps.js';
import { type ExperimentListeners, experimentDeps, taskHandler } from '../_shared/experiment.js';
import { lazyRuntime, type Runtime } from '../_shared/runtime.js';

/** Builds the handler over an injected runtime (tests, the local state machine) or the container's. */
export function createExperimentPrepareHandler(
  deps: Partial<Runtime> = {},
  listeners: ExperimentListeners = {},
) {
  const runtime = lazyRuntime(deps);
  return taskHandler('experiment-prepare', async (event: unknown) => {
    return prepareExperiment(experimentDeps(runtime(), listeners), event);
  });
}

export const handler = createExperimentPrepareHandler();
