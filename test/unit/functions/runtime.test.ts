import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetObjectCommand, ListObjectsV2Command, NoSuchKey, S3Client } from '@aws-sdk/client-s3';
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseFunctionEnv } from '../../../functions/_shared/env.js';
import { errorResult } from '../../../functions/_shared/http.js';
import { retrieverOptionsFor } from '../../../functions/_shared/query.js';
import { InProcessQueue, QueueError, SqsWorkQueue } from '../../../functions/_shared/queue.js';
import {
  createAwsRuntime,
  createLocalRuntime,
  RuntimeClosedError,
  type RuntimeConfig,
} from '../../../functions/_shared/runtime.js';
import { S3ObjectStore } from '../../../functions/_shared/s3-object-store.js';
import { clearSecretCache, getSecretToken } from '../../../functions/_shared/secrets.js';
import { formatSseEvent, writeSse } from '../../../functions/_shared/sse.js';
import { NotFoundError, ValidationError } from '../../../shared/src/errors.js';
import type { RagStreamEvent } from '../../../shared/src/generation/rag-template.js';
import { planChunkBatches } from '../../../shared/src/ingest/batches.js';
import { s3Body } from './helpers.js';

const s3Mock = mockClient(S3Client);
const sqsMock = mockClient(SQSClient);
const secretsMock = mockClient(SecretsManagerClient);

beforeEach(() => {
  s3Mock.reset();
  sqsMock.reset();
  secretsMock.reset();
});
afterEach(() => clearSecretCache());

describe('S3ObjectStore', () => {
  const store = new S3ObjectStore(new S3Client({ region: 'eu-west-1' }), 'bucket');

  it('maps a missing key to NotFoundError', async () => {
    // Prepare
    s3Mock
      .on(GetObjectCommand)
      .rejects(new NoSuchKey({ message: 'no', $metadata: { httpStatusCode: 404 } }));

    // Act
    const call = store.get('a.json');

    // Assess
    await expect(call).rejects.toThrow(NotFoundError);
  });

  it('reads an object body', async () => {
    // Prepare
    s3Mock.on(GetObjectCommand).resolves({ Body: s3Body('hello') });

    // Act
    const bytes = await store.get('a.txt');

    // Assess
    expect(new TextDecoder().decode(bytes)).toBe('hello');
  });

  it('lists every page of a prefix, sorted', async () => {
    // Prepare
    s3Mock
      .on(ListObjectsV2Command)
      .resolvesOnce({ Contents: [{ Key: 'p/b' }], IsTruncated: true, NextContinuationToken: 't1' })
      .resolvesOnce({ Contents: [{ Key: 'p/a' }], IsTruncated: false });

    // Act
    const keys = await store.list('p/');

    // Assess
    expect(keys).toEqual(['p/a', 'p/b']);
    expect(s3Mock.commandCalls(ListObjectsV2Command)[1]?.args[0].input.ContinuationToken).toBe(
      't1',
    );
  });
});

describe('SqsWorkQueue', () => {
  const queue = new SqsWorkQueue(new SQSClient({ region: 'eu-west-1' }), 'https://q');

  it('sends messages in batches of ten', async () => {
    // Prepare
    sqsMock.on(SendMessageBatchCommand).resolves({ Successful: [], Failed: [] });

    // Act
    await queue.send(Array.from({ length: 23 }, (_, i) => ({ i })));

    // Assess
    const calls = sqsMock.commandCalls(SendMessageBatchCommand);
    expect(calls.map((c) => c.args[0].input.Entries?.length)).toEqual([10, 10, 3]);
    expect(calls[2]?.args[0].input.Entries?.[0]).toEqual({ Id: '0', MessageBody: '{"i":20}' });
  });

  it('raises the entries SQS rejects', async () => {
    // Prepare
    sqsMock.on(SendMessageBatchCommand).resolves({
      Successful: [],
      Failed: [{ Id: '0', SenderFault: true, Code: 'X', Message: 'throttled' }],
    });

    // Act
    const call = queue.send([{ a: 1 }]);

    // Assess
    await expect(call).rejects.toThrow(QueueError);
  });

  it('refuses a message over the size limit', async () => {
    // Act
    const call = queue.send([{ text: 'x'.repeat(210 * 1024) }]);

    // Assess
    await expect(call).rejects.toThrow(ValidationError);
    expect(sqsMock.commandCalls(SendMessageBatchCommand)).toHaveLength(0);
  });
});

describe('InProcessQueue', () => {
  it('keeps messages until a consumer is bound, then delivers them in order', async () => {
    // Prepare
    const queue = new InProcessQueue('chunk');
    const seen: string[] = [];
    await queue.send([{ n: 1 }, { n: 2 }]);

    // Act
    await queue.bind(async (body) => {
      seen.push(body);
    });
    await queue.send([{ n: 3 }]);

    // Assess
    expect(seen).toEqual(['{"n":1}', '{"n":2}', '{"n":3}']);
    expect(queue.pending).toEqual([]);
  });
});

describe('secrets', () => {
  const client = new SecretsManagerClient({ region: 'eu-west-1' });

  it('fetches a secret once per container', async () => {
    // Prepare
    secretsMock.on(GetSecretValueCommand).resolves({ SecretString: '{"apiKey":"sk-1"}' });

    // Act
    const a = await getSecretToken(client, 'arn:1', ['apiKey']);
    const b = await getSecretToken(client, 'arn:1', ['apiKey']);

    // Assess
    expect([a, b]).toEqual(['sk-1', 'sk-1']);
    expect(secretsMock.commandCalls(GetSecretValueCommand)).toHaveLength(1);
  });

  it('does not cache a failed read', async () => {
    // Prepare
    secretsMock
      .on(GetSecretValueCommand)
      .rejectsOnce(new Error('denied'))
      .resolves({ SecretString: 'plain-token' });

    // Act
    const first = getSecretToken(client, 'arn:2', ['token']);
    await expect(first).rejects.toThrow('could not read secret arn:2');
    const second = await getSecretToken(client, 'arn:2', ['token']);

    // Assess
    expect(second).toBe('plain-token');
  });
});

describe('createAwsRuntime', () => {
  it('makes no AWS call until something is used', () => {
    // Act
    const runtime = createAwsRuntime({ AI4RAG_STORE: 'pgvector' }, {});

    // Assess
    expect(runtime.config).toMatchObject({ store: 'pgvector', collection: 'ai4rag_default' });
    expect(secretsMock.calls()).toHaveLength(0);
  });

  it('builds the OpenAI-compatible model with the key from Secrets Manager, cached', async () => {
    // Prepare
    secretsMock.on(GetSecretValueCommand).resolves({ SecretString: 'sk-test' });
    const runtime = createAwsRuntime(
      {
        AI4RAG_STORE: 'pgvector',
        OPENAI_BASE_URL: 'http://127.0.0.1:9/v1',
        OPENAI_API_KEY_SECRET_ARN: 'arn:aws:secretsmanager:eu-west-1:1:secret:openai',
        AI4RAG_FOUNDATION_MODEL: 'gpt-test',
      },
      { secrets: new SecretsManagerClient({ region: 'eu-west-1' }) },
    );

    // Act
    const model = await runtime.model();
    const again = await runtime.model();

    // Assess
    expect(model.modelId).toBe('gpt-test');
    expect(again).toBe(model);
    expect(secretsMock.commandCalls(GetSecretValueCommand)).toHaveLength(1);
  });

  it('reports a missing queue URL on use', () => {
    // Prepare
    const runtime = createAwsRuntime({ AI4RAG_STORE: 'pgvector' });

    // Act / Assess
    expect(() => runtime.queue('chunk')).toThrow('AI4RAG_CHUNK_QUEUE_URL is not set');
  });
});

describe('parseFunctionEnv', () => {
  it.each([
    [{ AI4RAG_STORE: 'redis' }, 'AI4RAG_STORE'],
    [{ AI4RAG_COLLECTION: 'kb' }, 'AI4RAG_COLLECTION'],
    [{ AI4RAG_SERVING_PATTERN: '{' }, 'not valid JSON'],
    [{ AI4RAG_SERVING_PATTERN: '{"retrieval":{"method":"simple"}}' }, 'number_of_chunks'],
  ])('rejects %j', (env, message) => {
    // Act / Assess
    expect(() => parseFunctionEnv(env)).toThrow(message);
  });

  it('accepts a whole pattern.json as the serving pattern', () => {
    // Prepare
    const pattern = {
      name: 'Pattern3',
      settings: {
        retrieval: {
          method: 'window',
          number_of_chunks: 7,
          search_mode: 'hybrid',
          window_size: 2,
          ranker_strategy: 'rrf',
          ranker_k: 40,
        },
        generation: { model_id: 'local/extractive-v1', temperature: 0.1 },
      },
    };

    // Act
    const env = parseFunctionEnv({ AI4RAG_SERVING_PATTERN: JSON.stringify(pattern) });

    // Assess
    expect(env.servingPattern?.retrieval.number_of_chunks).toBe(7);
  });
});

describe('retrieverOptionsFor', () => {
  const local: RuntimeConfig = {
    collection: 'ai4rag_x',
    store: 'pglite',
    embeddingModel: 'local/feature-hash-v1-384',
    chunking: { method: 'recursive', chunkSize: 512, chunkOverlap: 64 },
  };

  it('uses the lexical defaults with the local embedder', () => {
    // Act / Assess
    expect(retrieverOptionsFor(local, {})).toEqual({
      numberOfChunks: 5,
      method: 'simple',
      windowSize: 0,
      searchMode: 'hybrid',
      rankerStrategy: 'weighted',
      rankerK: 0,
      rankerAlpha: 0.2,
    });
  });

  it('applies the serving pattern, and the request over it', () => {
    // Prepare
    const config: RuntimeConfig = {
      ...local,
      servingPattern: {
        retrieval: {
          method: 'window',
          number_of_chunks: 7,
          search_mode: 'hybrid',
          window_size: 2,
          ranker_strategy: 'rrf',
          ranker_k: 40,
        },
      },
    };

    // Act
    const fromPattern = retrieverOptionsFor(config, {});
    const overridden = retrieverOptionsFor(config, { k: 3, ranker_strategy: 'normalized' });

    // Assess
    expect(fromPattern).toEqual({
      numberOfChunks: 7,
      method: 'window',
      windowSize: 2,
      searchMode: 'hybrid',
      rankerStrategy: 'rrf',
      rankerK: 40,
      rankerAlpha: 1,
    });
    expect(overridden).toMatchObject({
      numberOfChunks: 3,
      rankerStrategy: 'normalized',
      rankerK: 0,
      rankerAlpha: 1,
    });
  });
});

describe('errorResult', () => {
  it.each([
    [new ValidationError('bad k'), 400, { code: 'validation_error', message: 'bad k' }],
    [new NotFoundError('no doc'), 404, { code: 'not_found', message: 'no doc' }],
    [
      Object.assign(new Error('Unsupported Media Type'), { statusCode: 415, expose: true }),
      415,
      { code: 'unsupported_media_type', message: 'Unsupported Media Type' },
    ],
    [
      new Error('password=hunter2 leaked'),
      500,
      { code: 'internal_error', message: 'Internal server error' },
    ],
  ])('maps %s', (error, status, body) => {
    // Act
    const out = errorResult(error);

    // Assess
    expect(out.statusCode).toBe(status);
    expect(JSON.parse(out.body)).toEqual({ error: body });
  });
});

describe('SSE writer', () => {
  async function* events(fail: boolean): AsyncIterable<RagStreamEvent> {
    yield {
      type: 'sources',
      referenceDocuments: [
        { documentId: 'a.md', sequenceNumber: 1, text: 'A', score: 0.5, chunkIds: ['c1'] },
      ],
    };
    yield { type: 'token', text: 'Hel' };
    if (fail) throw new Error('socket hang up at 10.0.0.5');
    yield { type: 'token', text: 'lo' };
    yield { type: 'done', timing: { retrieveMs: 1.04, rerankMs: 0, generateMs: 2, totalMs: 3.06 } };
  }

  it('writes sources, tokens and done frames', async () => {
    // Prepare
    let out = '';

    // Act
    await writeSse(
      events(false),
      (chunk) => {
        out += chunk;
      },
      { model: 'm' },
    );

    // Assess
    expect(out).toBe(
      'event: sources\ndata: {"reference_documents":[{"document_key":"a.md","sequence_number":1,"text":"A","score":0.5,"chunk_ids":["c1"]}]}\n\n' +
        'event: token\ndata: {"text":"Hel"}\n\n' +
        'event: token\ndata: {"text":"lo"}\n\n' +
        'event: done\ndata: {"timing":{"retrieve_ms":1,"rerank_ms":0,"generate_ms":2,"total_ms":3.1},"model":"m"}\n\n',
    );
  });

  it('ends a failed stream with an error frame without internals', async () => {
    // Prepare
    let out = '';

    // Act
    await writeSse(events(true), (chunk) => {
      out += chunk;
    });

    // Assess
    expect(
      out.endsWith(
        formatSseEvent('error', { code: 'internal_error', message: 'Internal server error' }),
      ),
    ).toBe(true);
  });
});

describe('planChunkBatches', () => {
  const chunk = (i: number, text = 'x') => ({
    id: `c${i}`,
    text,
    metadata: { document_id: 'd', sequence_number: i },
  });

  it('splits by chunk count', () => {
    // Act
    const plan = planChunkBatches(
      [1, 2, 3, 4, 5].map((i) => chunk(i)),
      { maxChunks: 2 },
    );

    // Assess
    expect(plan.map((b) => b.map((c) => c.id))).toEqual([['c1', 'c2'], ['c3', 'c4'], ['c5']]);
  });

  it('splits by serialized size, keeping an oversized chunk alone', () => {
    // Prepare
    const size = JSON.stringify(chunk(1, 'a'.repeat(100))).length + 1;

    // Act
    const plan = planChunkBatches(
      [chunk(1, 'a'.repeat(100)), chunk(2, 'b'.repeat(100)), chunk(3, 'c'.repeat(500))],
      { maxBytes: size * 2 },
    );

    // Assess
    expect(plan.map((b) => b.map((c) => c.id))).toEqual([['c1', 'c2'], ['c3']]);
  });

  it('rejects more than 1024 chunks per batch', () => {
    // Act / Assess
    expect(() => planChunkBatches([], { maxChunks: 1025 })).toThrow('at most 1024');
  });
});

describe('runtime lifetime', () => {
  it('refuses to open a store after close() instead of handing back a closed one', async () => {
    // Prepare
    const rt = createLocalRuntime({
      dataDir: mkdtempSync(join(tmpdir(), 'ai4rag-close-')),
      inMemory: true,
    });
    const embedder = await rt.embedder();
    await rt.openStore('ai4rag_close', embedder, { createIfMissing: true });

    // Act
    await rt.close();

    // Assess
    await expect(rt.openStore('ai4rag_close', embedder)).rejects.toBeInstanceOf(RuntimeClosedError);
  });
});
