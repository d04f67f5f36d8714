/**
 * The runtime of the deployed functions: S3, SQS, Secrets Manager, and the vector store of the stack's variant
 * (pgvector on RDS, or Zilliz Cloud). The stores' code (pg, the Milvus SDK) is loaded on first use through
 * `bundle.ts`, so each function's bundle carries only its own store; nothing here reaches PGlite or the local
 * runtime.
 */
import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { SQSClient } from '@aws-sdk/client-sqs';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { parseEndpoints } from '../../shared/src/endpoints.js';
import { ValidationError } from '../../shared/src/errors.js';
import type { ObjectStore } from '../../shared/src/ports/object-store.js';
import type { SqlClient } from '../../shared/src/vectorstores/sql-client.js';
import type { VectorStore } from '../../shared/src/vectorstores/types.js';
import { loadMilvusOpener, loadPgvectorOpener } from './bundle.js';
import { type EnvRecord, parseFunctionEnv } from './env.js';
import { SqsWorkQueue, type WorkQueue } from './queue.js';
import {
  type ApiKeySource,
  embedderFactory,
  endpointKeys,
  inProcessLocalModel,
  keyedMemo,
  memo,
  modelFactory,
  type QueueName,
  type Runtime,
  RuntimeClosedError,
  rerankerFactory,
  runtimeConfig,
} from './runtime-common.js';
import { S3ObjectStore } from './s3-object-store.js';
import { getSecretJson, getSecretToken } from './secrets.js';

/** AWS SDK clients of the AWS runtime; tests inject clients mocked with aws-sdk-client-mock. */
export interface AwsClients {
  s3?: S3Client;
  sqs?: SQSClient;
  secrets?: SecretsManagerClient;
}

/**
 * The runtime of the deployed functions. Nothing is created before it is used: importing a handler, or
 * building this runtime, makes no AWS call.
 * @throws {ValidationError} for invalid settings (unknown store, bad serving pattern); `openStore` rejects with
 * one for a missing MILVUS_URI, and with a {@link SecretError} for a database secret without a password.
 * @example const runtime = createAwsRuntime(ENV);
 */
export function createAwsRuntime(env: EnvRecord, clients: AwsClients = {}): Runtime {
  const fenv = parseFunctionEnv(env);
  const config = runtimeConfig(fenv);
  let s3: S3Client | undefined = clients.s3;
  let sqs: SQSClient | undefined = clients.sqs;
  let secrets: SecretsManagerClient | undefined = clients.secrets;
  const s3Client = (): S3Client => (s3 ??= new S3Client({}));
  const sqsClient = (): SQSClient => (sqs ??= new SQSClient({}));
  const secretsClient = (): SecretsManagerClient => (secrets ??= new SecretsManagerClient({}));

  const apiKey: ApiKeySource = async () =>
    fenv.openaiApiKeySecretArn
      ? getSecretToken(secretsClient(), fenv.openaiApiKeySecretArn, [
          'apiKey',
          'api_key',
          'OPENAI_API_KEY',
        ])
      : fenv.openaiApiKey;

  // Validated at cold start: a bad endpoint variable fails here with one message naming them all.
  const endpoints = parseEndpoints(env);
  const keyOf = endpointKeys(env, apiKey, (arn) =>
    getSecretToken(secretsClient(), arn, ['apiKey', 'api_key', 'token']),
  );

  const rerankKey: ApiKeySource = async () =>
    fenv.rerankApiKeySecretArn
      ? getSecretToken(secretsClient(), fenv.rerankApiKeySecretArn, ['apiKey', 'api_key', 'token'])
      : fenv.rerankApiKey;

  const bucket = (name: string | undefined, variable: string): string => {
    if (!name) throw new ValidationError(`${variable} is not set`);
    return name;
  };
  let objectStore: ObjectStore | undefined;
  let documents: ObjectStore | undefined;
  const queues = new Map<QueueName, WorkQueue>();

  const sqlClient = memo<SqlClient>(async () => {
    const arn = fenv.pgvectorSecretArn;
    const readSecret = arn === undefined ? undefined : () => getSecretJson(secretsClient(), arn);
    const secret = readSecret === undefined ? {} : await readSecret();
    const { openPgSqlClient } = await loadPgvectorOpener();
    return openPgSqlClient(env, secret, arn, readSecret);
  });
  const milvusToken = memo<string | undefined>(async () =>
    fenv.milvusTokenSecretArn
      ? getSecretToken(secretsClient(), fenv.milvusTokenSecretArn, ['token', 'apiKey', 'api_key'])
      : env.MILVUS_TOKEN,
  );
  const stores = keyedMemo<VectorStore>();
  const openedStores: VectorStore[] = [];
  let closed = false;

  return {
    get objectStore() {
      objectStore ??= new S3ObjectStoreLazy(s3Client, () =>
        bucket(fenv.artifactsBucket, 'AI4RAG_ARTIFACTS_BUCKET'),
      );
      return objectStore;
    },
    get documents() {
      documents ??= new S3ObjectStoreLazy(s3Client, () =>
        bucket(fenv.documentsBucket, 'AI4RAG_DOCUMENTS_BUCKET'),
      );
      return documents;
    },
    queue(name) {
      let q = queues.get(name);
      if (!q) {
        const url = fenv.queueUrls[name];
        if (!url) throw new ValidationError(`AI4RAG_${name.toUpperCase()}_QUEUE_URL is not set`);
        q = new SqsWorkQueue(sqsClient(), url);
        queues.set(name, q);
      }
      return q;
    },
    embedder: embedderFactory(config, endpoints, keyOf, env),
    model: modelFactory(fenv, endpoints, keyOf),
    localModel: inProcessLocalModel,
    reranker: rerankerFactory(env, rerankKey),
    openStore(collection, embedder, options = {}) {
      if (closed) return Promise.reject(new RuntimeClosedError());
      return stores(`${collection}\u0000${embedder.modelId}`, async () => {
        const common = {
          embedder,
          collectionName: collection,
          createIfMissing: options.createIfMissing ?? false,
        };
        let store: VectorStore;
        if (config.store === 'milvus') {
          // Checked before the token is fetched, and named by its variable (the config error says "uri").
          if (!env.MILVUS_URI?.trim()) {
            throw new ValidationError('MILVUS_URI is not set (AI4RAG_STORE=milvus)');
          }
          const { openMilvusStore } = await loadMilvusOpener();
          store = await openMilvusStore(env, await milvusToken(), common);
        } else if (config.store === 'pgvector') {
          const { openPgVectorStore } = await loadPgvectorOpener();
          store = await openPgVectorStore({ client: await sqlClient(), ...common });
        } else {
          throw new ValidationError('AI4RAG_STORE=pglite is for the local runtime only');
        }
        openedStores.push(store);
        return store;
      });
    },
    config,
    presignUpload: (key, contentType, expiresIn) =>
      getSignedUrl(
        s3Client(),
        new PutObjectCommand({
          Bucket: bucket(fenv.documentsBucket, 'AI4RAG_DOCUMENTS_BUCKET'),
          Key: key,
          ContentType: contentType,
        }),
        { expiresIn },
      ),
    async close() {
      closed = true;
      for (const store of openedStores.splice(0)) await store.close();
      await (await sqlClient.peek()?.catch(() => undefined))?.close();
    },
  };
}

/** An S3 store whose client and bucket are resolved on first call (so a missing bucket fails then, not at import). */
class S3ObjectStoreLazy implements ObjectStore {
  #inner: S3ObjectStore | undefined;
  constructor(
    private readonly client: () => S3Client,
    private readonly bucket: () => string,
  ) {}
  #store(): S3ObjectStore {
    this.#inner ??= new S3ObjectStore(this.client(), this.bucket());
    return this.#inner;
  }
  get(key: string) {
    return this.#store().get(key);
  }
  put(key: string, body: Uint8Array | string, contentType?: string) {
    return this.#store().put(key, body, contentType);
  }
  delete(key: string) {
    return this.#store().delete(key);
  }
  list(prefix: string) {
    return this.#store().list(prefix);
  }
  exists(key: string) {
    return this.#store().exists(key);
  }
}
