/**
 * The optimizer's Prepare state: validates the execution input, loads the documents and benchmark, builds the search space and the ledger (or resumes it).
 */
import { readState } from '../../shared/src/experiment/ledger.js';
import { prepareExperiment } from '../../shared/src/experiment/steps.js';
import { type ExperimentListeners, experimentDeps, taskHandler } from '../_shared/experiment.js';
import { lazyRuntime, type Runtime } from '../_shared/runtime.js';

/**
 * Builds the handler over an injected runtime (tests, the local state machine) or the container's. Besides the
 * experiment reference it returns the ledger's `maxEvals` (a resume may have changed it): the state machine bounds
 * its Propose loop with it.
 */
export function createExperimentPrepareHandler(
  deps: Partial<Runtime> = {},
  listeners: ExperimentListeners = {},
) {
  const runtime = lazyRuntime(deps);
  return taskHandler('experiment-prepare', async (event: unknown) => {
    const rt = runtime();
    const ref = await prepareExperiment(experimentDeps(rt, listeners), event);
    const state = await readState(rt.objectStore, ref.prefix);
    return { ...ref, maxEvals: state.input.maxEvals };
  });
}

export const handler = createExperimentPrepareHandler();
