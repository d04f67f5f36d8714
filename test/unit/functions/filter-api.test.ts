import { GetObjectCommand, NoSuchKey, S3Client } from '@aws-sdk/client-s3';
import { SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context, SQSEvent } from 'aws-lambda';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseServingPattern } from '../../../functions/_shared/env.js';
import { s3Notification } from '../../../functions/_shared/local.js';
import { retrieverOptionsFor } from '../../../functions/_shared/query.js';
import type { LocalRuntime, RuntimeConfig } from '../../../functions/_shared/runtime.js';
import { S3ObjectStore } from '../../../functions/_shared/s3-object-store.js';
import { createChunkHandler } from '../../../functions/chunk/handler.js';
import { createEmbedBatchHandler } from '../../../functions/embed-batch/handler.js';
import { createIngestHandler } from '../../../functions/ingest/handler.js';
import { createSearchHandler } from '../../../functions/search/handler.js';
import {
  COLLECTION,
  context,
  createTestRuntime,
  getTestEvent,
  LEAVE_KEY,
  s3Body,
  sentBodies,
  sqsEvent,
  startIndexedRuntime,
} from './helpers.js';

type Handler = (event: APIGatewayProxyEvent, ctx: Context) => Promise<APIGatewayProxyResult>;

let rt: LocalRuntime;
let search: Handler;

beforeAll(async () => {
  rt = await startIndexedRuntime('ai4rag-filter-api-');
  // A sidecar uploaded later: its notification re-ingests faq.txt with the metadata.
  await rt.documents.put('faq.txt.metadata.json', '{"department": "finance", "year": 2025}');
  await rt
    .queue('ingest')
    .send([s3Notification('ObjectCreated:Put', 'local', 'faq.txt.metadata.json')]);
  search = createSearchHandler(rt) as unknown as Handler;
});
afterAll(async () => {
  await rt.close();
});

function post(body: unknown): Promise<APIGatewayProxyResult> {
  const event = getTestEvent<APIGatewayProxyEvent>('apigw-search');
  return search(
    { ...event, body: typeof body === 'string' ? body : JSON.stringify(body) },
    context,
  );
}

describe('POST /search with a metadata filter', () => {
  it('returns only chunks whose user metadata matches', async () => {
    // Act
    const all = await post({ query: 'expenses approval leave', k: 10 });
    const finance = await post({
      query: 'expenses approval leave',
      k: 10,
      filter: { 'user.department': 'finance', 'user.year': { gte: 2025 } },
    });
    const notFinance = await post({
      query: 'expenses approval leave',
      k: 10,
      filter: { not: { 'user.department': { in: ['finance'] } } },
    });
    // Assess
    const keys = (r: APIGatewayProxyResult) =>
      [
        ...new Set(
          (JSON.parse(r.body).results as { document_key: string }[]).map((h) => h.document_key),
        ),
      ].sort();
    expect(finance.statusCode).toBe(200);
    expect(keys(all)).toEqual(['faq.txt', LEAVE_KEY]);
    expect(keys(finance)).toEqual(['faq.txt']);
    expect(keys(notFinance)).toEqual([LEAVE_KEY]);
    const hit = JSON.parse(finance.body).results[0];
    expect(hit.metadata.user).toEqual({ department: 'finance', year: 2025 });
  });

  it.each([
    [
      '__proto__',
      '{"query": "leave", "filter": {"__proto__": {"document_id": "faq.txt"}}}',
      /key "__proto__" is refused/,
    ],
    [
      'an unknown field',
      { query: 'leave', filter: { department: 'hr' } },
      /unknown field "department"/,
    ],
    [
      'an unknown operator',
      { query: 'leave', filter: { 'user.year': { like: 'x' } } },
      /unknown operator "like"/,
    ],
    [
      'a wrong operand type',
      { query: 'leave', filter: { 'user.year': { in: 2020 } } },
      /filter\.user\.year\.in: expected an array/,
    ],
    ['a non-object', { query: 'leave', filter: ['x'] }, /expected an object/],
  ])('answers 400 for %s, naming it', async (_name, body, message) => {
    // Act
    const out = await post(body);
    // Assess
    expect(out.statusCode).toBe(400);
    const error = JSON.parse(out.body).error as { code: string; message: string };
    expect(error.code).toBe('validation_error');
    expect(error.message).toMatch(message);
  });
});

describe('sidecar objects in the Lambda flow', () => {
  it('re-ingests the object without the metadata when its sidecar is removed, then with it again', async () => {
    // Prepare
    const query = { query: 'expenses approval', k: 10, filter: { 'user.department': 'finance' } };
    // Act
    await rt.documents.delete('faq.txt.metadata.json');
    await rt
      .queue('ingest')
      .send([s3Notification('ObjectRemoved:Delete', 'local', 'faq.txt.metadata.json')]);
    const without = await post(query);
    const unfiltered = await post({ query: 'expenses approval', k: 10 });
    await rt.documents.put('faq.txt.metadata.json', '{"department": "finance", "year": 2025}');
    await rt
      .queue('ingest')
      .send([s3Notification('ObjectCreated:Put', 'local', 'faq.txt.metadata.json')]);
    const again = await post(query);
    // Assess
    expect(JSON.parse(without.body).results).toEqual([]);
    const faqHit = (
      JSON.parse(unfiltered.body).results as { document_key: string; metadata: object }[]
    ).find((h) => h.document_key === 'faq.txt');
    expect(faqHit?.metadata).not.toHaveProperty('user');
    expect(JSON.parse(again.body).results.length).toBeGreaterThan(0);
    const docs = await rt.documents.list('');
    expect(docs).toContain('faq.txt');
  });
});

describe('S3 object metadata', () => {
  it('reads x-amz-meta-* with the body in one GetObject', async () => {
    // Prepare
    const s3 = mockClient(S3Client);
    s3.on(GetObjectCommand, { Key: 'a.txt' }).resolves({
      Body: s3Body('alpha'),
      Metadata: { department: 'ops', 'review-year': '2024' },
    });
    const store = new S3ObjectStore(new S3Client({}), 'bucket');
    // Act
    const got = await store.getWithMetadata('a.txt');
    // Assess
    expect(new TextDecoder().decode(got.body)).toBe('alpha');
    expect(got.metadata).toEqual({ department: 'ops', 'review-year': '2024' });
    expect(s3.commandCalls(GetObjectCommand)).toHaveLength(1);
    s3.restore();
  });
});

describe('the serving pattern filter', () => {
  const pattern = (filter: unknown) =>
    JSON.stringify({
      retrieval: { method: 'simple', number_of_chunks: 3, search_mode: 'vector', filter },
    });

  it('scopes every search, and a request filter narrows it', () => {
    // Prepare
    const config: RuntimeConfig = {
      collection: 'ai4rag_x',
      store: 'pglite',
      embeddingModel: 'local/feature-hash-v1-384',
      chunking: { method: 'recursive', chunkSize: 512, chunkOverlap: 64 },
      servingPattern: parseServingPattern(pattern({ 'user.tenant': 't1' })),
    };
    // Act
    const alone = retrieverOptionsFor(config, {});
    const narrowed = retrieverOptionsFor(config, { filter: { 'user.year': { gte: 2024 } } });
    // Assess
    expect(alone.filter).toEqual({ 'user.tenant': 't1' });
    expect(narrowed.filter).toEqual({
      and: [{ 'user.tenant': 't1' }, { 'user.year': { gte: 2024 } }],
    });
  });

  it('refuses a bad pattern filter at cold start, naming it', () => {
    // Act / Assess
    expect(() => parseServingPattern(pattern({ 'user.tenant': { regex: '.*' } }))).toThrow(
      /retrieval\.filter.*unknown operator "regex"/,
    );
  });
});

describe('S3 user metadata in the Lambda flow', () => {
  it('stores x-amz-meta-* with every chunk (dashes read as _), filterable as user.<key>', async () => {
    // Prepare
    const s3 = mockClient(S3Client);
    const sqs = mockClient(SQSClient);
    sqs.on(SendMessageBatchCommand).resolves({ Successful: [], Failed: [] });
    s3.on(GetObjectCommand).rejects(
      new NoSuchKey({ message: 'no such key', $metadata: { httpStatusCode: 404 } }),
    );
    s3.on(GetObjectCommand, { Key: 'tagged.txt' }).resolves({
      Body: s3Body('The ferry Aurora carries 140 passengers.'),
      Metadata: { department: 'ops', 'review-year': '2024' },
    });
    const trt = createTestRuntime();
    const created = getTestEvent<SQSEvent>('sqs-s3-object-created');
    const record = created.Records[0] as SQSEvent['Records'][number];
    const body = JSON.parse(record.body);
    body.Records[0].s3.object.key = 'tagged.txt';
    try {
      // Act
      await createIngestHandler(trt)(sqsEvent([JSON.stringify(body)]), context);
      const requests = sentBodies(sqs, 'chunk');
      sqs.resetHistory();
      await createChunkHandler(trt)(sqsEvent(requests), context);
      const batches = sentBodies(sqs, 'embed');
      await createEmbedBatchHandler(trt)(sqsEvent(batches), context);
      const store = await trt.openStore(COLLECTION, await trt.embedder());
      const hits = await store.search('ferry passengers', {
        k: 3,
        filter: { 'user.review_year': '2024', 'user.department': { startsWith: 'op' } },
      });
      const none = await store.search('ferry passengers', {
        k: 3,
        filter: { 'user.review_year': 2024 },
      });
      // Assess
      expect(hits.map((h) => h.metadata.document_id)).toEqual(['tagged.txt']);
      expect(hits[0]?.metadata.user).toEqual({ department: 'ops', review_year: '2024' });
      expect(none).toEqual([]);
    } finally {
      await trt.close();
      s3.restore();
      sqs.restore();
    }
  });
});
