import { S3Client } from '@aws-sdk/client-s3';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAwsRuntime, type LocalRuntime } from '../../../functions/_shared/runtime.js';
import { createDocumentsHandler } from '../../../functions/documents/handler.js';
import { createGenerateHandler } from '../../../functions/generate/handler.js';
import { createSearchHandler } from '../../../functions/search/handler.js';
import { COLLECTION, context, getTestEvent, LEAVE_KEY, startIndexedRuntime } from './helpers.js';

type Handler = (event: APIGatewayProxyEvent, ctx: typeof context) => Promise<APIGatewayProxyResult>;

function parse(result: APIGatewayProxyResult): Record<string, unknown> {
  return JSON.parse(result.body) as Record<string, unknown>;
}

function withBody(name: string, body: unknown): APIGatewayProxyEvent {
  const event = getTestEvent<APIGatewayProxyEvent>(name);
  event.body = typeof body === 'string' ? body : JSON.stringify(body);
  return event;
}

describe('query API handlers', () => {
  let rt: LocalRuntime;
  let search: Handler;
  let generate: Handler;
  let documents: Handler;

  beforeAll(async () => {
    rt = await startIndexedRuntime('ai4rag-api-');
    search = createSearchHandler(rt) as unknown as Handler;
    generate = createGenerateHandler(rt) as unknown as Handler;
    documents = createDocumentsHandler(rt) as unknown as Handler;
  });
  afterAll(async () => {
    await rt.close();
  });

  it('returns hits with document key, text and score', async () => {
    // Act
    const out = await search(getTestEvent('apigw-search'), context);

    // Assess
    expect(out.statusCode).toBe(200);
    const body = parse(out) as { collection: string; results: Record<string, unknown>[] };
    expect(body.collection).toBe(COLLECTION);
    expect(body.results.length).toBeGreaterThan(0);
    expect(body.results.length).toBeLessThanOrEqual(3);
    expect(body.results[0]).toMatchObject({ document_key: LEAVE_KEY, sequence_number: 1 });
    expect(body.results[0]?.text).toContain('25 days of annual leave');
    expect(typeof body.results[0]?.score).toBe('number');
  });

  it.each([
    ['an empty query', { query: '  ' }, 'query'],
    ['an unknown field', { query: 'leave', top: 3 }, 'top'],
    ['k out of range', { query: 'leave', k: 0 }, 'k'],
    [
      'a ranker on vector search',
      { query: 'leave', search_mode: 'vector', ranker_strategy: 'rrf' },
      'rankerStrategy',
    ],
  ])('answers 400 for %s', async (_name, body, field) => {
    // Act
    const out = await search(withBody('apigw-search', body), context);

    // Assess
    expect(out.statusCode).toBe(400);
    const error = (parse(out) as { error: { code: string; message: string } }).error;
    expect(error.code).toBe('validation_error');
    expect(error.message).toContain(field);
  });

  it('answers 400 for a body that is not valid JSON', async () => {
    // Act
    const out = await search(withBody('apigw-search', '{"query": '), context);

    // Assess
    expect(out.statusCode).toBe(400);
    const error = (parse(out) as { error: { code: string; message: string } }).error;
    expect(error.code).toBe('invalid_json');
    expect(error.message).toMatch(/^request body is not valid JSON/);
  });

  it('answers 404 when the collection does not exist', async () => {
    // Prepare
    const other = createSearchHandler({
      ...rt,
      config: { ...rt.config, collection: 'ai4rag_missing' },
    }) as unknown as Handler;

    // Act
    const out = await other(getTestEvent('apigw-search'), context);

    // Assess
    expect(out.statusCode).toBe(404);
    expect((parse(out) as { error: { code: string } }).error.code).toBe('not_found');
  });

  it('generates an answer with its sources and timing', async () => {
    // Act
    const out = await generate(getTestEvent('apigw-generate'), context);

    // Assess
    expect(out.statusCode).toBe(200);
    const body = parse(out) as {
      answer: string;
      model: string;
      reference_documents: { document_key: string }[];
      timing: Record<string, number>;
    };
    expect(body.model).toBe('local/extractive-v1');
    expect(body.answer).toContain('25 days');
    expect(body.reference_documents[0]?.document_key).toBe(LEAVE_KEY);
    expect(Object.keys(body.timing)).toEqual([
      'retrieve_ms',
      'rerank_ms',
      'generate_ms',
      'total_ms',
    ]);
  });

  it('continues a conversation on /chat', async () => {
    // Act
    const out = await generate(getTestEvent('apigw-chat'), context);

    // Assess
    expect(out.statusCode).toBe(200);
    const body = parse(out) as {
      answer: string;
      conversation: { role: string; content: string }[];
    };
    expect(body.conversation).toEqual([
      { role: 'user', content: 'How many days of annual leave do employees get?' },
      { role: 'assistant', content: body.answer },
    ]);
  });

  it('answers 400 for a chat whose last turn is not the user', async () => {
    // Act
    const out = await generate(
      withBody('apigw-chat', { messages: [{ role: 'assistant', content: 'hi' }] }),
      context,
    );

    // Assess
    expect(out.statusCode).toBe(400);
  });

  it('lists documents in pages with a cursor', async () => {
    // Prepare
    const event = getTestEvent<APIGatewayProxyEvent>('apigw-list-documents');
    event.queryStringParameters = { limit: '1' };

    // Act
    const first = parse(await documents(event, context)) as {
      documents: { document_key: string; status: string }[];
      next_cursor: string;
    };
    event.queryStringParameters = { limit: '1', cursor: first.next_cursor };
    const second = parse(await documents(event, context)) as typeof first;

    // Assess
    expect(first.documents.map((d) => [d.document_key, d.status])).toEqual([
      ['faq.txt', 'indexed'],
    ]);
    expect(second.documents.map((d) => d.document_key)).toEqual([LEAVE_KEY]);
    expect(second.next_cursor).toBeNull();
  });

  it('returns one document by its URL-encoded key, and 404 for an unknown one', async () => {
    // Prepare
    const missing = getTestEvent<APIGatewayProxyEvent>('apigw-get-document');
    missing.pathParameters = { id: 'nope.md' };

    // Act
    const found = await documents(getTestEvent('apigw-get-document'), context);
    const notFound = await documents(missing, context);

    // Assess
    expect(found.statusCode).toBe(200);
    expect(parse(found)).toMatchObject({ document_key: LEAVE_KEY, status: 'indexed' });
    expect(notFound.statusCode).toBe(404);
  });

  it('reports stats with document counts by status', async () => {
    // Prepare
    const event = getTestEvent<APIGatewayProxyEvent>('apigw-list-documents');
    Object.assign(event, { resource: '/stats', path: '/stats', queryStringParameters: null });

    // Act
    const out = await documents(event, context);

    // Assess
    expect(parse(out)).toMatchObject({
      collection: COLLECTION,
      store: 'pglite',
      documents: 2,
      dimension: 384,
      embedding_model: 'local/feature-hash-v1-384',
      by_status: { pending: 0, indexed: 2, failed: 0 },
    });
    // The store's own figure (its exactness is checked in the pgvector suite), passed through as it is.
    const size = (parse(out) as { size_bytes: unknown }).size_bytes;
    expect(Number.isSafeInteger(size)).toBe(true);
    expect(size).toBeGreaterThan(0);
  });

  it('deletes a document: its object, chunks and record', async () => {
    // Prepare
    const event = getTestEvent<APIGatewayProxyEvent>('apigw-get-document');
    event.httpMethod = 'DELETE';
    event.pathParameters = { id: 'faq.txt' };

    // Act
    const out = await documents(event, context);
    const again = await documents(event, context);

    // Assess
    expect(out.statusCode).toBe(200);
    expect(parse(out)).toMatchObject({ document_key: 'faq.txt', deleted: true });
    expect((parse(out) as { chunks_deleted: number }).chunks_deleted).toBeGreaterThan(0);
    expect(await rt.documents.exists('faq.txt')).toBe(false);
    expect(again.statusCode).toBe(404);
  });

  it('answers /health without touching the store', async () => {
    // Prepare
    const event = getTestEvent<APIGatewayProxyEvent>('apigw-list-documents');
    Object.assign(event, { resource: '/health', path: '/health', queryStringParameters: null });

    // Act
    const out = await documents(event, context);

    // Assess
    expect(parse(out)).toEqual({ status: 'ok', collection: COLLECTION, store: 'pglite' });
  });
});

describe('POST /uploads on the AWS runtime', () => {
  const runtime = createAwsRuntime(
    {
      AI4RAG_STORE: 'pgvector',
      AI4RAG_COLLECTION: COLLECTION,
      AI4RAG_DOCUMENTS_BUCKET: 'ai4rag-documents',
    },
    {
      s3: new S3Client({
        region: 'eu-west-1',
        credentials: { accessKeyId: 'AKIAEXAMPLE', secretAccessKey: 'secret' },
      }),
    },
  );
  const documents = createDocumentsHandler(runtime) as unknown as Handler;
  const upload = (body: unknown) => {
    const event = getTestEvent<APIGatewayProxyEvent>('apigw-search');
    Object.assign(event, { resource: '/uploads', path: '/uploads', body: JSON.stringify(body) });
    return documents(event, context);
  };

  it('returns a pre-signed PUT URL that expires in 300 seconds', async () => {
    // Act
    const out = await upload({ key: 'guides/new policy.md' });

    // Assess
    expect(out.statusCode).toBe(200);
    const body = parse(out) as { url: string; headers: Record<string, string>; expires_in: number };
    const url = new URL(body.url);
    expect(url.hostname).toBe('ai4rag-documents.s3.eu-west-1.amazonaws.com');
    expect(url.pathname).toBe('/guides/new%20policy.md');
    expect(url.searchParams.get('X-Amz-Expires')).toBe('300');
    expect(body.headers).toEqual({ 'content-type': 'text/markdown' });
    expect(body.expires_in).toBe(300);
  });

  it.each([
    ['a climbing key', '../secrets.md'],
    ['an absolute key', '/etc/passwd.txt'],
    ['an unsupported type', 'tool.exe'],
    ['a hidden segment', 'guides/.env.md'],
  ])('rejects %s with 400', async (_name, key) => {
    // Act
    const out = await upload({ key });

    // Assess
    expect(out.statusCode).toBe(400);
  });
});
