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
import { APP_METRICS } from '../_shared/metric-names.js';
import { countMetric } from '../_shared/powertools.js';
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
    const recorded = await recordTrials(
      experimentDeps(runtime(), listeners),
      ref,
      results as TrialOutcome[],
    );
    // Every round emits a value (0 included), so the alarm sees data while experiments run.
    countMetric(APP_METRICS.failedTrials, recorded.failed);
    return recorded;
  });
}

export const handler = createExperimentRecordHandler();
