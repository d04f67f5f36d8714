import { createHash } from 'node:crypto';
import { GetObjectCommand, NoSuchKey, S3Client } from '@aws-sdk/client-s3';
import { SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createChunkHandler } from '../../../functions/chunk/handler.js';
import { createEmbedBatchHandler } from '../../../functions/embed-batch/handler.js';
import { createIngestHandler } from '../../../functions/ingest/handler.js';
import { createChunker } from '../../../shared/src/chunking/index.js';
import { DEFAULT_CHUNKING } from '../../../shared/src/defaults.js';
import { DEFAULT_EMBEDDING_MODEL } from '../../../shared/src/embeddings/factory.js';
import { ValidationError } from '../../../shared/src/errors.js';
import { readChunkBatch, writeChunkBatches } from '../../../shared/src/ingest/batches.js';
import { readStatus, writeVersion } from '../../../shared/src/ingest/knowledge-base.js';
import {
  COLLECTION,
  context,
  createTestRuntime,
  FAQ,
  getTestEvent,
  LEAVE_POLICY,
  s3Body,
  sentBodies,
  sqsEvent,
  type TestRuntime,
} from './helpers.js';

const s3Mock = mockClient(S3Client);
const sqsMock = mockClient(SQSClient);
const LEAVE_KEY = 'guides/leave policy.md';
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

describe('knowledge-base handlers (ingest → chunk → embed-batch)', () => {
  let rt: TestRuntime;
  let ingest: ReturnType<typeof createIngestHandler>;
  let chunk: ReturnType<typeof createChunkHandler>;
  let embed: ReturnType<typeof createEmbedBatchHandler>;

  beforeAll(() => {
    rt = createTestRuntime();
    ingest = createIngestHandler(rt);
    chunk = createChunkHandler(rt);
    embed = createEmbedBatchHandler(rt);
  });
  afterAll(async () => {
    await rt.close();
  });
  beforeEach(() => {
    s3Mock.reset();
    sqsMock.reset();
    sqsMock.on(SendMessageBatchCommand).resolves({ Successful: [], Failed: [] });
    s3Mock.on(GetObjectCommand, { Key: LEAVE_KEY }).resolves({ Body: s3Body(LEAVE_POLICY) });
    s3Mock.on(GetObjectCommand, { Key: 'faq.txt' }).resolves({ Body: s3Body(FAQ) });
    s3Mock
      .on(GetObjectCommand, { Key: 'gone.md' })
      .rejects(new NoSuchKey({ message: 'gone', $metadata: { httpStatusCode: 404 } }));
  });

  async function runFlow(event: SQSEvent): Promise<void> {
    await ingest(event, context);
    const requests = sentBodies(sqsMock, 'chunk');
    sqsMock.resetHistory();
    await chunk(sqsEvent(requests), context);
    const batches = sentBodies(sqsMock, 'embed');
    sqsMock.resetHistory();
    const out = (await embed(sqsEvent(batches), context)) as SQSBatchResponse;
    expect(out.batchItemFailures).toEqual([]);
  }

  it('queues a created object for chunking with its decoded key and content hash', async () => {
    // Prepare
    const event = getTestEvent<SQSEvent>('sqs-s3-object-created');

    // Act
    const out = await ingest(event, context);

    // Assess
    expect(out).toEqual({ batchItemFailures: [] });
    expect(s3Mock.commandCalls(GetObjectCommand)[0]?.args[0].input).toEqual({
      Bucket: 'ai4rag-documents',
      Key: LEAVE_KEY,
    });
    const [body, ...rest] = sentBodies(sqsMock, 'chunk').map((b) => JSON.parse(b));
    expect(rest).toEqual([]);
    expect(body).toMatchObject({
      collection: COLLECTION,
      embeddingModel: DEFAULT_EMBEDDING_MODEL,
      chunking: { method: 'recursive', chunkSize: 512, chunkOverlap: 64 },
      documentId: LEAVE_KEY,
      contentHash: sha256(LEAVE_POLICY),
      sourceKey: LEAVE_KEY,
      document: { key: LEAVE_KEY, title: 'Leave policy', format: 'md' },
    });
    expect((await readStatus(rt.objectStore, COLLECTION, LEAVE_KEY))?.status).toBe('pending');
  });

  it('fails only the bad records of a batch and ignores the S3 test event', async () => {
    // Prepare
    const event = getTestEvent<SQSEvent>('sqs-s3-mixed-batch');

    // Act
    const out = await ingest(event, context);

    // Assess
    expect(out).toEqual({ batchItemFailures: [{ itemIdentifier: 'msg-bad-json' }] });
    expect(sentBodies(sqsMock, 'chunk').map((b) => JSON.parse(b).documentId)).toEqual(['faq.txt']);
  });

  it('chunks a request into a batch object and one embed message per batch', async () => {
    // Prepare
    await ingest(getTestEvent<SQSEvent>('sqs-s3-object-created'), context);
    const requests = sentBodies(sqsMock, 'chunk');
    sqsMock.resetHistory();
    const expected = await createChunker(DEFAULT_CHUNKING).chunk(
      JSON.parse(requests[0] ?? '').document,
    );

    // Act
    const out = await chunk(sqsEvent(requests), context);

    // Assess
    expect(out).toEqual({ batchItemFailures: [] });
    const version = writeVersion(LEAVE_KEY, sha256(LEAVE_POLICY), '0055AED6DCD90281E5');
    const prefix = `batches/${COLLECTION}/guides%2Fleave%20policy.md/${sha256(LEAVE_POLICY)}/${sha256(version).slice(0, 16)}`;
    expect(sentBodies(sqsMock, 'embed')).toEqual([
      JSON.stringify({ batchKey: `${prefix}/0.json` }),
    ]);
    const batch = await readChunkBatch(rt.objectStore, `${prefix}/0.json`);
    expect(batch).toMatchObject({ index: 0, total: 1, collection: COLLECTION });
    expect(batch.chunks.map((c) => c.id)).toEqual(expected.map((c) => c.id));
    expect(await rt.objectStore.exists(`${prefix}/manifest.json`)).toBe(true);
  });

  it('stores the chunks and commits the document once its last batch is embedded, idempotently', async () => {
    // Prepare
    await ingest(getTestEvent<SQSEvent>('sqs-s3-object-created'), context);
    await chunk(sqsEvent(sentBodies(sqsMock, 'chunk')), context);
    const embedEvent = sqsEvent(sentBodies(sqsMock, 'embed'));
    const expectedChunks = (
      await createChunker(DEFAULT_CHUNKING).chunk(
        JSON.parse(sentBodies(sqsMock, 'chunk')[0] ?? '').document,
      )
    ).length;

    // Act
    const first = await embed(embedEvent, context);
    const retry = await embed(structuredClone(embedEvent), context);

    // Assess
    expect(first).toEqual({ batchItemFailures: [] });
    expect(retry).toEqual({ batchItemFailures: [] });
    const store = await rt.openStore(COLLECTION, await rt.embedder());
    const record = await store.getDocument(LEAVE_KEY);
    expect(record).toMatchObject({
      documentId: LEAVE_KEY,
      contentHash: sha256(LEAVE_POLICY),
      chunkCount: expectedChunks,
      metadata: { indexing: 'recursive:512:64', format: 'md', source_key: LEAVE_KEY },
    });
    expect((await store.getChunksBySequence(LEAVE_KEY, 1, 100)).length).toBe(expectedChunks);
    expect(await readStatus(rt.objectStore, COLLECTION, LEAVE_KEY)).toMatchObject({
      status: 'indexed',
      chunkCount: expectedChunks,
    });
  });

  it('skips an unchanged object without sending a chunk request', async () => {
    // Prepare
    await runFlow(getTestEvent<SQSEvent>('sqs-s3-object-created'));
    sqsMock.resetHistory();

    // Act
    const out = await ingest(getTestEvent<SQSEvent>('sqs-s3-object-created'), context);

    // Assess
    expect(out).toEqual({ batchItemFailures: [] });
    expect(sqsMock.commandCalls(SendMessageBatchCommand)).toHaveLength(0);
  });

  it('deletes the chunks and record of a removed object', async () => {
    // Prepare
    await runFlow(getTestEvent<SQSEvent>('sqs-s3-object-created'));
    const store = await rt.openStore(COLLECTION, await rt.embedder());

    // Act
    const out = await ingest(getTestEvent<SQSEvent>('sqs-s3-object-removed'), context);

    // Assess
    expect(out).toEqual({ batchItemFailures: [] });
    expect(await store.getDocument(LEAVE_KEY)).toBeUndefined();
    expect(await store.getChunksBySequence(LEAVE_KEY, 1, 100)).toEqual([]);
    expect(await readStatus(rt.objectStore, COLLECTION, LEAVE_KEY)).toBeUndefined();
  });

  it('records an unsupported upload as failed without retrying it', async () => {
    // Prepare
    s3Mock.on(GetObjectCommand, { Key: 'tool.exe' }).resolves({ Body: s3Body('MZ') });
    const event = getTestEvent<SQSEvent>('sqs-s3-object-created');
    const body = JSON.parse(event.Records[0]?.body ?? '');
    body.Records[0].s3.object.key = 'tool.exe';
    (event.Records[0] as { body: string }).body = JSON.stringify(body);

    // Act
    const out = await ingest(event, context);

    // Assess
    expect(out).toEqual({ batchItemFailures: [] });
    expect(await readStatus(rt.objectStore, COLLECTION, 'tool.exe')).toMatchObject({
      status: 'failed',
    });
    expect(sentBodies(sqsMock, 'chunk')).toEqual([]);
  });

  it('sends a large document as an artifacts key, never in the message', async () => {
    // Prepare
    const paragraph = 'Travel expenses are reimbursed within thirty days of the claim. ';
    const big = `${paragraph.repeat(4000)}\n`;
    s3Mock.on(GetObjectCommand, { Key: 'big.txt' }).resolves({ Body: s3Body(big) });
    const event = getTestEvent<SQSEvent>('sqs-s3-object-created');
    const body = JSON.parse(event.Records[0]?.body ?? '');
    body.Records[0].s3.object.key = 'big.txt';
    (event.Records[0] as { body: string }).body = JSON.stringify(body);

    // Act
    await ingest(event, context);
    const [message] = sentBodies(sqsMock, 'chunk');
    sqsMock.resetHistory();
    const out = await chunk(sqsEvent([message ?? '']), context);

    // Assess
    const request = JSON.parse(message ?? '');
    expect(Buffer.byteLength(message ?? '')).toBeLessThan(2048);
    expect(request.document).toBeUndefined();
    expect(request.documentKey).toBe(`documents/${COLLECTION}/big.txt/${sha256(big)}.json`);
    expect(out).toEqual({ batchItemFailures: [] });
    expect(sentBodies(sqsMock, 'embed').length).toBeGreaterThan(0);
  });

  it('embeds an optimizer batch from a direct invocation, idempotently', async () => {
    // Prepare
    const collection = 'ai4rag_trial_t1';
    const doc = { key: 'faq.txt', text: FAQ, blocks: [], contentHash: sha256(FAQ), format: 'txt' };
    const chunks = await createChunker({
      method: 'recursive',
      chunkSize: 128,
      chunkOverlap: 0,
    }).chunk(doc as never);
    const [batchKey] = await writeChunkBatches(
      rt.objectStore,
      'experiments/e1/trials/t1/batches',
      {
        collection,
        embeddingModel: DEFAULT_EMBEDDING_MODEL,
        chunking: { method: 'recursive', chunkSize: 128, chunkOverlap: 0 },
      },
      chunks,
    );
    const task = {
      experimentId: 'e1',
      prefix: 'experiments/e1/trials/t1/',
      trialId: 't1',
      collection,
      batchKey: batchKey as string,
    };

    // Act
    const first = await embed(task, context);
    const again = await embed(task, context);

    // Assess
    const expected = {
      batchKey,
      collection,
      chunks: chunks.length,
      committed: false,
      experimentId: 'e1',
      trialId: 't1',
    };
    expect(first).toEqual(expected);
    expect(again).toEqual(expected);
    const store = await rt.openStore(collection, await rt.embedder());
    expect((await store.stats()).chunks).toBe(chunks.length);
  });

  it('rejects a direct invocation whose collection differs from the batch', async () => {
    // Prepare
    const [batchKey] = await writeChunkBatches(
      rt.objectStore,
      'experiments/e2/batches',
      {
        collection: 'ai4rag_trial_a',
        embeddingModel: DEFAULT_EMBEDDING_MODEL,
        chunking: DEFAULT_CHUNKING,
      },
      [{ id: 'x', text: 'hello', metadata: { document_id: 'd', sequence_number: 1 } }],
    );

    // Act
    const call = embed(
      {
        experimentId: 'e2',
        prefix: 'experiments/e2/',
        trialId: 't',
        collection: 'ai4rag_trial_b',
        batchKey: batchKey as string,
      },
      context,
    );

    // Assess
    await expect(call).rejects.toThrow(ValidationError);
    await expect(call).rejects.toThrow('belongs to ai4rag_trial_a, not ai4rag_trial_b');
  });
});
