import OpenAI, { AuthenticationError, BadRequestError, InternalServerError } from 'openai';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EmbeddingError } from '../../../shared/src/embeddings/errors.js';
import { featureHashVector } from '../../../shared/src/embeddings/feature-hash.js';
import {
  OpenAIEmbedder,
  type OpenAIEmbedderOptions,
} from '../../../shared/src/embeddings/openai.js';
import { ValidationError } from '../../../shared/src/errors.js';
import { type FakeOpenAI, startFakeOpenAI } from '../../support/fake-openai-server.js';

interface EmbeddingsBody {
  input: string[];
  model: string;
  dimensions?: number;
  encoding_format?: string;
}

describe('OpenAIEmbedder (through the openai SDK, against the fake server)', () => {
  let fake: FakeOpenAI;
  let sleeps: number[];

  const options = (overrides: Partial<OpenAIEmbedderOptions> = {}): OpenAIEmbedderOptions => ({
    baseURL: fake.baseURL,
    apiKey: 'test-key',
    model: 'fake-embedding',
    dimension: 16,
    contextLength: 1000,
    sleep: async (ms: number) => void sleeps.push(ms),
    random: () => 0.5,
    ...overrides,
  });
  const inputs = (): string[][] => fake.requests.map((r) => (r.body as EmbeddingsBody).input);

  beforeEach(async () => {
    fake = await startFakeOpenAI();
    sleeps = [];
  });

  afterEach(async () => {
    await fake.close();
  });

  it('auto-detects the dimension and the context length by binary search', async () => {
    // Prepare
    fake.setMaxContextTokens(1000);

    // Act
    const embedder = await OpenAIEmbedder.create(
      options({ dimension: undefined, contextLength: undefined }),
    );

    // Assess: "word " x n is ceil(5n / 4) fake tokens, so n <= 800 passes;
    // probes 4128 F, 2096 F, 1080 F, 572 ok, 826 F, 699 ok, 762 ok, 794 ok -> 794
    expect(embedder.dimension).toBe(16);
    expect(embedder.contextLength).toBe(794);
    expect(embedder.modelId).toBe('fake-embedding');
    expect(fake.requests).toHaveLength(9);
    expect(inputs()[0]).toEqual(['test']);
    expect(
      inputs()
        .slice(1)
        .map((i) => (i[0] as string).length / 5),
    ).toEqual([4128, 2096, 1080, 572, 826, 699, 762, 794]);
  });

  it('makes no call on creation when dimension and context length are given', async () => {
    // Act
    const embedder = await OpenAIEmbedder.create(options());

    // Assess
    expect(embedder.dimension).toBe(16);
    expect(embedder.contextLength).toBe(1000);
    expect(fake.requests).toHaveLength(0);
  });

  it('rejects a model whose detected context length is below 700 tokens', async () => {
    // Prepare
    fake.setMaxContextTokens(500);

    // Act
    const outcome = OpenAIEmbedder.create(options({ contextLength: undefined }));

    // Assess: n <= 400 passes; probes 4128 F, 2096 F, 1080 F, 572 F, 318 ok, 445 F, 381 ok, 413 F
    await expect(outcome).rejects.toThrow(
      new EmbeddingError(
        `Embedding model "fake-embedding" at ${fake.baseURL}: context length 381 is below the minimum 700 tokens`,
      ),
    );
    expect(fake.requests).toHaveLength(8);
  });

  it('batches 2,500 texts into 3 calls of at most 1024 and returns vectors in input order', async () => {
    // Prepare
    const embedder = await OpenAIEmbedder.create(options());
    const texts = Array.from(
      { length: 2500 },
      (_, i) => `document number ${i} about topic ${i % 7}`,
    );

    // Act
    const vectors = await embedder.embedDocuments(texts);

    // Assess
    expect(fake.requests).toHaveLength(3);
    const sent = inputs().sort(
      (a, b) => texts.indexOf(a[0] as string) - texts.indexOf(b[0] as string),
    );
    expect(sent.map((i) => i.length)).toEqual([1024, 1024, 452]);
    expect(sent.flat()).toEqual(texts);
    expect(vectors).toHaveLength(2500);
    vectors.forEach((v, i) => {
      expect(v).toEqual(featureHashVector(texts[i] as string, 16));
    });
  });

  it('sends the model id verbatim and asks for float encoding', async () => {
    // Prepare
    const embedder = await OpenAIEmbedder.create(options({ model: 'org/Model-Name:v1.5' }));

    // Act
    await embedder.embedQuery('hello');

    // Assess
    const body = fake.requests[0]?.body as EmbeddingsBody;
    expect(body.model).toBe('org/Model-Name:v1.5');
    expect(body.encoding_format).toBe('float');
    expect(body.dimensions).toBeUndefined();
  });

  it('embeds a query as a one-text batch', async () => {
    // Prepare
    const embedder = await OpenAIEmbedder.create(options());

    // Act
    const vector = await embedder.embedQuery('what is a cat?');

    // Assess
    expect(vector).toEqual(featureHashVector('what is a cat?', 16));
    expect(inputs()).toEqual([['what is a cat?']]);
  });

  it('returns [] for no texts without a call', async () => {
    // Prepare
    const embedder = await OpenAIEmbedder.create(options());

    // Act
    const vectors = await embedder.embedDocuments([]);

    // Assess
    expect(vectors).toEqual([]);
    expect(fake.requests).toHaveLength(0);
  });

  it('truncates a text longer than the context to 95 % of it (4 chars per token)', async () => {
    // Prepare
    const embedder = await OpenAIEmbedder.create(options({ contextLength: 1000 }));
    const long = 'x'.repeat(5000);
    const fits = 'y'.repeat(4000);

    // Act
    await embedder.embedDocuments([long, fits]);

    // Assess
    expect(inputs()).toEqual([['x'.repeat(3800), fits]]);
  });

  it('retries a batch once at 90 % when the server still reports a context-length error', async () => {
    // Prepare
    fake.setMaxContextTokens(900);
    const embedder = await OpenAIEmbedder.create(options({ contextLength: 1000 }));

    // Act
    const [vector] = await embedder.embedDocuments(['z'.repeat(5000)]);

    // Assess
    expect(fake.requests.map((r) => r.status)).toEqual([400, 200]);
    expect(inputs().map((i) => (i[0] as string).length)).toEqual([3800, 3600]);
    expect(vector).toEqual(featureHashVector('z'.repeat(3600), 16));
  });

  it('fails with EmbeddingError when the 90 % retry is still too long', async () => {
    // Prepare
    fake.setMaxContextTokens(100);
    const embedder = await OpenAIEmbedder.create(options({ contextLength: 1000 }));

    // Act
    const outcome = embedder.embedDocuments(['z'.repeat(5000)]);

    // Assess
    await expect(outcome).rejects.toBeInstanceOf(EmbeddingError);
    await expect(outcome).rejects.toMatchObject({ cause: expect.any(BadRequestError) });
    expect(fake.requests).toHaveLength(2);
  });

  it('retries a 429 with backoff and then succeeds', async () => {
    // Prepare
    const embedder = await OpenAIEmbedder.create(options({ baseDelayMs: 100, maxDelayMs: 1000 }));
    fake.failNext(429, 2);

    // Act
    const vectors = await embedder.embedDocuments(['a', 'b']);

    // Assess: jitter 0.5 of caps 100 and 200
    expect(vectors).toHaveLength(2);
    expect(fake.requests.map((r) => r.status)).toEqual([429, 429, 200]);
    expect(sleeps).toEqual([50, 100]);
  });

  it('retries a 500 and then succeeds', async () => {
    // Prepare
    const embedder = await OpenAIEmbedder.create(options());
    fake.failNext(500, 1);

    // Act
    const vectors = await embedder.embedDocuments(['a']);

    // Assess
    expect(vectors).toEqual([featureHashVector('a', 16)]);
    expect(fake.requests.map((r) => r.status)).toEqual([500, 200]);
  });

  it('honours the retry-after header of a 429', async () => {
    // Prepare
    const embedder = await OpenAIEmbedder.create(options());
    fake.failNext(429, 1, { retryAfterSeconds: 7 });

    // Act
    await embedder.embedDocuments(['a']);

    // Assess
    expect(sleeps).toEqual([7000]);
    expect(fake.requests).toHaveLength(2);
  });

  it('does not retry a 401 and wraps it in EmbeddingError with the cause', async () => {
    // Prepare
    const embedder = await OpenAIEmbedder.create(options());
    fake.failNext(401, 5);

    // Act
    const error = await embedder.embedDocuments(['a']).catch((e: unknown) => e);

    // Assess
    expect(error).toBeInstanceOf(EmbeddingError);
    expect((error as EmbeddingError).cause).toBeInstanceOf(AuthenticationError);
    expect((error as Error).message).toBe(
      `Embedding model "fake-embedding" at ${fake.baseURL}: request failed (status 401: 401 injected failure 401)`,
    );
    expect(fake.requests).toHaveLength(1);
    expect(sleeps).toEqual([]);
  });

  it('does not retry a 400 that is not about context length', async () => {
    // Prepare
    const embedder = await OpenAIEmbedder.create(options());
    fake.failNext(400, 5);

    // Act
    const error = await embedder.embedDocuments(['a']).catch((e: unknown) => e);

    // Assess
    expect(error).toBeInstanceOf(EmbeddingError);
    expect((error as EmbeddingError).cause).toBeInstanceOf(BadRequestError);
    expect(fake.requests).toHaveLength(1);
  });

  it('gives up with EmbeddingError after maxRetries transient failures', async () => {
    // Prepare
    const embedder = await OpenAIEmbedder.create(options({ maxRetries: 2 }));
    fake.failNext(503, 10);

    // Act
    const error = await embedder.embedDocuments(['a']).catch((e: unknown) => e);

    // Assess
    expect(error).toBeInstanceOf(EmbeddingError);
    expect((error as EmbeddingError).cause).toBeInstanceOf(InternalServerError);
    expect((error as Error).message).toContain('status 503');
    expect(fake.requests).toHaveLength(3);
    expect(sleeps).toHaveLength(2);
  });

  it('keeps at most `concurrency` requests in flight', async () => {
    // Prepare
    await fake.close();
    fake = await startFakeOpenAI({ latencyMs: 20 });
    const embedder = await OpenAIEmbedder.create(options({ maxBatchSize: 2, concurrency: 2 }));
    const texts = Array.from({ length: 20 }, (_, i) => `t${i}`);

    // Act
    const vectors = await embedder.embedDocuments(texts);

    // Assess
    expect(fake.requests).toHaveLength(10);
    expect(fake.maxInFlight).toBe(2);
    expect(vectors[19]).toEqual(featureHashVector('t19', 16));
  });

  it('rejects vectors whose length differs from the declared dimension', async () => {
    // Prepare
    const embedder = await OpenAIEmbedder.create(options({ dimension: 8 }));

    // Act
    const outcome = embedder.embedDocuments(['a']);

    // Assess
    await expect(outcome).rejects.toThrow(
      `Embedding model "fake-embedding" at ${fake.baseURL} returned a vector of length 16 for input 0, expected 8`,
    );
  });

  it('requests the declared dimension when sendDimensions is set', async () => {
    // Prepare
    const embedder = await OpenAIEmbedder.create(options({ dimension: 8, sendDimensions: true }));

    // Act
    const vector = await embedder.embedQuery('a');

    // Assess
    expect((fake.requests[0]?.body as EmbeddingsBody | undefined)?.dimensions).toBe(8);
    expect(vector).toEqual(featureHashVector('a', 8));
  });

  it('uses an injected client over baseURL and apiKey', async () => {
    // Prepare
    const client = new OpenAI({ baseURL: fake.baseURL, apiKey: 'injected', maxRetries: 0 });

    // Act
    const embedder = await OpenAIEmbedder.create(
      options({ baseURL: 'http://127.0.0.1:1/v1', apiKey: 'unused', client }),
    );
    await embedder.embedQuery('a');

    // Assess
    expect(fake.requests[0]?.headers.authorization).toBe('Bearer injected');
  });

  it('wraps a non-transient failure during detection in EmbeddingError', async () => {
    // Prepare
    fake.failNext(401, 1);

    // Act
    const error = await OpenAIEmbedder.create(options({ dimension: undefined })).catch(
      (e: unknown) => e,
    );

    // Assess
    expect(error).toBeInstanceOf(EmbeddingError);
    expect((error as Error).message).toBe(
      `Embedding model "fake-embedding" at ${fake.baseURL}: dimension detection failed (status 401: 401 injected failure 401)`,
    );
    expect((error as EmbeddingError).cause).toBeInstanceOf(AuthenticationError);
  });

  it('rejects malformed responses: wrong count, duplicate index, non-finite values', async () => {
    // Prepare: a stub client has no baseURL, so the configured one is named
    const stub = (data: unknown[]): OpenAI =>
      ({ embeddings: { create: async () => ({ data }) } }) as unknown as OpenAI;
    const make = (data: unknown[]) =>
      OpenAIEmbedder.create(options({ dimension: 2, client: stub(data) }));
    const two = ['a', 'b'];
    const at = `Embedding model "fake-embedding" at ${fake.baseURL}`;

    // Act
    const wrongCount = (await make([{ index: 0, embedding: [1, 0] }]))
      .embedDocuments(two)
      .catch((e: unknown) => e);
    const duplicate = (
      await make([
        { index: 0, embedding: [1, 0] },
        { index: 0, embedding: [0, 1] },
      ])
    )
      .embedDocuments(two)
      .catch((e: unknown) => e);
    const notFinite = (
      await make([
        { index: 1, embedding: [1, 0] },
        { index: 0, embedding: [Number.NaN, 1] },
      ])
    )
      .embedDocuments(two)
      .catch((e: unknown) => e);
    const reordered = (
      await make([
        { index: 1, embedding: [1, 0] },
        { index: 0, embedding: [0, 1] },
      ])
    ).embedDocuments(two);
    const noIndex = (await make([{ embedding: [1, 0] }, { embedding: [0, 1] }])).embedDocuments(
      two,
    );

    // Assess
    expect(await wrongCount).toEqual(new EmbeddingError(`${at} returned 1 vectors for 2 inputs`));
    expect(await duplicate).toEqual(
      new EmbeddingError(`${at} returned a missing, duplicate or out-of-range index 0`),
    );
    expect(await notFinite).toEqual(
      new EmbeddingError(
        `${at} returned a non-numeric or non-finite value NaN at position 0 of the vector for input 0`,
      ),
    );
    await expect(reordered).resolves.toEqual([
      [0, 1],
      [1, 0],
    ]);
    await expect(noIndex).resolves.toEqual([
      [1, 0],
      [0, 1],
    ]);
  });

  it('rejects invalid options before any call', async () => {
    // Act / Assess
    await expect(OpenAIEmbedder.create(options({ maxBatchSize: 2048 }))).rejects.toThrow(
      ValidationError,
    );
    await expect(OpenAIEmbedder.create(options({ concurrency: 0 }))).rejects.toThrow(
      ValidationError,
    );
    await expect(OpenAIEmbedder.create(options({ model: ' ' }))).rejects.toThrow(ValidationError);
    await expect(OpenAIEmbedder.create(options({ apiKey: '' }))).rejects.toThrow(ValidationError);
    expect(fake.requests).toHaveLength(0);
  });
});
