/**
 * Parameter marginals for the report: the mean optimization score per value of each search-space parameter,
 * computed only over the trials where the parameter means something. A `ranker_k` of 0 on a vector-search trial
 * is the search space's "no ranker" sentinel (rules 5–7 of the search space), not a choice, so averaging it
 * against `ranker_k 60` would compare vector search with hybrid search under the wrong name.
 */
import { combinationKey } from '../optimizer/search-space.js';
import { type Applicability, CONDITIONAL_PARAMETERS, parameterApplies } from './applicability.js';
import type { TrialRecord } from './types.js';

export { CONDITIONAL_PARAMETERS, parameterApplies };

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
