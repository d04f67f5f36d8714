import OpenAI, { APIError, BadRequestError } from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { EmbeddingError } from '../../../shared/src/embeddings/errors.js';
import { createEmbedder } from '../../../shared/src/embeddings/factory.js';
import { featureHashVector } from '../../../shared/src/embeddings/feature-hash.js';
import {
  OpenAIEmbedder,
  type OpenAIEmbedderOptions,
} from '../../../shared/src/embeddings/openai.js';
import {
  type FakeOpenAI,
  type FakeOpenAIOptions,
  startFakeOpenAI,
} from '../../support/fake-openai-server.js';

interface EmbeddingsBody {
  input: string[];
  model: string;
  dimensions?: number;
  encoding_format?: string;
}

/** What a base64 float32 answer decodes to. */
const float32 = (v: number[]): number[] => Array.from(new Float32Array(v));

describe('OpenAIEmbedder against OpenAI, Ollama, vLLM and TEI lookalikes (real openai SDK)', () => {
  let fake: FakeOpenAI | undefined;

  const start = async (options: FakeOpenAIOptions): Promise<FakeOpenAI> => {
    fake = await startFakeOpenAI(options);
    return fake;
  };
  const embedder = (server: FakeOpenAI, overrides: Partial<OpenAIEmbedderOptions> = {}) =>
    OpenAIEmbedder.create({
      baseURL: server.baseURL,
      apiKey: 'test-key',
      model: 'fake-embedding',
      contextLength: 2048,
      sleep: async () => undefined,
      random: () => 0.5,
      ...overrides,
    });
  const sizes = (server: FakeOpenAI): number[] =>
    server.requests.map((r) => (r.body as EmbeddingsBody).input.length);

  afterEach(async () => {
    await fake?.close();
    fake = undefined;
  });

  describe('ollama (float arrays whatever encoding_format says, dimensions ignored)', () => {
    it('corrupts vectors through the bare SDK, which asks for base64: 64 floats read as 16', async () => {
      // Prepare
      const server = await start({ flavor: 'ollama', dimension: 64 });
      const client = new OpenAI({ baseURL: server.baseURL, apiKey: 'k', maxRetries: 0 });

      // Act
      const res = await client.embeddings.create({ model: 'nomic-embed-text', input: 'hello' });

      // Assess: the failure this client exists to prevent
      expect((server.requests[0]?.body as EmbeddingsBody | undefined)?.encoding_format).toBe(
        'base64',
      );
      expect(res.data[0]?.embedding).toHaveLength(16);
    });

    it('detects 64 dimensions through createEmbedder and returns the exact vectors', async () => {
      // Prepare
      const server = await start({ flavor: 'ollama', dimension: 64 });

      // Act
      const e = await createEmbedder('nomic-embed-text', {
        openai: { baseURL: server.baseURL, apiKey: 'ollama', contextLength: 2048 },
      });
      const vectors = await e.embedDocuments(['alpha', 'beta']);

      // Assess
      expect(e.dimension).toBe(64);
      expect((server.requests[0]?.body as EmbeddingsBody | undefined)?.encoding_format).toBe(
        'float',
      );
      expect(vectors).toEqual([
        featureHashVector('search_document: alpha', 64),
        featureHashVector('search_document: beta', 64),
      ]);
    });

    it('fails clearly when the requested dimensions are ignored', async () => {
      // Prepare
      const server = await start({ flavor: 'ollama', dimension: 64 });
      const e = await embedder(server, { dimension: 32, sendDimensions: true });

      // Act
      const error = await e.embedDocuments(['a']).catch((err: unknown) => err);

      // Assess
      expect((server.requests[0]?.body as EmbeddingsBody | undefined)?.dimensions).toBe(32);
      expect(error).toEqual(
        new EmbeddingError(
          `Embedding model "fake-embedding" at ${server.baseURL} returned a vector of length 64 for input 0, expected 32`,
        ),
      );
    });

    it('answers with Ollama’s shape: object list, data objects with index, model, usage', async () => {
      // Prepare
      const server = await start({ flavor: 'ollama', dimension: 2 });

      // Act
      const res = await fetch(`${server.baseURL}/embeddings`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'm', input: ['hi'], encoding_format: 'base64' }),
      });

      // Assess
      expect(await res.json()).toEqual({
        object: 'list',
        data: [{ object: 'embedding', embedding: featureHashVector('hi', 2), index: 0 }],
        model: 'm',
        usage: { prompt_tokens: 1, total_tokens: 1 },
      });
    });
  });

  describe('openai', () => {
    it('honours encoding_format: base64 when the SDK asks, floats when the embedder asks', async () => {
      // Prepare
      const server = await start({ flavor: 'openai', dimension: 8 });
      const client = new OpenAI({ baseURL: server.baseURL, apiKey: 'k', maxRetries: 0 });
      const e = await embedder(server, { dimension: 8 });

      // Act
      const viaSdk = await client.embeddings.create({ model: 'm', input: 'x' });
      const viaEmbedder = await e.embedQuery('x');

      // Assess
      expect(viaSdk.data[0]?.embedding).toEqual(float32(featureHashVector('x', 8)));
      expect(viaEmbedder).toEqual(featureHashVector('x', 8));
      expect(server.requests.map((r) => (r.body as EmbeddingsBody).encoding_format)).toEqual([
        'base64',
        'float',
      ]);
    });

    it('still decodes a base64 float32 answer sent although floats were asked for', async () => {
      // Prepare
      const server = await start({ responseEncoding: 'base64', dimension: 8 });
      const e = await embedder(server, { dimension: undefined });

      // Act
      const vectors = await e.embedDocuments(['one', 'two']);

      // Assess
      expect(e.dimension).toBe(8);
      expect(vectors).toEqual([
        float32(featureHashVector('one', 8)),
        float32(featureHashVector('two', 8)),
      ]);
    });
  });

  describe('vllm', () => {
    it('answers with vLLM’s shape: id, created, usage with completion_tokens', async () => {
      // Prepare
      const server = await start({ flavor: 'vllm', dimension: 2 });
      const client = new OpenAI({ baseURL: server.baseURL, apiKey: 'k', maxRetries: 0 });

      // Act
      const res = await client.embeddings.create({
        model: 'm',
        input: ['abcd', 'ef'],
        encoding_format: 'float',
      });

      // Assess
      expect(res).toEqual({
        id: 'embd-fake-1',
        object: 'list',
        created: 1_700_000_000,
        model: 'm',
        data: [
          { index: 0, object: 'embedding', embedding: featureHashVector('abcd', 2) },
          { index: 1, object: 'embedding', embedding: featureHashVector('ef', 2) },
        ],
        usage: {
          prompt_tokens: 2,
          total_tokens: 2,
          completion_tokens: 0,
          prompt_tokens_details: null,
        },
      });
    });

    it('reads vLLM’s top-level error body, so its context-length refusal leads to the 90 % retry', async () => {
      // Prepare
      const server = await start({ flavor: 'vllm', maxContextTokens: 900 });
      const e = await embedder(server, { dimension: 16, contextLength: 1000 });

      // Act
      const [vector] = await e.embedDocuments(['z'.repeat(5000)]);

      // Assess
      expect(server.requests.map((r) => r.status)).toEqual([400, 200]);
      expect(server.requests.map((r) => (r.body as EmbeddingsBody).input[0]?.length)).toEqual([
        3800, 3600,
      ]);
      expect(vector).toEqual(featureHashVector('z'.repeat(3600), 16));
    });

    it('names the server’s message in the error; a bare client without the envelope loses it', async () => {
      // Prepare
      const server = await start({ flavor: 'vllm' });
      const own = await embedder(server, { dimension: 16 });
      const bare = await embedder(server, {
        dimension: 16,
        client: new OpenAI({ baseURL: server.baseURL, apiKey: 'k', maxRetries: 0 }),
      });
      server.failNext(400, 2);

      // Act
      const ownError = await own.embedQuery('a').catch((err: unknown) => err);
      const bareError = await bare.embedQuery('a').catch((err: unknown) => err);

      // Assess
      expect((ownError as Error).message).toBe(
        `Embedding model "fake-embedding" at ${server.baseURL}: request failed (status 400: 400 injected failure 400)`,
      );
      expect((ownError as EmbeddingError).cause).toBeInstanceOf(BadRequestError);
      expect((bareError as Error).message).toBe(
        `Embedding model "fake-embedding" at ${server.baseURL}: request failed (status 400: 400 status code (no body))`,
      );
    });

    it('retries an injected 503 and then succeeds', async () => {
      // Prepare
      const server = await start({ flavor: 'vllm' });
      const e = await embedder(server, { dimension: 16 });
      server.failNext(503, 2);

      // Act
      const vector = await e.embedQuery('q');

      // Assess
      expect(server.requests.map((r) => r.status)).toEqual([503, 503, 200]);
      expect(vector).toEqual(featureHashVector('q', 16));
    });
  });

  describe('tei (at most 32 inputs, errors without the OpenAI envelope)', () => {
    it('splits a refused batch of 40 into the 32 TEI names, and keeps that size afterwards', async () => {
      // Prepare
      const server = await start({ flavor: 'tei' });
      const e = await embedder(server, { dimension: 16 });
      const texts = Array.from({ length: 40 }, (_, i) => `passage ${i}`);

      // Act
      const first = await e.embedDocuments(texts);
      const second = await e.embedDocuments(texts);

      // Assess
      expect(sizes(server)).toEqual([40, 32, 8, 32, 8]);
      expect(server.requests.map((r) => r.status)).toEqual([413, 200, 200, 200, 200]);
      expect(first).toEqual(texts.map((t) => featureHashVector(t, 16)));
      expect(second).toEqual(first);
    });

    it('halves a refused batch when a bare client cannot read TEI’s message', async () => {
      // Prepare
      const server = await start({ flavor: 'tei' });
      const e = await embedder(server, {
        dimension: 16,
        client: new OpenAI({ baseURL: server.baseURL, apiKey: 'k', maxRetries: 0 }),
      });
      const texts = Array.from({ length: 40 }, (_, i) => `passage ${i}`);

      // Act
      const vectors = await e.embedDocuments(texts);

      // Assess
      expect(sizes(server)).toEqual([40, 20, 20]);
      expect(vectors).toHaveLength(40);
    });

    it('detects the context length from TEI’s 413 "must have less than N tokens"', async () => {
      // Prepare
      const server = await start({ flavor: 'tei', maxContextTokens: 1000 });

      // Act
      const e = await embedder(server, { dimension: 16, contextLength: undefined });

      // Assess: the same binary search as against OpenAI (n ≤ 800 words pass)
      expect(e.contextLength).toBe(794);
      expect(server.requests.filter((r) => r.status === 413)).toHaveLength(4);
    });

    it('answers the served model whatever was asked, and honours base64', async () => {
      // Prepare
      const server = await start({ flavor: 'tei', dimension: 4 });
      const client = new OpenAI({ baseURL: server.baseURL, apiKey: 'k', maxRetries: 0 });

      // Act
      const res = await client.embeddings.create({ model: 'anything', input: ['x'] });
      const refusal = await client.embeddings
        .create({ model: 'anything', input: Array.from({ length: 33 }, () => 'x') })
        .catch((err: unknown) => err);

      // Assess
      expect(res.model).toBe('BAAI/bge-small-en-v1.5');
      expect(res.data[0]?.embedding).toEqual(float32(featureHashVector('x', 4)));
      expect(refusal).toBeInstanceOf(APIError);
      expect((refusal as APIError).status).toBe(413);
    });
  });

  describe('validation of every answer (corrupt vectors from some request on)', () => {
    const at = (server: FakeOpenAI, model = 'fake-embedding') =>
      `Embedding model "${model}" at ${server.baseURL}`;

    it('names the input of a short vector across batches: "for input 3, expected 64"', async () => {
      // Prepare
      const server = await start({
        flavor: 'ollama',
        dimension: 64,
        corrupt: { kind: 'short', fromRequest: 2, input: 1 },
      });
      const e = await embedder(server, {
        model: 'nomic-embed-text',
        dimension: 64,
        maxBatchSize: 2,
        concurrency: 1,
      });

      // Act
      const error = await e.embedDocuments(['a', 'b', 'c', 'd']).catch((err: unknown) => err);

      // Assess
      expect(error).toEqual(
        new EmbeddingError(
          `${at(server, 'nomic-embed-text')} returned a vector of length 16 for input 3, expected 64`,
        ),
      );
      expect(sizes(server)).toEqual([2, 2]);
    });

    it('rejects a NaN sent as null in a float array', async () => {
      // Prepare
      const server = await start({ flavor: 'tei', corrupt: { kind: 'nan' } });
      const e = await embedder(server, { dimension: 16 });

      // Act
      const error = await e.embedDocuments(['a', 'b']).catch((err: unknown) => err);

      // Assess
      expect(error).toEqual(
        new EmbeddingError(
          `${at(server)} returned a non-numeric or non-finite value null at position 0 of the vector for input 0`,
        ),
      );
    });

    it('rejects a NaN inside a base64 float32 answer', async () => {
      // Prepare
      const server = await start({ responseEncoding: 'base64', corrupt: { kind: 'nan' } });
      const e = await embedder(server, { dimension: 16 });

      // Act
      const error = await e.embedQuery('a').catch((err: unknown) => err);

      // Assess
      expect(error).toEqual(
        new EmbeddingError(
          `${at(server)} returned a non-numeric or non-finite value NaN at position 0 of the vector for input 0`,
        ),
      );
    });

    it('rejects a number sent as a string', async () => {
      // Prepare
      const server = await start({ flavor: 'vllm', corrupt: { kind: 'string', input: 1 } });
      const e = await embedder(server, { dimension: 16 });
      const sent = JSON.stringify(String(featureHashVector('b', 16)[0]));

      // Act
      const error = await e.embedDocuments(['a', 'b']).catch((err: unknown) => err);

      // Assess
      expect(error).toEqual(
        new EmbeddingError(
          `${at(server)} returned a non-numeric or non-finite value ${sent} at position 0 of the vector for input 1`,
        ),
      );
    });

    it('rejects an embedding that is neither numbers nor base64 float32', async () => {
      // Prepare
      const server = await start({ corrupt: { kind: 'garbage' } });
      const e = await embedder(server, { dimension: 16 });

      // Act
      const error = await e.embedQuery('a').catch((err: unknown) => err);

      // Assess
      expect(error).toEqual(
        new EmbeddingError(
          `${at(server)} returned an embedding for input 0 that is neither an array of numbers nor base64 float32 ("not a vector!")`,
        ),
      );
    });

    it('rejects an answer with one vector fewer than inputs', async () => {
      // Prepare
      const server = await start({ flavor: 'ollama', corrupt: { kind: 'drop' } });
      const e = await embedder(server, { dimension: 16 });

      // Act
      const error = await e.embedDocuments(['a', 'b']).catch((err: unknown) => err);

      // Assess
      expect(error).toEqual(new EmbeddingError(`${at(server)} returned 1 vectors for 2 inputs`));
    });

    it('checks every later answer against the detected dimension', async () => {
      // Prepare
      const server = await start({ flavor: 'ollama', dimension: 64 });
      const e = await embedder(server, { dimension: undefined });
      server.setCorrupt({ kind: 'short', fromRequest: server.embeddingRequests + 1 });

      // Act
      const error = await e.embedQuery('a').catch((err: unknown) => err);

      // Assess
      expect(e.dimension).toBe(64);
      expect(error).toEqual(
        new EmbeddingError(`${at(server)} returned a vector of length 16 for input 0, expected 64`),
      );
    });
  });
});
