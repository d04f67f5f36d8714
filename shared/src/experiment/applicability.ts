/**
 * When a search-space parameter means something in a trial's configuration: the conditions of the search-space
 * rules, in one place for the report (`report-effects.ts`) and the web app's charts (`web/src/charts.tsx`). It
 * imports only the dependency-free names and sentinels, so the browser bundle can take it.
 */
import {
  CHUNKING_SENTINELS,
  PARAM_NAMES,
  RANKER_SENTINELS,
  RERANKER_SENTINELS,
} from '../optimizer/param-names.js';
import type { TrialConfig } from './types.js';

/** When a parameter applies to a configuration, and the condition in words (shown in the report). */
export interface Applicability {
  applies: (c: TrialConfig) => boolean;
  condition: string;
}

/** `search_mode` of a configuration; a missing one is `vector`, the trial default. */
function searchMode(c: TrialConfig): unknown {
  return c[PARAM_NAMES.SEARCH_MODE] ?? 'vector';
}

/**
 * The parameters that apply only under a condition on other parameters, from the search-space rules
 * (shared/src/optimizer/search-space.ts; ai4rag's rules 1, 3 and 5–7, and ours 8 for reranking and 12–13 for the
 * chunking methods' own parameters). Every other
 * parameter applies to every trial; `reranker 'none'` and `query_transform 'none'` are real choices.
 * When the parameter a condition reads is missing, the value itself decides (anything but the sentinel applies).
 */
export const CONDITIONAL_PARAMETERS: Readonly<Record<string, Applicability>> = Object.freeze({
  // Rule 1: hybrid (Docling) and semantic chunking have no overlap; the 0 they carry is forced.
  [PARAM_NAMES.CHUNK_OVERLAP]: {
    applies: (c) =>
      c[PARAM_NAMES.CHUNKING_METHOD] !== 'hybrid' && c[PARAM_NAMES.CHUNKING_METHOD] !== 'semantic',
    condition: 'chunking_method is not hybrid or semantic',
  },
  // Rule 12: a parent chunk size is hierarchical chunking's; elsewhere it is the sentinel 0.
  [PARAM_NAMES.PARENT_CHUNK_SIZE]: {
    applies: (c) =>
      c[PARAM_NAMES.CHUNKING_METHOD] === undefined
        ? c[PARAM_NAMES.PARENT_CHUNK_SIZE] !== CHUNKING_SENTINELS.parentChunkSize
        : c[PARAM_NAMES.CHUNKING_METHOD] === 'hierarchical',
    condition: 'chunking_method = hierarchical',
  },
  // Rule 13: breakpoints are semantic chunking's; elsewhere they are the sentinels '' and 0.
  [PARAM_NAMES.SEMANTIC_BREAKPOINT]: {
    applies: (c) =>
      c[PARAM_NAMES.CHUNKING_METHOD] === undefined
        ? c[PARAM_NAMES.SEMANTIC_BREAKPOINT] !== CHUNKING_SENTINELS.breakpoint
        : c[PARAM_NAMES.CHUNKING_METHOD] === 'semantic',
    condition: 'chunking_method = semantic',
  },
  [PARAM_NAMES.SEMANTIC_BREAKPOINT_AMOUNT]: {
    applies: (c) =>
      c[PARAM_NAMES.CHUNKING_METHOD] === undefined
        ? c[PARAM_NAMES.SEMANTIC_BREAKPOINT_AMOUNT] !== CHUNKING_SENTINELS.breakpointAmount
        : c[PARAM_NAMES.CHUNKING_METHOD] === 'semantic',
    condition: 'chunking_method = semantic',
  },
  // Rule 3: window_size 0 ⇔ simple retrieval.
  [PARAM_NAMES.WINDOW_SIZE]: {
    applies: (c) =>
      c[PARAM_NAMES.RETRIEVAL_METHOD] === undefined
        ? c[PARAM_NAMES.WINDOW_SIZE] !== 0
        : c[PARAM_NAMES.RETRIEVAL_METHOD] === 'window',
    condition: 'retrieval_method = window',
  },
  // Rule 5: the ranker fuses the dense and keyword rankings of hybrid search only.
  [PARAM_NAMES.RANKER_STRATEGY]: {
    applies: (c) => searchMode(c) === 'hybrid',
    condition: 'search_mode = hybrid',
  },
  // Rule 6: ranker_k is rrf's constant.
  [PARAM_NAMES.RANKER_K]: {
    applies: (c) =>
      searchMode(c) === 'hybrid' &&
      (c[PARAM_NAMES.RANKER_STRATEGY] === undefined
        ? c[PARAM_NAMES.RANKER_K] !== RANKER_SENTINELS.k
        : c[PARAM_NAMES.RANKER_STRATEGY] === 'rrf'),
    condition: 'ranker_strategy = rrf',
  },
  // Rule 7: ranker_alpha is the weighted ranker's dense share.
  [PARAM_NAMES.RANKER_ALPHA]: {
    applies: (c) =>
      searchMode(c) === 'hybrid' &&
      (c[PARAM_NAMES.RANKER_STRATEGY] === undefined
        ? c[PARAM_NAMES.RANKER_ALPHA] !== RANKER_SENTINELS.alpha
        : c[PARAM_NAMES.RANKER_STRATEGY] === 'weighted'),
    condition: 'ranker_strategy = weighted',
  },
  // Rule 8: candidates are what a reranker reranks.
  [PARAM_NAMES.RERANK_CANDIDATES]: {
    applies: (c) => {
      const r = c[PARAM_NAMES.RERANKER];
      return r !== undefined && r !== null && r !== RERANKER_SENTINELS.model;
    },
    condition: 'a reranker is used',
  },
});

/**
 * Whether `parameter` means something in configuration `config` (see {@link CONDITIONAL_PARAMETERS}).
 * @example parameterApplies('ranker_k', { search_mode: 'vector', ranker_strategy: '', ranker_k: 0 }) // false
 */
export function parameterApplies(parameter: string, config: TrialConfig): boolean {
  if (!(parameter in config)) return false;
  const rule = CONDITIONAL_PARAMETERS[parameter];
  return rule === undefined || rule.applies(config);
}
