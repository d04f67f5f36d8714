/**
 * Request → retrieval settings and result shaping shared by the search and generate handlers (and `ai4rag serve`).
 * The serving pattern (AI4RAG_SERVING_PATTERN) supplies defaults; the request may override k, the fusion and
 * the reranking.
 */
import type { GenerateResponse, SearchResponse } from '../../shared/src/api/schemas.js';
import {
  defaultRetrievalFor,
  LEXICAL_RETRIEVAL,
  SEMANTIC_RETRIEVAL,
} from '../../shared/src/defaults.js';
import {
  createOfflineEmbedder,
  DEFAULT_EMBEDDING_MODEL,
} from '../../shared/src/embeddings/local.js';
import type { Embedder } from '../../shared/src/embeddings/types.js';
import { ValidationError } from '../../shared/src/errors.js';
import {
  DEFAULT_GUARDRAILS,
  flaggedPassagesWarning,
  type GuardrailSettings,
  type InjectionPolicy,
  type InjectionRule,
  screenedTopK,
} from '../../shared/src/generation/guardrails.js';
import { LOCAL_EXTRACTIVE_MODEL_ID } from '../../shared/src/generation/local-extractive.js';
import type { RagAnswer, ReferenceDocument } from '../../shared/src/generation/rag-template.js';
import { SimpleRAG } from '../../shared/src/generation/rag-template.js';
import {
  DEFAULT_TEMPLATES,
  fenceContextAsData,
  type PromptTemplates,
} from '../../shared/src/generation/templates.js';
import type { FoundationModel } from '../../shared/src/generation/types.js';
import { costOf, type PriceTable, type TokenUsage } from '../../shared/src/pricing.js';
import {
  cachedTermStats,
  QUERY_TRANSFORMS,
  type QueryTransformKind,
  type QueryTransformOptions,
  type QueryTransformReport,
} from '../../shared/src/retrieval/query-transform.js';
import {
  defaultRerankCandidates,
  type Reranker,
  rerankCandidatesProblem,
  rerankOrKeepOrder,
} from '../../shared/src/retrieval/rerank.js';
import {
  type RetrievedChunk,
  Retriever,
  type RetrieverOptions,
} from '../../shared/src/retrieval/retriever.js';
import { EmbeddingModelMismatchError } from '../../shared/src/vectorstores/errors.js';
import type {
  MetadataFilter,
  RankerStrategy,
  SearchMode,
  VectorStore,
} from '../../shared/src/vectorstores/types.js';
import { HttpError } from './http.js';
import type { Runtime, RuntimeConfig } from './runtime.js';

/** Retrieval fields of a request body (snake_case, as in the API). */
export interface RetrievalRequest {
  k?: number | undefined;
  search_mode?: SearchMode | undefined;
  /** A query transform: its name, or its name (`type`) with parameters. */
  query_transform?: QueryTransformKind | QueryTransformRequest | undefined;
  ranker_strategy?: Exclude<RankerStrategy, ''> | undefined;
  ranker_k?: number | undefined;
  ranker_alpha?: number | undefined;
  filter?: MetadataFilter | undefined;
  /** `false` turns reranking off; an object turns it on (or adjusts the default). */
  rerank?: false | { model?: string | undefined; candidates?: number | undefined } | undefined;
  /** Guardrails of an answer (/search: `injection` only); unset fields take {@link DEFAULT_GUARDRAILS}. */
  guardrails?:
    | { injection?: InjectionPolicy | undefined; pii?: 'redact' | 'off' | undefined }
    | undefined;
}

/** A request's query transform with its parameters (snake_case, as in the API). */
export interface QueryTransformRequest {
  type: QueryTransformKind;
  queries?: number | undefined;
  fb_docs?: number | undefined;
  fb_terms?: number | undefined;
  original_query_weight?: number | undefined;
}

/**
 * The query transform of a request: the request's, else the serving pattern's `retrieval.query_transform`, else
 * none. `multi_query` and `hyde` write through the deployment's chat model (`model()` is only called for them).
 * @throws {ValidationError} (HTTP 400, naming `query_transform`) for rm3 without the keyword leg (search mode
 * hybrid), or a chat transform when the deployment answers with the local extractive model.
 */
export async function queryTransformFor(
  config: RuntimeConfig,
  request: RetrievalRequest,
  options: RetrieverOptions,
  model: () => Promise<FoundationModel>,
): Promise<QueryTransformOptions | undefined> {
  const asked = request.query_transform ?? config.servingPattern?.retrieval.query_transform;
  if (asked === undefined) return undefined;
  const t: QueryTransformRequest = typeof asked === 'string' ? { type: asked } : asked;
  if (!(QUERY_TRANSFORMS as readonly string[]).includes(t.type)) {
    throw new ValidationError(
      `query_transform: must be one of ${QUERY_TRANSFORMS.join(', ')}, got '${String(t.type)}'`,
    );
  }
  if (t.type === 'none') return undefined;
  if (t.type === 'rm3') {
    if (options.searchMode !== 'hybrid') {
      throw new ValidationError(
        `query_transform: rm3 needs a keyword leg (search_mode hybrid), got search_mode ${options.searchMode ?? 'vector'}`,
      );
    }
    const rm3 = {
      ...(t.fb_docs !== undefined && { fbDocs: t.fb_docs }),
      ...(t.fb_terms !== undefined && { fbTerms: t.fb_terms }),
      ...(t.original_query_weight !== undefined && {
        originalQueryWeight: t.original_query_weight,
      }),
    };
    return { kind: 'rm3', rm3 };
  }
  const chat = await model();
  if (chat.modelId === LOCAL_EXTRACTIVE_MODEL_ID || chat.modelId.startsWith('local/')) {
    throw new ValidationError(
      `query_transform: ${t.type} needs a chat model endpoint; this deployment answers with the local model '${chat.modelId}'`,
    );
  }
  return { kind: t.type, model: chat, ...(t.queries !== undefined && { queries: t.queries }) };
}

/** What a query transform did, in the API's snake_case (times rounded to 0.1 ms). */
export function toQueryTransform(
  r: QueryTransformReport,
): NonNullable<SearchResponse['query_transform']> {
  return {
    type: r.kind,
    ms: Math.round(r.ms * 10) / 10,
    ...(r.usage && {
      usage: { prompt_tokens: r.usage.promptTokens, completion_tokens: r.usage.completionTokens },
    }),
    ...(r.queries && { queries: r.queries }),
    ...(r.passage !== undefined && { passage: r.passage }),
    ...(r.expansion && { expansion: r.expansion }),
  };
}

/** Reranking of one request: `candidates` fused passages scored by `model`, the best k kept. */
export interface RerankPlan {
  model: string;
  candidates: number;
  k: number;
}

/** Label of the reranker when neither the request nor the deployment names the endpoint's model. */
export const DEFAULT_RERANK_MODEL = 'tei';

/**
 * Whether and how a request is reranked: the request's `rerank` first (`false` is off), else on when the
 * deployment knows its reranker model (AI4RAG_RERANK_MODEL or the serving pattern's reranker). Candidates: the
 * request's, else the deployment's when at least k, else {@link defaultRerankCandidates}.
 * @throws {ValidationError} (HTTP 400) when reranking is asked for without an endpoint, for a model the
 * endpoint does not serve, or for fewer candidates than k.
 */
export function rerankPlanFor(
  config: RuntimeConfig,
  request: RetrievalRequest,
  k: number,
): RerankPlan | undefined {
  const asked = request.rerank;
  if (asked === false) return undefined;
  const served = config.rerank;
  if (asked === undefined && served?.model === undefined) return undefined;
  if (served === undefined) {
    throw new ValidationError(
      'rerank: this deployment has no reranker endpoint (AI4RAG_RERANK_BASE_URL / CDK context rerankBaseUrl)',
    );
  }
  if (asked?.model !== undefined && served.model !== undefined && asked.model !== served.model) {
    throw new ValidationError(
      `rerank.model: '${asked.model}' is not served here; the reranker endpoint serves '${served.model}'`,
    );
  }
  const fallback =
    served.candidates !== undefined && served.candidates >= k
      ? served.candidates
      : defaultRerankCandidates(k);
  const candidates = asked?.candidates ?? fallback;
  const problem = rerankCandidatesProblem(candidates, k);
  if (problem !== undefined) throw new ValidationError(`rerank.candidates ${problem}`);
  return { model: asked?.model ?? served.model ?? DEFAULT_RERANK_MODEL, candidates, k };
}

async function rerankerOf(rt: Runtime, plan: RerankPlan): Promise<Reranker> {
  if (rt.reranker === undefined) {
    throw new ValidationError('rerank: this runtime has no reranker');
  }
  return rt.reranker(plan.model);
}

/** Chunks returned when neither the request nor the serving pattern says. */
export const DEFAULT_K = 5;

/** The serving pattern's filter and the request's: both must match (a request narrows, never widens). */
function scopedFilter(
  pattern: MetadataFilter | undefined,
  request: MetadataFilter | undefined,
): { filter?: MetadataFilter } {
  const given = [pattern, request].filter(
    (f): f is MetadataFilter => f !== undefined && Object.keys(f).length > 0,
  );
  if (given.length === 0) return {};
  return { filter: given.length === 1 ? (given[0] as MetadataFilter) : { and: given } };
}

/**
 * Retriever settings for a request: request fields first, then the serving pattern, then the defaults for the
 * embedding model (as the CLI's `search`). Incompatible combinations are left for the store's validation
 * (a 400 naming the field).
 */
export function retrieverOptionsFor(
  config: RuntimeConfig,
  request: RetrievalRequest,
): RetrieverOptions {
  const p = config.servingPattern?.retrieval;
  const defaults = defaultRetrievalFor(config.embeddingModel);
  const numberOfChunks = request.k ?? p?.number_of_chunks ?? DEFAULT_K;
  const windowSize = p?.method === 'window' ? (p.window_size ?? 1) : 0;
  const base: RetrieverOptions = {
    numberOfChunks,
    method: windowSize > 0 ? 'window' : 'simple',
    windowSize,
    ...scopedFilter(p?.filter, request.filter),
  };
  const searchMode = request.search_mode ?? (p?.search_mode as SearchMode) ?? defaults.searchMode;
  if (searchMode === 'vector') {
    return {
      ...base,
      searchMode,
      ...(request.ranker_strategy !== undefined && { rankerStrategy: request.ranker_strategy }),
      ...(request.ranker_k !== undefined && { rankerK: request.ranker_k }),
      ...(request.ranker_alpha !== undefined && { rankerAlpha: request.ranker_alpha }),
    };
  }
  const patternStrategy = p?.ranker_strategy === '' ? undefined : p?.ranker_strategy;
  const rankerStrategy: RankerStrategy =
    request.ranker_strategy ?? patternStrategy ?? defaults.rankerStrategy;
  const fromPattern = request.ranker_strategy === undefined && patternStrategy !== undefined;
  const rankerK =
    request.ranker_k ??
    (fromPattern && p?.ranker_k ? p.ranker_k : undefined) ??
    (rankerStrategy === 'rrf' ? SEMANTIC_RETRIEVAL.rankerK : 0);
  const defaultAlpha = defaults.rankerStrategy === 'weighted' ? LEXICAL_RETRIEVAL.rankerAlpha : 0.5;
  const rankerAlpha =
    request.ranker_alpha ??
    (fromPattern && p?.ranker_alpha !== undefined && rankerStrategy === 'weighted'
      ? p.ranker_alpha
      : undefined) ??
    (rankerStrategy === 'weighted' ? defaultAlpha : 1);
  return { ...base, searchMode, rankerStrategy, rankerK, rankerAlpha };
}

/** The embedding model each runtime found registered per collection, so later requests open it at once. */
const registeredModels = new WeakMap<Runtime, Map<string, string>>();

/** A collection's embedding model the function cannot build (no endpoint for it): HTTP 503. */
export class EmbeddingModelUnavailableError extends HttpError {
  constructor(collection: string, model: string, options?: ErrorOptions) {
    const reason = options?.cause instanceof Error ? `: ${options.cause.message}` : '';
    super(
      503,
      'embedding_model_unavailable',
      `collection ${collection} was embedded with "${model}", which this function cannot load${reason}`,
      options,
    );
    this.name = 'EmbeddingModelUnavailableError';
  }
}

async function embedderFor(rt: Runtime, modelId: string): Promise<Embedder> {
  return modelId === rt.config.embeddingModel ? rt.embedder() : rt.embedder(modelId);
}

/**
 * Opens the knowledge-base collection for reading, with the embedding model the collection registry records
 * for it — not necessarily the function's configured one (AI4RAG_EMBEDDING_MODEL / the serving pattern), which
 * may have changed since the collection was ingested. The configured model is tried first (the common case),
 * then the one the store names when it refuses it; when the configured model cannot even be built, the local
 * default embedder serves as the probe.
 * @throws {NotFoundError} (404) for a missing collection.
 * @throws {EmbeddingModelUnavailableError} (503) when the registered model needs an endpoint the function lacks.
 */
export async function openReader(
  rt: Runtime,
): Promise<{ store: VectorStore; embedder: Embedder; modelId: string }> {
  const collection = rt.config.collection;
  let known = registeredModels.get(rt);
  if (!known) {
    known = new Map();
    registeredModels.set(rt, known);
  }
  const first = known.get(collection) ?? rt.config.embeddingModel;
  let probe: Embedder;
  try {
    probe = await embedderFor(rt, first);
  } catch (error) {
    if (first !== rt.config.embeddingModel)
      throw new EmbeddingModelUnavailableError(collection, first, { cause: error });
    probe = createOfflineEmbedder(DEFAULT_EMBEDDING_MODEL);
  }
  let registered: string;
  try {
    const store = await rt.openStore(collection, probe);
    return { store, embedder: probe, modelId: probe.modelId };
  } catch (error) {
    if (!(error instanceof EmbeddingModelMismatchError)) throw error;
    registered = error.registeredModel;
  }
  let embedder: Embedder;
  try {
    embedder = await embedderFor(rt, modelNameOf(registered));
  } catch (error) {
    throw new EmbeddingModelUnavailableError(collection, registered, { cause: error });
  }
  if (embedder.modelId !== registered) {
    // Same model, other instruction prefixes (the id records them): the vectors would not be comparable.
    throw new HttpError(
      503,
      'embedding_model_unavailable',
      `collection ${collection} was embedded with "${registered}", but this function builds "${embedder.modelId}" for that model: set AI4RAG_EMBEDDING_PREFIXES to the collection's prefixes`,
    );
  }
  const store = await rt.openStore(collection, embedder);
  known.set(collection, registered);
  return { store, embedder, modelId: registered };
}

/** The model name of a recorded embedding model id, without the instruction prefixes `prefixedModelId` appends. */
function modelNameOf(modelId: string): string {
  return modelId.replace(/ \[(query|document): ".*\]$/, '');
}

/**
 * The runtime as a reader of its collection sees it: `embedder()` without an id gives the collection's
 * registered model (so shared flows such as `removeDocument` open the collection with the right one).
 */
export function readerRuntime(rt: Runtime, modelId: string): Runtime {
  if (modelId === rt.config.embeddingModel) return rt;
  const view = Object.create(rt) as Runtime;
  view.embedder = (id?: string) => rt.embedder(id ?? modelId);
  return view;
}

/** The runtime's settings with the collection's own embedding model (its retrieval defaults follow it). */
function configOf(rt: Runtime, embeddingModel: string): RuntimeConfig {
  return embeddingModel === rt.config.embeddingModel ? rt.config : { ...rt.config, embeddingModel };
}

/** A retrieved chunk as the API returns it. */
export function toSearchHit(hit: RetrievedChunk): SearchResponse['results'][number] {
  return {
    id: hit.id,
    document_key: hit.metadata.document_id,
    sequence_number: hit.metadata.sequence_number,
    text: hit.text,
    score: hit.score ?? null,
    metadata: hit.metadata,
  };
}

/**
 * Runs a search: the fused candidates, screened for prompt injection by the request's `guardrails.injection`
 * (default exclude: flagged ones dropped and more fetched to fill k; quote: kept with `flagged_rules`), reranked
 * to k when the request or the deployment asks for it. A reranker that fails leaves the first k candidates in
 * retrieval order, with a warning.
 */
export async function runSearch(
  rt: Runtime,
  query: string,
  request: RetrievalRequest,
): Promise<SearchResponse> {
  const { store, modelId } = await openReader(rt);
  const options = retrieverOptionsFor(configOf(rt, modelId), request);
  const plan = rerankPlanFor(rt.config, request, options.numberOfChunks);
  const reranker = plan && (await rerankerOf(rt, plan));
  const transform = await queryTransformFor(rt.config, request, options, () => rt.model());
  const want = plan ? plan.candidates : options.numberOfChunks;
  const screened = await screenedSearch(
    store,
    query,
    { ...options, ...(transform && { queryTransform: transform }) },
    want,
    guardrailsFor(request).injection,
  );
  const { hits, flaggedRules, queryTransform: report } = screened;
  const warnings = screened.warning === undefined ? [] : [screened.warning];
  const qt = report && { query_transform: toQueryTransform(report) };
  let results = hits;
  if (plan && reranker) {
    const { chunks, warning } = await rerankOrKeepOrder(reranker, query, hits, plan.k);
    results = chunks;
    if (warning !== undefined) warnings.push(warning);
  }
  return {
    query,
    collection: store.collectionName,
    results: results.map((hit) => {
      const rules = flaggedRules.get(hit.id);
      return { ...toSearchHit(hit), ...(rules && { flagged_rules: rules }) };
    }),
    ...(warnings.length > 0 && { warnings }),
    ...qt,
  };
}

/** The result of {@link screenedSearch}. */
export interface ScreenedSearch {
  hits: RetrievedChunk[];
  /** The screener's rules per kept hit id (`quote`); empty under `exclude` and `off`. */
  flaggedRules: Map<string, InjectionRule[]>;
  /** The guardrails warning naming the flagged passages; absent when none was flagged. */
  warning?: string;
  /** The query transform's report, times and tokens summed over the fetches. */
  queryTransform?: QueryTransformReport;
}

/**
 * The top `want` passages of a search, screened for prompt injection by `policy` (shared by POST /search and
 * `ai4rag search`): `exclude` drops flagged ones and fetches more to fill `want` (`screenedTopK`), `quote`
 * keeps them with their rules, `off` screens nothing.
 */
export async function screenedSearch(
  store: VectorStore,
  query: string,
  options: RetrieverOptions,
  want: number,
  policy: InjectionPolicy,
): Promise<ScreenedSearch> {
  let report: QueryTransformReport | undefined;
  const retrieve = async (n: number): Promise<RetrievedChunk[]> => {
    const retriever = new Retriever(store, { ...options, numberOfChunks: n });
    const { chunks, queryTransform } = await retriever.retrieveWithReport(query);
    report = addReports(report, queryTransform);
    return chunks;
  };
  const flaggedRules = new Map<string, InjectionRule[]>();
  if (policy === 'off') {
    const hits = await retrieve(want);
    return { hits, flaggedRules, ...(report && { queryTransform: report }) };
  }
  const screened = await screenedTopK(retrieve, want, policy);
  screened.rules.forEach((rules, i) => {
    if (rules !== undefined) flaggedRules.set((screened.kept[i] as RetrievedChunk).id, rules);
  });
  const warning =
    screened.flagged.length === 0
      ? undefined
      : flaggedPassagesWarning(policy === 'quote' ? 'mark' : policy, screened.flagged);
  return {
    hits: screened.kept,
    flaggedRules,
    ...(warning !== undefined && { warning }),
    ...(report && { queryTransform: report }),
  };
}

/** The query transform reports of a search fetched more than once (guardrails): times and tokens summed. */
function addReports(
  a: QueryTransformReport | undefined,
  b: QueryTransformReport | undefined,
): QueryTransformReport | undefined {
  if (a === undefined || b === undefined) return b ?? a;
  const usage = a.usage &&
    b.usage && {
      usage: {
        promptTokens: a.usage.promptTokens + b.usage.promptTokens,
        completionTokens: a.usage.completionTokens + b.usage.completionTokens,
      },
    };
  return { ...b, ms: a.ms + b.ms, ...usage };
}

/** The guardrails of a request: its own settings over {@link DEFAULT_GUARDRAILS}. */
export function guardrailsFor(request: RetrievalRequest): GuardrailSettings {
  return {
    injection: request.guardrails?.injection ?? DEFAULT_GUARDRAILS.injection,
    pii: request.guardrails?.pii ?? DEFAULT_GUARDRAILS.pii,
  };
}

/** Prompt templates of the serving pattern, else the defaults. */
export function templatesFor(config: RuntimeConfig): PromptTemplates {
  const g = config.servingPattern?.generation;
  if (!g) return DEFAULT_TEMPLATES;
  return {
    ...DEFAULT_TEMPLATES,
    ...(g.system_message_text !== undefined && { system: g.system_message_text }),
    ...(g.user_message_text !== undefined && { user: g.user_message_text }),
    ...(g.context_template_text !== undefined && { context: g.context_template_text }),
  };
}

/** The RAG pipeline for a request, and the model id it answers with. */
export async function ragFor(
  rt: Runtime,
  request: RetrievalRequest,
): Promise<{ rag: SimpleRAG; modelId: string }> {
  const { store, modelId: embeddingModel } = await openReader(rt);
  const options = retrieverOptionsFor(configOf(rt, embeddingModel), request);
  const plan = rerankPlanFor(rt.config, request, options.numberOfChunks);
  const reranker = plan && (await rerankerOf(rt, plan));
  const guardrails = guardrailsFor(request);
  // The fence goes into the templates themselves, so the local model (which reads the prompt back) sees it too.
  const served = templatesFor(rt.config);
  const templates = guardrails.injection === 'off' ? served : fenceContextAsData(served);
  let model = await rt.model();
  const chatModel = model;
  const transform = await queryTransformFor(rt.config, request, options, async () => chatModel);
  if (model.modelId === LOCAL_EXTRACTIVE_MODEL_ID) {
    // The local model reads the question back out of the prompt, so it must know the served templates; it weighs
    // question terms by the collection's own BM25 statistics. The runtime's: on the worker pool when there is one.
    const termStats = await cachedTermStats(store);
    model = rt.localModel({ templates, ...(termStats && { termStats }) });
  }
  const rag = new SimpleRAG({
    retriever: new Retriever(store, {
      ...options,
      ...(plan && { numberOfChunks: plan.candidates }),
      ...(transform && { queryTransform: transform }),
    }),
    model,
    templates,
    guardrails,
    ...(plan &&
      reranker && {
        reranker: { reranker, candidates: plan.candidates, k: plan.k, fallback: true },
      }),
  });
  return { rag, modelId: model.modelId };
}

/** A source as the API returns it. */
export function toReference(d: ReferenceDocument): GenerateResponse['reference_documents'][number] {
  return {
    document_key: d.documentId,
    sequence_number: d.sequenceNumber,
    text: d.text,
    score: d.score ?? null,
    chunk_ids: d.chunkIds,
  };
}

/** Timing in the API's snake_case, rounded to 0.1 ms. */
export function toTiming(t: RagAnswer['timing']): GenerateResponse['timing'] {
  const r = (x: number): number => Math.round(x * 10) / 10;
  return {
    retrieve_ms: r(t.retrieveMs),
    rerank_ms: r(t.rerankMs),
    generate_ms: r(t.generateMs),
    total_ms: r(t.totalMs),
    ...(t.transformMs !== undefined && { transform_ms: r(t.transformMs) }),
  };
}

/**
 * Tokens and cost in the API's snake_case: nothing when the model reported no usage; `cost_usd` when the price
 * table prices the model (local models cost 0).
 * @example usageFields({ promptTokens: 1000, completionTokens: 100 }, 'gpt-4o-mini', prices)
 * // { usage: { prompt_tokens: 1000, completion_tokens: 100, total_tokens: 1100 }, cost_usd: 0.00021 }
 */
export function usageFields(
  usage: TokenUsage | undefined,
  modelId: string | undefined,
  prices: PriceTable = {},
): Pick<GenerateResponse, 'usage' | 'cost_usd'> {
  if (usage === undefined) return {};
  const cost = modelId === undefined ? undefined : costOf(usage, modelId, prices);
  return {
    usage: {
      prompt_tokens: usage.promptTokens,
      completion_tokens: usage.completionTokens,
      total_tokens: usage.promptTokens + usage.completionTokens,
    },
    ...(cost !== undefined && { cost_usd: cost }),
  };
}

/** A handler's price table: given, or read on the first request (the Lambda's AI4RAG_PRICES). */
export type PriceSource = PriceTable | (() => PriceTable | undefined);

/** Options of the answering handlers. */
export interface AnswerHandlerOptions {
  /** Prices of the answers' `cost_usd`. @default none: tokens only (local models still cost 0) */
  prices?: PriceSource;
}

/** Resolves a {@link PriceSource} once, on first use. */
export function lazyPrices(source: PriceSource | undefined): () => PriceTable | undefined {
  if (typeof source !== 'function') return () => source;
  let resolved: { table: PriceTable | undefined } | undefined;
  return () => {
    resolved ??= { table: source() };
    return resolved.table;
  };
}

/** An answer as the API returns it; `prices` gives its cost. */
export function toGenerateResponse(
  answer: RagAnswer,
  modelId: string,
  prices?: PriceTable,
): GenerateResponse {
  return {
    answer: answer.answer,
    question: answer.question,
    model: modelId,
    reference_documents: answer.referenceDocuments.map(toReference),
    timing: toTiming(answer.timing),
    ...(answer.warnings !== undefined && { warnings: answer.warnings }),
    ...usageFields(answer.usage, modelId, prices),
    ...(answer.queryTransform && { query_transform: toQueryTransform(answer.queryTransform) }),
    ...citationFields(answer),
  };
}

/** An answer's citations in the API's snake_case; nothing when they were not asked for. */
export function citationFields(
  answer: Pick<RagAnswer, 'citations' | 'removedCitations'>,
): Pick<GenerateResponse, 'citations' | 'removed_citations'> {
  if (answer.citations === undefined) return {};
  return {
    citations: answer.citations.map((c) => ({
      marker: c.marker,
      document_key: c.documentId,
      chunk_id: c.chunkId,
      start: c.start,
      end: c.end,
    })),
    removed_citations: answer.removedCitations ?? 0,
  };
}
