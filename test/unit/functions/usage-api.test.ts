import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningServer, startServer } from '../../../bin/cli/serve.js';
import { parseFunctionEnv, parsePricesEnv } from '../../../functions/_shared/env.js';
import { ValidationError } from '../../../shared/src/errors.js';
import { type FakeOpenAI, startFakeOpenAI } from '../../support/fake-openai-server.js';
import { FAQ } from './helpers.js';

const TOKEN = 'usage-token';
/** USD per million tokens: round numbers so the costs are exact by hand. */
const PRICES = { 'fake-chat': { input: 2, output: 10 } };
/** 'Expense claims above 500 euros need approval.' is 46 characters: ceil(46 / 4) = 12 completion tokens. */
const ANSWER = 'Expense claims above 500 euros need approval.';

interface ChatBody {
  messages: { content: string }[];
  stream_options?: unknown;
}

/** Tokens the fake charges for a request: ceil(characters of every message / 4). */
function promptTokensOf(body: ChatBody): number {
  return Math.ceil(body.messages.reduce((n, m) => n + m.content.length, 0) / 4);
}

function doneData(sse: string): Record<string, unknown> {
  const match = /event: done\ndata: (.*)\n/.exec(sse);
  return JSON.parse(match?.[1] ?? 'null') as Record<string, unknown>;
}

async function startWith(env: Record<string, string>, dir: string): Promise<RunningServer> {
  const server = await startServer({
    dataDir: dir,
    port: 0,
    token: TOKEN,
    inMemory: true,
    env: { AI4RAG_COLLECTION: 'ai4rag_usage_test', ...env },
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

function post(server: RunningServer, path: string, body: unknown): Promise<Response> {
  return fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

describe('answers report tokens and cost (ai4rag serve, an OpenAI-compatible chat model)', () => {
  let fake: FakeOpenAI;
  let server: RunningServer;

  beforeAll(async () => {
    fake = await startFakeOpenAI({ flavor: 'vllm', chatResponder: () => ANSWER });
    server = await startWith(
      {
        OPENAI_BASE_URL: fake.baseURL,
        OPENAI_API_KEY: 'k',
        AI4RAG_FOUNDATION_MODEL: 'fake-chat',
        AI4RAG_PRICES: JSON.stringify(PRICES),
      },
      mkdtempSync(join(tmpdir(), 'ai4rag-usage-')),
    );
  });
  afterAll(async () => {
    await server?.close();
    await fake?.close();
  });

  it('returns the model usage and its cost on /generate, /chat and /stream', async () => {
    // Act
    const generate = (await (
      await post(server, '/generate', { question: 'What is the approval limit?', k: 1 })
    ).json()) as Record<string, unknown>;
    const chat = (await (
      await post(server, '/chat', {
        messages: [{ role: 'user', content: 'What is the approval limit?' }],
        k: 1,
      })
    ).json()) as Record<string, unknown>;
    const stream = await (
      await post(server, '/stream', { question: 'What is the approval limit?', k: 1 })
    ).text();

    // Assess
    const bodies = fake.requests.map((r) => r.body as ChatBody);
    // 188 tokens of ai4rag's prompt plus 52 of the guardrails' data fence (fenceContextAsData).
    expect(bodies.map(promptTokensOf)).toEqual([240, 240, 240]);
    expect(bodies[2]?.stream_options).toEqual({ include_usage: true });
    const usage = { prompt_tokens: 240, completion_tokens: 12, total_tokens: 252 };
    // (240 × 2 + 12 × 10) / 1e6 USD
    const cost = 0.0006;
    expect([generate.usage, generate.cost_usd]).toEqual([usage, cost]);
    expect([chat.usage, chat.cost_usd]).toEqual([usage, cost]);
    expect(doneData(stream)).toEqual({
      timing: expect.any(Object),
      model: 'fake-chat',
      usage,
      cost_usd: cost,
    });
  });
});

describe('answers of the local model', () => {
  let server: RunningServer;
  beforeAll(async () => {
    server = await startWith({}, mkdtempSync(join(tmpdir(), 'ai4rag-usage-local-')));
  });
  afterAll(async () => {
    await server?.close();
  });

  it('count their tokens and cost nothing, without a price table', async () => {
    // Act
    const body = (await (
      await post(server, '/generate', { question: 'What is the approval limit?', k: 1 })
    ).json()) as Record<string, unknown>;

    // Assess
    // The same 240-token prompt as the remote model's; the answer, 55 characters, is ceil(55 / 4) = 14 tokens.
    expect(body.answer).toBe('The approval limit for expenses is 500 euros per claim.');
    expect(body.usage).toEqual({ prompt_tokens: 240, completion_tokens: 14, total_tokens: 254 });
    expect(body.cost_usd).toBe(0);
  });
});

describe('AI4RAG_PRICES', () => {
  it('is parsed with the function environment, and absent when unset', () => {
    // Act
    const env = parseFunctionEnv({
      AI4RAG_PRICES: '{"gpt-4o-mini": {"input": 0.15, "output": 0.6}}',
    });
    // Assess
    expect(env.prices).toEqual({ 'gpt-4o-mini': { input: 0.15, output: 0.6 } });
    expect(parsePricesEnv({})).toBeUndefined();
  });

  it.each([
    ['not json', /^AI4RAG_PRICES is not valid JSON$/],
    ['{"gpt-4o": {"input": "cheap"}}', /^AI4RAG_PRICES: expected .*; gpt-4o\.input: /],
  ])('fails the cold start for %s', (value, message) => {
    // Act
    const call = () => parseFunctionEnv({ AI4RAG_PRICES: value });
    // Assess
    expect(call).toThrow(ValidationError);
    expect(call).toThrow(message);
  });
});
