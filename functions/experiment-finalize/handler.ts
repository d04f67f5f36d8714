/**
 * The Finalize state: leaderboard.json, pattern.json, evaluation_results.json and report.html.
 */
import { finalizeExperiment } from '../../shared/src/experiment/steps.js';
import {
  EXPERIMENT_RENDER,
  type ExperimentListeners,
  experimentDeps,
  experimentRef,
  taskHandler,
} from '../_shared/experiment.js';
import { lazyRuntime, type Runtime } from '../_shared/runtime.js';

/** Builds the handler over an injected runtime (tests, the local state machine) or the container's. */
export function createExperimentFinalizeHandler(
  deps: Partial<Runtime> = {},
  listeners: ExperimentListeners = {},
) {
  const runtime = lazyRuntime(deps);
  return taskHandler('experiment-finalize', async (event: unknown) => {
    return finalizeExperiment(
      experimentDeps(runtime(), listeners),
      experimentRef(event),
      EXPERIMENT_RENDER,
    );
  });
}

export const handler = createExperimentFinalizeHandler();
