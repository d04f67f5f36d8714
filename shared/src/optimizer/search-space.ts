import {
  CHUNKING_LIMITS,
  CHUNKING_METHODS,
  METHOD_LIMITS,
  SEMANTIC_BREAKPOINTS,
} from '../chunking/limits.js';
import type { ChunkingMethod } from '../chunking/types.js';
import { ValidationError } from '../errors.js';
import { QUERY_TRANSFORMS } from '../retrieval/query-transform.js';
import { RERANK_CANDIDATES } from '../retrieval/rerank.js';
import { mulberry32 } from '../util/random.js';
import {
  CHUNKING_SENTINELS,
  PARAM_NAMES,
  type ParamName,
  RANKER_SENTINELS,
  RERANKER_SENTINELS,
} from './param-names.js';

export { CHUNKING_SENTINELS, PARAM_NAMES, type ParamName, RANKER_SENTINELS, RERANKER_SENTINELS };

/** A search space that cannot be built, enumerated or parsed (ai4rag's `SearchSpaceValueError`). */
export class SearchSpaceError extends ValidationError {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'SearchSpaceError';
  }
}

/**
 * A model as a search-space value. Compared and hashed by `modelId` only, so the same model with a
 * different (or unknown) context length is still one grid point.
 */
export interface ModelRef {
  modelId: string;
  /** Context length in tokens; rule 4 is skipped for embedding models without it. */
  contextLength?: number;
}

/** One value a parameter can take. */
export type ParamValue = string | number | boolean | ModelRef;

/**
 * A searchable parameter, as ai4rag's `Parameter`: `C` categorical (needs `values`), `B` boolean
 * (`[true, false]`), `I` integer range `min..max` inclusive. ai4rag's `R` (real) cannot be enumerated
 * there either, so it is not offered.
 */
export interface Parameter {
  name: string;
  type: 'C' | 'B' | 'I';
  values?: readonly ParamValue[];
  min?: number;
  max?: number;
}

/** A filter over one combination: `false` removes it from the grid. May throw {@link SearchSpaceError}. */
export type Rule = (combination: Record<string, unknown>) => boolean;

const KNOWN_NAMES: readonly string[] = Object.values(PARAM_NAMES);

/**
 * ai4rag's `RetrievalConstraints` (plus the ranker sentinels), used to validate override files so a
 * user grid cannot contain points the retrieval layer would reject.
 */
export const RETRIEVAL_LIMITS = Object.freeze({
  MIN_NUMBER_OF_CHUNKS: 1,
  MAX_NUMBER_OF_CHUNKS: 10,
  MIN_WINDOW_SIZE: 0,
  MAX_WINDOW_SIZE: 4,
  MIN_RANKER_K: 1,
  MAX_RANKER_K: 100,
  RETRIEVAL_METHODS: Object.freeze(['simple', 'window'] as const),
  /** ai4rag also has `graph`; no vector store here implements it, so it is not accepted. */
  SEARCH_MODES: Object.freeze(['vector', 'hybrid'] as const),
  RANKER_STRATEGIES: Object.freeze(['rrf', 'weighted', 'normalized'] as const),
});

/**
 * The chunking methods a search space may list: all of the chunker's (`CHUNKING_METHODS`): ai4rag's `recursive` and
 * `hybrid`, and ours (issue 15): `fixed` (token windows), `semantic` (embedding breakpoints) and `hierarchical`
 * (children searched, parents returned).
 */
export const SEARCH_SPACE_CHUNKING_METHODS: readonly ChunkingMethod[] = CHUNKING_METHODS;

/** The breakpoint types of `semantic` chunking, as `semantic_breakpoint` values (the chunker's). */
export { SEMANTIC_BREAKPOINTS };

/** Bounds of the chunking-method parameters (sizes in approximate tokens, as `chunk_size`). */
export const CHUNKING_METHOD_LIMITS = Object.freeze({
  /** `hierarchical`: the largest parent chunk (a parent is context, never embedded). */
  MAX_PARENT_CHUNK_SIZE: METHOD_LIMITS.MAX_PARENT_CHUNK_SIZE,
  /** `semantic`: a percentile (`percentile`, `gradient`) is in (0, 100]. */
  MAX_PERCENTILE_AMOUNT: 100,
  /** `semantic`: `standard_deviation` takes at most this many standard deviations. */
  MAX_STD_AMOUNT: METHOD_LIMITS.MAX_STD_AMOUNT,
});

/**
 * Refuses to enumerate grids larger than this many raw combinations: the product is materialised in
 * memory, and a grid this large is a mistake in an override file rather than a real experiment.
 */
export const MAX_RAW_COMBINATIONS = 1_000_000;

function isModelRef(v: unknown): v is ModelRef {
  return typeof v === 'object' && v !== null && typeof (v as ModelRef).modelId === 'string';
}

/**
 * A stable string key for a value: models by `modelId`, other values by type and value. Used for
 * duplicate detection and combination keys.
 */
export function valueKey(v: unknown): string {
  if (isModelRef(v)) return `model:${v.modelId}`;
  return `${typeof v}:${String(v)}`;
}

/**
 * A stable key of a combination (names sorted, models by `modelId`), for caching trial results and
 * de-duplicating sampled points.
 * @example combinationKey({ chunk_size: 512, foundation_model: { modelId: 'm' } })
 * // 'chunk_size=number:512|foundation_model=model:m'
 */
export function combinationKey(combination: Record<string, unknown>): string {
  return Object.keys(combination)
    .sort()
    .map((k) => `${k}=${valueKey(combination[k])}`)
    .join('|');
}

function show(v: unknown): string {
  if (isModelRef(v)) return `model '${v.modelId}'`;
  if (typeof v === 'string') return `'${v}'`;
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'object' && v !== null) return 'an object';
  return String(v);
}

/**
 * Enumerates a parameter's values in a fixed order, as ai4rag's `Parameter.all_values()`.
 * Duplicate categorical values (models compared by `modelId`) are rejected because they would make
 * duplicate grid points (ai4rag would silently evaluate them twice).
 * @throws {SearchSpaceError} for an unknown type, a categorical without values, a bad integer range.
 * @example parameterValues({ name: 'window_size', type: 'I', min: 0, max: 2 }) // [0, 1, 2]
 */
export function parameterValues(p: Parameter): ParamValue[] {
  const name = typeof p?.name === 'string' ? p.name : show(p?.name);
  switch (p?.type) {
    case 'B':
      return [true, false];
    case 'I': {
      const { min, max } = p;
      if (!Number.isInteger(min) || !Number.isInteger(max)) {
        throw new SearchSpaceError(
          `Parameter '${name}' of type 'I' needs integer min and max, got ${show(min)} and ${show(max)}.`,
        );
      }
      const lo = min as number;
      const hi = max as number;
      if (lo > hi) {
        throw new SearchSpaceError(`Parameter '${name}': min ${lo} is greater than max ${hi}.`);
      }
      return Array.from({ length: hi - lo + 1 }, (_, i) => lo + i);
    }
    case 'C': {
      if (!Array.isArray(p.values) || p.values.length === 0) {
        throw new SearchSpaceError(
          `Parameter '${name}' of type 'C' needs a non-empty array of values.`,
        );
      }
      const seen = new Set<string>();
      for (const v of p.values) {
        const ok =
          typeof v === 'string' ||
          typeof v === 'boolean' ||
          (typeof v === 'number' && Number.isFinite(v)) ||
          isModelRef(v);
        if (!ok) throw new SearchSpaceError(`Parameter '${name}' has an invalid value ${show(v)}.`);
        const key = valueKey(v);
        if (seen.has(key)) {
          throw new SearchSpaceError(`Parameter '${name}' lists the value ${show(v)} twice.`);
        }
        seen.add(key);
      }
      return [...p.values];
    }
    default:
      throw new SearchSpaceError(
        `Parameter '${name}' has unsupported type ${show(p?.type)}; use 'C', 'B' or 'I'.`,
      );
  }
}

function has(c: Record<string, unknown>, key: string): boolean {
  return c[key] !== undefined && c[key] !== null;
}

function requireKeys(c: Record<string, unknown>, rule: string, keys: readonly string[]): void {
  const missing = keys.filter((k) => !has(c, k));
  if (missing.length > 0) {
    throw new SearchSpaceError(
      `Rule ${rule} needs the parameter(s) ${missing.map((k) => `'${k}'`).join(', ')} in every combination.`,
    );
  }
}

/** Methods that split without overlap: ai4rag's `hybrid` (structure-aware) and our `semantic` (breakpoints). */
const NO_OVERLAP_METHODS: readonly unknown[] = ['hybrid', 'semantic'];

/**
 * Rule 1 (ai4rag 0.7+): hybrid chunking only with overlap 0, any other method only with overlap > 0. Ours
 * extends it: `semantic` is like `hybrid` (overlap 0: its chunks are cut at breakpoints, not windows), `fixed` and
 * `hierarchical` (its children) like `recursive` (overlap > 0). Passes when either key is missing.
 */
export function ruleChunkOverlapForChunkingMethod(c: Record<string, unknown>): boolean {
  if (!has(c, PARAM_NAMES.CHUNKING_METHOD) || !has(c, PARAM_NAMES.CHUNK_OVERLAP)) return true;
  const overlap = c[PARAM_NAMES.CHUNK_OVERLAP] as number;
  return NO_OVERLAP_METHODS.includes(c[PARAM_NAMES.CHUNKING_METHOD]) ? overlap === 0 : overlap > 0;
}

/**
 * Rule 2: `chunk_size > 2 × chunk_overlap`.
 * @throws {SearchSpaceError} when `chunk_size` or `chunk_overlap` is missing (as ai4rag).
 */
export function ruleChunkSizeBiggerThanChunkOverlap(c: Record<string, unknown>): boolean {
  requireKeys(c, 'chunk_size > 2 × chunk_overlap', [
    PARAM_NAMES.CHUNK_SIZE,
    PARAM_NAMES.CHUNK_OVERLAP,
  ]);
  return (c[PARAM_NAMES.CHUNK_SIZE] as number) > 2 * (c[PARAM_NAMES.CHUNK_OVERLAP] as number);
}

/**
 * Rule 3: window_size 0 ⇔ retrieval_method `simple`; window_size > 0 ⇔ `window`. Any other method fails.
 * @throws {SearchSpaceError} when `window_size` or `retrieval_method` is missing (as ai4rag).
 */
export function ruleAdjustWindowToRetrievalMethod(c: Record<string, unknown>): boolean {
  requireKeys(c, 'window_size ⇔ retrieval_method', [
    PARAM_NAMES.WINDOW_SIZE,
    PARAM_NAMES.RETRIEVAL_METHOD,
  ]);
  const ws = c[PARAM_NAMES.WINDOW_SIZE] as number;
  const method = c[PARAM_NAMES.RETRIEVAL_METHOD];
  if (method === 'simple') return ws === 0;
  if (method === 'window') return ws > 0;
  return false;
}

/**
 * Rule 4 (ai4rag 0.9+): `chunk_size ≤ 0.9 × embedding context length` (chunk size in tokens), so a
 * chunk plus its metadata fits the embedder. Skipped (passes) when either key is missing or the
 * embedding model's context length is unknown.
 */
export function ruleChunkSizeWithinEmbeddingContextLength(c: Record<string, unknown>): boolean {
  const model = c[PARAM_NAMES.EMBEDDING_MODEL];
  if (!has(c, PARAM_NAMES.CHUNK_SIZE) || !isModelRef(model)) return true;
  const ctx = model.contextLength;
  if (typeof ctx !== 'number' || !Number.isFinite(ctx) || ctx <= 0) return true;
  return (c[PARAM_NAMES.CHUNK_SIZE] as number) <= 0.9 * ctx;
}

function isSentinel(v: unknown, sentinel: string | number): boolean {
  return v === undefined || v === null || v === sentinel;
}

/**
 * Rule 5: for `vector` (and ai4rag's `graph`) the ranker parameters must be the sentinels
 * (`''`, `0`, `1`, or absent); for `hybrid` the strategy must be rrf, weighted or normalized.
 * Passes when `search_mode` is missing; other modes pass (override parsing rejects them).
 */
export function ruleSearchModeRankerConsistency(c: Record<string, unknown>): boolean {
  const mode = c[PARAM_NAMES.SEARCH_MODE];
  if (mode === 'vector' || mode === 'graph') {
    return (
      isSentinel(c[PARAM_NAMES.RANKER_STRATEGY], RANKER_SENTINELS.strategy) &&
      isSentinel(c[PARAM_NAMES.RANKER_K], RANKER_SENTINELS.k) &&
      isSentinel(c[PARAM_NAMES.RANKER_ALPHA], RANKER_SENTINELS.alpha)
    );
  }
  if (mode === 'hybrid') {
    return (RETRIEVAL_LIMITS.RANKER_STRATEGIES as readonly unknown[]).includes(
      c[PARAM_NAMES.RANKER_STRATEGY],
    );
  }
  return true;
}

/**
 * Rule 6: rrf ⇒ `ranker_k ≠ 0`; any other strategy (incl. `''`) ⇒ `ranker_k == 0`.
 * Passes when `ranker_strategy` or `ranker_k` is missing.
 */
export function ruleRankerKForRrfOnly(c: Record<string, unknown>): boolean {
  if (!has(c, PARAM_NAMES.RANKER_STRATEGY) || !has(c, PARAM_NAMES.RANKER_K)) return true;
  const k = c[PARAM_NAMES.RANKER_K];
  return c[PARAM_NAMES.RANKER_STRATEGY] === 'rrf'
    ? k !== RANKER_SENTINELS.k
    : k === RANKER_SENTINELS.k;
}

/**
 * Rule 7: weighted ⇒ `ranker_alpha ≠ 1`; any other strategy (incl. `''`) ⇒ `ranker_alpha == 1`.
 * Passes when `ranker_strategy` or `ranker_alpha` is missing.
 */
export function ruleRankerAlphaForWeightedOnly(c: Record<string, unknown>): boolean {
  if (!has(c, PARAM_NAMES.RANKER_STRATEGY) || !has(c, PARAM_NAMES.RANKER_ALPHA)) return true;
  const a = c[PARAM_NAMES.RANKER_ALPHA];
  return c[PARAM_NAMES.RANKER_STRATEGY] === 'weighted'
    ? a !== RANKER_SENTINELS.alpha
    : a === RANKER_SENTINELS.alpha;
}

function isNoReranker(v: unknown): boolean {
  return v === undefined || v === null || v === RERANKER_SENTINELS.model;
}

/**
 * Rule 8 (ours; ai4rag has no reranking), in the style of rule 6: `reranker` `'none'` ⇒ `rerank_candidates`
 * is the sentinel 0; a reranker model ⇒ `rerank_candidates ≠ 0`. Passes when either key is missing.
 */
export function ruleRerankCandidatesForRerankerOnly(c: Record<string, unknown>): boolean {
  if (!has(c, PARAM_NAMES.RERANKER) || !has(c, PARAM_NAMES.RERANK_CANDIDATES)) return true;
  const n = c[PARAM_NAMES.RERANK_CANDIDATES];
  return isNoReranker(c[PARAM_NAMES.RERANKER])
    ? n === RERANKER_SENTINELS.candidates
    : n !== RERANKER_SENTINELS.candidates;
}

/**
 * Rule 9 (ours): a reranker needs `rerank_candidates ≥ number_of_chunks`, since with fewer candidates than
 * passages kept it could only reorder, never choose. Passes without a reranker, without
 * `rerank_candidates` (the default is always ≥ k) or without `number_of_chunks`. Window retrieval is
 * allowed: the reranker scores the expanded windows.
 */
export function ruleRerankCandidatesAtLeastNumberOfChunks(c: Record<string, unknown>): boolean {
  if (isNoReranker(c[PARAM_NAMES.RERANKER])) return true;
  const n = c[PARAM_NAMES.RERANK_CANDIDATES];
  if (!has(c, PARAM_NAMES.NUMBER_OF_CHUNKS) || n === undefined || n === null) return true;
  return (
    n === RERANKER_SENTINELS.candidates ||
    (n as number) >= (c[PARAM_NAMES.NUMBER_OF_CHUNKS] as number)
  );
}

/** The "no query transform" value of `query_transform` (the default of a combination without it). */
export const NO_QUERY_TRANSFORM = 'none';

/**
 * A foundation model that only copies text (`local/…`, e.g. the local extractive model) cannot write rewrites
 * or a hypothetical passage.
 */
function isLocalFoundationModel(v: unknown): boolean {
  const id = isModelRef(v) ? v.modelId : typeof v === 'string' ? v : undefined;
  return id !== undefined && (id === 'local' || id.startsWith('local/'));
}

/**
 * Rule 10 (ours; ai4rag has no query transforms): `query_transform` `rm3` needs a keyword leg, i.e.
 * `search_mode` `hybrid` (RM3 reads its feedback from the keyword ranking and runs its expanded query as a
 * keyword query). A missing `search_mode` counts as `vector` (the trial default), so it fails. Passes when
 * `query_transform` is missing.
 */
export function ruleRm3NeedsKeywordLeg(c: Record<string, unknown>): boolean {
  if (c[PARAM_NAMES.QUERY_TRANSFORM] !== 'rm3') return true;
  return c[PARAM_NAMES.SEARCH_MODE] === 'hybrid';
}

/**
 * Rule 11 (ours): `query_transform` `multi_query` or `hyde` needs a chat model endpoint: the foundation model
 * writes the rewrites or the hypothetical passage, which a `local/…` model (the local extractive model only
 * copies sentences of its context) cannot. Passes when either key is missing.
 */
export function ruleChatTransformNeedsChatModel(c: Record<string, unknown>): boolean {
  const t = c[PARAM_NAMES.QUERY_TRANSFORM];
  if (t !== 'multi_query' && t !== 'hyde') return true;
  if (!has(c, PARAM_NAMES.FOUNDATION_MODEL)) return true;
  return !isLocalFoundationModel(c[PARAM_NAMES.FOUNDATION_MODEL]);
}

/**
 * Rule 12 (ours), in the style of rule 6: `hierarchical` ⇒ `parent_chunk_size > chunk_size` (a parent holds its
 * children); any other method ⇒ `parent_chunk_size` is the sentinel 0. Passes when `chunking_method` or
 * `parent_chunk_size` is missing (a hierarchical trial without it takes `defaultParentChunkSize(chunk_size)`).
 */
export function ruleParentChunkSizeForHierarchicalOnly(c: Record<string, unknown>): boolean {
  if (!has(c, PARAM_NAMES.CHUNKING_METHOD) || !has(c, PARAM_NAMES.PARENT_CHUNK_SIZE)) return true;
  const parent = c[PARAM_NAMES.PARENT_CHUNK_SIZE];
  if (c[PARAM_NAMES.CHUNKING_METHOD] !== 'hierarchical') {
    return parent === CHUNKING_SENTINELS.parentChunkSize;
  }
  return (
    !has(c, PARAM_NAMES.CHUNK_SIZE) || (parent as number) > (c[PARAM_NAMES.CHUNK_SIZE] as number)
  );
}

/**
 * Rule 13 (ours), in the style of rules 6–7: `semantic` ⇒ `semantic_breakpoint` is a breakpoint type and
 * `semantic_breakpoint_amount ≠ 0`; any other method ⇒ both are their sentinels (`''`, 0). Each key is checked
 * when present; passes when `chunking_method` is missing (a semantic trial without them takes the chunker's
 * defaults: percentile 95).
 */
export function ruleSemanticBreakpointForSemanticOnly(c: Record<string, unknown>): boolean {
  if (!has(c, PARAM_NAMES.CHUNKING_METHOD)) return true;
  const semantic = c[PARAM_NAMES.CHUNKING_METHOD] === 'semantic';
  const bp = c[PARAM_NAMES.SEMANTIC_BREAKPOINT];
  const amount = c[PARAM_NAMES.SEMANTIC_BREAKPOINT_AMOUNT];
  if (has(c, PARAM_NAMES.SEMANTIC_BREAKPOINT)) {
    if ((bp === CHUNKING_SENTINELS.breakpoint) === semantic) return false;
  }
  if (has(c, PARAM_NAMES.SEMANTIC_BREAKPOINT_AMOUNT)) {
    if ((amount === CHUNKING_SENTINELS.breakpointAmount) === semantic) return false;
  }
  return true;
}

/**
 * Rule 14 (ours): `semantic_breakpoint` `standard_deviation` ⇒ `semantic_breakpoint_amount ≤ 10` (a number of
 * standard deviations; `percentile` and `gradient` take a percentile up to 100). Passes when either key is missing.
 */
export function ruleSemanticAmountForBreakpoint(c: Record<string, unknown>): boolean {
  if (c[PARAM_NAMES.SEMANTIC_BREAKPOINT] !== 'standard_deviation') return true;
  if (!has(c, PARAM_NAMES.SEMANTIC_BREAKPOINT_AMOUNT)) return true;
  return (
    (c[PARAM_NAMES.SEMANTIC_BREAKPOINT_AMOUNT] as number) <= CHUNKING_METHOD_LIMITS.MAX_STD_AMOUNT
  );
}

/**
 * Rule 15 (ours): `hierarchical` ⇒ `retrieval_method` `simple` (window_size 0): the retriever already answers
 * with each hit's parent chunk, a wider context than a window of children, and refuses `window` there. Passes
 * when either key is missing.
 */
export function ruleHierarchicalNeedsSimpleRetrieval(c: Record<string, unknown>): boolean {
  if (c[PARAM_NAMES.CHUNKING_METHOD] !== 'hierarchical') return true;
  if (!has(c, PARAM_NAMES.RETRIEVAL_METHOD)) return true;
  return c[PARAM_NAMES.RETRIEVAL_METHOD] === 'simple';
}

/**
 * The parent chunk size of a hierarchical trial whose search space has no `parent_chunk_size`: four children,
 * capped at {@link CHUNKING_METHOD_LIMITS}' maximum.
 * @example defaultParentChunkSize(512) // 2048
 */
export function defaultParentChunkSize(chunkSize: number): number {
  return Math.min(CHUNKING_METHOD_LIMITS.MAX_PARENT_CHUNK_SIZE, 4 * chunkSize);
}

/**
 * ai4rag's seven built-in rules, in its order, then rules 8 and 9 (reranking), 10 and 11 (query transforms) and
 * 12–15 (our chunking methods). User rules come after them.
 */
export const BUILT_IN_RULES: readonly Rule[] = Object.freeze([
  ruleChunkOverlapForChunkingMethod,
  ruleChunkSizeBiggerThanChunkOverlap,
  ruleAdjustWindowToRetrievalMethod,
  ruleChunkSizeWithinEmbeddingContextLength,
  ruleSearchModeRankerConsistency,
  ruleRankerKForRrfOnly,
  ruleRankerAlphaForWeightedOnly,
  ruleRerankCandidatesForRerankerOnly,
  ruleRerankCandidatesAtLeastNumberOfChunks,
  ruleRm3NeedsKeywordLeg,
  ruleChatTransformNeedsChatModel,
  ruleParentChunkSizeForHierarchicalOnly,
  ruleSemanticBreakpointForSemanticOnly,
  ruleSemanticAmountForBreakpoint,
  ruleHierarchicalNeedsSimpleRetrieval,
]);

/** Options of {@link defaultSearchSpace}. */
export interface DefaultSearchSpaceOptions {
  foundationModels: readonly ModelRef[];
  embeddingModels: readonly ModelRef[];
  /** All three share ai4rag's current milvus / milvus_lite / pgvector defaults. Default `pgvector`. */
  vectorStore?: 'pgvector' | 'milvus' | 'pglite';
}

function modelParam(name: string, models: readonly ModelRef[], label: string): Parameter {
  if (!Array.isArray(models) || models.length === 0) {
    throw new SearchSpaceError(`At least one ${label} is required.`);
  }
  for (const m of models) {
    if (!isModelRef(m) || m.modelId.length === 0) {
      throw new SearchSpaceError(`Invalid ${label} ${show(m)}: expected { modelId: string }.`);
    }
  }
  return { name, type: 'C', values: [...models] };
}

/**
 * ai4rag's current default search space (milvus / milvus_lite / pgvector column) for the given models:
 * 8 chunking configs × 3 retrieval modes × 3 numbers of chunks = 72 valid combinations per model pair.
 * @throws {SearchSpaceError} when a model list is empty or holds a non-model.
 * @example
 * const params = defaultSearchSpace({
 *   foundationModels: [{ modelId: 'gpt-4o-mini' }],
 *   embeddingModels: [{ modelId: 'text-embedding-3-small', contextLength: 8191 }],
 * });
 * createSearchSpace(params).size(); // 72
 */
export function defaultSearchSpace(options: DefaultSearchSpaceOptions): Parameter[] {
  const { vectorStore = 'pgvector' } = options;
  if (!['pgvector', 'milvus', 'pglite'].includes(vectorStore)) {
    throw new SearchSpaceError(
      `Unsupported vector store ${show(vectorStore)}; use 'pgvector', 'milvus' or 'pglite'.`,
    );
  }
  const c = (name: string, values: readonly ParamValue[]): Parameter => ({
    name,
    type: 'C',
    values,
  });
  return [
    modelParam(PARAM_NAMES.FOUNDATION_MODEL, options.foundationModels, 'foundation model'),
    modelParam(PARAM_NAMES.EMBEDDING_MODEL, options.embeddingModels, 'embedding model'),
    c(PARAM_NAMES.CHUNKING_METHOD, ['recursive', 'hybrid']),
    c(PARAM_NAMES.CHUNK_SIZE, [512, 1024, 2048]),
    c(PARAM_NAMES.CHUNK_OVERLAP, [0, 128, 256]),
    c(PARAM_NAMES.RETRIEVAL_METHOD, ['simple']),
    c(PARAM_NAMES.WINDOW_SIZE, [0]),
    c(PARAM_NAMES.NUMBER_OF_CHUNKS, [3, 5, 10]),
    c(PARAM_NAMES.SEARCH_MODE, ['vector', 'hybrid']),
    c(PARAM_NAMES.RANKER_STRATEGY, ['', 'rrf', 'weighted']),
    c(PARAM_NAMES.RANKER_K, [0, 60]),
    c(PARAM_NAMES.RANKER_ALPHA, [1, 0.5]),
  ];
}

function checkNames(params: readonly Parameter[], what: string): void {
  if (!Array.isArray(params)) throw new SearchSpaceError(`${what} must be an array of parameters.`);
  const seen = new Set<string>();
  const unknown: string[] = [];
  for (const p of params) {
    if (typeof p !== 'object' || p === null || typeof p.name !== 'string') {
      throw new SearchSpaceError(`${what} holds a parameter without a name: ${show(p)}.`);
    }
    if (seen.has(p.name))
      throw new SearchSpaceError(`${what}: parameter '${p.name}' is defined twice.`);
    seen.add(p.name);
    if (!KNOWN_NAMES.includes(p.name)) unknown.push(p.name);
  }
  if (unknown.length > 0) {
    throw new SearchSpaceError(
      `Not supported parameters: ${unknown.map((n) => `'${n}'`).join(', ')}; allowed: ${KNOWN_NAMES.join(', ')}.`,
    );
  }
}

/**
 * Overrides defaults by name (ai4rag's `defaults | user`): an override replaces the default of the
 * same name in place; names the defaults lack are appended in the overrides' order.
 * @throws {SearchSpaceError} on duplicate or unknown names in either list.
 * @example mergeSearchSpace(defaultSearchSpace(opts), [{ name: 'chunk_size', type: 'C', values: [512] }])
 */
export function mergeSearchSpace(
  defaults: readonly Parameter[],
  overrides: readonly Parameter[],
): Parameter[] {
  checkNames(defaults, 'Default search space');
  checkNames(overrides, 'Search space overrides');
  const byName = new Map(overrides.map((p) => [p.name, p]));
  const merged = defaults.map((p) => byName.get(p.name) ?? p);
  const defaultNames = new Set(defaults.map((p) => p.name));
  for (const p of overrides) if (!defaultNames.has(p.name)) merged.push(p);
  return merged;
}

/** Options of {@link createSearchSpace}. */
export interface CreateSearchSpaceOptions {
  /** Extra filters, applied after {@link BUILT_IN_RULES}. */
  rules?: readonly Rule[];
  /** Keep at most this many valid combinations, sampled by {@link limitCombinations}. */
  maxCombinations?: number;
  /** Seed of the sample when `maxCombinations` applies. Default 0. */
  seed?: number;
}

/** An enumerable search space. */
export interface SearchSpace {
  readonly parameters: readonly Parameter[];
  readonly rules: readonly Rule[];
  /** Size of the raw Cartesian product, before rules. */
  rawSize(): number;
  /** Valid combinations, Cartesian order (last parameter fastest), then sampled if `maxCombinations`. */
  combinations(): Record<string, unknown>[];
  /** `combinations().length`. */
  size(): number;
}

/**
 * Builds an enumerable search space as ai4rag's `AI4RAGSearchSpace`: names must be known and unique,
 * `foundation_model` and `embedding_model` are required, every parameter must enumerate. Rules 2 and 3
 * throw from `combinations()` when the space lacks `chunk_size`/`chunk_overlap` or
 * `window_size`/`retrieval_method`, so merge user parameters into {@link defaultSearchSpace} first.
 * Enumeration is recomputed on every call (no caching), as ai4rag.
 * @throws {SearchSpaceError} for missing required, unknown or duplicate parameters, bad definitions,
 * a raw grid above {@link MAX_RAW_COMBINATIONS}, or a bad `maxCombinations`.
 * @example createSearchSpace(defaultSearchSpace({ foundationModels, embeddingModels })).size() // 72
 */
export function createSearchSpace(
  params: readonly Parameter[],
  options: CreateSearchSpaceOptions = {},
): SearchSpace {
  checkNames(params, 'Search space');
  const names = params.map((p) => p.name);
  const missing = [PARAM_NAMES.FOUNDATION_MODEL, PARAM_NAMES.EMBEDDING_MODEL].filter(
    (n) => !names.includes(n),
  );
  if (missing.length > 0) {
    throw new SearchSpaceError(
      `Missing required parameters: ${missing.map((n) => `'${n}'`).join(', ')}.`,
    );
  }
  const valueLists = params.map((p) => parameterValues(p));
  const raw = valueLists.reduce((n, vs) => n * vs.length, 1);
  if (raw > MAX_RAW_COMBINATIONS) {
    throw new SearchSpaceError(
      `The search space has ${raw} raw combinations, above the limit of ${MAX_RAW_COMBINATIONS}; narrow the parameter values.`,
    );
  }
  const userRules = options.rules ?? [];
  if (!Array.isArray(userRules) || userRules.some((r) => typeof r !== 'function')) {
    throw new SearchSpaceError('rules must be an array of functions.');
  }
  const { maxCombinations, seed = 0 } = options;
  if (maxCombinations !== undefined) checkLimitArgs(maxCombinations, seed);
  const rules: readonly Rule[] = Object.freeze([...BUILT_IN_RULES, ...userRules]);
  const parameters: readonly Parameter[] = Object.freeze([...params]);

  const combinations = (): Record<string, unknown>[] => {
    const out: Record<string, unknown>[] = [];
    const idx = new Array<number>(valueLists.length).fill(0);
    for (let n = 0; n < raw; n++) {
      const combo: Record<string, unknown> = {};
      for (let i = 0; i < valueLists.length; i++) {
        combo[names[i] as string] = (valueLists[i] as ParamValue[])[idx[i] as number];
      }
      if (rules.every((rule) => rule(combo))) out.push(combo);
      for (let i = valueLists.length - 1; i >= 0; i--) {
        const next = (idx[i] as number) + 1;
        if (next < (valueLists[i] as ParamValue[]).length) {
          idx[i] = next;
          break;
        }
        idx[i] = 0;
      }
    }
    return maxCombinations === undefined ? out : limitCombinations(out, maxCombinations, seed);
  };
  return {
    parameters,
    rules,
    rawSize: () => raw,
    combinations,
    size: () => combinations().length,
  };
}

function checkLimitArgs(max: number, seed: number): void {
  if (!Number.isInteger(max) || max < 1) {
    throw new SearchSpaceError(`maxCombinations must be a positive integer, got ${show(max)}.`);
  }
  if (!Number.isInteger(seed)) {
    throw new SearchSpaceError(`seed must be an integer, got ${show(seed)}.`);
  }
}

/**
 * Caps a grid at `max` points, reproducibly. Method: a partial Fisher–Yates shuffle of the indices
 * driven by mulberry32 seeded with `seed` picks `max` distinct indices uniformly without replacement;
 * the picked combinations are returned in their original (Cartesian) order. The same input, max and
 * seed always give the same sample. Grids with at most `max` points are returned whole (as a copy).
 * @throws {SearchSpaceError} when `max` is not a positive integer or `seed` not an integer.
 * @example limitCombinations(space.combinations(), 20, 42).length // 20
 */
export function limitCombinations<T>(combos: readonly T[], max: number, seed: number): T[] {
  checkLimitArgs(max, seed);
  if (combos.length <= max) return [...combos];
  const rand = mulberry32(seed);
  const idx = combos.map((_, i) => i);
  for (let i = 0; i < max; i++) {
    const j = i + Math.floor(rand() * (idx.length - i));
    const tmp = idx[i] as number;
    idx[i] = idx[j] as number;
    idx[j] = tmp;
  }
  return idx
    .slice(0, max)
    .sort((a, b) => a - b)
    .map((i) => combos[i] as T);
}

type Validator = (v: unknown) => string | undefined;

function intIn(min: number, max: number, extra?: number): Validator {
  return (v) =>
    typeof v === 'number' && Number.isInteger(v) && ((v >= min && v <= max) || v === extra)
      ? undefined
      : `must be an integer in ${min}..${max}${extra === undefined ? '' : ` or the sentinel ${extra}`}`;
}

function oneOf(allowed: readonly string[]): Validator {
  return (v) =>
    typeof v === 'string' && allowed.includes(v)
      ? undefined
      : `must be one of ${allowed.map((a) => `'${a}'`).join(', ')}`;
}

const model: Validator = (v) => {
  if (typeof v === 'string' && v.length > 0) return undefined;
  if (isModelRef(v) && v.modelId.length > 0) {
    const ctx = v.contextLength;
    if (ctx === undefined || (Number.isInteger(ctx) && ctx > 0)) return undefined;
    return 'must have a positive integer contextLength';
  }
  return 'must be a model id string or { modelId, contextLength? }';
};

const VALIDATORS: Record<ParamName, Validator> = {
  foundation_model: model,
  embedding_model: model,
  chunking_method: oneOf(SEARCH_SPACE_CHUNKING_METHODS),
  chunk_size: intIn(CHUNKING_LIMITS.MIN_CHUNK_SIZE, CHUNKING_LIMITS.MAX_CHUNK_SIZE),
  chunk_overlap: intIn(CHUNKING_LIMITS.MIN_CHUNK_OVERLAP, CHUNKING_LIMITS.MAX_CHUNK_OVERLAP),
  retrieval_method: oneOf(RETRIEVAL_LIMITS.RETRIEVAL_METHODS),
  window_size: intIn(RETRIEVAL_LIMITS.MIN_WINDOW_SIZE, RETRIEVAL_LIMITS.MAX_WINDOW_SIZE),
  number_of_chunks: intIn(
    RETRIEVAL_LIMITS.MIN_NUMBER_OF_CHUNKS,
    RETRIEVAL_LIMITS.MAX_NUMBER_OF_CHUNKS,
  ),
  search_mode: oneOf(RETRIEVAL_LIMITS.SEARCH_MODES),
  ranker_strategy: oneOf([RANKER_SENTINELS.strategy, ...RETRIEVAL_LIMITS.RANKER_STRATEGIES]),
  ranker_k: intIn(RETRIEVAL_LIMITS.MIN_RANKER_K, RETRIEVAL_LIMITS.MAX_RANKER_K, RANKER_SENTINELS.k),
  ranker_alpha: (v) =>
    typeof v === 'number' && Number.isFinite(v) && v >= 0 && v <= 1
      ? undefined
      : 'must be a number in [0, 1] (1 is the no-ranker sentinel)',
  reranker: (v) =>
    typeof v === 'string' && v.trim() !== '' && v === v.trim()
      ? undefined
      : `must be '${RERANKER_SENTINELS.model}' or a reranker model id (optionally model@endpoint)`,
  rerank_candidates: intIn(1, RERANK_CANDIDATES.MAX, RERANKER_SENTINELS.candidates),
  query_transform: oneOf(QUERY_TRANSFORMS),
  parent_chunk_size: intIn(
    CHUNKING_LIMITS.MIN_CHUNK_SIZE + 1,
    CHUNKING_METHOD_LIMITS.MAX_PARENT_CHUNK_SIZE,
    CHUNKING_SENTINELS.parentChunkSize,
  ),
  semantic_breakpoint: (v) =>
    oneOf(SEMANTIC_BREAKPOINTS)(v) === undefined || v === CHUNKING_SENTINELS.breakpoint
      ? undefined
      : `must be one of ${SEMANTIC_BREAKPOINTS.map((b) => `'${b}'`).join(', ')} or the sentinel ''`,
  semantic_breakpoint_amount: (v) =>
    typeof v === 'number' &&
    Number.isFinite(v) &&
    v >= 0 &&
    v <= CHUNKING_METHOD_LIMITS.MAX_PERCENTILE_AMOUNT
      ? undefined
      : `must be a number in (0, ${CHUNKING_METHOD_LIMITS.MAX_PERCENTILE_AMOUNT}] (a percentile, or at most ${CHUNKING_METHOD_LIMITS.MAX_STD_AMOUNT} standard deviations) or the sentinel 0`,
};

/**
 * Parses a search-space override file (`{ "chunk_size": [512, 1024], "search_mode": ["vector"] }`)
 * into categorical parameters, checking every value against ai4rag's constraint constants so a bad
 * file fails before any trial runs. Models may be given as id strings or `{ modelId, contextLength }`.
 * Merge the result into {@link defaultSearchSpace} with {@link mergeSearchSpace}.
 * @throws {SearchSpaceError} listing every problem (unknown names, non-arrays, empty arrays,
 * out-of-range or duplicate values).
 * @example parseSearchSpaceOverrides({ chunk_size: [512, 1024] })
 * // [{ name: 'chunk_size', type: 'C', values: [512, 1024] }]
 */
export function parseSearchSpaceOverrides(json: unknown): Parameter[] {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) {
    throw new SearchSpaceError(
      `Search space overrides must be a JSON object mapping parameter names to arrays of values, got ${show(json)}.`,
    );
  }
  const problems: string[] = [];
  const out: Parameter[] = [];
  for (const [name, raw] of Object.entries(json)) {
    if (!KNOWN_NAMES.includes(name)) {
      problems.push(`unknown parameter '${name}' (allowed: ${KNOWN_NAMES.join(', ')})`);
      continue;
    }
    if (!Array.isArray(raw) || raw.length === 0) {
      problems.push(`'${name}' must be a non-empty array of values, got ${show(raw)}`);
      continue;
    }
    const validate = VALIDATORS[name as ParamName];
    const values: ParamValue[] = [];
    const seen = new Set<string>();
    let ok = true;
    for (const v of raw as unknown[]) {
      const err = validate(v);
      if (err !== undefined) {
        problems.push(`'${name}' value ${show(v)} ${err}`);
        ok = false;
        continue;
      }
      const value: ParamValue =
        typeof v === 'string' && validate === model ? { modelId: v } : (v as ParamValue);
      const key = valueKey(value);
      if (seen.has(key)) {
        problems.push(`'${name}' lists ${show(value)} twice`);
        ok = false;
        continue;
      }
      seen.add(key);
      values.push(
        isModelRef(value)
          ? {
              modelId: value.modelId,
              ...(value.contextLength === undefined ? {} : { contextLength: value.contextLength }),
            }
          : value,
      );
    }
    if (ok) out.push({ name, type: 'C', values });
  }
  if (problems.length > 0) {
    throw new SearchSpaceError(`Invalid search space overrides: ${problems.join('; ')}.`);
  }
  return out;
}
