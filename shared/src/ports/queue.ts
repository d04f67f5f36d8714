/**
 * The work-queue port: SQS in the cloud (functions/_shared/queue.ts), an in-process queue on one machine. Messages
 * are small JSON objects (large payloads travel as object-store keys), so the same producers work with both.
 */
import { Ai4ragError, ValidationError } from '../errors.js';

/** Largest message body accepted: SQS allows 256 KiB; the rest is headroom for attributes and encoding. */
export const MAX_MESSAGE_BYTES = 200 * 1024;

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

/** A message as its JSON body, refused when over {@link MAX_MESSAGE_BYTES}. */
export function serializeMessage(message: unknown): string {
  const body = JSON.stringify(message);
  if (Buffer.byteLength(body, 'utf8') > MAX_MESSAGE_BYTES) {
    throw new ValidationError(
      `queue message of ${Buffer.byteLength(body, 'utf8')} bytes exceeds ${MAX_MESSAGE_BYTES}; pass an object key instead`,
    );
  }
  return body;
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
    for (const message of messages) this.pending.push(serializeMessage(message));
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
