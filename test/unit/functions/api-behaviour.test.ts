import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  corsHeaders,
  DeadlineExceededError,
  httpHandler,
  jsonResponse,
  requestBudgetMs,
  withDeadline,
} from '../../../functions/_shared/http.js';
import { createLocalRuntime, type LocalRuntime } from '../../../functions/_shared/runtime.js';
import { createDocumentsHandler } from '../../../functions/documents/handler.js';
import { createGenerateHandler, streamAnswer } from '../../../functions/generate/handler.js';
import { createSearchHandler } from '../../../functions/search/handler.js';
import { createEmbedder } from '../../../shared/src/embeddings/factory.js';
import { OpenAIFoundationModel } from '../../../shared/src/generation/openai-model.js';
import { type FakeOpenAI, startFakeOpenAI } from '../../support/fake-openai-server.js';
import { COLLECTION, context, getTestEvent, startIndexedRuntime } from './helpers.js';

type Handler = (event: APIGatewayProxyEvent, ctx: Context) => Promise<APIGatewayProxyResult>;
type ErrorBody = { error: { code: string; message: string } };

function parse<T = Record<string, unknown>>(result: APIGatewayProxyResult): T {
  return JSON.parse(result.body) as T;
}

function event(name: string, changes: Partial<APIGatewayProxyEvent> = {}): APIGatewayProxyEvent {
  return { ...getTestEvent<APIGatewayProxyEvent>(name), ...changes };
}

/** A context whose Lambda has only `ms` left. */
function contextWithRemaining(ms: number): Context {
  return { ...context, getRemainingTimeInMillis: () => ms };
}

let rt: LocalRuntime;
let search: Handler;
let documents: Handler;

beforeAll(async () => {
  rt = await startIndexedRuntime('ai4rag-behaviour-');
  search = createSearchHandler(rt) as unknown as Handler;
  documents = createDocumentsHandler(rt) as unknown as Handler;
});
afterAll(async () => {
  await rt.close();
});

describe('request bodies', () => {
  it.each([
    ['malformed JSON', 'application/json', '{"query": ', 400, 'invalid_json'],
    ['malformed JSON without a content type', undefined, '{"query"', 400, 'invalid_json'],
    ['an empty body', 'application/json', '', 400, 'invalid_json'],
    ['a text body', 'text/plain', 'leave', 415, 'unsupported_media_type'],
    [
      'a form body, even holding JSON',
      'application/x-www-form-urlencoded',
      '{}',
      415,
      'unsupported_media_type',
    ],
  ])('answers %s (content type %s)', async (_name, contentType, body, status, code) => {
    // Prepare
    const headers: Record<string, string> = contentType ? { 'Content-Type': contentType } : {};

    // Act
    const out = await search(event('apigw-search', { headers, body }), context);

    // Assess
    expect(out.statusCode).toBe(status);
    expect(parse<ErrorBody>(out).error.code).toBe(code);
    expect(out.headers?.['content-type']).toBe('application/json; charset=utf-8');
  });

  it.each([['application/json; charset=utf-8'], ['application/vnd.api+json']])(
    'accepts JSON sent as %s',
    async (contentType) => {
      // Act
      const out = await search(
        event('apigw-search', { headers: { 'content-type': contentType } }),
        context,
      );

      // Assess
      expect(out.statusCode).toBe(200);
    },
  );

  it('accepts a JSON body without a content type (curl without -H)', async () => {
    // Act
    const out = await search(event('apigw-search', { headers: {} }), context);

    // Assess
    expect(out.statusCode).toBe(200);
  });
});

describe('the streaming answer (Function URL)', () => {
  it('answers 400 invalid_json, before any event, for a malformed body', async () => {
    // Prepare
    const written: string[] = [];
    let status = 0;
    const stream = { write: (chunk: string) => written.push(chunk), end: () => undefined };

    // Act
    await streamAnswer(rt, { body: '{"question":', isBase64Encoded: false }, stream, (code) => {
      status = code;
      return stream;
    });

    // Assess
    expect(status).toBe(400);
    expect(JSON.parse(written.join('')).error.code).toBe('invalid_json');
  });
});

describe('methods', () => {
  it.each([
    ['GET', '/search', 'POST'],
    ['PUT', '/documents/{id}', 'GET, DELETE'],
    ['DELETE', '/stats', 'GET'],
    ['POST', '/documents', 'GET'],
  ])('answers %s %s with 405 and Allow: %s', async (method, resource, allow) => {
    // Prepare
    const handler = resource === '/search' ? search : documents;
    const e = event('apigw-get-document', { httpMethod: method, resource, path: resource });

    // Act
    const out = await handler(e, context);

    // Assess
    expect(out.statusCode).toBe(405);
    expect(out.headers?.allow).toBe(allow);
    expect(parse<ErrorBody>(out).error).toEqual({
      code: 'method_not_allowed',
      message: `${method} is not allowed on ${resource} (allowed: ${allow})`,
    });
  });

  it('answers OPTIONS with 204 and Allow when no CORS preflight took it', async () => {
    // Act
    const out = await search(event('apigw-search', { httpMethod: 'OPTIONS' }), context);

    // Assess
    expect(out).toMatchObject({ statusCode: 204, headers: { allow: 'POST' }, body: '' });
  });

  it('answers an unknown path (the gateway’s catch-all) with 404', async () => {
    // Act
    const out = await documents(
      event('apigw-list-documents', { resource: '/{proxy+}', path: '/nope', httpMethod: 'POST' }),
      context,
    );

    // Assess
    expect(out.statusCode).toBe(404);
    expect(parse<ErrorBody>(out).error.code).toBe('not_found');
  });
});

describe('CORS', () => {
  const ORIGIN = 'https://app.example.com';

  it('adds the origin to answers and to error answers when it is allowed', async () => {
    // Prepare
    const handler = httpHandler('cors-test', async () => jsonResponse(200, { ok: true }), {
      corsOrigins: [ORIGIN],
    }) as unknown as Handler;

    // Act
    const ok = await handler(event('apigw-search', { headers: { origin: ORIGIN } }), context);
    const bad = await handler(
      event('apigw-search', { headers: { Origin: ORIGIN, 'content-type': 'text/plain' } }),
      context,
    );
    const other = await handler(
      event('apigw-search', { headers: { origin: 'https://evil.example' } }),
      context,
    );

    // Assess
    expect(ok.statusCode).toBe(200);
    expect(ok.headers).toMatchObject({ 'access-control-allow-origin': ORIGIN, vary: 'Origin' });
    expect(bad.statusCode).toBe(415);
    expect(bad.headers).toMatchObject({ 'access-control-allow-origin': ORIGIN });
    expect(other.statusCode).toBe(200);
    expect(other.headers?.['access-control-allow-origin']).toBeUndefined();
  });

  it('sends no CORS header when CORS is off (the default)', async () => {
    // Act
    const out = await search(event('apigw-search', { headers: { origin: ORIGIN } }), context);

    // Assess
    expect(out.headers?.['access-control-allow-origin']).toBeUndefined();
  });

  it.each([
    [[], ORIGIN, {}],
    [['*'], undefined, { 'access-control-allow-origin': '*' }],
    [[ORIGIN], ORIGIN, { 'access-control-allow-origin': ORIGIN, vary: 'Origin' }],
    [[ORIGIN], 'https://other.example', { vary: 'Origin' }],
  ])('with origins %j and Origin %s sends %j', (origins, origin, headers) => {
    expect(corsHeaders(origins, origin)).toEqual(headers);
  });
});

describe('time budget', () => {
  const NOW = 1_800_000_000_000;

  it.each([
    ['a fresh request', NOW, 60_000, 28_000],
    ['a request 10 s old at the gateway', NOW - 10_000, 60_000, 18_000],
    ['a Lambda with 5 s left', NOW, 5_000, 4_000],
    ['a gateway clock ahead of the Lambda (ignored)', NOW + 5_000, 60_000, 28_000],
  ])('budgets %s', (_name, started, remaining, expected) => {
    // Act
    const ms = requestBudgetMs(
      { requestContext: { requestTimeEpoch: started } as APIGatewayProxyEvent['requestContext'] },
      { getRemainingTimeInMillis: () => remaining },
      { now: () => NOW },
    );

    // Assess
    expect(ms).toBe(expected);
  });

  it('rejects at the deadline with a 504 error and aborts the work’s signal', async () => {
    // Prepare
    let seen: AbortSignal | undefined;

    // Act
    const run = withDeadline(20, 'generate', (signal) => {
      seen = signal;
      return new Promise<never>(() => {});
    });

    // Assess
    await expect(run).rejects.toBeInstanceOf(DeadlineExceededError);
    await expect(run).rejects.toMatchObject({ statusCode: 504, code: 'timeout' });
    expect(seen?.aborted).toBe(true);
  });

  it('fails at once when no time is left', async () => {
    await expect(withDeadline(0, 'search', async () => 1)).rejects.toMatchObject({
      statusCode: 504,
    });
  });
});

describe('generate within API Gateway’s limit', () => {
  let fake: FakeOpenAI;
  const signals: AbortSignal[] = [];

  beforeAll(async () => {
    fake = await startFakeOpenAI({ latencyMs: 10_000 });
  });
  afterAll(async () => {
    await fake.close();
  });

  function generateWith(maxRetries: number): Handler {
    const client = new OpenAI({
      baseURL: fake.baseURL,
      apiKey: 'test',
      maxRetries: 0,
      fetch: (url: string | URL | Request, init?: RequestInit) => {
        if (init?.signal) signals.push(init.signal);
        return fetch(url, init);
      },
    });
    const model = new OpenAIFoundationModel({
      baseURL: fake.baseURL,
      apiKey: 'test',
      model: 'gpt-fake',
      client,
      maxRetries,
      timeoutMs: 25_000,
    });
    return createGenerateHandler({ ...rt, model: async () => model }) as unknown as Handler;
  }

  it('answers 504 timeout before the gateway would cut, aborting the model request', async () => {
    // Prepare: the model answers in 10 s; the Lambda has 3 s left (2 s budget after the margin)
    signals.length = 0;
    const generate = generateWith(1);

    // Act
    const out = await generate(event('apigw-generate'), contextWithRemaining(3_000));

    // Assess
    expect(out.statusCode).toBe(504);
    const error = parse<ErrorBody>(out).error;
    expect(error.code).toBe('timeout');
    expect(error.message).toMatch(/^generate did not finish within its time budget/);
    expect(fake.requests.some((r) => r.path === '/v1/chat/completions')).toBe(true);
    expect(signals.length).toBeGreaterThan(0);
    expect(signals.every((s) => s.aborted)).toBe(true);
  });

  it('answers /chat with the same 504 when its budget runs out', async () => {
    // Prepare
    const generate = generateWith(0);
    const chat = event('apigw-chat');

    // Act
    const out = await generate(chat, contextWithRemaining(3_000));

    // Assess
    expect(out.statusCode).toBe(504);
    expect(parse<ErrorBody>(out).error.code).toBe('timeout');
  });

  it('does not wait for a retry that cannot fit (retry-after longer than the budget)', async () => {
    // Prepare: the first attempt is throttled with retry-after 30 s
    const quick = await startFakeOpenAI();
    quick.failNext(429, 1, { retryAfterSeconds: 30 });
    const model = new OpenAIFoundationModel({
      baseURL: quick.baseURL,
      apiKey: 'test',
      model: 'gpt-fake',
      maxRetries: 1,
    });
    const generate = createGenerateHandler({
      ...rt,
      model: async () => model,
    }) as unknown as Handler;

    // Act
    const out = await generate(event('apigw-generate'), contextWithRemaining(3_000));
    await quick.close();

    // Assess: one attempt, then the deadline (not the 30 s wait)
    expect(out.statusCode).toBe(504);
    expect(quick.requests.filter((r) => r.path === '/v1/chat/completions')).toHaveLength(1);
  });
});

describe('readers take the embedding model from the collection registry', () => {
  it('searches a collection embedded with another model than the configured one', async () => {
    // Prepare: the function is configured with a 256-dimensional local model; the collection holds 384
    const other = createLocalRuntime({
      dataDir: mkdtempSync(join(tmpdir(), 'ai4rag-reader-')),
      env: { AI4RAG_COLLECTION: COLLECTION, AI4RAG_EMBEDDING_MODEL: 'local/feature-hash-v1-256' },
    });
    const reader = { ...other, openStore: rt.openStore, config: other.config };
    const handler = createSearchHandler(reader) as unknown as Handler;
    const stats = createDocumentsHandler(reader) as unknown as Handler;

    // Act
    const out = await handler(event('apigw-search'), context);
    const s = await stats(
      event('apigw-list-documents', { resource: '/stats', path: '/stats' }),
      context,
    );
    await other.close();

    // Assess
    expect(out.statusCode).toBe(200);
    expect(parse<{ results: unknown[] }>(out).results.length).toBeGreaterThan(0);
    expect(parse(s)).toMatchObject({
      embedding_model: 'local/feature-hash-v1-384',
      dimension: 384,
    });
  });

  it('answers 503 naming the model and the variable when the function cannot build it', async () => {
    // Prepare: a collection registered with a remote model, read by a function without an endpoint
    const remote = await createEmbedder('local/feature-hash-v1-384');
    const fake = Object.assign(Object.create(remote) as typeof remote, {
      modelId: 'text-embedding-3-small',
    });
    const name = 'ai4rag_remote_model';
    await rt.openStore(name, fake, { createIfMissing: true });
    const handler = createSearchHandler({
      ...rt,
      config: { ...rt.config, collection: name },
    }) as unknown as Handler;

    // Act
    const out = await handler(event('apigw-search'), context);

    // Assess
    expect(out.statusCode).toBe(503);
    const error = parse<ErrorBody>(out).error;
    expect(error.code).toBe('embedding_model_unavailable');
    expect(error.message).toContain(
      `collection ${name} was embedded with "text-embedding-3-small"`,
    );
    expect(error.message).toContain('OPENAI_BASE_URL');
  });
});
