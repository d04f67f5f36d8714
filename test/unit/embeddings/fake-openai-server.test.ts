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

  it('answers an over-limit context as each flavor does: vLLM 400, TEI 413, Ollama truncates', async () => {
    // Prepare
    const post = (server: FakeOpenAI) =>
      fetch(`${server.baseURL}/embeddings`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'm', input: ['x'.repeat(44)], encoding_format: 'float' }),
      });
    const vllm = await startFakeOpenAI({ flavor: 'vllm', maxContextTokens: 10, dimension: 2 });
    const tei = await startFakeOpenAI({ flavor: 'tei', maxContextTokens: 10, dimension: 2 });
    const ollama = await startFakeOpenAI({ flavor: 'ollama', maxContextTokens: 10, dimension: 2 });

    try {
      // Act
      const [v, t, o] = await Promise.all([post(vllm), post(tei), post(ollama)]);

      // Assess
      expect([v.status, t.status, o.status]).toEqual([400, 413, 200]);
      expect(await v.json()).toEqual({
        object: 'error',
        message:
          "This model's maximum context length is 10 tokens. However, you requested 11 tokens in the input for embedding generation. Please reduce the length of the input.",
        type: 'BadRequestError',
        param: null,
        code: 400,
      });
      expect(await t.json()).toEqual({
        message: 'Input validation error: `inputs` must have less than 10 tokens. Given: 11',
        code: 413,
        type: 'validation',
      });
      expect(((await o.json()) as { data: { embedding: number[] }[] }).data[0]?.embedding).toEqual(
        featureHashVector('x'.repeat(40), 2),
      );
    } finally {
      await Promise.all([vllm.close(), tei.close(), ollama.close()]);
    }
  });

  it('injects failures in the flavor’s error shape (TEI: no envelope)', async () => {
    // Prepare
    const tei = await startFakeOpenAI({ flavor: 'tei' });
    tei.failNext(429, 1, { retryAfterSeconds: 1 });

    try {
      // Act
      const res = await fetch(`${tei.baseURL}/embeddings`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ input: 'a' }),
      });

      // Assess
      expect(res.status).toBe(429);
      expect(res.headers.get('retry-after')).toBe('1');
      expect(await res.json()).toEqual({
        message: 'injected failure 429',
        code: 429,
        type: 'overloaded',
      });
    } finally {
      await tei.close();
    }
  });

  it('serves no chat and no model list as TEI', async () => {
    // Prepare
    const tei = await startFakeOpenAI({ flavor: 'tei' });
    const teiClient = new OpenAI({ baseURL: tei.baseURL, apiKey: 'test', maxRetries: 0 });

    try {
      // Act
      const chat = await teiClient.chat.completions
        .create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] })
        .catch((e: unknown) => e);

      // Assess
      expect(chat).toBeInstanceOf(NotFoundError);
      expect(tei.requests[0]?.status).toBe(404);
    } finally {
      await tei.close();
    }
  });

  it('streams vLLM chat: stop_reason, finish on the last content chunk, usage per chunk and at the end', async () => {
    // Prepare
    const vllm = await startFakeOpenAI({ flavor: 'vllm' });
    const vllmClient = new OpenAI({ baseURL: vllm.baseURL, apiKey: 'test', maxRetries: 0 });

    try {
      // Act
      const stream = await vllmClient.chat.completions.create({
        model: 'served',
        messages: [{ role: 'user', content: 'two words' }],
        stream: true,
        stream_options: {
          include_usage: true,
          continuous_usage_stats: true,
        } as OpenAI.ChatCompletionStreamOptions,
      });
      const chunks: OpenAI.ChatCompletionChunk[] = [];
      for await (const chunk of stream) chunks.push(chunk);

      // Assess
      expect(chunks.map((c) => c.choices[0]?.delta.content)).toEqual([
        '',
        'echo: ',
        'two ',
        'words',
        undefined,
      ]);
      expect(chunks.map((c) => c.choices[0]?.finish_reason ?? null)).toEqual([
        null,
        null,
        null,
        'stop',
        null,
      ]);
      expect(chunks[1]?.choices[0]).toMatchObject({ stop_reason: null });
      expect(chunks.map((c) => c.usage?.total_tokens)).toEqual([7, 7, 7, 7, 7]); // ceil(9 / 4) + ceil(15 / 4)
      expect(chunks.at(-1)?.choices).toEqual([]);
    } finally {
      await vllm.close();
    }
  });

  it('answers Ollama chat with fp_ollama and streams the role on every chunk', async () => {
    // Prepare
    const ollama = await startFakeOpenAI({ flavor: 'ollama' });
    const ollamaClient = new OpenAI({ baseURL: ollama.baseURL, apiKey: 'test', maxRetries: 0 });

    try {
      // Act
      const plain = await ollamaClient.chat.completions.create({
        model: 'llama3',
        messages: [{ role: 'user', content: 'hi' }],
      });
      const stream = await ollamaClient.chat.completions.create({
        model: 'llama3',
        messages: [{ role: 'user', content: 'hi' }],
        stream: true,
        stream_options: { include_usage: true },
      });
      const chunks: OpenAI.ChatCompletionChunk[] = [];
      for await (const chunk of stream) chunks.push(chunk);

      // Assess
      expect(plain.system_fingerprint).toBe('fp_ollama');
      expect(plain.choices[0]?.message.content).toBe('echo: hi');
      expect(chunks.slice(0, -1).every((c) => c.choices[0]?.delta.role === 'assistant')).toBe(true);
      expect(chunks.map((c) => c.choices[0]?.delta.content).join('')).toBe('echo: hi');
      expect(chunks.at(-2)?.choices[0]?.finish_reason).toBe('stop');
      expect(chunks.at(-1)?.usage).toEqual({
        prompt_tokens: 1,
        completion_tokens: 2,
        total_tokens: 3,
      });
    } finally {
      await ollama.close();
    }
  });

  it('counts embedding requests and corrupts from the given one on', async () => {
    // Prepare
    fake.setCorrupt({ kind: 'short', fromRequest: 2, length: 3 });

    // Act
    const first = await client.embeddings.create({
      model: 'm',
      input: 'a',
      encoding_format: 'float',
    });
    const second = await client.embeddings.create({
      model: 'm',
      input: 'a',
      encoding_format: 'float',
    });

    // Assess
    expect(fake.embeddingRequests).toBe(2);
    expect(first.data[0]?.embedding).toHaveLength(16);
    expect(second.data[0]?.embedding).toEqual(featureHashVector('a', 16).slice(0, 3));
  });
});
