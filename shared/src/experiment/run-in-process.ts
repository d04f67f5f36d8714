/**
 * Runs an experiment's steps in one process, in the order the state machine runs them. The CLI executes the
 * synthesized state machine instead; this driver is the reference the state-machine run is compared with in tests,
 * and the way to run an experiment from code.
 */
import { mapLimit } from '../util/concurrency.js';
import {
  type ExperimentArtefacts,
  type ExperimentDeps,
  evaluateTrial,
  finalizeExperiment,
  indexTrial,
  type LeaderboardBuilder,
  prepareExperiment,
  proposeRound,
  type ReportRenderer,
  recordTrials,
  type TrialOutcome,
} from './steps.js';

/** Embeds and upserts one chunk batch (what the embed-batch function does for the state machine). */
export type BatchEmbedder = (input: { collection: string; batchKey: string }) => Promise<unknown>;

/** Options of {@link runExperimentInProcess}. */
export interface InProcessOptions {
  deps: ExperimentDeps;
  input: unknown;
  embedBatch: BatchEmbedder;
  render: { report: ReportRenderer; leaderboard: LeaderboardBuilder };
  /** Batches embedded at once per trial (the state machine's inner Map concurrency). @default 4 */
  batchConcurrency?: number;
}

/**
 * prepare → loop { propose → trials (index → embed batches → evaluate, a failure becomes a failed outcome) →
 * record } → finalize.
 * @throws {ExperimentError} when every trial failed (after the report is written).
 * @example
 * const artefacts = await runExperimentInProcess({ deps, input: { benchmarkKey: 'b.json' }, embedBatch, render });
 */
export async function runExperimentInProcess(
  options: InProcessOptions,
): Promise<ExperimentArtefacts> {
  const { deps, render } = options;
  const ref = await prepareExperiment(deps, options.input);
  for (;;) {
    const proposal = await proposeRound(deps, ref);
    if (proposal.done) break;
    const outcomes = await mapLimit(proposal.trials, ref.trialConcurrency, async ({ trialId }) => {
      const trialRef = { experimentId: ref.experimentId, prefix: ref.prefix, trialId };
      try {
        const index = await indexTrial(deps, trialRef);
        await mapLimit(index.batches, options.batchConcurrency ?? 4, (batchKey) =>
          options.embedBatch({ collection: index.collection, batchKey }),
        );
        return await evaluateTrial(deps, trialRef);
      } catch (error) {
        const e = error instanceof Error ? error : new Error(String(error));
        return {
          trialId,
          ok: false,
          error: {
            Error: e.name,
            Cause: JSON.stringify({ errorType: e.name, errorMessage: e.message }),
          },
        } satisfies TrialOutcome;
      }
    });
    await recordTrials(deps, ref, outcomes);
  }
  return finalizeExperiment(deps, ref, render);
}
