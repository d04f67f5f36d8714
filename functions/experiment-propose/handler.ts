/**
 * The optimizer's Propose state: the next round of trials from the optimizer (cached results answered without work), or done.
 */
import { proposeRound } from '../../shared/src/experiment/steps.js';
import {
  type ExperimentListeners,
  experimentDeps,
  experimentRef,
  taskHandler,
} from '../_shared/experiment.js';
import { lazyRuntime, type Runtime } from '../_shared/runtime.js';

/** Builds the handler over an injected runtime (tests, the local state machine) or the container's. */
export function createExperimentProposeHandler(
  deps: Partial<Runtime> = {},
  listeners: ExperimentListeners = {},
) {
  const runtime = lazyRuntime(deps);
  return taskHandler('experiment-propose', async (event: unknown) => {
    return proposeRound(experimentDeps(runtime(), listeners), experimentRef(event));
  });
}

export const handler = createExperimentProposeHandler();
