import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OpenAIFoundationModel } from '../../../shared/src/generation/openai-model.js';
import { type FakeOpenAI, startFakeOpenAI } from '../../support/fake-openai-server.js';

let fake: FakeOpenAI;
beforeAll(async () => {
  fake = await startFakeOpenAI();
});
afterAll(async () => {
  await fake.close();
});

const MESSAGES = [{ role: 'user' as const, content: 'hello' }];

describe('OpenAIFoundationModel with a caller deadline', () => {
  it('ends a backoff wait when the signal fires, without another attempt', async () => {
    // Prepare: a throttled first attempt and a backoff that would never end on its own
    fake.failNext(429, 1);
    const before = fake.requests.length;
    const reason = new Error('deadline');
    const controller = new AbortController();
    const model = new OpenAIFoundationModel({
      baseURL: fake.baseURL,
      apiKey: 'test',
      model: 'gpt-fake',
      maxRetries: 3,
      // The deadline fires during the backoff (not during the request, whatever the machine's load).
      sleep: () => {
        setTimeout(() => controller.abort(reason), 10);
        return new Promise<void>(() => {});
      },
    });

    // Act
    const answer = model.chat(MESSAGES, { signal: controller.signal });

    // Assess
    await expect(answer).rejects.toBe(reason);
    expect(fake.requests.length - before).toBe(1);
  });

  it('retries after the backoff while the signal has not fired', async () => {
    // Prepare
    fake.failNext(503, 1);
    const before = fake.requests.length;
    const model = new OpenAIFoundationModel({
      baseURL: fake.baseURL,
      apiKey: 'test',
      model: 'gpt-fake',
      maxRetries: 1,
      sleep: async () => {},
    });

    // Act
    const answer = await model.chat(MESSAGES, { signal: new AbortController().signal });

    // Assess
    expect(answer.content).toBe('echo: hello');
    expect(fake.requests.length - before).toBe(2);
  });
});
