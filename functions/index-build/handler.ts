/**
 * Index-build: the scheduled index step of a pgvector deployment (an EventBridge rule, hourly). A commit's own index
 * step builds at most `COMMIT_INDEX_ROWS` rows, so the merges that keep a growing collection's HNSW segments few are
 * left to this one (`scheduledIndex`: up to `SCHEDULED_INDEX_ROWS` rows a run, within the function's 15 minutes).
 * The event carries nothing it reads: the collection and its embedding model are the deployment's.
 */
import { scheduledIndex } from '../../shared/src/ingest/knowledge-base.js';
import type { IndexBuildResult } from '../../shared/src/vectorstores/types.js';
import { taskHandler } from '../_shared/experiment.js';
import { powertools } from '../_shared/powertools.js';
import { lazyRuntime, type Runtime } from '../_shared/runtime.js';

/** What a run returns (and logs): the collection and the store's outcome, or why there was nothing to do. */
export type IndexBuildRun =
  | ({ collection: string } & IndexBuildResult)
  | { collection: string; skipped: string };

/** Builds the handler over an injected runtime (tests) or the container's. */
export function createIndexBuildHandler(deps: Partial<Runtime> = {}) {
  const runtime = lazyRuntime(deps);
  return taskHandler('index-build', async (): Promise<IndexBuildRun> => {
    const rt = runtime();
    const { collection, embeddingModel } = rt.config;
    const outcome = await scheduledIndex(rt, collection, embeddingModel);
    const { logger } = powertools();
    if (outcome === undefined) {
      const run = { collection, skipped: 'no collection yet, or a store without an ANN index' };
      logger.info('index build: nothing to do', run);
      return run;
    }
    if ('error' in outcome) {
      // Fails the invocation (the function's Errors alarm sees it); nothing is lost: searches scan what no segment
      // covers, and the next run drops what this one left and tries again.
      throw new Error(`index build of ${collection} failed: ${outcome.error}`);
    }
    logger.info('index build', { collection, ...outcome });
    return { collection, ...outcome };
  });
}

export const handler = createIndexBuildHandler();
