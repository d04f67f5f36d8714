/**
 * The work-queue port: SQS in the cloud, an in-process queue on one machine. Messages are small JSON objects
 * (large payloads travel as object-store keys), so the same producers work with both.
 */
import {
  SendMessageBatchCommand,
  type SendMessageBatchCommandOutput,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { Ai4ragError, ValidationError } from '../../shared/src/errors.js';
import { batches } from '../../shared/src/util/concurrency.js';

/** Largest message body accepted: SQS allows 256 KiB; the rest is headroom for attributes and encoding. */
export const MAX_MESSAGE_BYTES = 200 * 1024;

/** Entries per SendMessageBatch call (SQS's limit). */
const SQS_BATCH = 10;

/** A queue that work is sent to. */
export interface WorkQueue {
  /** Sends messages (each serialized as JSON). */
  send(messages: readonly unknown[]): Promise<void>;
}

/** A message could not be sent. */
export class QueueError extends Ai4ragError {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'QueueError';
  }
}

function serialize(message: unknown): string {
  const body = JSON.stringify(message);
  if (Buffer.byteLength(body, 'utf8') > MAX_MESSAGE_BYTES) {
    throw new ValidationError(
      `queue message of ${Buffer.byteLength(body, 'utf8')} bytes exceeds ${MAX_MESSAGE_BYTES}; pass an object key instead`,
    );
  }
  return body;
}

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
    const bodies = messages.map(serialize);
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

/** Receives the messages of an {@link InProcessQueue}, one at a time. */
export type QueueConsumer = (body: string) => Promise<void>;

/**
 * An in-process queue for the local runtime: `send` delivers each message to the bound consumer and waits for it,
 * so a local upload is indexed when its request returns. Without a consumer, messages are kept in `pending`
 * (tests inspect them, or bind a consumer and `drain`).
 */
export class InProcessQueue implements WorkQueue {
  readonly pending: string[] = [];
  #consumer: QueueConsumer | undefined;

  constructor(readonly name: string) {}

  /** Binds the consumer (the local handler) and delivers what is pending. */
  async bind(consumer: QueueConsumer): Promise<void> {
    this.#consumer = consumer;
    await this.drain();
  }

  async send(messages: readonly unknown[]): Promise<void> {
    for (const message of messages) this.pending.push(serialize(message));
    await this.drain();
  }

  /** Delivers pending messages in order; a consumer error stops delivery and is raised to the sender. */
  async drain(): Promise<void> {
    const consumer = this.#consumer;
    if (!consumer) return;
    while (this.pending.length > 0) {
      const body = this.pending.shift() as string;
      await consumer(body);
    }
  }
}
