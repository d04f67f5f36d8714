import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type RunningServer, startServer } from '../../../bin/cli/serve.js';
import { parseFunctionEnv } from '../../../functions/_shared/env.js';
import { bindLocalQueues, s3Notification } from '../../../functions/_shared/local.js';
import { rerankPlanFor } from '../../../functions/_shared/query.js';
import {
  createAwsRuntime,
  createLocalRuntime,
  type LocalRuntime,
  type RuntimeConfig,
} from '../../../functions/_shared/runtime.js';
import { clearSecretCache } from '../../../functions/_shared/secrets.js';
import { createGenerateHandler, streamAnswer } from '../../../functions/generate/handler.js';
import { createSearchHandler } from '../../../functions/search/handler.js';
import { type FakeTei, startFakeTei } from '../../support/fake-tei-server.js';
import { FUSED_ORDER, RERANK_DOCS, RERANK_QUERY, RERANKED } from '../../support/rerank-corpus.js';
import { context, getTestEvent } from './helpers.js';

type Handler = (event: APIGatewayProxyEvent, ctx: typeof context) => Promise<APIGatewayProxyResult>;

interface Hit {
  document_key: string;
  score: number | null;
}

function withBody(name: string, body: unknown): APIGatewayProxyEvent {
  const event = getTestEvent<APIGatewayProxyEvent>(name);
  event.body = JSON.stringify(body);
  return event;
}

function parse<T>(result: APIGatewayProxyResult): T {
  return JSON.parse(result.body) as T;
}

/** A local runtime over the rerank corpus, ingested through the knowledge-base handlers. */
async function corpusRuntime(env: Record<string, string>): Promise<LocalRuntime> {
  const rt = createLocalRuntime({
    dataDir: mkdtempSync(join(tmpdir(), 'ai4rag-rerank-')),
    inMemory: true,
    env: { AI4RAG_COLLECTION: 'ai4rag_rerank_test', ...env },
  });
  await bindLocalQueues(rt);
  for (const [key, text] of Object.entries(RERANK_DOCS)) await rt.documents.put(key, text);
  await rt
    .queue('ingest')
    .send(Object.keys(RERANK_DOCS).map((key) => s3Notification('ObjectCreated:Put', 'local', key)));
  return rt;
}

const STORM_WARNING = (baseURL: string, model: string) =>
  `reranker ${model} at ${baseURL}: TEI /rerank answered HTTP 503: {"error":"injected failure 503","error_type":"fake"}; results in retrieval order, not reranked`;

describe('parseFunctionEnv: reranker settings', () => {
  const pattern = (reranker: unknown) =>
    JSON.stringify({
      retrieval: { method: 'simple', number_of_chunks: 5, search_mode: 'vector', reranker },
    });

  it('reads the endpoint, model, candidates and key of the reranker', () => {
    // Act
    const env = parseFunctionEnv({
      AI4RAG_RERANK_BASE_URL: 'http://tei:8080',
      AI4RAG_RERANK_MODEL: 'BAAI/bge-reranker-base',
      AI4RAG_RERANK_CANDIDATES: '30',
      AI4RAG_RERANK_API_KEY_SECRET_ARN: 'arn:aws:secretsmanager:eu-west-1:1:secret:tei',
    });

    // Assess
    expect(env).toMatchObject({
      rerankBaseUrl: 'http://tei:8080',
      rerankModel: 'BAAI/bge-reranker-base',
      rerankCandidates: 30,
      rerankApiKeySecretArn: 'arn:aws:secretsmanager:eu-west-1:1:secret:tei',
    });
  });

  it('accepts a serving pattern that reranks, on the rerank endpoint or a named one', () => {
    // Act
    const env = parseFunctionEnv({
      AI4RAG_RERANK_BASE_URL: 'http://tei:8080',
      AI4RAG_SERVING_PATTERN: pattern({ model_id: 'bge', candidates: 20 }),
    });
    const named = parseFunctionEnv({
      AI4RAG_ENDPOINT_GPU_BASE_URL: 'http://gpu:8080',
      AI4RAG_SERVING_PATTERN: pattern({ model_id: 'bge@gpu', candidates: 20 }),
    });

    // Assess
    expect(env.servingPattern?.retrieval.reranker).toEqual({ model_id: 'bge', candidates: 20 });
    expect(named.servingPattern?.retrieval.reranker?.model_id).toBe('bge@gpu');
  });

  it.each([
    [
      'a model without an endpoint',
      { AI4RAG_RERANK_MODEL: 'bge' },
      'AI4RAG_RERANK_MODEL: the rerank model "bge" needs an endpoint: set AI4RAG_RERANK_BASE_URL, or name one with "bge@<endpoint>"',
    ],
    [
      'a reranking pattern without an endpoint',
      { AI4RAG_SERVING_PATTERN: pattern({ model_id: 'bge', candidates: 20 }) },
      `the serving pattern's reranker: the rerank model "bge" needs an endpoint: set AI4RAG_RERANK_BASE_URL, or name one with "bge@<endpoint>"`,
    ],
    [
      'a model naming an undefined endpoint',
      { AI4RAG_RERANK_BASE_URL: 'http://tei', AI4RAG_RERANK_MODEL: 'bge@gpu' },
      'AI4RAG_RERANK_MODEL: model "bge@gpu" names endpoint "gpu", which is not defined: set AI4RAG_ENDPOINT_GPU_BASE_URL',
    ],
    [
      'an endpoint that is not a URL',
      { AI4RAG_RERANK_BASE_URL: 'tei:8080' },
      'model endpoints: AI4RAG_RERANK_BASE_URL="tei:8080" must be an http(s) URL',
    ],
    [
      'candidates without a reranker',
      { AI4RAG_RERANK_CANDIDATES: '30' },
      'AI4RAG_RERANK_CANDIDATES needs a reranker: set AI4RAG_RERANK_BASE_URL (and AI4RAG_RERANK_MODEL to rerank by default)',
    ],
    [
      'candidates out of range',
      { AI4RAG_RERANK_BASE_URL: 'http://tei', AI4RAG_RERANK_CANDIDATES: '500' },
      'AI4RAG_RERANK_CANDIDATES must be an integer in 1..200, got "500"',
    ],
    [
      'a model that differs from the pattern’s',
      {
        AI4RAG_RERANK_BASE_URL: 'http://tei',
        AI4RAG_RERANK_MODEL: 'other',
        AI4RAG_SERVING_PATTERN: pattern({ model_id: 'bge', candidates: 20 }),
      },
      "AI4RAG_RERANK_MODEL 'other' differs from the serving pattern's reranker 'bge' (the endpoint serves one model)",
    ],
    [
      'a pattern with fewer candidates than chunks',
      {
        AI4RAG_RERANK_BASE_URL: 'http://tei',
        AI4RAG_SERVING_PATTERN: pattern({ model_id: 'bge', candidates: 3 }),
      },
      'retrieval.reranker.candidates: reranker.candidates must be at least number_of_chunks',
    ],
  ])('rejects %s', (_name, env, message) => {
    // Act / Assess
    expect(() => parseFunctionEnv(env)).toThrow(message);
  });
});

describe('rerankPlanFor', () => {
  const base: RuntimeConfig = {
    collection: 'ai4rag_x',
    store: 'pglite',
    embeddingModel: 'local/feature-hash-v1-384',
    chunking: { method: 'recursive', chunkSize: 512, chunkOverlap: 64 },
  };
  const available = { ...base, rerank: {} };
  const byDefault = { ...base, rerank: { model: 'bge', candidates: 30 } };

  it.each([
    ['off without an endpoint', base, {}, 5, undefined],
    ['off when available but not asked for', available, {}, 5, undefined],
    ['on when asked for', available, { rerank: {} }, 5, { model: 'tei', candidates: 20, k: 5 }],
    [
      'on with the asked model and candidates',
      available,
      { rerank: { model: 'm', candidates: 12 } },
      5,
      { model: 'm', candidates: 12, k: 5 },
    ],
    ['on by default', byDefault, {}, 5, { model: 'bge', candidates: 30, k: 5 }],
    ['off when the request opts out', byDefault, { rerank: false }, 5, undefined],
    [
      'the default candidates when the deployment’s are fewer than k',
      byDefault,
      {},
      40,
      { model: 'bge', candidates: 160, k: 40 },
    ],
  ] as const)('%s', (_name, config, request, k, expected) => {
    // Act / Assess
    expect(rerankPlanFor(config, request, k)).toEqual(expected);
  });

  it.each([
    [
      base,
      { rerank: {} },
      'rerank: this deployment has no reranker endpoint (AI4RAG_RERANK_BASE_URL / CDK context rerankBaseUrl)',
    ],
    [
      byDefault,
      { rerank: { model: 'other' } },
      "rerank.model: 'other' is not served here; the reranker endpoint serves 'bge'",
    ],
    [
      available,
      { rerank: { candidates: 3 } },
      'rerank.candidates must be an integer in 5..200 (at least k), got 3',
    ],
  ])('rejects %#', (config, request, message) => {
    // Act / Assess
    expect(() => rerankPlanFor(config, request, 5)).toThrow(message);
  });
});

describe('query API handlers with a TEI reranker', () => {
  let tei: FakeTei;
  let rt: LocalRuntime;
  let search: Handler;
  let generate: Handler;

  beforeAll(async () => {
    tei = await startFakeTei();
    rt = await corpusRuntime({ AI4RAG_RERANK_BASE_URL: tei.baseURL });
    search = createSearchHandler(rt) as unknown as Handler;
    generate = createGenerateHandler(rt) as unknown as Handler;
  });
  afterAll(async () => {
    await rt.close();
    await tei.close();
  });
  afterEach(() => {
    tei.failNext(0, 0);
    tei.requests.length = 0;
  });

  it('keeps the fused order and calls no reranker when the request does not ask', async () => {
    // Act
    const out = await search(withBody('apigw-search', { query: RERANK_QUERY, k: 3 }), context);

    // Assess
    expect(out.statusCode).toBe(200);
    const body = parse<{ results: Hit[]; warnings?: string[] }>(out);
    expect(body.results.map((h) => h.document_key)).toEqual(FUSED_ORDER.slice(0, 3));
    expect(body.warnings).toBeUndefined();
    expect(tei.requests).toHaveLength(0);
  });

  it('reranks the fused candidates on /search and keeps k, scored by the reranker', async () => {
    // Act
    const out = await search(
      withBody('apigw-search', { query: RERANK_QUERY, k: 3, rerank: {} }),
      context,
    );

    // Assess
    expect(out.statusCode).toBe(200);
    const body = parse<{ results: Hit[]; warnings?: string[] }>(out);
    expect(body.results.map((h) => [h.document_key, h.score])).toEqual(RERANKED.slice(0, 3));
    expect(body.warnings).toBeUndefined();
    expect(tei.requests).toHaveLength(1);
    const sent = tei.requests[0]?.body as { query: string; texts: string[] };
    expect(sent.query).toBe(RERANK_QUERY);
    expect(sent.texts).toEqual(FUSED_ORDER.map((key) => RERANK_DOCS[key]));
  });

  it('reranks /generate and /chat and reports the rerank time', async () => {
    // Act
    const answer = await generate(
      withBody('apigw-generate', { question: RERANK_QUERY, k: 2, rerank: { candidates: 4 } }),
      context,
    );
    const chat = await generate(
      withBody('apigw-chat', {
        messages: [{ role: 'user', content: RERANK_QUERY }],
        k: 2,
        rerank: { model: 'fake-bge' },
      }),
      context,
    );

    // Assess
    type Answer = {
      reference_documents: { document_key: string; score: number }[];
      timing: { retrieve_ms: number; rerank_ms: number; total_ms: number };
      warnings?: string[];
    };
    for (const out of [answer, chat]) {
      expect(out.statusCode).toBe(200);
      const body = parse<Answer>(out);
      expect(body.reference_documents.map((d) => [d.document_key, d.score])).toEqual(
        RERANKED.slice(0, 2),
      );
      expect(body.timing.rerank_ms).toBeGreaterThan(0);
      expect(body.timing.total_ms).toBeGreaterThanOrEqual(
        body.timing.retrieve_ms + body.timing.rerank_ms,
      );
      expect(body.warnings).toBeUndefined();
    }
    expect(tei.requests.map((r) => (r.body as { texts: string[] }).texts.length)).toEqual([4, 4]);
  });

  it('answers 200 in fused order with a warning when the reranker keeps failing', async () => {
    // Prepare: a 503 storm that outlasts the runtime's retry
    tei.failNext(503, 100);

    // Act
    const found = await search(
      withBody('apigw-search', { query: RERANK_QUERY, k: 3, rerank: {} }),
      context,
    );
    const answered = await generate(
      withBody('apigw-generate', { question: RERANK_QUERY, k: 2, rerank: {} }),
      context,
    );

    // Assess
    expect([found.statusCode, answered.statusCode]).toEqual([200, 200]);
    const hits = parse<{ results: Hit[]; warnings: string[] }>(found);
    expect(hits.results.map((h) => h.document_key)).toEqual(FUSED_ORDER.slice(0, 3));
    expect(hits.warnings).toEqual([STORM_WARNING(tei.baseURL, 'tei')]);
    const answer = parse<{
      reference_documents: { document_key: string }[];
      warnings: string[];
      timing: { rerank_ms: number };
    }>(answered);
    expect(answer.reference_documents.map((d) => d.document_key)).toEqual(FUSED_ORDER.slice(0, 2));
    expect(answer.warnings).toEqual([STORM_WARNING(tei.baseURL, 'tei')]);
    expect(tei.requests.map((r) => r.status)).toEqual([503, 503, 503, 503]);
  });

  it('streams the warning with the sources when the reranker fails', async () => {
    // Prepare
    tei.failNext(503, 100);
    let text = '';
    const sink = { write: (chunk: string) => (text += chunk), end: () => undefined };

    // Act
    await streamAnswer(
      rt,
      {
        body: JSON.stringify({ question: RERANK_QUERY, k: 2, rerank: {} }),
        isBase64Encoded: false,
      },
      sink,
    );

    // Assess
    const sources = text.split('\n\n')[0] ?? '';
    expect(sources.split('\n')[0]).toBe('event: sources');
    const data = JSON.parse(sources.split('\n')[1]?.slice('data: '.length) ?? '{}');
    expect(data.reference_documents.map((d: Hit) => d.document_key)).toEqual(
      FUSED_ORDER.slice(0, 2),
    );
    expect(data.warnings).toEqual([STORM_WARNING(tei.baseURL, 'tei')]);
  });

  it.each([
    [
      { rerank: { candidates: 2 } },
      'rerank.candidates must be an integer in 3..200 (at least k), got 2',
    ],
    [{ rerank: { candidates: 201 } }, 'rerank.candidates'],
    [{ rerank: { top: 3 } }, 'rerank'],
    [{ rerank: true }, 'rerank'],
  ])('answers 400 for %j', async (fields, message) => {
    // Act
    const out = await search(
      withBody('apigw-search', { query: RERANK_QUERY, k: 3, ...fields }),
      context,
    );

    // Assess
    expect(out.statusCode).toBe(400);
    expect(parse<{ error: { message: string } }>(out).error.message).toContain(message);
    expect(tei.requests).toHaveLength(0);
  });

  it('answers 400 when the deployment has no reranker endpoint', async () => {
    // Prepare
    const bare = createSearchHandler({
      ...rt,
      config: { ...rt.config, rerank: undefined } as RuntimeConfig,
    }) as unknown as Handler;

    // Act
    const out = await bare(withBody('apigw-search', { query: RERANK_QUERY, rerank: {} }), context);

    // Assess
    expect(out.statusCode).toBe(400);
    expect(parse<{ error: { message: string } }>(out).error.message).toBe(
      'rerank: this deployment has no reranker endpoint (AI4RAG_RERANK_BASE_URL / CDK context rerankBaseUrl)',
    );
  });
});

describe('a deployment that reranks by default (AI4RAG_RERANK_MODEL)', () => {
  let tei: FakeTei;
  let rt: LocalRuntime;
  let search: Handler;

  beforeAll(async () => {
    tei = await startFakeTei();
    rt = await corpusRuntime({
      AI4RAG_RERANK_BASE_URL: tei.baseURL,
      AI4RAG_RERANK_MODEL: 'fake-bge',
    });
    search = createSearchHandler(rt) as unknown as Handler;
  });
  afterAll(async () => {
    await rt.close();
    await tei.close();
  });

  it('reranks a request that says nothing, and not one that opts out', async () => {
    // Act
    const reranked = await search(withBody('apigw-search', { query: RERANK_QUERY, k: 3 }), context);
    const fused = await search(
      withBody('apigw-search', { query: RERANK_QUERY, k: 3, rerank: false }),
      context,
    );

    // Assess
    expect(parse<{ results: Hit[] }>(reranked).results.map((h) => h.document_key)).toEqual(
      RERANKED.slice(0, 3).map(([key]) => key),
    );
    expect(parse<{ results: Hit[] }>(fused).results.map((h) => h.document_key)).toEqual(
      FUSED_ORDER.slice(0, 3),
    );
    expect(tei.requests).toHaveLength(1);
  });

  it('answers 400 for a model the endpoint does not serve', async () => {
    // Act
    const out = await search(
      withBody('apigw-search', { query: RERANK_QUERY, rerank: { model: 'other' } }),
      context,
    );

    // Assess
    expect(out.statusCode).toBe(400);
    expect(parse<{ error: { message: string } }>(out).error.message).toBe(
      "rerank.model: 'other' is not served here; the reranker endpoint serves 'fake-bge'",
    );
  });
});

describe('the AWS runtime reranker', () => {
  const secretsMock = mockClient(SecretsManagerClient);
  let tei: FakeTei;

  beforeAll(async () => {
    tei = await startFakeTei({ apiKey: 'tei-key' });
  });
  afterAll(async () => {
    await tei.close();
    secretsMock.restore();
  });
  afterEach(() => clearSecretCache());

  it('sends the key from Secrets Manager as a bearer token, reading the secret once', async () => {
    // Prepare
    secretsMock.on(GetSecretValueCommand).resolves({ SecretString: '{"apiKey":"tei-key"}' });
    const runtime = createAwsRuntime(
      {
        AI4RAG_STORE: 'pgvector',
        AI4RAG_RERANK_BASE_URL: tei.baseURL,
        AI4RAG_RERANK_API_KEY_SECRET_ARN: 'arn:aws:secretsmanager:eu-west-1:1:secret:tei',
      },
      { secrets: new SecretsManagerClient({ region: 'eu-west-1' }) },
    );

    // Act
    const reranker = await runtime.reranker?.('fake-bge');
    const scores = await reranker?.rerank('ferry', ['ferry', 'barge']);
    const again = await runtime.reranker?.('fake-bge');

    // Assess
    expect(scores).toEqual([0.5, 0]);
    expect(again).toBe(reranker);
    expect(reranker?.modelId).toBe('fake-bge');
    expect(tei.requests.map((r) => r.authorization)).toEqual(['Bearer tei-key']);
    expect(secretsMock.commandCalls(GetSecretValueCommand)).toHaveLength(1);
  });

  it('uses the endpoint a model@name id names, with its own key', async () => {
    // Prepare
    const runtime = createAwsRuntime({
      AI4RAG_STORE: 'pgvector',
      AI4RAG_ENDPOINT_GPU_BASE_URL: tei.baseURL,
      AI4RAG_ENDPOINT_GPU_API_KEY: 'tei-key',
    });
    tei.requests.length = 0;

    // Act
    const reranker = await runtime.reranker?.('fake-bge@gpu');
    const scores = await reranker?.rerank('ferry', ['barge', 'ferry']);

    // Assess
    expect(scores).toEqual([0, 0.5]);
    expect(reranker?.endpoint).toBe(tei.baseURL);
    expect(tei.requests.map((r) => r.authorization)).toEqual(['Bearer tei-key']);
  });

  it('rejects with a clear error when no endpoint is configured', async () => {
    // Prepare
    const runtime = createAwsRuntime({ AI4RAG_STORE: 'pgvector' });

    // Act / Assess
    await expect(runtime.reranker?.('bge')).rejects.toThrow(
      'the rerank model "bge" needs an endpoint: set AI4RAG_RERANK_BASE_URL, or name one with "bge@<endpoint>"',
    );
  });
});

describe('ai4rag serve with a reranker', () => {
  const TOKEN = 'rerank-token';
  let tei: FakeTei;
  let server: RunningServer;
  const post = (path: string, body: unknown) =>
    fetch(`${server.url}${path}`, {
      method: 'POST',
      body: JSON.stringify(body),
      headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
    });

  beforeAll(async () => {
    tei = await startFakeTei();
    server = await startServer({
      dataDir: mkdtempSync(join(tmpdir(), 'ai4rag-serve-rerank-')),
      port: 0,
      token: TOKEN,
      inMemory: true,
      env: {
        AI4RAG_COLLECTION: 'ai4rag_serve_rerank',
        AI4RAG_RERANK_BASE_URL: tei.baseURL,
        AI4RAG_RERANK_MODEL: 'fake-bge',
      },
    });
    const rt = server.runtime;
    for (const [key, text] of Object.entries(RERANK_DOCS)) await rt.documents.put(key, text);
    await rt
      .queue('ingest')
      .send(
        Object.keys(RERANK_DOCS).map((key) => s3Notification('ObjectCreated:Put', 'local', key)),
      );
  });
  afterAll(async () => {
    await server.close();
    await tei.close();
  });

  it('reranks /search and /generate over HTTP, and reports the rerank time', async () => {
    // Act
    const found = await post('/search', { query: RERANK_QUERY, k: 3 });
    const answered = await post('/generate', { question: RERANK_QUERY, k: 2 });

    // Assess
    expect([found.status, answered.status]).toEqual([200, 200]);
    const hits = (await found.json()) as { results: Hit[] };
    expect(hits.results.map((h) => h.document_key)).toEqual(
      RERANKED.slice(0, 3).map(([key]) => key),
    );
    const answer = (await answered.json()) as {
      reference_documents: { document_key: string }[];
      timing: { rerank_ms: number };
    };
    expect(answer.reference_documents.map((d) => d.document_key)).toEqual(
      RERANKED.slice(0, 2).map(([key]) => key),
    );
    expect(answer.timing.rerank_ms).toBeGreaterThan(0);
  });
});
