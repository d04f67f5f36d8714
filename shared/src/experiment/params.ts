/**
 * From a search-space combination to what a trial builds and serves: ai4rag's parameter split (spec 5.1) into
 * indexing parameters (what the index depends on) and RAG parameters (retrieval and generation), the pattern
 * settings of the payload, and the keys of the result cache and index reuse.
 */
import { createHash } from 'node:crypto';
import type { ChunkingMethod, ChunkingOptions, SemanticBreakpoint } from '../chunking/types.js';
import { ValidationError } from '../errors.js';
import { DEFAULT_TEMPLATES, type PromptTemplates } from '../generation/templates.js';
import type { FoundationModel } from '../generation/types.js';
import {
  CHUNKING_SENTINELS,
  defaultParentChunkSize,
  type ModelRef,
  NO_QUERY_TRANSFORM,
  RERANKER_SENTINELS,
} from '../optimizer/search-space.js';
import type { QueryTransformKind } from '../retrieval/query-transform.js';
import { defaultRerankCandidates } from '../retrieval/rerank.js';
import type { RetrieverOptions } from '../retrieval/retriever.js';
import type { RankerStrategy, SearchMode } from '../vectorstores/types.js';
import type { PatternSettings, TrialConfig } from './types.js';

/** Generation defaults of ai4rag's `OpenAIModelParameters`. */
export const GENERATION_DEFAULTS = Object.freeze({ temperature: 0.1, maxCompletionTokens: 1024 });

/** A combination, typed: the fields every trial needs. */
export interface TrialSettings {
  foundationModel: string;
  embeddingModel: string;
  embeddingContextLength: number | null;
  chunking: ChunkingOptions;
  retrieval: {
    method: 'simple' | 'window';
    windowSize: number;
    numberOfChunks: number;
    searchMode: SearchMode;
    rankerStrategy: RankerStrategy;
    rankerK: number;
    rankerAlpha: number;
    /** Absent when not reranked; else `candidates` passages are fetched and reranked to `numberOfChunks`. */
    reranker?: { model: string; candidates: number };
    /** The query transform (`none`: the query is searched as it is). */
    queryTransform: QueryTransformKind;
  };
}

function model(value: unknown, name: string): ModelRef {
  if (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as ModelRef).modelId === 'string'
  ) {
    return value as ModelRef;
  }
  if (typeof value === 'string' && value !== '') return { modelId: value };
  throw new ValidationError(
    `Trial configuration: '${name}' must be a model, got ${String(value)}.`,
  );
}

function num(config: TrialConfig, name: string, fallback: number): number {
  const v = config[name];
  if (v === undefined) return fallback;
  if (typeof v !== 'number' || !Number.isFinite(v)) {
    throw new ValidationError(`Trial configuration: '${name}' must be a number, got ${String(v)}.`);
  }
  return v;
}

function str<T extends string>(config: TrialConfig, name: string, fallback: T): T {
  const v = config[name];
  if (v === undefined) return fallback;
  if (typeof v !== 'string') {
    throw new ValidationError(`Trial configuration: '${name}' must be a string, got ${String(v)}.`);
  }
  return v as T;
}

/**
 * The chunking options of a combination: the method, size and overlap, and the method's own parameters —
 * `parentChunkSize` for `hierarchical` (`parent_chunk_size`; absent or the sentinel 0 ⇒
 * `defaultParentChunkSize(chunk_size)`), `breakpoint` / `breakpointAmount` for `semantic` (`semantic_breakpoint`,
 * `semantic_breakpoint_amount`; absent or the sentinels ⇒ the chunker's defaults). Other methods get none, so their
 * options (and cache keys) are as before issue 15.
 */
export function chunkingOptions(config: TrialConfig): ChunkingOptions {
  const method = str<ChunkingMethod>(config, 'chunking_method', 'recursive');
  const chunkSize = num(config, 'chunk_size', 512);
  const options: ChunkingOptions = {
    method,
    chunkSize,
    chunkOverlap: num(config, 'chunk_overlap', 128),
  };
  if (method === 'hierarchical') {
    const parent = num(config, 'parent_chunk_size', CHUNKING_SENTINELS.parentChunkSize);
    options.parentChunkSize =
      parent === CHUNKING_SENTINELS.parentChunkSize ? defaultParentChunkSize(chunkSize) : parent;
  }
  if (method === 'semantic') {
    const breakpoint = str<string>(config, 'semantic_breakpoint', CHUNKING_SENTINELS.breakpoint);
    const amount = num(config, 'semantic_breakpoint_amount', CHUNKING_SENTINELS.breakpointAmount);
    if (breakpoint !== CHUNKING_SENTINELS.breakpoint) {
      options.breakpoint = breakpoint as SemanticBreakpoint;
    }
    if (amount !== CHUNKING_SENTINELS.breakpointAmount) options.breakpointAmount = amount;
  }
  return options;
}

/**
 * The method-specific chunking keys of indexing params and pattern settings (`parent_chunk_size`,
 * `semantic_breakpoint`, `semantic_breakpoint_amount`), present only where the method has them.
 */
function chunkingMethodParams(c: ChunkingOptions) {
  return {
    ...(c.parentChunkSize !== undefined && { parent_chunk_size: c.parentChunkSize }),
    ...(c.breakpoint !== undefined && { semantic_breakpoint: c.breakpoint }),
    ...(c.breakpointAmount !== undefined && { semantic_breakpoint_amount: c.breakpointAmount }),
  };
}

/**
 * Reads a combination into typed settings; parameters a user search space omits take ai4rag's defaults
 * (recursive 512/128 chunks, simple retrieval of 5 chunks, vector search, no reranking). A reranker without
 * `rerank_candidates` (or with the sentinel 0) reranks `defaultRerankCandidates(number_of_chunks)`.
 * @throws {ValidationError} when a value has the wrong type.
 */
export function trialSettings(config: TrialConfig): TrialSettings {
  const em = model(config.embedding_model, 'embedding_model');
  const fm = model(config.foundation_model, 'foundation_model');
  const searchMode = str<SearchMode>(config, 'search_mode', 'vector');
  const numberOfChunks = num(config, 'number_of_chunks', 5);
  const reranker = str<string>(config, 'reranker', RERANKER_SENTINELS.model);
  const candidates = num(config, 'rerank_candidates', RERANKER_SENTINELS.candidates);
  const rerank =
    reranker === RERANKER_SENTINELS.model
      ? undefined
      : {
          model: reranker,
          candidates:
            candidates === RERANKER_SENTINELS.candidates
              ? defaultRerankCandidates(numberOfChunks)
              : candidates,
        };
  return {
    foundationModel: fm.modelId,
    embeddingModel: em.modelId,
    embeddingContextLength: em.contextLength ?? null,
    chunking: chunkingOptions(config),
    retrieval: {
      method: str<'simple' | 'window'>(config, 'retrieval_method', 'simple'),
      windowSize: num(config, 'window_size', 0),
      numberOfChunks,
      searchMode,
      rankerStrategy: str<RankerStrategy>(config, 'ranker_strategy', ''),
      rankerK: num(config, 'ranker_k', 0),
      rankerAlpha: num(config, 'ranker_alpha', 1),
      ...(rerank !== undefined && { reranker: rerank }),
      queryTransform: str<QueryTransformKind>(config, 'query_transform', NO_QUERY_TRANSFORM),
    },
  };
}

/**
 * The pattern's and RAG params' query-transform key: absent for `none`, so the cache keys and patterns of
 * configurations without a transform stay as before.
 */
function queryTransformParams(s: TrialSettings) {
  const t = s.retrieval.queryTransform;
  return t === NO_QUERY_TRANSFORM ? {} : { query_transform: t };
}

/** The pattern's and RAG params' reranker block: absent without reranking, so such keys stay as before. */
function rerankerParams(s: TrialSettings) {
  const r = s.retrieval.reranker;
  return r === undefined ? {} : { reranker: { model_id: r.model, candidates: r.candidates } };
}

/** ai4rag's `indexing_params` (spec 5.1); equal indexing params share one index. */
export function indexingParams(s: TrialSettings, embeddingDimension: number) {
  return {
    chunking: {
      chunking_method: s.chunking.method,
      chunk_size: s.chunking.chunkSize,
      chunk_overlap: s.chunking.chunkOverlap,
      include_metadata: s.chunking.method === 'hybrid',
      ...chunkingMethodParams(s.chunking),
    },
    embedding: {
      model_id: s.embeddingModel,
      embedding_params: {
        embedding_dimension: embeddingDimension,
        context_length: s.embeddingContextLength,
      },
    },
  };
}

/** ai4rag's `rag_params` (spec 5.1). */
export function ragParams(s: TrialSettings, templates: PromptTemplates = DEFAULT_TEMPLATES) {
  return {
    retrieval: {
      window_size: s.retrieval.windowSize,
      number_of_chunks: s.retrieval.numberOfChunks,
      search_mode: s.retrieval.searchMode,
      retrieval_method: s.retrieval.method,
      ranker_strategy: s.retrieval.rankerStrategy,
      ranker_k: s.retrieval.rankerK,
      ranker_alpha: s.retrieval.rankerAlpha,
      ...rerankerParams(s),
      ...queryTransformParams(s),
    },
    generation: {
      model_id: s.foundationModel,
      temperature: GENERATION_DEFAULTS.temperature,
      max_completion_tokens: GENERATION_DEFAULTS.maxCompletionTokens,
      context_template_text: templates.context,
      user_message_text: templates.user,
      system_message_text: templates.system,
      language: { code: templates.language.code, name: templates.language.name },
    },
  };
}

/** JSON with object keys sorted at every level: equal values give equal strings. */
export function stableStringify(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableStringify).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const o = value as Record<string, unknown>;
    return `{${Object.keys(o)
      .filter((k) => o[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${stableStringify(o[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
}

/** SHA-256 hex of a string. */
export function sha256Hex(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/**
 * The collection of an index: a function of the corpus and the indexing params only, so trials (and later
 * experiments on the same documents) with equal indexing params reuse it.
 */
export function indexCollectionName(corpusHash: string, indexing: unknown): string {
  return `ai4rag_x_${sha256Hex(`${corpusHash}|${stableStringify(indexing)}`).slice(0, 20)}`;
}

/** Key of the result cache: corpus, benchmark, indexing and RAG params. */
export function resultCacheKey(
  corpusHash: string,
  benchmarkHash: string,
  indexing: unknown,
  rag: unknown,
): string {
  return sha256Hex(
    `${corpusHash}|${benchmarkHash}|${stableStringify(indexing)}|${stableStringify(rag)}`,
  );
}

/**
 * The retriever options of a trial. With a reranker the retriever fetches its candidates (the RAG template
 * reranks them down to `numberOfChunks`). A query transform other than `none` is included; `multi_query` and
 * `hyde` write through `model` (the trial's foundation model).
 */
export function retrieverOptions(s: TrialSettings, model?: FoundationModel): RetrieverOptions {
  const r = s.retrieval;
  const t = r.queryTransform;
  return {
    ...(t !== NO_QUERY_TRANSFORM && {
      queryTransform: { kind: t, ...(model !== undefined && { model }) },
    }),
    numberOfChunks: r.reranker?.candidates ?? r.numberOfChunks,
    method: r.method,
    windowSize: r.windowSize,
    searchMode: r.searchMode,
    ...(r.searchMode === 'hybrid' && {
      rankerStrategy: r.rankerStrategy,
      rankerK: r.rankerK,
      rankerAlpha: r.rankerAlpha,
    }),
  };
}

/**
 * The payload `settings` of a pattern (spec 5.4): optional retrieval keys only where they apply (window size when
 * > 0, ranker strategy for hybrid, k for rrf, alpha for weighted, the reranker when reranked).
 */
export function patternSettings(
  s: TrialSettings,
  providerType: string,
  collection: string,
  embeddingDimension: number,
  templates: PromptTemplates = DEFAULT_TEMPLATES,
): PatternSettings {
  const r = s.retrieval;
  const gen = ragParams(s, templates).generation;
  return {
    vector_store_binding: { provider_type: providerType, collection_name: collection },
    chunking: {
      method: s.chunking.method,
      chunk_size: s.chunking.chunkSize,
      chunk_overlap: s.chunking.chunkOverlap,
      include_metadata: s.chunking.method === 'hybrid',
      ...chunkingMethodParams(s.chunking),
    },
    embedding: indexingParams(s, embeddingDimension).embedding,
    retrieval: {
      method: r.method,
      number_of_chunks: r.numberOfChunks,
      search_mode: r.searchMode,
      ...(r.windowSize > 0 && { window_size: r.windowSize }),
      ...(r.searchMode === 'hybrid' && { ranker_strategy: r.rankerStrategy }),
      ...(r.searchMode === 'hybrid' && r.rankerStrategy === 'rrf' && { ranker_k: r.rankerK }),
      ...(r.searchMode === 'hybrid' &&
        r.rankerStrategy === 'weighted' && { ranker_alpha: r.rankerAlpha }),
      ...rerankerParams(s),
      ...queryTransformParams(s),
    },
    generation: gen,
  };
}

/**
 * One question's evaluation input (ai4rag's `EvaluationData`) from a benchmark question and the RAG answer: the
 * contexts are the passages sent to the model, identified by their document keys.
 */
export function evaluationItem(
  q: { questionId: string; correctAnswers: string[]; documentKeys: string[] },
  answer: string,
  references: readonly { text: string; documentId: string }[],
) {
  return {
    question_id: q.questionId,
    answer,
    contexts: references.map((r) => r.text),
    context_ids: references.map((r) => r.documentId),
    ground_truths: q.correctAnswers,
    ground_truths_context_ids: q.documentKeys,
  };
}
