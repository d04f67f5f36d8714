/**
 * Leaderboard ordering and per-parameter effects over an experiment's trials. Pure and synchronous: the
 * finalize step writes `leaderboard.json` from {@link buildLeaderboard} and the HTML report charts
 * {@link parameterEffects}.
 */
import type { LeaderboardEntry, PatternPayload, TrialRecord } from './types.js';

/** Mean optimization score of the successful trials where one parameter took one value. */
export interface ParameterValueEffect {
  /** The value as text: models by `modelId`, `''` kept as is (ai4rag's "no ranker" sentinel). */
  value: string;
  meanScore: number;
  trials: number;
}

/** How much the mean score moved across the values of one parameter. */
export interface ParameterEffect {
  parameter: string;
  values: ParameterValueEffect[];
  /** Largest minus smallest `meanScore` among `values`. */
  spread: number;
}

type ScoredTrial = TrialRecord & { score: number };

function isScored(t: TrialRecord): t is ScoredTrial {
  return typeof t.score === 'number' && Number.isFinite(t.score) && t.error === undefined;
}

/**
 * Ranks the successful patterns of an experiment, best first, like ai4rag's leaderboard (descending
 * optimization score). Ties go to the earlier iteration so the order is stable across re-runs, and a
 * pattern that appears twice (a cached trial carrying its original's payload) is listed once. Trials
 * without a payload (failed, or cached without one) are not patterns and are left out. Each entry carries its
 * trial's `usage` (tokens and cost) and `cached` mark when it has them.
 * @param trials - The experiment's trials in any order, failed ones included.
 * @returns Entries ranked 1..n.
 * @example buildLeaderboard(report.trials).map((e) => `${e.rank}. ${e.pattern_name}`)
 */
export function buildLeaderboard(trials: readonly TrialRecord[]): LeaderboardEntry[] {
  const candidates = trials
    .map((trial, index) => ({ trial, index }))
    .filter(
      (c): c is { trial: ScoredTrial & { pattern: PatternPayload }; index: number } =>
        isScored(c.trial) && c.trial.pattern !== undefined,
    )
    .sort(
      (a, b) =>
        b.trial.score - a.trial.score || a.trial.iteration - b.trial.iteration || a.index - b.index,
    );
  const seen = new Set<string>();
  const entries: LeaderboardEntry[] = [];
  for (const { trial } of candidates) {
    if (seen.has(trial.pattern_name)) continue;
    seen.add(trial.pattern_name);
    entries.push({
      rank: entries.length + 1,
      pattern_name: trial.pattern_name,
      score: trial.score,
      pattern: trial.pattern,
      ...(trial.usage !== undefined && { usage: trial.usage }),
      ...(trial.cached === true && { cached: true as const }),
    });
  }
  return entries;
}

function valueText(v: unknown): string | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v === 'object') {
    const modelId = (v as { modelId?: unknown }).modelId;
    return typeof modelId === 'string' ? modelId : JSON.stringify(v);
  }
  return String(v);
}

function compareValues(a: string, b: string, numeric: boolean): number {
  if (numeric) return Number(a) - Number(b);
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * Mean optimization score per value of every configuration parameter that took at least two distinct
 * values among successful trials, so the report can show which choices mattered. A marginal mean, not a
 * controlled comparison: with few trials it also reflects which combinations the optimizer happened to
 * visit. Cached trials are skipped because they repeat an earlier configuration and would count it twice.
 * @param trials - The experiment's trials, failed ones included (they are ignored).
 * @returns Parameters by `spread` descending (ties by name); values numerically ascending when every
 * value is a number, otherwise in code-point order.
 * @example parameterEffects(trials)[0] // { parameter: 'chunk_size', values: [...], spread: 0.21 }
 */
export function parameterEffects(trials: readonly TrialRecord[]): ParameterEffect[] {
  const sums = new Map<string, Map<string, { sum: number; n: number }>>();
  for (const trial of trials) {
    if (!isScored(trial) || trial.cached === true) continue;
    for (const [parameter, raw] of Object.entries(trial.config)) {
      const value = valueText(raw);
      if (value === undefined) continue;
      let byValue = sums.get(parameter);
      if (byValue === undefined) {
        byValue = new Map();
        sums.set(parameter, byValue);
      }
      const acc = byValue.get(value) ?? { sum: 0, n: 0 };
      acc.sum += trial.score;
      acc.n += 1;
      byValue.set(value, acc);
    }
  }

  const effects: ParameterEffect[] = [];
  for (const [parameter, byValue] of sums) {
    if (byValue.size < 2) continue;
    const keys = [...byValue.keys()];
    const numeric = keys.every((k) => k.trim() !== '' && Number.isFinite(Number(k)));
    const values = keys
      .sort((a, b) => compareValues(a, b, numeric))
      .map((value) => {
        const acc = byValue.get(value) as { sum: number; n: number };
        return { value, meanScore: acc.sum / acc.n, trials: acc.n };
      });
    const means = values.map((v) => v.meanScore);
    effects.push({ parameter, values, spread: Math.max(...means) - Math.min(...means) });
  }
  return effects.sort(
    (a, b) =>
      b.spread - a.spread || (a.parameter < b.parameter ? -1 : a.parameter > b.parameter ? 1 : 0),
  );
}
