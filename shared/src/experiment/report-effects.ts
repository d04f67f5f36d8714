/**
 * Parameter marginals for the report: the mean optimization score per value of each search-space parameter,
 * computed only over the trials where the parameter means something. A `ranker_k` of 0 on a vector-search trial
 * is the search space's "no ranker" sentinel (rules 5–7 of the search space), not a choice, so averaging it
 * against `ranker_k 60` would compare vector search with hybrid search under the wrong name.
 */
import {
  CHUNKING_SENTINELS,
  combinationKey,
  PARAM_NAMES,
  RANKER_SENTINELS,
  RERANKER_SENTINELS,
} from '../optimizer/search-space.js';
import type { TrialConfig, TrialRecord } from './types.js';

/** When a parameter applies to a configuration, and the condition in words (shown in the report). */
interface Applicability {
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

/** One value of a parameter: the mean score of the trials that used it. */
export interface MarginalValue {
  /** The value as text: models by `modelId`. */
  value: string;
  meanScore: number;
  trials: number;
  /** How many of `trials` were answered from the result cache. */
  cached: number;
}

/** A parameter that took two or more values among the trials where it applies. */
export interface Marginal {
  parameter: string;
  /** Values numerically ascending when all are numbers, else in code-point order. */
  values: MarginalValue[];
  /** Largest minus smallest `meanScore`. */
  spread: number;
  /** Trials counted (those where the parameter applies). */
  trials: number;
  /** The condition under which the parameter applies; absent when it applies to every trial. */
  condition?: string;
}

/** A parameter with one value wherever it applied. */
export interface FixedParameter {
  parameter: string;
  value: string;
  trials: number;
  condition?: string;
}

/** Every parameter of the counted trials, sorted into effects, fixed ones and ones that never applied. */
export interface Marginals {
  /** By `spread` descending, ties by name. */
  effects: Marginal[];
  /** By name. */
  fixed: FixedParameter[];
  /** Parameters present in the configurations whose condition held for no counted trial, by name. */
  unused: { parameter: string; condition: string }[];
  /** Trials counted: successful, one per distinct configuration. */
  trials: number;
  /** How many of `trials` came from the result cache. */
  cached: number;
  /** Successful trials left out because an earlier trial had the same configuration. */
  duplicates: number;
}

function valueText(v: unknown): string | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v === 'object') {
    const modelId = (v as { modelId?: unknown }).modelId;
    return typeof modelId === 'string' ? modelId : JSON.stringify(v);
  }
  return String(v);
}

function byName(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

type Scored = TrialRecord & { score: number };

function isScored(t: TrialRecord): t is Scored {
  return typeof t.score === 'number' && Number.isFinite(t.score) && t.error === undefined;
}

/**
 * The report's parameter marginals. Counts every successful trial once per distinct configuration — cached
 * trials included (a re-run answered entirely from the cache shows the same effects as the run that filled it)
 * — and each parameter only over the trials where it applies ({@link parameterApplies}). Marginal means over
 * the combinations the optimizer visited, not controlled comparisons.
 * @param trials - The experiment's trials in iteration order, failed ones included (they are ignored).
 * @example parameterMarginals(data.trials).effects[0] // { parameter: 'number_of_chunks', values: [...], ... }
 */
export function parameterMarginals(trials: readonly TrialRecord[]): Marginals {
  const seen = new Set<string>();
  const counted: Scored[] = [];
  let duplicates = 0;
  for (const t of trials) {
    if (!isScored(t)) continue;
    const key = combinationKey(t.config);
    if (seen.has(key)) {
      duplicates += 1;
      continue;
    }
    seen.add(key);
    counted.push(t);
  }
  const sums = new Map<string, Map<string, { sum: number; n: number; cached: number }>>();
  const present = new Set<string>();
  for (const t of counted) {
    for (const [parameter, raw] of Object.entries(t.config)) {
      present.add(parameter);
      const value = valueText(raw);
      if (value === undefined || !parameterApplies(parameter, t.config)) continue;
      let byValue = sums.get(parameter);
      if (byValue === undefined) {
        byValue = new Map();
        sums.set(parameter, byValue);
      }
      const acc = byValue.get(value) ?? { sum: 0, n: 0, cached: 0 };
      acc.sum += t.score;
      acc.n += 1;
      if (t.cached === true) acc.cached += 1;
      byValue.set(value, acc);
    }
  }
  const effects: Marginal[] = [];
  const fixed: FixedParameter[] = [];
  for (const [parameter, byValue] of sums) {
    const condition = CONDITIONAL_PARAMETERS[parameter]?.condition;
    const keys = [...byValue.keys()];
    const numeric = keys.every((k) => k.trim() !== '' && Number.isFinite(Number(k)));
    keys.sort((a, b) => (numeric ? Number(a) - Number(b) : byName(a, b)));
    const values = keys.map((value) => {
      const acc = byValue.get(value) as { sum: number; n: number; cached: number };
      return { value, meanScore: acc.sum / acc.n, trials: acc.n, cached: acc.cached };
    });
    const n = values.reduce((s, v) => s + v.trials, 0);
    if (values.length === 1) {
      fixed.push({
        parameter,
        value: keys[0] as string,
        trials: n,
        ...(condition !== undefined && { condition }),
      });
      continue;
    }
    const means = values.map((v) => v.meanScore);
    effects.push({
      parameter,
      values,
      spread: Math.max(...means) - Math.min(...means),
      trials: n,
      ...(condition !== undefined && { condition }),
    });
  }
  const unused = [...present]
    .filter((p) => !sums.has(p) && CONDITIONAL_PARAMETERS[p] !== undefined)
    .sort(byName)
    .map((parameter) => ({
      parameter,
      condition: (CONDITIONAL_PARAMETERS[parameter] as Applicability).condition,
    }));
  return {
    effects: effects.sort((a, b) => b.spread - a.spread || byName(a.parameter, b.parameter)),
    fixed: fixed.sort((a, b) => byName(a.parameter, b.parameter)),
    unused,
    trials: counted.length,
    cached: counted.filter((t) => t.cached === true).length,
    duplicates,
  };
}
