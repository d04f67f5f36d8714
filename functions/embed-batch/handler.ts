/**
 * Embed-batch: embeds and stores one chunk batch. Two triggers share it: the knowledge-base embed queue (SQS
 * records `{batchKey}`, partial batch failure) and the optimizer's index fan-out (a direct Step Functions
 * invocation `{experimentId, prefix, trialId, collection, batchKey}`).
 */
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import * as z from 'zod';
import { parseWith } from '../../shared/src/api/schemas.js';
import { ValidationError } from '../../shared/src/errors.js';
import {
  type EmbedBatchResult,
  EmbedMessageSchema,
  embedBatch,
  onDocumentFailed,
} from '../../shared/src/ingest/knowledge-base.js';
import { sqsHandler } from '../_shared/http.js';
import { countFailedDocument, countFailedRecords, powertools } from '../_shared/powertools.js';
import { lazyRuntime, type Runtime } from '../_shared/runtime.js';

/** The optimizer's direct invocation. */
export const EmbedTaskSchema = z.object({
  experimentId: z.string().min(1),
  prefix: z.string().min(1),
  trialId: z.string().min(1),
  collection: z.string().min(1),
  batchKey: z.string().min(1),
});
/** A parsed direct invocation. */
export type EmbedTask = z.infer<typeof EmbedTaskSchema>;

/** What a direct invocation returns to the state machine. */
export interface EmbedTaskResult extends EmbedBatchResult {
  experimentId: string;
  trialId: string;
}

function isSqsEvent(event: unknown): event is SQSEvent {
  return Array.isArray((event as { Records?: unknown } | null)?.Records);
}

/**
 * Builds the embed-batch handler for both event shapes; `deps` replaces parts of the runtime (tests).
 * @example export const handler = createEmbedBatchHandler();
 */
export function createEmbedBatchHandler(deps?: Partial<Runtime>) {
  const runtime = lazyRuntime(deps);
  onDocumentFailed(countFailedDocument);
  const sqs = sqsHandler(
    'embed-batch',
    countFailedRecords(async (record) => {
      let body: unknown;
      try {
        body = JSON.parse(record.body);
      } catch (error) {
        throw new ValidationError(`message ${record.messageId} is not JSON`, { cause: error });
      }
      const { batchKey } = parseWith(EmbedMessageSchema, body, 'embed message');
      const { index, collection } = await embedBatch(runtime(), batchKey);
      // The ANN index is built here, after a commit, never in a search; a failed attempt is retried later.
      if (index !== undefined && 'error' in index) {
        powertools().logger.warn('ANN index build failed; the next commit retries', {
          collection,
          error: index.error,
        });
      } else if (index?.built) {
        powertools().logger.info('ANN index built', { collection, ...index });
      }
    }),
  );
  return async (
    event: SQSEvent | EmbedTask,
    context: Context,
  ): Promise<SQSBatchResponse | EmbedTaskResult> => {
    if (isSqsEvent(event)) return sqs(event, context);
    // A direct invocation fails as a whole: Step Functions' Retry/Catch handles it.
    const task = parseWith(EmbedTaskSchema, event, 'embed task');
    if (!task.batchKey.startsWith(task.prefix)) {
      throw new ValidationError(`batchKey ${task.batchKey} is not under prefix ${task.prefix}`);
    }
    const result = await embedBatch(runtime(), task.batchKey, task.collection);
    return { ...result, experimentId: task.experimentId, trialId: task.trialId };
  };
}

/** Lambda entry point. */
export const handler = createEmbedBatchHandler();
