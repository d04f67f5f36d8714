/**
 * The SQS side of the work-queue port (shared/src/ports/queue.ts, re-exported here for the handlers): messages go
 * out in SendMessageBatch calls of ten.
 */
import {
  SendMessageBatchCommand,
  type SendMessageBatchCommandOutput,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { QueueError, serializeMessage, type WorkQueue } from '../../shared/src/ports/queue.js';
import { batches } from '../../shared/src/util/concurrency.js';

export {
  InProcessQueue,
  MAX_MESSAGE_BYTES,
  type QueueConsumer,
  QueueError,
  type WorkQueue,
} from '../../shared/src/ports/queue.js';

/** Entries per SendMessageBatch call (SQS's limit). */
const SQS_BATCH = 10;

/**
 * SQS-backed queue: messages go out in SendMessageBatch calls of ten; entries SQS reports as failed are raised
 * as one {@link QueueError} so the producing record is retried (consumers are idempotent).
 * @example await new SqsWorkQueue(new SQSClient({}), url).send([{ batchKey }]);
 */
export class SqsWorkQueue implements WorkQueue {
  constructor(
    readonly client: SQSClient,
    readonly queueUrl: string,
  ) {}

  async send(messages: readonly unknown[]): Promise<void> {
    const bodies = messages.map(serializeMessage);
    for (const group of batches(bodies, SQS_BATCH)) {
      let out: SendMessageBatchCommandOutput;
      try {
        out = await this.client.send(
          new SendMessageBatchCommand({
            QueueUrl: this.queueUrl,
            Entries: group.map((MessageBody, i) => ({ Id: String(i), MessageBody })),
          }),
        );
      } catch (error) {
        throw new QueueError(`could not send to ${this.queueUrl}`, { cause: error });
      }
      const failed = out.Failed ?? [];
      if (failed.length > 0) {
        throw new QueueError(
          `${failed.length} of ${group.length} messages were not accepted by ${this.queueUrl}: ${failed[0]?.Message ?? ''}`,
        );
      }
    }
  }
}
