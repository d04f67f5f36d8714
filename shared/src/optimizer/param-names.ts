/**
 * The search space's parameter names and its "does not apply" sentinels, with no imports: the web app shares them
 * (and the applicability rules built on them, `shared/src/experiment/applicability.ts`) with the report, so the
 * browser bundle takes nothing else of the optimizer. `search-space.ts` re-exports them.
 */

/**
 * ai4rag's searchable `AI4RAGParamNames`, in the order the default space lists them (which is also the
 * order of the Cartesian product: the last name varies fastest), plus `reranker` and `rerank_candidates`
 * (not in ai4rag and not in the default space: a space has them only when an override lists them; a
 * combination without `reranker` is not reranked, one without `rerank_candidates` reranks
 * `defaultRerankCandidates(number_of_chunks)` candidates), and `query_transform` (`none`, `multi_query`,
 * `hyde`, `rm3`; likewise only from an override; absent means `none`), and the parameters of our chunking methods
 * (issue 15; only from an override): `parent_chunk_size` (hierarchical), `semantic_breakpoint` and
 * `semantic_breakpoint_amount` (semantic), each with a sentinel for the methods that do not use it.
 */
export const PARAM_NAMES = Object.freeze({
  FOUNDATION_MODEL: 'foundation_model',
  EMBEDDING_MODEL: 'embedding_model',
  CHUNKING_METHOD: 'chunking_method',
  CHUNK_SIZE: 'chunk_size',
  CHUNK_OVERLAP: 'chunk_overlap',
  RETRIEVAL_METHOD: 'retrieval_method',
  WINDOW_SIZE: 'window_size',
  NUMBER_OF_CHUNKS: 'number_of_chunks',
  SEARCH_MODE: 'search_mode',
  RANKER_STRATEGY: 'ranker_strategy',
  RANKER_K: 'ranker_k',
  RANKER_ALPHA: 'ranker_alpha',
  RERANKER: 'reranker',
  RERANK_CANDIDATES: 'rerank_candidates',
  QUERY_TRANSFORM: 'query_transform',
  PARENT_CHUNK_SIZE: 'parent_chunk_size',
  SEMANTIC_BREAKPOINT: 'semantic_breakpoint',
  SEMANTIC_BREAKPOINT_AMOUNT: 'semantic_breakpoint_amount',
} as const);

/** One of {@link PARAM_NAMES}' values. */
export type ParamName = (typeof PARAM_NAMES)[keyof typeof PARAM_NAMES];

/** Sentinels meaning "no ranker": strategy `''`, ranker_k `0`, ranker_alpha `1` (100 % dense). */
export const RANKER_SENTINELS = Object.freeze({ strategy: '', k: 0, alpha: 1 } as const);

/**
 * Sentinels meaning "no reranking": `reranker` `'none'` and `rerank_candidates` `0` (ai4rag's ranker
 * sentinels, applied to the reranker).
 */
export const RERANKER_SENTINELS = Object.freeze({ model: 'none', candidates: 0 } as const);

/**
 * Sentinels of the chunking-method parameters (ai4rag's ranker sentinels, applied to chunking): `parent_chunk_size`
 * 0 unless `hierarchical`; `semantic_breakpoint` `''` and `semantic_breakpoint_amount` 0 unless `semantic`.
 */
export const CHUNKING_SENTINELS = Object.freeze({
  parentChunkSize: 0,
  breakpoint: '',
  breakpointAmount: 0,
} as const);
