/**
 * The parts both runtimes share: the {@link Runtime} port the handlers use, its settings, and the caches of
 * embedders, models and rerankers by model id. The remote (OpenAI-compatible) embedder and chat model are loaded
 * on first use through `bundle.ts`, so bundles of functions that call no model do not carry the OpenAI SDK.
 */
import type { ChunkingMethod, ChunkingOptions } from '../../shared/src/chunking/types.js';
import { DEFAULT_CHUNKING } from '../../shared/src/defaults.js';
import {
  createOfflineEmbedder,
  DEFAULT_EMBEDDING_MODEL,
} from '../../shared/src/embeddings/local.js';
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
  type LocalExtractiveModelOptions,
} from '../../shared/src/generation/local-extractive.js';
import type { FoundationModel } from '../../shared/src/generation/types.js';
import type { ObjectStore } from '../../shared/src/ports/object-store.js';
import type { WorkQueue } from '../../shared/src/ports/queue.js';
import { type Reranker, TeiReranker } from '../../shared/src/retrieval/rerank.js';
import type { VectorStore } from '../../shared/src/vectorstores/types.js';
import { loadRemoteModels } from './bundle.js';
import type { EnvRecord, FunctionEnv, FunctionStoreKind, ServingPattern } from './env.js';

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
  /**
   * The models the deployment names (serving pattern, else AI4RAG_EMBEDDING_MODEL / AI4RAG_FOUNDATION_MODEL), when
   * it names them: what an experiment whose input names none compares.
   */
  deployedModels?: { embedding?: string; foundation?: string };
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
   * The local extractive model with per-use options (the served templates, the corpus' term statistics): in
   * process, or on the worker pool once `usePool` (`serve --workers`, `experiment --workers`) has swapped it, with
   * the same answers. Not cached (the options differ per request).
   * @throws {ValidationError} for options the model refuses.
   */
  localModel(options?: LocalExtractiveModelOptions): FoundationModel;
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
export interface Memo<T> {
  (): Promise<T>;
  peek(): Promise<T> | undefined;
}

export function memo<T>(create: () => Promise<T>): Memo<T> {
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

export function keyedMemo<T>(): (key: string, create: () => Promise<T>) => Promise<T> {
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

/**
 * The method parameters of a pattern's `settings.chunking` (issue 15): `parent_chunk_size` (hierarchical),
 * `semantic_breakpoint` and `semantic_breakpoint_amount` (semantic), where the pattern has them.
 */
function patternChunkingParams(c: Record<string, unknown>): Partial<ChunkingOptions> {
  return {
    ...(typeof c.parent_chunk_size === 'number' && { parentChunkSize: c.parent_chunk_size }),
    ...(typeof c.semantic_breakpoint === 'string' && {
      breakpoint: c.semantic_breakpoint as ChunkingOptions['breakpoint'],
    }),
    ...(typeof c.semantic_breakpoint_amount === 'number' && {
      breakpointAmount: c.semantic_breakpoint_amount,
    }),
  };
}

export function runtimeConfig(fenv: FunctionEnv): RuntimeConfig {
  const p = fenv.servingPattern;
  const chunking: ChunkingOptions = p?.chunking
    ? {
        method: p.chunking.method as ChunkingMethod,
        chunkSize: p.chunking.chunk_size,
        chunkOverlap: p.chunking.chunk_overlap,
        ...patternChunkingParams(p.chunking),
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
    ...deployedModels(fenv),
  };
}

function deployedModels(fenv: FunctionEnv): Pick<RuntimeConfig, 'deployedModels'> {
  // The 'local' aliases by the ids the experiment's patterns and reports name them with.
  const canonical = (id: string | undefined, local: string) => (id === 'local' ? local : id);
  const embedding = canonical(
    fenv.servingPattern?.embedding?.model_id ?? fenv.embeddingModel,
    DEFAULT_EMBEDDING_MODEL,
  );
  const foundation = canonical(
    fenv.servingPattern?.generation?.model_id ?? fenv.foundationModel,
    LOCAL_EXTRACTIVE_MODEL_ID,
  );
  if (embedding === undefined && foundation === undefined) return {};
  return {
    deployedModels: {
      ...(embedding !== undefined && { embedding }),
      ...(foundation !== undefined && { foundation }),
    },
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
export function rerankerFactory(
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
export type ApiKeySource = () => Promise<string | undefined>;

/** The key an endpoint's requests carry (see {@link endpointKeys}). */
export type EndpointKey = (endpoint: Endpoint) => Promise<string | undefined>;

/**
 * Keys of model endpoints: the OPENAI_* endpoint's from `openaiKey` (a secret on AWS); a role's or a named
 * endpoint's from its `…_API_KEY_SECRET_ARN` secret when `secret` is given and the variable is set, else its plain
 * `…_API_KEY` (already on the endpoint).
 */
export function endpointKeys(
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

/** {@link Runtime.localModel} in process: a new local extractive model with the options. */
export function inProcessLocalModel(options?: LocalExtractiveModelOptions): FoundationModel {
  return new LocalExtractiveModel(options);
}

/**
 * Foundation models per (role, model id): the local extractive model, or an OpenAI-compatible chat model at the
 * endpoint the id resolves to for its role (`chat`, or `judge` for the evaluation judge; `model@name` for a named
 * endpoint; see `shared/src/endpoints.ts`).
 */
export function modelFactory(
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
      const { OpenAIFoundationModel } = await loadRemoteModels();
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
export function embedderFactory(
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
      if (id === 'local' || id.startsWith('local/')) return createOfflineEmbedder(id);
      const { model, endpoint } = resolveModel(endpoints, 'embedding', id);
      if (endpoint === undefined) return createOfflineEmbedder(model);
      const { createEmbedder } = await loadRemoteModels();
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
