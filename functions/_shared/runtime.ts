/**
 * What a handler needs besides its event: object stores, queues, embedders, models and vector stores. The AWS
 * runtime builds them from the environment (S3, SQS, Secrets Manager, RDS or Zilliz); the local runtime from a
 * data folder (files, in-process queues, PGlite). Everything is created once per container, on first use.
 */
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { SQSClient } from '@aws-sdk/client-sqs';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import pg from 'pg';
import type { ChunkingMethod, ChunkingOptions } from '../../shared/src/chunking/types.js';
import { DEFAULT_DATA_DIR, ENV } from '../../shared/src/config.js';
import { DEFAULT_CHUNKING } from '../../shared/src/defaults.js';
import { createEmbedder, DEFAULT_EMBEDDING_MODEL } from '../../shared/src/embeddings/factory.js';
import { parseEmbeddingPrefixes } from '../../shared/src/embeddings/prefixes.js';
import type { Embedder } from '../../shared/src/embeddings/types.js';
import {
  type Endpoint,
  type Endpoints,
  MODEL_ROLES,
  NO_API_KEY,
  parseEndpoints,
  resolveModel,
} from '../../shared/src/endpoints.js';
import { Ai4ragError, ValidationError } from '../../shared/src/errors.js';
import {
  LOCAL_EXTRACTIVE_MODEL_ID,
  LocalExtractiveModel,
} from '../../shared/src/generation/local-extractive.js';
import { OpenAIFoundationModel } from '../../shared/src/generation/openai-model.js';
import type { FoundationModel } from '../../shared/src/generation/types.js';
import { FsObjectStore, type ObjectStore } from '../../shared/src/ports/object-store.js';
import { type Reranker, TeiReranker } from '../../shared/src/retrieval/rerank.js';
import { pgVectorConfigFromEnv } from '../../shared/src/vectorstores/config.js';
import { milvusConfigFromEnv } from '../../shared/src/vectorstores/milvus/config.js';
import { MilvusVectorStore } from '../../shared/src/vectorstores/milvus/milvus-store.js';
import { PgVectorStore } from '../../shared/src/vectorstores/pgvector/pgvector-store.js';
import {
  fromPgPool,
  openPglite,
  type SqlClient,
} from '../../shared/src/vectorstores/sql-client.js';
import type { VectorStore } from '../../shared/src/vectorstores/types.js';
import {
  type EnvRecord,
  type FunctionEnv,
  type FunctionStoreKind,
  parseFunctionEnv,
  type ServingPattern,
} from './env.js';
import { InProcessQueue, SqsWorkQueue, type WorkQueue } from './queue.js';
import { S3ObjectStore } from './s3-object-store.js';
import { getSecretJson, getSecretToken, SecretError } from './secrets.js';

/** Queues of the knowledge-base flow. */
export type QueueName = 'ingest' | 'chunk' | 'embed';

/** Settings the handlers read. */
export interface RuntimeConfig {
  collection: string;
  store: FunctionStoreKind;
  /** Embedding model of the knowledge base (serving pattern, else AI4RAG_EMBEDDING_MODEL, else the local one). */
  embeddingModel: string;
  /** Chunking of the knowledge base (serving pattern, else the defaults). */
  chunking: ChunkingOptions;
  /**
   * Reranking, when a TEI-compatible endpoint is configured (AI4RAG_RERANK_BASE_URL, or the one the default
   * model names): the default model (AI4RAG_RERANK_MODEL, else the serving pattern's reranker) — when set,
   * every query is reranked unless it opts out — and the default number of candidates
   * (AI4RAG_RERANK_CANDIDATES, else the pattern's).
   */
  rerank?: { model?: string; candidates?: number };
  servingPattern?: ServingPattern;
}

/** Options of {@link Runtime.reranker}. */
export interface RerankerOptions {
  /** TeiReranker's own timeout and retries (30 s, 3) instead of the query path's. @default false */
  patient?: boolean;
}

/** Options of {@link Runtime.openStore}. */
export interface OpenStoreOptions {
  /** Writers create a missing collection; readers (the default) get a NotFoundError. */
  createIfMissing?: boolean;
}

/** Everything a handler needs besides its event. */
export interface Runtime {
  /** Artifacts bucket (S3) or a folder (local): batches, manifests, statuses. */
  objectStore: ObjectStore;
  /** Documents bucket (S3) or a folder (local). */
  documents: ObjectStore;
  queue(name: QueueName): WorkQueue;
  /** Cached per model id; default {@link RuntimeConfig.embeddingModel}. */
  embedder(modelId?: string): Promise<Embedder>;
  /**
   * The local extractive model, or an OpenAI-compatible chat model at the endpoint its id resolves to for `role`
   * (`chat` by default; `judge` for the evaluation judge). Cached per (role, id).
   */
  model(modelId?: string, role?: 'chat' | 'judge'): Promise<FoundationModel>;
  /**
   * The TEI-compatible reranker of a model id: at AI4RAG_RERANK_BASE_URL, or at the endpoint `model@name`
   * names (AI4RAG_ENDPOINT_<NAME>_BASE_URL). Cached per id; rejects with a ValidationError when the id resolves
   * to no endpoint. Query-time rerankers give up quickly (the answer then keeps the retrieval order); `patient`
   * ones (experiment trials, where a failure fails the question) wait and retry longer.
   */
  reranker?(modelId: string, options?: RerankerOptions): Promise<Reranker>;
  /** Cached per (collection, embedding model); the stores share one connection pool. */
  openStore(
    collection: string,
    embedder: Embedder,
    options?: OpenStoreOptions,
  ): Promise<VectorStore>;
  config: RuntimeConfig;
  /**
   * A short-lived URL a client PUTs a document to (S3 pre-signed URL; `ai4rag serve` installs its own).
   * Absent when uploads are not possible.
   */
  presignUpload?(key: string, contentType: string, expiresInSeconds: number): Promise<string>;
  close(): Promise<void>;
}

/** A lazily created value; `peek` tells whether creation started (so `close` never creates to destroy). */
interface Memo<T> {
  (): Promise<T>;
  peek(): Promise<T> | undefined;
}

function memo<T>(create: () => Promise<T>): Memo<T> {
  let value: Promise<T> | undefined;
  const get = (() => {
    value ??= create().catch((error: unknown) => {
      value = undefined;
      throw error;
    });
    return value;
  }) as Memo<T>;
  get.peek = () => value;
  return get;
}

/** A store was asked of a runtime after `close()` (its stores and connections are gone). */
export class RuntimeClosedError extends Ai4ragError {
  constructor() {
    super('The runtime is closed: create a new one to open stores.');
    this.name = 'RuntimeClosedError';
  }
}

function keyedMemo<T>(): (key: string, create: () => Promise<T>) => Promise<T> {
  const cache = new Map<string, Promise<T>>();
  return (key, create) => {
    let value = cache.get(key);
    if (!value) {
      value = create().catch((error: unknown) => {
        cache.delete(key);
        throw error;
      });
      cache.set(key, value);
    }
    return value;
  };
}

function runtimeConfig(fenv: FunctionEnv): RuntimeConfig {
  const p = fenv.servingPattern;
  const chunking: ChunkingOptions = p?.chunking
    ? {
        method: p.chunking.method as ChunkingMethod,
        chunkSize: p.chunking.chunk_size,
        chunkOverlap: p.chunking.chunk_overlap,
      }
    : { ...DEFAULT_CHUNKING };
  const patternReranker = p?.retrieval.reranker;
  const rerankModel = fenv.rerankModel ?? patternReranker?.model_id;
  const rerankCandidates = fenv.rerankCandidates ?? patternReranker?.candidates;
  return {
    collection: fenv.collection,
    store: fenv.store,
    embeddingModel: p?.embedding?.model_id ?? fenv.embeddingModel ?? DEFAULT_EMBEDDING_MODEL,
    chunking,
    ...((fenv.rerankBaseUrl !== undefined || rerankModel !== undefined) && {
      rerank: {
        ...(rerankModel !== undefined && { model: rerankModel }),
        ...(rerankCandidates !== undefined && { candidates: rerankCandidates }),
      },
    }),
    ...(p && { servingPattern: p }),
  };
}

/**
 * Per-attempt timeout and retries of the query path's reranker: a failure must be known (and degraded to the
 * retrieval order) within API Gateway's 29 s, next to retrieval and generation.
 */
const QUERY_RERANK = Object.freeze({ timeoutMs: 8_000, maxRetries: 1 });

/**
 * Rerankers per model id, on the endpoint the id resolves to (`shared/src/endpoints.ts`, role `rerank`);
 * `roleKey` is the rerank endpoint's key (a secret in the cloud), named endpoints carry their own.
 */
function rerankerFactory(
  env: EnvRecord,
  roleKey: ApiKeySource,
): (modelId: string, options?: RerankerOptions) => Promise<Reranker> {
  const cache = keyedMemo<Reranker>();
  let endpoints: Endpoints | undefined;
  return (modelId, options = {}) =>
    cache(`${options.patient === true ? 'patient' : 'query'}\u0000${modelId}`, async () => {
      endpoints ??= parseEndpoints(env);
      const { endpoint } = resolveModel(endpoints, 'rerank', modelId);
      if (endpoint === undefined) {
        throw new ValidationError(
          `reranker "${modelId}" is a local model id; rerankers are served by an endpoint`,
        );
      }
      const key = endpoint.name === 'rerank' ? await roleKey() : endpoint.apiKey;
      return new TeiReranker({
        baseURL: endpoint.baseURL,
        model: modelId,
        ...(key !== undefined && { apiKey: key }),
        ...(options.patient !== true && QUERY_RERANK),
      });
    });
}

/** How the OpenAI-compatible API key is found: a secret (cloud) or a plain value (local). */
type ApiKeySource = () => Promise<string | undefined>;

/** The key an endpoint's requests carry (see {@link endpointKeys}). */
type EndpointKey = (endpoint: Endpoint) => Promise<string | undefined>;

/**
 * Keys of model endpoints: the OPENAI_* endpoint's from `openaiKey` (a secret on AWS); a role's or a named
 * endpoint's from its `…_API_KEY_SECRET_ARN` secret when `secret` is given and the variable is set, else its plain
 * `…_API_KEY` (already on the endpoint).
 */
function endpointKeys(
  env: EnvRecord,
  openaiKey: ApiKeySource,
  secret?: (arn: string) => Promise<string | undefined>,
): EndpointKey {
  return async (endpoint) => {
    if (endpoint.name === 'openai') return openaiKey();
    const prefix = (MODEL_ROLES as readonly string[]).includes(endpoint.name)
      ? `AI4RAG_${endpoint.name.toUpperCase()}`
      : `AI4RAG_ENDPOINT_${endpoint.name.toUpperCase().replaceAll('-', '_')}`;
    const arn = env[`${prefix}_API_KEY_SECRET_ARN`];
    if (arn && secret) return secret(arn);
    return endpoint.apiKey;
  };
}

/**
 * Foundation models per (role, model id): the local extractive model, or an OpenAI-compatible chat model at the
 * endpoint the id resolves to for its role (`chat`, or `judge` for the evaluation judge; `model@name` for a named
 * endpoint; see `shared/src/endpoints.ts`).
 */
function modelFactory(
  fenv: FunctionEnv,
  endpoints: Endpoints,
  keyOf: EndpointKey,
): (modelId?: string, role?: 'chat' | 'judge') => Promise<FoundationModel> {
  const cache = keyedMemo<FoundationModel>();
  return (modelId, role = 'chat') => {
    const id =
      modelId ??
      fenv.servingPattern?.generation?.model_id ??
      fenv.foundationModel ??
      LOCAL_EXTRACTIVE_MODEL_ID;
    return cache(`${role}\u0000${id}`, async () => {
      if (id === LOCAL_EXTRACTIVE_MODEL_ID || id === 'local') return new LocalExtractiveModel();
      const { model, endpoint } = resolveModel(endpoints, role, id);
      if (endpoint === undefined) {
        throw new ValidationError(`foundation model "${id}" is not a known local model`);
      }
      const g = fenv.servingPattern?.generation;
      return new OpenAIFoundationModel({
        baseURL: endpoint.baseURL,
        apiKey: (await keyOf(endpoint)) || NO_API_KEY,
        model,
        ...(g?.temperature !== undefined && { temperature: g.temperature }),
        ...(g?.max_completion_tokens !== undefined && {
          maxCompletionTokens: g.max_completion_tokens,
        }),
        // Behind API Gateway's 29 s limit a call must give up in time to answer.
        timeoutMs: 25_000,
        maxRetries: 1,
      });
    });
  };
}

/** Embedders per model id: local, or OpenAI-compatible at the endpoint the id resolves to for `embedding`. */
function embedderFactory(
  config: RuntimeConfig,
  endpoints: Endpoints,
  keyOf: EndpointKey,
  env: EnvRecord,
): (modelId?: string) => Promise<Embedder> {
  const cache = keyedMemo<Embedder>();
  // Validated when the runtime is built: a bad value fails the cold start.
  const prefixes = parseEmbeddingPrefixes(
    env.AI4RAG_EMBEDDING_PREFIXES,
    'AI4RAG_EMBEDDING_PREFIXES',
  );
  return (modelId) => {
    const id = modelId ?? config.embeddingModel;
    return cache(id, async () => {
      if (id === 'local' || id.startsWith('local/')) return createEmbedder(id);
      const { model, endpoint } = resolveModel(endpoints, 'embedding', id);
      if (endpoint === undefined) return createEmbedder(model);
      return createEmbedder(model, {
        openai: {
          baseURL: endpoint.baseURL,
          apiKey: (await keyOf(endpoint)) || NO_API_KEY,
          ...(prefixes !== undefined && { prefixes }),
        },
      });
    });
  };
}

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
    const base = pgVectorConfigFromEnv(env);
    let secret: Record<string, unknown> = {};
    if (fenv.pgvectorSecretArn)
      secret = await getSecretJson(secretsClient(), fenv.pgvectorSecretArn);
    const str = (v: unknown): string | undefined =>
      typeof v === 'string' && v !== '' ? v : undefined;
    const password = str(secret.password) ?? base.password;
    // Without this, pg fails deep in the SASL handshake ("client password must be a string").
    if (fenv.pgvectorSecretArn && password === undefined) {
      throw new SecretError(`secret ${fenv.pgvectorSecretArn} has no password`);
    }
    const sslMode = env.PGVECTOR_SSLMODE ?? 'require';
    const pool = new pg.Pool({
      host: env.PGVECTOR_HOST ? base.host : (str(secret.host) ?? base.host),
      port: env.PGVECTOR_PORT ? base.port : Number(secret.port ?? base.port),
      database: env.PGVECTOR_DB ? base.database : (str(secret.dbname) ?? base.database),
      user: str(secret.username) ?? base.user,
      ...(password !== undefined && { password }),
      // One Lambda container serves one request at a time: a small pool keeps RDS connections bounded.
      max: 2,
      connectionTimeoutMillis: 10_000,
      keepAlive: true,
      ...(sslMode !== 'disable' && { ssl: { rejectUnauthorized: sslMode === 'verify-full' } }),
    });
    return fromPgPool(pool, { ownsPool: true });
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
          const token = await milvusToken();
          store = await MilvusVectorStore.create({
            config: milvusConfigFromEnv({
              ...env,
              ...(token !== undefined && { MILVUS_TOKEN: token }),
            }),
            ...common,
          });
        } else if (config.store === 'pgvector') {
          store = await PgVectorStore.create({ client: await sqlClient(), ...common });
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

/** Options of {@link createLocalRuntime}. */
export interface LocalRuntimeOptions {
  /** Root of the local data: `<dataDir>/artifacts`, `<dataDir>/documents`, PGlite in `<dataDir>/pglite`. */
  dataDir: string;
  /** Folder of the documents (instead of `<dataDir>/documents`). */
  documentsDir?: string;
  /** Environment record (collection, models, OPENAI_*). @default {} */
  env?: EnvRecord;
  /** Keep the vector store in memory (tests). @default false */
  inMemory?: boolean;
}

/** The local runtime, with its in-process queues exposed so the caller binds them to the local handlers. */
export interface LocalRuntime extends Runtime {
  readonly queues: Readonly<Record<QueueName, InProcessQueue>>;
}

/**
 * The runtime of one machine: files instead of S3, in-process queues instead of SQS, PGlite (with pgvector) in
 * `<dataDir>/pglite` shared by every collection. Bind the queues to the handlers (`bindLocalQueues`) to run the
 * whole knowledge-base flow in process.
 * @example const runtime = createLocalRuntime({ dataDir: '.ai4rag' });
 */
export function createLocalRuntime(options: LocalRuntimeOptions): LocalRuntime {
  const env = options.env ?? {};
  const fenv = parseFunctionEnv({ ...env, AI4RAG_STORE: 'pglite' });
  const config = runtimeConfig(fenv);
  const dataDir = resolve(options.dataDir);
  const apiKey: ApiKeySource = async () => fenv.openaiApiKey;
  const endpoints = parseEndpoints(env);
  const keyOf = endpointKeys(env, apiKey);
  const client = memo<SqlClient>(async () => {
    if (options.inMemory) return openPglite({});
    mkdirSync(join(dataDir, 'pglite'), { recursive: true });
    return openPglite({ dataDir: join(dataDir, 'pglite') });
  });
  const stores = keyedMemo<VectorStore>();
  const openedStores: VectorStore[] = [];
  let closed = false;
  const queues = {
    ingest: new InProcessQueue('ingest'),
    chunk: new InProcessQueue('chunk'),
    embed: new InProcessQueue('embed'),
  };
  return {
    objectStore: new FsObjectStore(join(dataDir, 'artifacts')),
    documents: new FsObjectStore(options.documentsDir ?? join(dataDir, 'documents')),
    queues,
    queue: (name) => queues[name],
    embedder: embedderFactory(config, endpoints, keyOf, env),
    model: modelFactory(fenv, endpoints, keyOf),
    reranker: rerankerFactory(env, async () => fenv.rerankApiKey),
    openStore(collection, embedder, openOptions = {}) {
      if (closed) return Promise.reject(new RuntimeClosedError());
      return stores(`${collection}\u0000${embedder.modelId}`, async () => {
        const store = await PgVectorStore.create({
          client: await client(),
          embedder,
          collectionName: collection,
          createIfMissing: openOptions.createIfMissing ?? false,
        });
        openedStores.push(store);
        return store;
      });
    },
    config,
    async close() {
      closed = true;
      for (const store of openedStores.splice(0)) await store.close();
      await (await client.peek()?.catch(() => undefined))?.close();
    },
  };
}

let defaultRuntime: Runtime | undefined;

/**
 * The container's runtime: AWS when the documents bucket is configured (the CDK stack sets it), else local in
 * AI4RAG_DATA_DIR. Built once, on first use.
 */
export function getDefaultRuntime(): Runtime {
  defaultRuntime ??=
    ENV.AI4RAG_DOCUMENTS_BUCKET !== undefined
      ? createAwsRuntime(ENV)
      : createLocalRuntime({ dataDir: DEFAULT_DATA_DIR, env: ENV });
  return defaultRuntime;
}

const RUNTIME_KEYS: readonly (keyof Runtime)[] = [
  'objectStore',
  'documents',
  'queue',
  'embedder',
  'model',
  'openStore',
  'config',
  'close',
];

/**
 * A handler's runtime: the injected parts, completed by the container's default runtime only when something is
 * missing — resolved on first invocation, never at import.
 * @example const runtime = lazyRuntime(deps); ... const store = await runtime().openStore(...)
 */
export function lazyRuntime(deps: Partial<Runtime> = {}): () => Runtime {
  let runtime: Runtime | undefined;
  return () => {
    if (!runtime) {
      const complete = RUNTIME_KEYS.every((k) => deps[k] !== undefined);
      runtime = complete ? (deps as Runtime) : { ...getDefaultRuntime(), ...deps };
    }
    return runtime;
  };
}
