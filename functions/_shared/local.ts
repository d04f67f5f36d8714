/**
 * Runs the knowledge-base flow in process: binds the local runtime's queues to the same ingest, chunk and
 * embed-batch handlers that SQS triggers in the cloud, each message delivered as a one-record SQS event.
 */
import { randomUUID } from 'node:crypto';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { Ai4ragError } from '../../shared/src/errors.js';
import { createChunkHandler } from '../chunk/handler.js';
import { createEmbedBatchHandler } from '../embed-batch/handler.js';
import { createIngestHandler } from '../ingest/handler.js';
import type { LocalRuntime, QueueName } from './runtime.js';

/** A message of a local queue failed in its handler. */
export class LocalQueueError extends Ai4ragError {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'LocalQueueError';
  }
}

/** A minimal Lambda context for local invocations. */
export function localContext(functionName: string): Context {
  return {
    callbackWaitsForEmptyEventLoop: false,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:local:000000000000:function:${functionName}`,
    memoryLimitInMB: '1024',
    awsRequestId: randomUUID(),
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: 'local',
    getRemainingTimeInMillis: () => 900_000,
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}

/** Wraps a message body as a one-record SQS event of queue `name`. */
export function sqsEventOf(name: string, body: string): SQSEvent {
  const record: SQSRecord = {
    messageId: randomUUID(),
    receiptHandle: 'local',
    body,
    attributes: {
      ApproximateReceiveCount: '1',
      SentTimestamp: String(Date.now()),
      SenderId: 'local',
      ApproximateFirstReceiveTimestamp: String(Date.now()),
    },
    messageAttributes: {},
    md5OfBody: '',
    eventSource: 'aws:sqs',
    eventSourceARN: `arn:aws:sqs:local:000000000000:${name}`,
    awsRegion: 'local',
  };
  return { Records: [record] };
}

/** An S3 event notification of one object, as S3 sends it to SQS (key URL-encoded, spaces as `+`). */
let lastSequencer = 0n;

/**
 * A local stand-in for S3's per-key `sequencer`: strictly increasing hexadecimal (microseconds since the epoch,
 * bumped past the previous value), so local events order as S3's do.
 */
export function localSequencer(): string {
  const now = BigInt(Date.now()) * 1000n;
  lastSequencer = now > lastSequencer ? now : lastSequencer + 1n;
  return lastSequencer.toString(16).toUpperCase().padStart(16, '0');
}

export function s3Notification(
  eventName: 'ObjectCreated:Put' | 'ObjectRemoved:Delete',
  bucket: string,
  key: string,
): Record<string, unknown> {
  return {
    Records: [
      {
        eventVersion: '2.1',
        eventSource: 'aws:s3',
        awsRegion: 'local',
        eventTime: new Date().toISOString(),
        eventName,
        s3: {
          s3SchemaVersion: '1.0',
          bucket: { name: bucket, arn: `arn:aws:s3:::${bucket}` },
          object: {
            key: encodeURIComponent(key).replace(/%20/g, '+').replace(/%2F/g, '/'),
            sequencer: localSequencer(),
          },
        },
      },
    ],
  };
}

/**
 * Binds the three local queues to handlers built on `runtime`. A message whose handler reports a failure
 * raises {@link LocalQueueError} to the sender (there is no DLQ locally; the caller sees the error).
 * @example bindLocalQueues(runtime); await runtime.queue('ingest').send([s3Notification(...)]);
 */
export async function bindLocalQueues(runtime: LocalRuntime): Promise<void> {
  const handlers: Record<QueueName, (e: SQSEvent, c: Context) => Promise<unknown>> = {
    ingest: createIngestHandler(runtime),
    chunk: createChunkHandler(runtime),
    embed: createEmbedBatchHandler(runtime) as (e: SQSEvent, c: Context) => Promise<unknown>,
  };
  for (const name of ['ingest', 'chunk', 'embed'] as const) {
    await runtime.queues[name].bind(async (body) => {
      const out = (await handlers[name](sqsEventOf(name, body), localContext(name))) as
        | SQSBatchResponse
        | undefined;
      if (out && out.batchItemFailures.length > 0) {
        throw new LocalQueueError(`the ${name} step failed for a message (see the log)`);
      }
    });
  }
}
