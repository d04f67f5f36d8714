/**
 * The AWS runtime's vector-store paths with real SDKs: Zilliz/Milvus (the fake Milvus gRPC server) and pgvector
 * (PGlite served over pglite-socket, and a real PostgreSQL when PGVECTOR_HOST is set). Only Secrets Manager is
 * mocked.
 */

import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';
import * as grpc from '@grpc/grpc-js';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { createAwsRuntime, type Runtime } from '../../../functions/_shared/runtime.js';
import { clearSecretCache, SecretError } from '../../../functions/_shared/secrets.js';
import type { AI4RAGChunk } from '../../../shared/src/chunking/types.js';
import { ValidationError } from '../../../shared/src/errors.js';
import { openPglite, type PgliteSqlClient } from '../../../shared/src/vectorstores/sql-client.js';
import type { VectorStore } from '../../../shared/src/vectorstores/types.js';
import { type FakeMilvus, startFakeMilvus } from '../../support/fake-milvus/server.js';
import { probePgServer } from '../../support/pg.js';

const secretsMock = mockClient(SecretsManagerClient);
const ZILLIZ_ARN = 'arn:aws:secretsmanager:us-east-1:000000000000:secret:zilliz';
const DB_ARN = 'arn:aws:secretsmanager:us-east-1:000000000000:secret:db';
const BUCKETS = {
  AI4RAG_DOCUMENTS_BUCKET: 'ai4rag-documents',
  AI4RAG_ARTIFACTS_BUCKET: 'ai4rag-artifacts',
};
const CHUNKS: AI4RAGChunk[] = [
  'Employees get 25 days of annual leave per calendar year.',
  "Sick leave requires a doctor's note after three consecutive days of absence.",
  'The approval limit for expenses is 500 euros per claim.',
].map((text, i) => ({
  id: `policy.md#${i + 1}`,
  text,
  metadata: { document_id: 'policy.md', sequence_number: i + 1 },
}));
const QUERY = 'approval limit for expenses';
const HYBRID = { k: 3, searchMode: 'hybrid', rankerStrategy: 'rrf', rankerK: 60 } as const;

const secrets = (): SecretsManagerClient => new SecretsManagerClient({ region: 'us-east-1' });
const secretReads = (): number => secretsMock.commandCalls(GetSecretValueCommand).length;

beforeEach(() => {
  secretsMock.reset();
  clearSecretCache();
});

/** Opens a store with the runtime's local embedder, adds {@link CHUNKS} and runs the hybrid {@link QUERY}. */
async function addAndSearch(runtime: Runtime, collection: string): Promise<string[]> {
  const store = await runtime.openStore(collection, await runtime.embedder(), {
    createIfMissing: true,
  });
  await store.addChunks(CHUNKS);
  return (await store.search(QUERY, HYBRID)).map((h) => h.id);
}

describe('AWS runtime on Zilliz/Milvus', () => {
  let fake: FakeMilvus;
  const seenAuth: string[] = [];
  let runtime: Runtime;

  beforeAll(async () => {
    // The fake server does not expose request metadata: record it by wrapping the handlers it registers.
    const addService = grpc.Server.prototype.addService;
    const spy = vi.spyOn(grpc.Server.prototype, 'addService').mockImplementation(function (
      this: grpc.Server,
      service,
      impl,
    ) {
      const wrapped: grpc.UntypedServiceImplementation = {};
      for (const [name, handler] of Object.entries(impl)) {
        wrapped[name] = ((call: grpc.ServerUnaryCall<unknown, unknown>, cb: unknown) => {
          seenAuth.push(String(call.metadata.get('authorization')[0] ?? ''));
          return (handler as (c: unknown, cb: unknown) => unknown)(call, cb);
        }) as grpc.UntypedHandleCall;
      }
      addService.call(this, service, wrapped);
    });
    try {
      fake = await startFakeMilvus();
    } finally {
      spy.mockRestore();
    }
  });
  afterAll(async () => {
    await runtime?.close();
    await fake?.close();
  });

  it('opens the collection with the token from Secrets Manager and serves a hybrid search', async () => {
    // Prepare
    secretsMock.on(GetSecretValueCommand, { SecretId: ZILLIZ_ARN }).resolves({
      SecretString: '{"token":"zilliz-api-key"}',
    });
    runtime = createAwsRuntime(
      {
        AI4RAG_STORE: 'milvus',
        MILVUS_URI: fake.uri,
        MILVUS_TOKEN_SECRET_ARN: ZILLIZ_ARN,
        AI4RAG_COLLECTION: 'ai4rag_kb',
        ...BUCKETS,
      },
      { secrets: secrets() },
    );

    // Act
    const ids = await addAndSearch(runtime, 'ai4rag_kb');
    const embedder = await runtime.embedder();
    const first = await runtime.openStore('ai4rag_kb', embedder);
    const again = await runtime.openStore('ai4rag_kb', embedder);
    const other = await runtime.openStore('ai4rag_kb_other', embedder, { createIfMissing: true });

    // Assess
    expect(ids[0]).toBe('policy.md#3');
    expect([...ids].sort()).toEqual(['policy.md#1', 'policy.md#2', 'policy.md#3']);
    expect(again).toBe(first);
    expect(other).not.toBe(first);
    expect(other.collectionName).toBe('ai4rag_kb_other');
    expect(secretReads()).toBe(1);
    expect(secretsMock.commandCalls(GetSecretValueCommand)[0]?.args[0].input.SecretId).toBe(
      ZILLIZ_ARN,
    );
    expect(seenAuth.length).toBeGreaterThan(0);
    expect(new Set(seenAuth)).toEqual(new Set([Buffer.from('zilliz-api-key').toString('base64')]));
  });
});

describe('AWS runtime on Milvus without MILVUS_URI', () => {
  it('fails at openStore with a ValidationError naming the variable, before reading the token', async () => {
    // Prepare
    secretsMock.on(GetSecretValueCommand).resolves({ SecretString: 'zilliz-api-key' });
    const runtime = createAwsRuntime(
      { AI4RAG_STORE: 'milvus', MILVUS_TOKEN_SECRET_ARN: ZILLIZ_ARN, ...BUCKETS },
      { secrets: secrets() },
    );

    // Act
    const open = runtime.openStore('ai4rag_kb', await runtime.embedder(), {
      createIfMissing: true,
    });

    // Assess
    await expect(open).rejects.toThrow(ValidationError);
    await expect(open).rejects.toThrow('MILVUS_URI is not set (AI4RAG_STORE=milvus)');
    expect(secretReads()).toBe(0);
    await runtime.close();
  });
});

describe('AWS runtime on pgvector over pglite-socket', () => {
  let local: PgliteSqlClient;
  let server: PGLiteSocketServer;
  let port: number;
  const runtimes: Runtime[] = [];
  const awsRuntime = (env: Record<string, string>): Runtime => {
    const runtime = createAwsRuntime(
      { AI4RAG_STORE: 'pgvector', AI4RAG_COLLECTION: 'ai4rag_kb', ...BUCKETS, ...env },
      { secrets: secrets() },
    );
    runtimes.push(runtime);
    return runtime;
  };
  const secretJson = (value: Record<string, unknown>): void => {
    secretsMock
      .on(GetSecretValueCommand, { SecretId: DB_ARN })
      .resolves({ SecretString: JSON.stringify(value) });
  };

  beforeAll(async () => {
    local = await openPglite();
    server = new PGLiteSocketServer({
      db: local.db,
      host: '127.0.0.1',
      port: 0,
      maxConnections: 8,
    });
    await server.start();
    port = Number(server.getServerConn().split(':')[1]);
  });
  afterAll(async () => {
    for (const runtime of runtimes) await runtime.close();
    await server?.stop();
    await local?.close();
  });

  it('connects with the RDS secret and serves a hybrid search', async () => {
    // Prepare
    secretJson({
      username: 'postgres',
      password: 'x',
      host: '127.0.0.1',
      port,
      dbname: 'postgres',
    });
    const runtime = awsRuntime({
      PGVECTOR_HOST: '127.0.0.1',
      PGVECTOR_PORT: String(port),
      PGVECTOR_DB: 'postgres',
      PGVECTOR_SECRET_ARN: DB_ARN,
      PGVECTOR_SSLMODE: 'disable',
    });

    // Act
    const ids = await addAndSearch(runtime, 'ai4rag_kb_socket');
    const other = await runtime.openStore('ai4rag_kb_socket2', await runtime.embedder(), {
      createIfMissing: true,
    });

    // Assess
    expect(ids[0]).toBe('policy.md#3');
    expect([...ids].sort()).toEqual(['policy.md#1', 'policy.md#2', 'policy.md#3']);
    expect(other.collectionName).toBe('ai4rag_kb_socket2');
    expect(secretReads()).toBe(1);
  });

  it('takes host, port and database from the secret when PGVECTOR_HOST is unset', async () => {
    // Prepare
    secretJson({
      username: 'postgres',
      password: 'x',
      host: '127.0.0.1',
      port,
      dbname: 'postgres',
    });
    const runtime = awsRuntime({ PGVECTOR_SECRET_ARN: DB_ARN, PGVECTOR_SSLMODE: 'disable' });

    // Act
    const store: VectorStore = await runtime.openStore(
      'ai4rag_kb_socket',
      await runtime.embedder(),
    );
    const stats = await store.stats();

    // Assess
    expect(stats.chunks).toBe(3);
  });

  it('refuses a secret without a password with a clear error', async () => {
    // Prepare
    secretJson({ username: 'postgres', host: '127.0.0.1', port, dbname: 'postgres' });
    const runtime = awsRuntime({
      PGVECTOR_HOST: '127.0.0.1',
      PGVECTOR_PORT: String(port),
      PGVECTOR_SECRET_ARN: DB_ARN,
      PGVECTOR_SSLMODE: 'disable',
    });

    // Act
    const open = runtime.openStore('ai4rag_kb_socket', await runtime.embedder());

    // Assess
    await expect(open).rejects.toThrow(SecretError);
    await expect(open).rejects.toThrow(`secret ${DB_ARN} has no password`);
  });
});

// A real PostgreSQL + pgvector from PGVECTOR_* (e.g. ../shared/tools/pg-with-pgvector); skipped otherwise.
const pgServer = await probePgServer(2000);

describe.skipIf(pgServer === undefined)('AWS runtime on a real PostgreSQL server', () => {
  const collection = `ai4rag_rt_${process.pid}_${Date.now().toString(36)}`;
  let runtime: Runtime;
  let store: VectorStore | undefined;
  afterAll(async () => {
    await store?.drop();
    await runtime?.close();
  });

  it('connects with the real credentials put in the secret and serves a hybrid search', async () => {
    // Prepare
    if (pgServer === undefined) return;
    secretsMock.on(GetSecretValueCommand, { SecretId: DB_ARN }).resolves({
      SecretString: JSON.stringify({
        username: pgServer.user,
        // A trust-authenticated test server ignores the password; RDS secrets always hold one.
        password: pgServer.password || 'unused',
        host: pgServer.host,
        port: pgServer.port,
        dbname: pgServer.database,
      }),
    });
    runtime = createAwsRuntime(
      {
        AI4RAG_STORE: 'pgvector',
        AI4RAG_COLLECTION: 'ai4rag_kb',
        PGVECTOR_HOST: pgServer.host,
        PGVECTOR_PORT: String(pgServer.port),
        PGVECTOR_DB: pgServer.database,
        PGVECTOR_SECRET_ARN: DB_ARN,
        PGVECTOR_SSLMODE: process.env.PGVECTOR_SSLMODE ?? 'disable',
        ...BUCKETS,
      },
      { secrets: secrets() },
    );

    // Act
    const ids = await addAndSearch(runtime, collection);
    store = await runtime.openStore(collection, await runtime.embedder());

    // Assess
    expect(ids[0]).toBe('policy.md#3');
    expect([...ids].sort()).toEqual(['policy.md#1', 'policy.md#2', 'policy.md#3']);
    expect(secretReads()).toBe(1);
  });
});
