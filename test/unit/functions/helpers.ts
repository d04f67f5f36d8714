/** Shared set-up of the handler tests: event fixtures, a Lambda context, and a runtime over mocked AWS clients. */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { S3Client } from '@aws-sdk/client-s3';
import { SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { Context, SQSEvent } from 'aws-lambda';
import type { AwsClientStub } from 'aws-sdk-client-mock';
import { bindLocalQueues, s3Notification } from '../../../functions/_shared/local.js';
import { SqsWorkQueue } from '../../../functions/_shared/queue.js';
import {
  createLocalRuntime,
  type LocalRuntime,
  type QueueName,
  type Runtime,
} from '../../../functions/_shared/runtime.js';
import { S3ObjectStore } from '../../../functions/_shared/s3-object-store.js';
import { MemoryObjectStore } from '../../../shared/src/ports/object-store.js';

const FIXTURES = resolve(import.meta.dirname, '../../fixtures/events');

/** A fresh copy of an event fixture. */
export function getTestEvent<T>(name: string): T {
  return structuredClone(JSON.parse(readFileSync(join(FIXTURES, `${name}.json`), 'utf8')) as T);
}

/** A typed Lambda context. */
export const context: Context = {
  callbackWaitsForEmptyEventLoop: false,
  functionName: 'test',
  functionVersion: '$LATEST',
  invokedFunctionArn: 'arn:aws:lambda:eu-west-1:123456789012:function:test',
  memoryLimitInMB: '1024',
  awsRequestId: 'c6af9ac6-7b61-11e6-9a41-93e8deadbeef',
  logGroupName: '/aws/lambda/test',
  logStreamName: '2026/11/30/[$LATEST]test',
  getRemainingTimeInMillis: () => 30_000,
  done: () => undefined,
  fail: () => undefined,
  succeed: () => undefined,
};

export const REGION = 'eu-west-1';
export const DOCUMENTS_BUCKET = 'ai4rag-documents';
export const COLLECTION = 'ai4rag_kb_test';

export function queueUrl(name: QueueName): string {
  return `https://sqs.${REGION}.amazonaws.com/123456789012/ai4rag-${name}`;
}

/** The test runtime: documents in (mocked) S3, queues on (mocked) SQS, artifacts in memory, PGlite in memory. */
export interface TestRuntime extends Runtime {
  objectStore: MemoryObjectStore;
  local: LocalRuntime;
}

export function createTestRuntime(env: Record<string, string> = {}): TestRuntime {
  const local = createLocalRuntime({
    dataDir: mkdtempSync(join(tmpdir(), 'ai4rag-fn-')),
    inMemory: true,
    env: { AI4RAG_COLLECTION: COLLECTION, ...env },
  });
  const s3 = new S3Client({ region: REGION });
  const sqs = new SQSClient({ region: REGION });
  const queues = new Map<QueueName, SqsWorkQueue>();
  return {
    ...local,
    local,
    objectStore: new MemoryObjectStore(),
    documents: new S3ObjectStore(s3, DOCUMENTS_BUCKET),
    queue: (name) => {
      let q = queues.get(name);
      if (!q) {
        q = new SqsWorkQueue(sqs, queueUrl(name));
        queues.set(name, q);
      }
      return q;
    },
    close: () => local.close(),
  };
}

/** The bodies sent to one queue, in order. */
export function sentBodies(sqsMock: AwsClientStub<SQSClient>, name: QueueName): string[] {
  return sqsMock
    .commandCalls(SendMessageBatchCommand)
    .filter((c) => c.args[0].input.QueueUrl === queueUrl(name))
    .flatMap((c) => (c.args[0].input.Entries ?? []).map((e) => e.MessageBody ?? ''));
}

/** Wraps message bodies as one SQS event. */
export function sqsEvent(bodies: string[], queue = 'ai4rag-test'): SQSEvent {
  return {
    Records: bodies.map((body, i) => ({
      messageId: `m${i + 1}`,
      receiptHandle: `r${i + 1}`,
      body,
      attributes: {
        ApproximateReceiveCount: '1',
        SentTimestamp: '1764489600000',
        SenderId: 'AIDAEXAMPLE',
        ApproximateFirstReceiveTimestamp: '1764489600001',
      },
      messageAttributes: {},
      md5OfBody: '',
      eventSource: 'aws:sqs',
      eventSourceARN: `arn:aws:sqs:${REGION}:123456789012:${queue}`,
      awsRegion: REGION,
    })),
  };
}

/** A GetObject body as the SDK returns it (only what S3ObjectStore uses). */
export function s3Body(text: string): never {
  const bytes = new TextEncoder().encode(text);
  return { transformToByteArray: async () => bytes } as never;
}

export const LEAVE_POLICY = `# Leave policy

## Annual leave

Employees get 25 days of annual leave per calendar year. Unused days may be carried over until March 31.

## Sick leave

Sick leave requires a doctor's note after three consecutive days of absence.
`;

export const FAQ = `Expenses FAQ

The approval limit for expenses is 500 euros per claim. Claims above the limit need the approval of a director.
`;

/** Key of {@link LEAVE_POLICY} in {@link startIndexedRuntime}'s knowledge base (with a space, as users name files). */
export const LEAVE_KEY = 'guides/leave policy.md';

/**
 * A local runtime (PGlite in memory, queues bound to the handlers) whose collection {@link COLLECTION} holds
 * {@link LEAVE_POLICY} at {@link LEAVE_KEY} and {@link FAQ} at `faq.txt`, indexed through the ingest flow.
 */
export async function startIndexedRuntime(prefix: string): Promise<LocalRuntime> {
  const rt = createLocalRuntime({
    dataDir: mkdtempSync(join(tmpdir(), prefix)),
    inMemory: true,
    env: { AI4RAG_COLLECTION: COLLECTION },
  });
  await bindLocalQueues(rt);
  await rt.documents.put(LEAVE_KEY, LEAVE_POLICY);
  await rt.documents.put('faq.txt', FAQ);
  await rt
    .queue('ingest')
    .send([
      s3Notification('ObjectCreated:Put', 'local', LEAVE_KEY),
      s3Notification('ObjectCreated:Put', 'local', 'faq.txt'),
    ]);
  return rt;
}
