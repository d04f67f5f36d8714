import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningServer, startServer } from '../../../bin/cli/serve.js';
import { parseFunctionEnv } from '../../../functions/_shared/env.js';
import { ValidationError } from '../../../shared/src/errors.js';
import { type FakeOpenAI, startFakeOpenAI } from '../../support/fake-openai-server.js';
import { FAQ } from './helpers.js';

const TOKEN = 'qt-token';
const REWRITES = 'expense approval limit\nclaims above 500 euros';
const PASSAGE = 'Claims above 500 euros need a director.';

async function startWith(env: Record<string, string>): Promise<RunningServer> {
  const server = await startServer({
    dataDir: mkdtempSync(join(tmpdir(), 'ai4rag-qt-api-')),
    port: 0,
    token: TOKEN,
    inMemory: true,
    env: { AI4RAG_COLLECTION: 'ai4rag_qt_test', ...env },
  });
  const res = await fetch(`${server.url}/uploads`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ key: 'faq.txt' }),
  });
  const { url } = (await res.json()) as { url: string };
  await fetch(url, { method: 'PUT', body: FAQ });
  return server;
}

async function post(
  server: RunningServer,
  path: string,
  body: unknown,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

function message(out: { body: Record<string, unknown> }): string {
  return (out.body.error as { message: string }).message;
}

const QUESTION = 'What is the approval limit?';

describe('query_transform on the query API (ai4rag serve, an OpenAI-compatible chat model)', () => {
  let fake: FakeOpenAI;
  let server: RunningServer;

  beforeAll(async () => {
    fake = await startFakeOpenAI({
      chatResponder: (last) =>
        last.startsWith('Please write a passage')
          ? PASSAGE
          : last.startsWith('Write ')
            ? REWRITES
            : 'The limit is 500 euros.',
    });
    server = await startWith({
      OPENAI_BASE_URL: fake.baseURL,
      OPENAI_API_KEY: 'k',
      AI4RAG_FOUNDATION_MODEL: 'fake-chat',
    });
  });
  afterAll(async () => {
    await server?.close();
    await fake?.close();
  });

  it('multi_query on /search reports the rewrites and their tokens', async () => {
    // Act
    const out = await post(server, '/search', {
      query: QUESTION,
      k: 2,
      query_transform: { type: 'multi_query', queries: 2 },
    });
    // Assess
    expect(out.status).toBe(200);
    const qt = out.body.query_transform as Record<string, unknown>;
    expect(qt.type).toBe('multi_query');
    expect(qt.queries).toEqual(['expense approval limit', 'claims above 500 euros']);
    // ceil(281 prompt characters / 4) and ceil(45 / 4), as the fake counts
    expect(qt.usage).toEqual({ prompt_tokens: 71, completion_tokens: 12 });
    expect(typeof qt.ms).toBe('number');
  });

  it('hyde on /generate reports transform_ms in the timing and its tokens apart from the answer', async () => {
    // Act
    const out = await post(server, '/generate', {
      question: QUESTION,
      k: 1,
      query_transform: 'hyde',
    });
    // Assess: 'Claims above 500 euros need a director.' is 39 characters: 10 tokens
    expect(out.status).toBe(200);
    expect((out.body.timing as Record<string, unknown>).transform_ms).toEqual(expect.any(Number));
    expect(out.body.query_transform).toMatchObject({
      type: 'hyde',
      passage: PASSAGE,
      usage: { completion_tokens: 10 },
    });
    expect((out.body.usage as Record<string, unknown>).completion_tokens).toBe(6);
  });

  it('rm3 with hybrid search reports its expansion', async () => {
    // Act
    const out = await post(server, '/search', {
      query: QUESTION,
      k: 1,
      search_mode: 'hybrid',
      ranker_strategy: 'rrf',
      query_transform: { type: 'rm3', fb_docs: 1, fb_terms: 3 },
    });
    // Assess: the one feedback chunk is the FAQ (its 3 most frequent terms); λ 0.5 with 'approv', 'limit'
    expect(out.status).toBe(200);
    const expansion = (out.body.query_transform as { expansion: { term: string }[] }).expansion;
    expect(expansion.map((t) => t.term)).toContain('approv');
    expect(expansion.map((t) => t.term)).toContain('limit');
  });

  it.each([
    [
      { query_transform: 'rm3', search_mode: 'vector' },
      'query_transform: rm3 needs a keyword leg (search_mode hybrid), got search_mode vector',
    ],
    [{ query_transform: 'rm4' }, 'query_transform'],
    [{ query_transform: { type: 'multi_query', queries: 11 } }, 'query_transform'],
    [{ query_transform: { type: 'rm3', original_query_weight: 2 } }, 'query_transform'],
  ])('answers 400 for %j, naming the field', async (fields, expected) => {
    // Act
    const out = await post(server, '/search', { query: QUESTION, ...fields });
    // Assess
    expect(out.status).toBe(400);
    expect(message(out)).toContain(expected);
  });
});

describe('query_transform with the local extractive model', () => {
  let server: RunningServer;
  beforeAll(async () => {
    server = await startWith({});
  });
  afterAll(async () => {
    await server?.close();
  });

  it.each(['multi_query', 'hyde'])(
    'answers 400 for %s: it needs a chat model endpoint',
    async (t) => {
      // Act
      const out = await post(server, '/generate', { question: QUESTION, query_transform: t });
      // Assess
      expect(out.status).toBe(400);
      expect(message(out)).toBe(
        `query_transform: ${t} needs a chat model endpoint; this deployment answers with the local model 'local/extractive-v1'`,
      );
    },
  );

  it('serves rm3 without any model', async () => {
    const out = await post(server, '/search', {
      query: QUESTION,
      search_mode: 'hybrid',
      ranker_strategy: 'rrf',
      query_transform: 'rm3',
    });
    expect(out.status).toBe(200);
    expect((out.body.query_transform as { type: string }).type).toBe('rm3');
  });
});

describe('a promoted pattern with query_transform rm3', () => {
  let server: RunningServer;
  beforeAll(async () => {
    server = await startWith({
      AI4RAG_SERVING_PATTERN: JSON.stringify({
        retrieval: {
          method: 'simple',
          number_of_chunks: 2,
          search_mode: 'hybrid',
          ranker_strategy: 'rrf',
          ranker_k: 60,
          query_transform: 'rm3',
        },
      }),
    });
  });
  afterAll(async () => {
    await server?.close();
  });

  it('serves with it, unless the request says none', async () => {
    // Act
    const served = await post(server, '/search', { query: QUESTION });
    const plain = await post(server, '/search', { query: QUESTION, query_transform: 'none' });
    // Assess
    expect(served.status).toBe(200);
    expect((served.body.query_transform as { type: string }).type).toBe('rm3');
    expect(plain.status).toBe(200);
    expect(plain.body.query_transform).toBeUndefined();
  });
});

describe('a serving pattern with query_transform', () => {
  const pattern = (retrieval: Record<string, unknown>) =>
    JSON.stringify({ retrieval: { method: 'simple', number_of_chunks: 3, ...retrieval } });

  it('is read from pattern.json settings.retrieval.query_transform', () => {
    const env = parseFunctionEnv({
      AI4RAG_SERVING_PATTERN: pattern({
        search_mode: 'hybrid',
        ranker_strategy: 'rrf',
        query_transform: 'rm3',
      }),
    });
    expect(env.servingPattern?.retrieval.query_transform).toBe('rm3');
  });

  it('refuses rm3 without hybrid search', () => {
    expect(() =>
      parseFunctionEnv({
        AI4RAG_SERVING_PATTERN: pattern({ search_mode: 'vector', query_transform: 'rm3' }),
      }),
    ).toThrow(ValidationError);
  });
});
