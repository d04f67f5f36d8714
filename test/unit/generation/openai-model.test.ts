import OpenAI from 'openai';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ValidationError } from '../../../shared/src/errors.js';
import { GenerationError } from '../../../shared/src/generation/errors.js';
import {
  OpenAIFoundationModel,
  type OpenAIFoundationModelOptions,
} from '../../../shared/src/generation/openai-model.js';
import type { ChatMessage, ChatUsage } from '../../../shared/src/generation/types.js';
import { type FakeOpenAI, startFakeOpenAI } from '../../support/fake-openai-server.js';

const MESSAGES: ChatMessage[] = [
  { role: 'system', content: 'Be brief.' },
  { role: 'user', content: 'Where is the Colosseum?' },
];

interface ChatBody {
  model: string;
  messages: ChatMessage[];
  max_completion_tokens: number;
  temperature: number;
  stream?: boolean;
}

describe('OpenAIFoundationModel (through the openai SDK, against the fake server)', () => {
  let fake: FakeOpenAI;
  let sleeps: number[];

  const model = (overrides: Partial<OpenAIFoundationModelOptions> = {}) =>
    new OpenAIFoundationModel({
      baseURL: fake.baseURL,
      apiKey: 'test-key',
      model: 'fake-chat',
      sleep: async (ms: number) => void sleeps.push(ms),
      random: () => 0.5,
      ...overrides,
    });
  const bodies = (): ChatBody[] => fake.requests.map((r) => r.body as ChatBody);

  beforeEach(async () => {
    fake = await startFakeOpenAI({ chatResponder: (q) => `The answer to "${q}" is Rome.` });
    sleeps = [];
  });

  afterEach(async () => {
    await fake.close();
  });

  it('sends the messages, max_completion_tokens and temperature with the defaults', async () => {
    // Prepare
    const m = model();
    // Act
    const result = await m.chat(MESSAGES);
    // Assess
    expect(m.modelId).toBe('fake-chat');
    expect(result.content).toBe('The answer to "Where is the Colosseum?" is Rome.');
    expect(result.usage).toEqual({ promptTokens: 8, completionTokens: 12, totalTokens: 20 });
    expect(bodies()).toEqual([
      {
        model: 'fake-chat',
        messages: MESSAGES,
        max_completion_tokens: 1024,
        temperature: 0.1,
        stream: false,
      },
    ]);
    expect(fake.requests[0]?.headers.authorization).toBe('Bearer test-key');
  });

  it('sends per-call overrides of the configured parameters', async () => {
    // Prepare
    const m = model({ maxCompletionTokens: 300, temperature: 0.7 });
    // Act
    await m.chat(MESSAGES);
    await m.chat(MESSAGES, { maxCompletionTokens: 15, temperature: 0 });
    // Assess
    expect(bodies().map((b) => [b.max_completion_tokens, b.temperature])).toEqual([
      [300, 0.7],
      [15, 0],
    ]);
  });

  it('retries a 429 and then succeeds', async () => {
    // Prepare
    const m = model();
    fake.failNext(429, 2);
    // Act
    const result = await m.chat(MESSAGES);
    // Assess
    expect(result.content).toBe('The answer to "Where is the Colosseum?" is Rome.');
    expect(fake.requests.map((r) => r.status)).toEqual([429, 429, 200]);
    expect(sleeps).toEqual([250, 500]);
  });

  it('does not retry a 400 and wraps it in a GenerationError', async () => {
    // Prepare
    const m = model();
    fake.failNext(400, 1);
    // Act
    const act = m.chat(MESSAGES);
    // Assess
    await expect(act).rejects.toBeInstanceOf(GenerationError);
    await expect(act).rejects.toThrow(
      'Foundation model "fake-chat" failed (status 400: 400 injected failure 400)',
    );
    expect(fake.requests).toHaveLength(1);
    expect(sleeps).toEqual([]);
  });

  it('gives up after maxRetries transient failures', async () => {
    // Prepare
    const m = model({ maxRetries: 1 });
    fake.failNext(503, 5);
    // Act
    const act = m.chat(MESSAGES);
    // Assess
    await expect(act).rejects.toThrow(GenerationError);
    expect(fake.requests).toHaveLength(2);
  });

  it('streams the content deltas in order with stream: true, and the final usage chunk', async () => {
    // Prepare
    const m = model({ temperature: 0.3 });
    const usages: ChatUsage[] = [];
    // Act
    const pieces: string[] = [];
    for await (const piece of m.chatStream(MESSAGES, {
      maxCompletionTokens: 64,
      onUsage: (u) => usages.push(u),
    }))
      pieces.push(piece);
    // Assess
    expect(pieces).toEqual([
      'The ',
      'answer ',
      'to ',
      '"Where ',
      'is ',
      'the ',
      'Colosseum?" ',
      'is ',
      'Rome.',
    ]);
    expect(bodies()).toEqual([
      {
        model: 'fake-chat',
        messages: MESSAGES,
        max_completion_tokens: 64,
        temperature: 0.3,
        stream: true,
        stream_options: { include_usage: true },
      },
    ]);
    // 'Be brief.' + 'Where is the Colosseum?' = 32 characters, the answer 48: the fake's ceil(chars / 4).
    expect(usages).toEqual([{ promptTokens: 8, completionTokens: 12, totalTokens: 20 }]);
  });

  it('retries opening a stream after a 500', async () => {
    // Prepare
    const m = model();
    fake.failNext(500, 1);
    // Act
    const pieces: string[] = [];
    for await (const piece of m.chatStream(MESSAGES)) pieces.push(piece);
    // Assess
    expect(pieces.join('')).toBe('The answer to "Where is the Colosseum?" is Rome.');
    expect(fake.requests.map((r) => r.status)).toEqual([500, 200]);
  });

  it('passes an abort through unwrapped and sends nothing', async () => {
    // Prepare
    const m = model();
    const controller = new AbortController();
    controller.abort(new Error('stopped by caller'));
    // Act
    const act = m.chat(MESSAGES, { signal: controller.signal });
    // Assess
    await expect(act).rejects.toThrow('stopped by caller');
    await expect(act).rejects.not.toBeInstanceOf(GenerationError);
    expect(fake.requests).toHaveLength(0);
  });

  it('uses a given client', async () => {
    // Prepare
    const client = new OpenAI({ baseURL: fake.baseURL, apiKey: 'other-key', maxRetries: 0 });
    const m = model({ client, baseURL: 'http://127.0.0.1:1/v1' });
    // Act
    await m.chat(MESSAGES);
    // Assess
    expect(fake.requests[0]?.headers.authorization).toBe('Bearer other-key');
  });

  it.each([
    [{ maxCompletionTokens: 0 }, 'maxCompletionTokens must be a positive integer, got 0'],
    [{ temperature: 3 }, 'temperature must be a number in [0, 2], got 3'],
    [{ maxRetries: -1 }, 'maxRetries must be a non-negative integer, got -1'],
    [{ model: '' }, 'model must be a non-empty string'],
  ])('rejects invalid options %j', (overrides, message) => {
    // Prepare / Act / Assess
    expect(() => model(overrides)).toThrow(ValidationError);
    expect(() => model(overrides)).toThrow(message);
  });
});
