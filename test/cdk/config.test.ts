import { describe, expect, it } from 'vitest';
import {
  DEPLOY_CONTEXT_KEYS,
  DeployConfigError,
  MAX_SERVING_PATTERN_BYTES,
  parseDeployConfig,
  RERANK_ENVIRONMENT_BYTES,
  readDeployContext,
} from '../../lib/config.js';
import { ValidationError } from '../../shared/src/errors.js';

const PATTERN = {
  name: 'Pattern3',
  max_combinations: 12,
  evaluation: { metrics: [] },
  duration_seconds: 40,
  iteration: 2,
  settings: {
    vector_store_binding: { provider_type: 'pgvector', collection_name: 'ai4rag_p3' },
    chunking: { method: 'recursive', chunk_size: 512, chunk_overlap: 64, include_metadata: true },
    embedding: {
      model_id: 'text-embedding-3-small',
      embedding_params: { embedding_dimension: 1536, context_length: 8191 },
    },
    retrieval: {
      method: 'simple',
      number_of_chunks: 5,
      search_mode: 'hybrid',
      ranker_strategy: 'rrf',
      ranker_k: 60,
    },
    generation: {
      model_id: 'gpt-4o-mini',
      temperature: 0.1,
      max_completion_tokens: 512,
      context_template_text: '{document}',
      user_message_text: 'Context: {reference_documents}\nQuestion: {question}',
      system_message_text: 'Answer from the context only.',
      language: { code: 'en', name: 'English' },
    },
  },
};

const OPENAI = { openaiBaseUrl: 'https://models.example.com/v1' };

function errorOf(run: () => unknown): Error {
  try {
    run();
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected an error');
}

describe('parseDeployConfig', () => {
  it('applies the defaults for a pgvector deployment with local models', () => {
    // Prepare
    const context = { vectorStore: 'pgvector' };

    // Act
    const config = parseDeployConfig(context);

    // Assess
    expect(config).toEqual({
      vectorStore: 'pgvector',
      embeddingModel: 'local',
      foundationModel: 'local/extractive-v1',
      trialConcurrency: 2,
      apiAuth: 'iam',
      collection: 'ai4rag_default',
      database: { deletionProtection: true, multiAz: false, instanceType: 't4g.small' },
      autoDeleteBuckets: false,
      network: { interfaceEndpoints: [], awsServiceEndpoints: true },
    });
  });

  it('builds the zilliz and OpenAI settings with the default secret names', () => {
    // Prepare
    const context = {
      vectorStore: 'zilliz',
      zillizUri: 'https://in01-abc.zillizcloud.com',
      ...OPENAI,
      embeddingModel: 'text-embedding-3-small',
      foundationModel: 'gpt-4o-mini',
    };

    // Act
    const config = parseDeployConfig(context);

    // Assess
    expect(config.zilliz).toEqual({
      uri: 'https://in01-abc.zillizcloud.com',
      tokenSecretName: 'ai4rag/zilliz-token',
    });
    expect(config.openai).toEqual({
      baseUrl: 'https://models.example.com/v1',
      apiKeySecretName: 'ai4rag/openai-api-key',
    });
  });

  it('coerces the strings that -c flags pass', () => {
    // Prepare
    const context = {
      vectorStore: 'pgvector',
      trialConcurrency: '7',
      dbDeletionProtection: 'false',
      dbMultiAz: 'true',
      autoDeleteBuckets: 'true',
      apiAuth: 'apiKey',
    };

    // Act
    const config = parseDeployConfig(context);

    // Assess
    expect(config.trialConcurrency).toBe(7);
    expect(config.database).toEqual({
      deletionProtection: false,
      multiAz: true,
      instanceType: 't4g.small',
    });
    expect(config.autoDeleteBuckets).toBe(true);
    expect(config.apiAuth).toBe('apiKey');
  });

  it("rejects vectorStore 'foo' with the one clear message", () => {
    // Act
    const error = errorOf(() => parseDeployConfig({ vectorStore: 'foo' }));

    // Assess
    expect(error).toBeInstanceOf(DeployConfigError);
    expect(error).toBeInstanceOf(ValidationError);
    expect(error.message).toBe(
      `Invalid deploy configuration (CDK context): vectorStore: must be 'pgvector' or 'zilliz' (got "foo")`,
    );
  });

  it('rejects zilliz without a URI', () => {
    // Act
    const error = errorOf(() => parseDeployConfig({ vectorStore: 'zilliz' }));

    // Assess
    expect(error.message).toBe(
      "Invalid deploy configuration (CDK context): zillizUri: is required when vectorStore is 'zilliz' (an https URL)",
    );
  });

  it('rejects a zilliz URI that is not https', () => {
    // Act
    const error = errorOf(() =>
      parseDeployConfig({ vectorStore: 'zilliz', zillizUri: 'http://in01.zillizcloud.com' }),
    );

    // Assess
    expect(error.message).toBe(
      'Invalid deploy configuration (CDK context): zillizUri: must be an https URL (got "http://in01.zillizcloud.com")',
    );
  });

  it('reports every invalid key in one message', () => {
    // Act
    const error = errorOf(() =>
      parseDeployConfig({
        vectorStore: 'pgvector',
        trialConcurrency: 11,
        apiAuth: 'cognito',
        collection: '9bad-name',
      }),
    );

    // Assess
    expect(error.message).toBe(
      'Invalid deploy configuration (CDK context): trialConcurrency: must be an integer from 1 to 10; ' +
        "apiAuth: must be 'iam' or 'apiKey'; " +
        'collection: must start with "ai4rag" and hold only letters, digits and underscores (at most 63 characters)',
    );
  });

  it('refuses a collection name the functions would refuse (no "ai4rag" prefix, too long)', () => {
    for (const collection of ['kb_docs', `ai4rag_${'x'.repeat(57)}`]) {
      expect(
        errorOf(() => parseDeployConfig({ vectorStore: 'pgvector', collection })).message,
      ).toBe(
        'Invalid deploy configuration (CDK context): collection: must start with "ai4rag" and hold only letters, digits and underscores (at most 63 characters)',
      );
    }
    expect(
      parseDeployConfig({ vectorStore: 'pgvector', collection: `ai4rag_${'x'.repeat(56)}` })
        .collection,
    ).toHaveLength(63);
  });

  it('rejects trialConcurrency 0 and 2.5', () => {
    // Act
    const zero = errorOf(() => parseDeployConfig({ vectorStore: 'pgvector', trialConcurrency: 0 }));
    const fraction = errorOf(() =>
      parseDeployConfig({ vectorStore: 'pgvector', trialConcurrency: '2.5' }),
    );

    // Assess
    expect(zero.message).toContain('trialConcurrency: must be an integer from 1 to 10');
    expect(fraction.message).toContain('trialConcurrency: must be an integer from 1 to 10');
  });

  it('requires an endpoint for a remote model and models for an endpoint', () => {
    // Act
    const remoteWithoutEndpoint = errorOf(() =>
      parseDeployConfig({ vectorStore: 'pgvector', embeddingModel: 'text-embedding-3-small' }),
    );
    const endpointWithoutModels = errorOf(() =>
      parseDeployConfig({ vectorStore: 'pgvector', ...OPENAI }),
    );

    // Assess
    expect(remoteWithoutEndpoint.message).toBe(
      "Invalid deploy configuration (CDK context): embeddingModel: 'text-embedding-3-small' is not a local model, so embeddingBaseUrl or openaiBaseUrl is required",
    );
    expect(endpointWithoutModels.message).toBe(
      'Invalid deploy configuration (CDK context): embeddingModel: is required when openaiBaseUrl is set; ' +
        'foundationModel: is required when openaiBaseUrl is set',
    );
  });

  it('gives each role its own endpoint, falling back to openaiBaseUrl, and checks their keys', () => {
    // Act
    const split = parseDeployConfig({
      vectorStore: 'pgvector',
      embeddingBaseUrl: 'http://tei.internal:8080/v1',
      embeddingModel: 'BAAI/bge-small-en-v1.5',
      chatBaseUrl: 'https://vllm.example.com/v1',
      chatApiKeySecretName: 'ai4rag/vllm-key',
      foundationModel: 'meta-llama/Llama-3.1-8B-Instruct',
      judgeBaseUrl: 'https://api.openai.com/v1',
      judgeApiKeySecretName: 'ai4rag/openai-api-key',
    });
    const embeddingsOnly = parseDeployConfig({
      vectorStore: 'pgvector',
      embeddingBaseUrl: 'http://tei.internal:8080/v1',
      embeddingModel: 'BAAI/bge-small-en-v1.5',
    });
    const bad = errorOf(() =>
      parseDeployConfig({
        vectorStore: 'pgvector',
        chatApiKeySecretName: 'ai4rag/k',
        embeddingBaseUrl: 'http://tei:8080/v1',
        embeddingModel: 'bge@tei',
      }),
    );
    // Assess
    expect(split.endpoints).toEqual({
      embedding: { baseUrl: 'http://tei.internal:8080/v1' },
      chat: { baseUrl: 'https://vllm.example.com/v1', apiKeySecretName: 'ai4rag/vllm-key' },
      judge: { baseUrl: 'https://api.openai.com/v1', apiKeySecretName: 'ai4rag/openai-api-key' },
    });
    expect(split.openai).toBeUndefined();
    expect(embeddingsOnly.foundationModel).toBe('local/extractive-v1');
    expect(bad.message).toBe(
      'Invalid deploy configuration (CDK context): chatApiKeySecretName: needs chatBaseUrl; ' +
        "embeddingModel: 'bge@tei' names an endpoint (model@name); a deployment uses embeddingBaseUrl or openaiBaseUrl",
    );
  });

  it('reads the serving pattern relative to baseDir and takes its models', () => {
    // Prepare
    const read: string[] = [];
    const readFile = (path: string): string => {
      read.push(path);
      return JSON.stringify(PATTERN);
    };

    // Act
    const config = parseDeployConfig(
      { vectorStore: 'pgvector', ...OPENAI, servingPattern: 'patterns/p3.json' },
      { baseDir: '/deploy', readFile },
    );

    // Assess
    expect(read).toEqual(['/deploy/patterns/p3.json']);
    expect(config.embeddingModel).toBe('text-embedding-3-small');
    expect(config.foundationModel).toBe('gpt-4o-mini');
    expect(config.servingPattern).toEqual({ name: 'Pattern3', settings: PATTERN.settings });
  });

  it('rejects a serving pattern whose embedding model differs from embeddingModel', () => {
    // Act
    const error = errorOf(() =>
      parseDeployConfig(
        {
          vectorStore: 'pgvector',
          ...OPENAI,
          embeddingModel: 'bge-small',
          servingPattern: '/p.json',
        },
        { readFile: () => JSON.stringify(PATTERN) },
      ),
    );

    // Assess
    expect(error.message).toBe(
      "Invalid deploy configuration (CDK context): embeddingModel: 'bge-small' differs from the serving pattern's 'text-embedding-3-small' (queries and index must use one model)",
    );
  });

  it('names the missing fields of an invalid serving pattern', () => {
    // Prepare
    const broken = structuredClone(PATTERN) as { settings: Record<string, unknown> };
    delete broken.settings.retrieval;

    // Act
    const error = errorOf(() =>
      parseDeployConfig(
        { vectorStore: 'pgvector', ...OPENAI, servingPattern: '/p.json' },
        { readFile: () => JSON.stringify(broken) },
      ),
    );

    // Assess
    expect(error.message).toMatch(
      /^Invalid deploy configuration \(CDK context\): servingPattern\.settings\.retrieval: /,
    );
  });

  it('rejects an unreadable, a non-JSON and an oversized serving pattern', () => {
    // Prepare
    const huge = structuredClone(PATTERN);
    huge.settings.generation.system_message_text = 'x'.repeat(MAX_SERVING_PATTERN_BYTES);
    const parse = (readFile: () => string) => () =>
      parseDeployConfig(
        { vectorStore: 'pgvector', ...OPENAI, servingPattern: '/p.json' },
        { readFile },
      );

    // Act
    const missing = errorOf(
      parse(() => {
        throw new Error('ENOENT');
      }),
    );
    const notJson = errorOf(parse(() => '{'));
    const tooBig = errorOf(parse(() => JSON.stringify(huge)));

    // Assess
    expect(missing.message).toBe(
      'Invalid deploy configuration (CDK context): servingPattern: cannot read /p.json (ENOENT)',
    );
    expect(notJson.message).toMatch(/servingPattern: \/p\.json is not JSON/);
    expect(tooBig.message).toMatch(
      /servingPattern: \d+ bytes as JSON, more than the 3000 that fit in a Lambda environment variable/,
    );
  });
});

describe('parseDeployConfig: reranker keys', () => {
  const withReranker = (reranker: unknown, numberOfChunks = 5) => {
    const pattern = structuredClone(PATTERN) as {
      settings: { retrieval: Record<string, unknown> };
    };
    pattern.settings.retrieval.reranker = reranker;
    pattern.settings.retrieval.number_of_chunks = numberOfChunks;
    return JSON.stringify(pattern);
  };

  it('builds the reranker settings, coercing -c strings', () => {
    // Act
    const config = parseDeployConfig({
      vectorStore: 'pgvector',
      rerankBaseUrl: 'https://tei.example.com',
      rerankModel: 'BAAI/bge-reranker-base',
      rerankCandidates: '30',
      rerankApiKeySecretName: 'ai4rag/tei-key',
    });
    const bare = parseDeployConfig({ vectorStore: 'pgvector', rerankBaseUrl: 'http://tei:8080' });

    // Assess
    expect(config.rerank).toEqual({
      baseUrl: 'https://tei.example.com',
      model: 'BAAI/bge-reranker-base',
      candidates: 30,
      apiKeySecretName: 'ai4rag/tei-key',
    });
    expect(bare.rerank).toEqual({ baseUrl: 'http://tei:8080' });
    expect(parseDeployConfig({ vectorStore: 'pgvector' }).rerank).toBeUndefined();
  });

  it('rejects reranker keys without an endpoint, and bad values, in one message', () => {
    // Act
    const orphans = errorOf(() =>
      parseDeployConfig({
        vectorStore: 'pgvector',
        rerankModel: 'bge',
        rerankCandidates: 20,
        rerankApiKeySecretName: 'ai4rag/tei-key',
      }),
    );
    const bad = errorOf(() =>
      parseDeployConfig({
        vectorStore: 'pgvector',
        rerankBaseUrl: 'ftp://tei',
        rerankCandidates: '0',
        rerankApiKeySecretName: 'bad name',
      }),
    );

    // Assess
    expect(orphans.message).toBe(
      'Invalid deploy configuration (CDK context): rerankModel: needs rerankBaseUrl (the TEI-compatible reranker endpoint); ' +
        'rerankCandidates: needs rerankBaseUrl (the TEI-compatible reranker endpoint); ' +
        'rerankApiKeySecretName: needs rerankBaseUrl (the TEI-compatible reranker endpoint)',
    );
    expect(bad.message).toBe(
      'Invalid deploy configuration (CDK context): rerankBaseUrl: must be an http(s) URL; ' +
        'rerankCandidates: must be an integer from 1 to 200; ' +
        'rerankApiKeySecretName: must be a Secrets Manager secret name ([A-Za-z0-9/_+=.@-])',
    );
  });

  it('keeps the serving pattern’s reranker and checks it against the reranker keys', () => {
    // Prepare
    const read = (text: string) => ({ readFile: () => text });
    const context = { vectorStore: 'pgvector', ...OPENAI, servingPattern: '/p.json' };

    // Act
    const config = parseDeployConfig(
      { ...context, rerankBaseUrl: 'https://tei.example.com' },
      read(withReranker({ model_id: 'bge', candidates: 20 })),
    );
    const noEndpoint = errorOf(() =>
      parseDeployConfig(context, read(withReranker({ model_id: 'bge', candidates: 20 }))),
    );
    const otherModel = errorOf(() =>
      parseDeployConfig(
        { ...context, rerankBaseUrl: 'https://tei.example.com', rerankModel: 'other' },
        read(withReranker({ model_id: 'bge', candidates: 20 })),
      ),
    );
    const fewCandidates = errorOf(() =>
      parseDeployConfig(
        { ...context, rerankBaseUrl: 'https://tei.example.com' },
        read(withReranker({ model_id: 'bge', candidates: 4 }, 5)),
      ),
    );

    // Assess
    expect(config.servingPattern?.settings.retrieval.reranker).toEqual({
      model_id: 'bge',
      candidates: 20,
    });
    expect(noEndpoint.message).toBe(
      "Invalid deploy configuration (CDK context): servingPattern: reranks with 'bge', so rerankBaseUrl is required",
    );
    expect(otherModel.message).toBe(
      "Invalid deploy configuration (CDK context): rerankModel: 'other' differs from the serving pattern's reranker 'bge' (the endpoint serves one model)",
    );
    expect(fewCandidates.message).toBe(
      'Invalid deploy configuration (CDK context): servingPattern: reranker.candidates must be at least number_of_chunks',
    );
  });

  it('rejects rerankers that name a local-only endpoint (model@name)', () => {
    // Act
    const model = errorOf(() =>
      parseDeployConfig({
        vectorStore: 'pgvector',
        rerankBaseUrl: 'https://tei.example.com',
        rerankModel: 'bge@gpu',
      }),
    );
    const pattern = errorOf(() =>
      parseDeployConfig(
        {
          vectorStore: 'pgvector',
          ...OPENAI,
          servingPattern: '/p.json',
          rerankBaseUrl: 'https://tei.example.com',
        },
        { readFile: () => withReranker({ model_id: 'bge@gpu', candidates: 20 }) },
      ),
    );

    // Assess
    expect(model.message).toBe(
      "Invalid deploy configuration (CDK context): rerankModel: 'bge@gpu' names an endpoint (model@name); the deployment has one, rerankBaseUrl",
    );
    expect(pattern.message).toBe(
      "Invalid deploy configuration (CDK context): servingPattern: its reranker 'bge@gpu' names an endpoint (model@name); the deployment has one, rerankBaseUrl",
    );
  });

  it('leaves the reranker variables room in the 4 KB environment', () => {
    // Prepare: a pattern that fits alone but not next to the reranker variables
    const pattern = structuredClone(PATTERN);
    // Measured as the parsed pattern is: its name and settings only.
    const size = Buffer.byteLength(
      JSON.stringify({ name: pattern.name, settings: pattern.settings }),
      'utf8',
    );
    pattern.settings.generation.system_message_text += 'x'.repeat(
      MAX_SERVING_PATTERN_BYTES - RERANK_ENVIRONMENT_BYTES - size + 1,
    );
    const context = { vectorStore: 'pgvector', ...OPENAI, servingPattern: '/p.json' };
    const readFile = () => JSON.stringify(pattern);

    // Act
    const alone = parseDeployConfig(context, { readFile });
    const withRerank = errorOf(() =>
      parseDeployConfig({ ...context, rerankBaseUrl: 'https://tei.example.com' }, { readFile }),
    );

    // Assess
    expect(alone.servingPattern).toBeDefined();
    expect(withRerank.message).toMatch(
      /servingPattern: \d+ bytes as JSON, more than the 2600 that fit in a Lambda environment variable/,
    );
  });
});

describe('readDeployContext', () => {
  it('reads exactly the deploy keys from a construct node', () => {
    // Prepare
    const node = {
      tryGetContext: (key: string): unknown =>
        key === 'vectorStore' ? 'zilliz' : key === '@aws-cdk/core:flag' ? true : undefined,
    };

    // Act
    const context = readDeployContext(node);

    // Assess
    expect(Object.keys(context).sort()).toEqual([...DEPLOY_CONTEXT_KEYS].sort());
    expect(context.vectorStore).toBe('zilliz');
    expect(context.trialConcurrency).toBeUndefined();
  });
});
