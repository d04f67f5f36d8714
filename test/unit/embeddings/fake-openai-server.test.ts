import OpenAI, { NotFoundError, RateLimitError } from 'openai';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { featureHashVector } from '../../../shared/src/embeddings/feature-hash.js';
import { type FakeOpenAI, startFakeOpenAI } from '../../support/fake-openai-server.js';

describe('fake OpenAI-compatible server', () => {
  let fake: FakeOpenAI;
  let client: OpenAI;

  beforeEach(async () => {
    fake = await startFakeOpenAI();
    client = new OpenAI({ baseURL: fake.baseURL, apiKey: 'test', maxRetries: 0 });
  });

  afterEach(async () => {
    await fake.close();
  });

  it('listens on 127.0.0.1 under /v1', () => {
    // Assess
    expect(fake.baseURL).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/);
  });

  it('answers float embeddings with the requested dimension', async () => {
    // Act
    const res = await client.embeddings.create({
      model: 'm',
      input: ['alpha', 'beta'],
      dimensions: 4,
      encoding_format: 'float',
    });

    // Assess
    expect(res.data.map((d) => d.index)).toEqual([0, 1]);
    expect(res.data[0]?.embedding).toEqual(featureHashVector('alpha', 4));
    expect(res.usage.prompt_tokens).toBe(3); // ceil(5 / 4) + ceil(4 / 4)
  });

  it('answers base64 float32 embeddings that the SDK decodes', async () => {
    // Act
    const res = await client.embeddings.create({ model: 'm', input: 'gamma' });

    // Assess
    expect(
      (fake.requests[0]?.body as { encoding_format?: string } | undefined)?.encoding_format,
    ).toBe('base64');
    expect(res.data[0]?.embedding).toEqual(
      Array.from(new Float32Array(featureHashVector('gamma', 16))),
    );
  });

  it('rejects inputs over the context limit with an OpenAI-style 400', async () => {
    // Prepare
    fake.setMaxContextTokens(10);

    // Act
    const response = await fetch(`${fake.baseURL}/embeddings`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', input: ['short', 'x'.repeat(44)] }),
    });

    // Assess
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({
      error: {
        message:
          "This model's maximum context length is 10 tokens, however you requested 11 tokens in input 1.",
        type: 'invalid_request_error',
        param: null,
        code: 'context_length_exceeded',
      },
    });
  });

  it('fails the next N requests with the injected status and retry-after', async () => {
    // Prepare
    fake.failNext(429, 1, { retryAfterSeconds: 2 });

    // Act
    const error = await client.embeddings.create({ model: 'm', input: 'a' }).catch((e) => e);
    const ok = await client.embeddings.create({ model: 'm', input: 'a' });

    // Assess
    expect(error).toBeInstanceOf(RateLimitError);
    expect((error as RateLimitError).headers.get('retry-after')).toBe('2');
    expect(ok.data).toHaveLength(1);
    expect(fake.requests.map((r) => r.status)).toEqual([429, 200]);
  });

  it('answers a chat completion with a deterministic echo', async () => {
    // Act
    const res = await client.chat.completions.create({
      model: 'fake-chat',
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'What is RAG?' },
      ],
    });

    // Assess
    expect(res.choices[0]?.message).toMatchObject({
      role: 'assistant',
      content: 'echo: What is RAG?',
    });
    expect(res.choices[0]?.finish_reason).toBe('stop');
  });

  it('streams a chat completion as SSE with role first, usage and [DONE]', async () => {
    // Act
    const stream = await client.chat.completions.create({
      model: 'fake-chat',
      messages: [{ role: 'user', content: 'stream me please' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let role: string | undefined;
    let usageSeen = false;
    for await (const chunk of stream) {
      role ??= chunk.choices[0]?.delta.role;
      text += chunk.choices[0]?.delta.content ?? '';
      if (chunk.usage) usageSeen = true;
    }

    // Assess
    expect(role).toBe('assistant');
    expect(text).toBe('echo: stream me please');
    expect(usageSeen).toBe(true);
  });

  it('works with the SDK stream helper', async () => {
    // Act
    const runner = client.chat.completions.stream({
      model: 'fake-chat',
      messages: [{ role: 'user', content: 'helper' }],
    });
    const final = await runner.finalChatCompletion();

    // Assess
    expect(final.choices[0]?.message.content).toBe('echo: helper');
  });

  it('uses a custom chat responder', async () => {
    // Prepare
    await fake.close();
    fake = await startFakeOpenAI({ chatResponder: (q) => q.toUpperCase() });
    client = new OpenAI({ baseURL: fake.baseURL, apiKey: 'test', maxRetries: 0 });

    // Act
    const res = await client.chat.completions.create({
      model: 'fake-chat',
      messages: [{ role: 'user', content: [{ type: 'text', text: 'shout' }] }],
    });

    // Assess
    expect(res.choices[0]?.message.content).toBe('SHOUT');
  });

  it('lists models and answers unknown routes with a 404', async () => {
    // Act
    const models = await client.models.list();
    const missing = await client.get('/nope').catch((e: unknown) => e);

    // Assess
    expect(models.data.map((m) => m.id)).toEqual(['fake-embedding', 'fake-chat']);
    expect(missing).toBeInstanceOf(NotFoundError);
  });
});
