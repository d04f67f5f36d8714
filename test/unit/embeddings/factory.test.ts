import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createEmbedder, DEFAULT_EMBEDDING_MODEL } from '../../../shared/src/embeddings/factory.js';
import { FeatureHashEmbedder } from '../../../shared/src/embeddings/feature-hash.js';
import { OpenAIEmbedder } from '../../../shared/src/embeddings/openai.js';
import { ValidationError } from '../../../shared/src/errors.js';
import { type FakeOpenAI, startFakeOpenAI } from '../../support/fake-openai-server.js';

describe('createEmbedder', () => {
  let fake: FakeOpenAI;

  beforeEach(async () => {
    fake = await startFakeOpenAI({ dimension: 12 });
  });

  afterEach(async () => {
    await fake.close();
  });

  it('builds the local default from DEFAULT_EMBEDDING_MODEL and from the "local" shorthand', async () => {
    // Act
    const byId = await createEmbedder(DEFAULT_EMBEDDING_MODEL);
    const shorthand = await createEmbedder('local');

    // Assess
    expect(DEFAULT_EMBEDDING_MODEL).toBe('local/feature-hash-v1-384');
    expect(byId).toBeInstanceOf(FeatureHashEmbedder);
    expect(byId.modelId).toBe('local/feature-hash-v1-384');
    expect(shorthand.modelId).toBe('local/feature-hash-v1-384');
  });

  it('reads the dimension from a local model id', async () => {
    // Act
    const embedder = await createEmbedder('local/feature-hash-v1-64');

    // Assess
    expect(embedder.dimension).toBe(64);
    expect(await embedder.embedQuery('x')).toHaveLength(64);
  });

  it('rejects an unknown local model id', async () => {
    // Act / Assess
    await expect(createEmbedder('local/minilm')).rejects.toThrow(ValidationError);
    await expect(createEmbedder('local/feature-hash-v1-0')).rejects.toThrow(ValidationError);
    await expect(createEmbedder('')).rejects.toThrow(ValidationError);
  });

  it('explains which settings a remote model id needs', async () => {
    // Act
    const missingBoth = await createEmbedder('text-embedding-3-small').catch((e: unknown) => e);
    const missingKey = await createEmbedder('text-embedding-3-small', {
      openai: { baseURL: fake.baseURL, apiKey: '' },
    }).catch((e: unknown) => e);

    // Assess
    expect(missingBoth).toBeInstanceOf(ValidationError);
    expect((missingBoth as Error).message).toContain(
      'OPENAI_BASE_URL (baseURL) and OPENAI_API_KEY',
    );
    expect((missingKey as Error).message).toContain('set OPENAI_API_KEY (apiKey), or use');
    expect(fake.requests).toHaveLength(0);
  });

  it('builds an OpenAI-compatible embedder for any other id, auto-detecting what is not given', async () => {
    // Act
    const embedder = await createEmbedder('BAAI/bge-small-en-v1.5', {
      openai: { baseURL: fake.baseURL, apiKey: 'k', contextLength: 512 * 2 },
    });

    // Assess
    expect(embedder).toBeInstanceOf(OpenAIEmbedder);
    expect(embedder.modelId).toBe(
      'BAAI/bge-small-en-v1.5 [query: "Represent this sentence for searching relevant passages: "]',
    );
    expect(embedder.dimension).toBe(12);
    expect(embedder.contextLength).toBe(1024);
    expect(fake.requests).toHaveLength(1);
  });

  it('passes explicit prefixes through, which win over the known family and name the model id', async () => {
    // Act
    const custom = await createEmbedder('intfloat/e5-base-v2', {
      openai: {
        baseURL: fake.baseURL,
        apiKey: 'k',
        dimension: 12,
        contextLength: 1024,
        prefixes: { query: 'Q: ' },
      },
    });
    const off = await createEmbedder('intfloat/e5-base-v2', {
      openai: {
        baseURL: fake.baseURL,
        apiKey: 'k',
        dimension: 12,
        contextLength: 1024,
        prefixes: {},
      },
    });
    await custom.embedDocuments(['doc']);
    await custom.embedQuery('question');

    // Assess
    expect(custom.modelId).toBe('intfloat/e5-base-v2 [query: "Q: "]');
    expect(off.modelId).toBe('intfloat/e5-base-v2');
    expect(fake.requests.map((r) => (r.body as { input: string[] }).input)).toEqual([
      ['doc'],
      ['Q: question'],
    ]);
  });
});
