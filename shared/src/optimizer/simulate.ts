/**
 * Replays an optimizer over a recorded score table (one row per valid configuration) to measure how
 * fast it finds the best configuration, without running a single trial. Pure and synchronous.
 */
import type { Observation, TrialConfig } from '../experiment/types.js';
import { OptimizerError, type OptimizerName, proposeTrials } from './optimizers.js';
import { combinationKey } from './search-space.js';

/** One recorded trial: a configuration and its score (null = the trial failed). */
export interface ScoreTableRow {
  config: TrialConfig;
  score: number | null;
}

/** Outcome of {@link simulateOptimizer} over all seeds. */
export interface SimulationResult {
  optimizer: OptimizerName;
  seeds: number;
  maxEvals: number;
  /** Median evaluations to reach a best row (unreached seeds count as ∞); null when that median is ∞. */
  medianEvalsToBest: number | null;
  /** Seeds that reached a best row within `maxEvals`. */
  reachedBest: number;
  /** Mean over seeds of the best score found within `maxEvals` (a seed with no success counts the table's lowest score). */
  meanBestAfterN: number;
  /** Per seed (firstSeed upward): 1-based evaluation that first hit a best row, or null. */
  evalsToBest: (number | null)[];
}

/** Options of {@link simulateOptimizer}. */
export interface SimulateOptions {
  maxEvals: number;
  seeds: number;
  /** Seeds are `firstSeed .. firstSeed + seeds − 1`. Default 0. */
  firstSeed?: number;
  /** Passed to the optimizer. Default 4. */
  nRandomNodes?: number;
  /**
   * Proposals per round, as the experiment's trial concurrency makes them (all of a round are proposed before any
   * is scored). Default 1.
   */
  batchSize?: number;
}

/**
 * Validates a score table file: `{ "rows": [...] }` or a bare array of `{ config, score }`, with
 * object configs, finite-or-null scores, distinct configurations and at least one scored row.
 * @throws {OptimizerError} (a ValidationError) naming the first bad row.
 * @example parseScoreTable({ rows: [{ config: { k: 3 }, score: 0.5 }] }).length // 1
 */
export function parseScoreTable(json: unknown): ScoreTableRow[] {
  const rows = Array.isArray(json)
    ? json
    : typeof json === 'object' && json !== null
      ? (json as { rows?: unknown }).rows
      : undefined;
  if (!Array.isArray(rows)) {
    throw new OptimizerError(
      'A score table must be an array of rows or an object { rows: [...] }.',
    );
  }
  if (rows.length === 0) throw new OptimizerError('The score table has no rows.');
  const seen = new Set<string>();
  const out: ScoreTableRow[] = [];
  rows.forEach((row: unknown, i) => {
    if (typeof row !== 'object' || row === null || Array.isArray(row)) {
      throw new OptimizerError(`Score table row ${i} must be an object { config, score }.`);
    }
    const { config, score } = row as { config?: unknown; score?: unknown };
    if (typeof config !== 'object' || config === null || Array.isArray(config)) {
      throw new OptimizerError(`Score table row ${i}: config must be an object.`);
    }
    if (score !== null && (typeof score !== 'number' || !Number.isFinite(score))) {
      throw new OptimizerError(
        `Score table row ${i}: score must be a finite number or null, got ${JSON.stringify(score)}.`,
      );
    }
    const key = combinationKey(config as TrialConfig);
    if (seen.has(key))
      throw new OptimizerError(`Score table row ${i} repeats configuration ${key}.`);
    seen.add(key);
    out.push({ config: config as TrialConfig, score });
  });
  if (out.every((r) => r.score === null)) {
    throw new OptimizerError('Every row of the score table failed (score null); nothing to find.');
  }
  return out;
}

/**
 * Runs the optimizer over the table, `batchSize` proposals per round (default one at a time), for each seed and records when it first
 * evaluates a row whose score equals the table's maximum.
 * @throws {OptimizerError} for bad options or a table without a scored row.
 * @example simulateOptimizer(parseScoreTable(json), 'gam', { maxEvals: 30, seeds: 50 }).medianEvalsToBest
 */
export function simulateOptimizer(
  table: readonly ScoreTableRow[],
  name: OptimizerName,
  options: SimulateOptions,
): SimulationResult {
  const { maxEvals, seeds, firstSeed = 0, batchSize = 1 } = options;
  if (!Number.isInteger(batchSize) || batchSize < 1) {
    throw new OptimizerError(`batchSize must be an integer ≥ 1, got ${String(batchSize)}.`);
  }
  if (!Number.isInteger(maxEvals) || maxEvals < 1) {
    throw new OptimizerError(`maxEvals must be an integer ≥ 1, got ${String(maxEvals)}.`);
  }
  if (!Number.isInteger(seeds) || seeds < 1) {
    throw new OptimizerError(`seeds must be an integer ≥ 1, got ${String(seeds)}.`);
  }
  if (!Number.isInteger(firstSeed)) {
    throw new OptimizerError(`firstSeed must be an integer, got ${String(firstSeed)}.`);
  }
  const scored = table.map((r) => r.score).filter((s): s is number => s !== null);
  if (scored.length === 0) throw new OptimizerError('The score table has no scored row.');
  const max = Math.max(...scored);
  const min = Math.min(...scored);
  const scoreOf = new Map(table.map((r) => [combinationKey(r.config), r.score]));
  const candidates = table.map((r) => r.config);
  const budget = Math.min(maxEvals, table.length);
  const evalsToBest: (number | null)[] = [];
  let bestSum = 0;
  for (let s = 0; s < seeds; s++) {
    const seed = firstSeed + s;
    const observations: Observation[] = [];
    let hit: number | null = null;
    let best = Number.NEGATIVE_INFINITY;
    while (observations.length < budget) {
      const round = proposeTrials(name, {
        candidates,
        observations,
        count: Math.min(batchSize, budget - observations.length),
        seed,
        ...(options.nRandomNodes === undefined ? {} : { nRandomNodes: options.nRandomNodes }),
      });
      if (round.length === 0) break;
      for (const config of round) {
        const score = scoreOf.get(combinationKey(config)) ?? null;
        observations.push({ config, score });
        if (score !== null) {
          best = Math.max(best, score);
          if (hit === null && score === max) hit = observations.length;
        }
      }
    }
    evalsToBest.push(hit);
    bestSum += best === Number.NEGATIVE_INFINITY ? min : best;
  }
  const sorted = evalsToBest.map((e) => e ?? Number.POSITIVE_INFINITY).sort((a, b) => a - b);
  const mid = Math.floor(seeds / 2);
  const median =
    seeds % 2 === 1
      ? (sorted[mid] as number)
      : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
  return {
    optimizer: name,
    seeds,
    maxEvals,
    medianEvalsToBest: Number.isFinite(median) ? median : null,
    reachedBest: evalsToBest.filter((e) => e !== null).length,
    meanBestAfterN: bestSum / seeds,
    evalsToBest,
  };
}
