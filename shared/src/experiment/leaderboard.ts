/**
 * Leaderboard ordering over an experiment's trials. Pure and synchronous: the finalize step writes
 * `leaderboard.json` from {@link buildLeaderboard}. (Parameter effects: `report-effects.ts`.)
 */
import type { LeaderboardEntry, PatternPayload, TrialRecord } from './types.js';

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
