import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { featureHashVector } from '../../../shared/src/embeddings/feature-hash.js';
import { OpenAIEmbedder } from '../../../shared/src/embeddings/openai.js';
import {
  KNOWN_EMBEDDING_PREFIXES,
  prefixedModelId,
  resolvePrefixes,
} from '../../../shared/src/embeddings/prefixes.js';
import { ValidationError } from '../../../shared/src/errors.js';
import {
  EmbeddingModelMismatchError,
  VectorStoreError,
} from '../../../shared/src/vectorstores/errors.js';
import { PgVectorStore } from '../../../shared/src/vectorstores/pgvector/pgvector-store.js';
import { openPglite } from '../../../shared/src/vectorstores/sql-client.js';
import { type FakeOpenAI, startFakeOpenAI } from '../../support/fake-openai-server.js';

const BGE_QUERY = 'Represent this sentence for searching relevant passages: ';

describe('resolvePrefixes', () => {
  it('applies the known families by model name, in any spelling servers use', () => {
    // Act
    const resolved = Object.fromEntries(
      [
        'intfloat/e5-base-v2',
        'intfloat/multilingual-e5-large',
        'e5-small',
        'BAAI/bge-small-en-v1.5',
        'bge-large-en',
        'text-embedding-bge-base-en-v1.5',
        'nomic-embed-text',
        'nomic-embed-text:latest',
        'nomic-ai/nomic-embed-text-v1.5',
        'mxbai-embed-large:335m',
      ].map((m) => [m, resolvePrefixes(m)]),
    );

    // Assess
    const e5 = { query: 'query: ', document: 'passage: ' };
    const bge = { query: BGE_QUERY, document: '' };
    const nomic = { query: 'search_query: ', document: 'search_document: ' };
    expect(resolved).toEqual({
      'intfloat/e5-base-v2': e5,
      'intfloat/multilingual-e5-large': e5,
      'e5-small': e5,
      'BAAI/bge-small-en-v1.5': bge,
      'bge-large-en': bge,
      'text-embedding-bge-base-en-v1.5': bge,
      'nomic-embed-text': nomic,
      'nomic-embed-text:latest': nomic,
      'nomic-ai/nomic-embed-text-v1.5': nomic,
      'mxbai-embed-large:335m': bge,
    });
  });

  it('applies none to other models, instruction-tuned E5 variants and non-English BGE', () => {
    // Act
    const resolved = [
      'text-embedding-3-small',
      'intfloat/multilingual-e5-large-instruct',
      'intfloat/e5-mistral-7b-instruct',
      'BAAI/bge-large-zh-v1.5',
      'BAAI/bge-m3',
      'fake-embedding',
    ].map((m) => resolvePrefixes(m));

    // Assess
    expect(resolved).toEqual(Array.from({ length: 6 }, () => ({ query: '', document: '' })));
  });

  it('lets explicit prefixes win, a missing field meaning none', () => {
    // Act
    const partial = resolvePrefixes('intfloat/e5-base-v2', { document: 'doc: ' });
    const off = resolvePrefixes('intfloat/e5-base-v2', {});
    const other = resolvePrefixes('my-model', { query: 'q: ', document: 'd: ' });

    // Assess
    expect(partial).toEqual({ query: '', document: 'doc: ' });
    expect(off).toEqual({ query: '', document: '' });
    expect(other).toEqual({ query: 'q: ', document: 'd: ' });
  });

  it('documents where every family comes from', () => {
    // Assess
    expect(KNOWN_EMBEDDING_PREFIXES.map((row) => row.family)).toEqual([
      'E5',
      'BGE English v1/v1.5',
      'Nomic Embed Text',
      'mxbai-embed-large',
    ]);
    expect(KNOWN_EMBEDDING_PREFIXES.every((row) => row.source.startsWith('https://'))).toBe(true);
  });
});

describe('prefixedModelId', () => {
  it('is the model name alone without prefixes, else names them (JSON-quoted)', () => {
    // Act / Assess
    expect(prefixedModelId('text-embedding-3-small', { query: '', document: '' })).toBe(
      'text-embedding-3-small',
    );
    expect(
      prefixedModelId('intfloat/e5-base-v2', { query: 'query: ', document: 'passage: ' }),
    ).toBe('intfloat/e5-base-v2 [query: "query: ", document: "passage: "]');
    expect(prefixedModelId('m', { query: '', document: 'line\n' })).toBe('m [document: "line\\n"]');
  });
});

describe('OpenAIEmbedder with instruction prefixes (against the fake server)', () => {
  let fake: FakeOpenAI;
  const inputs = (): string[][] => fake.requests.map((r) => (r.body as { input: string[] }).input);
  const make = (model: string, prefixes?: { query?: string; document?: string }) =>
    OpenAIEmbedder.create({
      baseURL: fake.baseURL,
      apiKey: 'k',
      model,
      dimension: 16,
      contextLength: 1000,
      ...(prefixes === undefined ? {} : { prefixes }),
    });

  beforeEach(async () => {
    fake = await startFakeOpenAI();
  });

  afterEach(async () => {
    await fake.close();
  });

  it('E5: "passage: " before every document, "query: " before the query', async () => {
    // Prepare
    const embedder = await make('intfloat/e5-base-v2');

    // Act
    const docs = await embedder.embedDocuments(['cats purr', 'dogs bark']);
    const query = await embedder.embedQuery('what do cats do');

    // Assess
    expect(inputs()).toEqual([
      ['passage: cats purr', 'passage: dogs bark'],
      ['query: what do cats do'],
    ]);
    expect(docs).toEqual([
      featureHashVector('passage: cats purr', 16),
      featureHashVector('passage: dogs bark', 16),
    ]);
    expect(query).toEqual(featureHashVector('query: what do cats do', 16));
    expect(embedder.prefixes).toEqual({ query: 'query: ', document: 'passage: ' });
    expect(embedder.modelId).toBe('intfloat/e5-base-v2 [query: "query: ", document: "passage: "]');
    expect(embedder.model).toBe('intfloat/e5-base-v2');
  });

  it('BGE v1.5 English: the instruction before the query only', async () => {
    // Prepare
    const embedder = await make('BAAI/bge-base-en-v1.5');

    // Act
    await embedder.embedDocuments(['a passage']);
    await embedder.embedQuery('a question');

    // Assess
    expect(inputs()).toEqual([['a passage'], [`${BGE_QUERY}a question`]]);
    expect(fake.requests.map((r) => (r.body as { model: string }).model)).toEqual([
      'BAAI/bge-base-en-v1.5',
      'BAAI/bge-base-en-v1.5',
    ]);
  });

  it('explicit prefixes win over the family; {} turns them off', async () => {
    // Prepare
    const custom = await make('intfloat/e5-base-v2', { query: 'Q: ', document: 'D: ' });
    const off = await make('intfloat/e5-base-v2', {});

    // Act
    await custom.embedDocuments(['x']);
    await custom.embedQuery('y');
    await off.embedDocuments(['x']);
    await off.embedQuery('y');

    // Assess
    expect(inputs()).toEqual([['D: x'], ['Q: y'], ['x'], ['y']]);
    expect(off.modelId).toBe('intfloat/e5-base-v2');
  });

  it('detects the dimension and the context without prefixes', async () => {
    // Prepare
    fake.setMaxContextTokens(1000);

    // Act
    await OpenAIEmbedder.create({
      baseURL: fake.baseURL,
      apiKey: 'k',
      model: 'nomic-embed-text',
    });

    // Assess
    expect(inputs()[0]).toEqual(['test']);
    expect(inputs().every((i) => !(i[0] as string).startsWith('search_'))).toBe(true);
  });

  it('keeps the prefix when truncating a long document (the tail is cut)', async () => {
    // Prepare
    const embedder = await make('intfloat/e5-base-v2');

    // Act
    await embedder.embedDocuments(['w'.repeat(5000)]);

    // Assess: 95 % of 1000 tokens = 3800 characters, prefix included
    expect(inputs()).toEqual([[`passage: ${'w'.repeat(3800 - 'passage: '.length)}`]]);
  });

  it('rejects prefixes that are not strings', async () => {
    // Act
    const outcome = make('m', { query: 3 as unknown as string });

    // Assess
    await expect(outcome).rejects.toThrow(
      new ValidationError('prefixes must be { query?: string; document?: string }'),
    );
    expect(fake.requests).toHaveLength(0);
  });

  it('a collection built without the prefixes refuses the prefixed embedder (no silent mixing)', async () => {
    // Prepare
    const client = await openPglite({});
    const plain = await make('intfloat/e5-base-v2', {});
    const prefixed = await make('intfloat/e5-base-v2');
    try {
      await PgVectorStore.create({ client, embedder: plain, collectionName: 'ai4rag_prefix_test' });

      // Act
      const outcome = PgVectorStore.create({
        client,
        embedder: prefixed,
        collectionName: 'ai4rag_prefix_test',
      });

      // Assess
      await expect(outcome).rejects.toThrow(
        new EmbeddingModelMismatchError(
          'ai4rag_prefix_test',
          'intfloat/e5-base-v2',
          'intfloat/e5-base-v2 [query: "query: ", document: "passage: "]',
        ),
      );
      await expect(outcome).rejects.toBeInstanceOf(VectorStoreError);
    } finally {
      await client.close();
    }
  });
});
