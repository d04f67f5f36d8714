/**
 * The optimizers behind the RAG-config search (spec §3): a stateless "propose" step (the cloud state
 * machine calls it as a separate Lambda every loop, so everything is recomputed from its inputs) and a
 * sequential driver for local runs.
 */
import { Ai4ragError, ValidationError } from '../errors.js';
import type { Observation, TrialConfig } from '../experiment/types.js';
import { mulberry32 } from '../util/random.js';
import { fitGam, type GamTerm } from './gam.js';
import { combinationKey, valueKey } from './search-space.js';
import { tpeScores } from './tpe.js';

/** Names accepted by {@link proposeTrials}. */
export type OptimizerName = 'random' | 'gam' | 'tpe';

/** Every optimizer, in the order reports list them. */
export const OPTIMIZER_NAMES: readonly OptimizerName[] = Object.freeze(['random', 'gam', 'tpe']);

/**
 * The optimizer used when none is named. Picked by replay over the synthetic RAG-like score tables in
 * `test/fixtures/optimizer/` (median evaluations to reach the best configuration, 50 seeds, 30 evals);
 * see `test/unit/optimizer/simulate.test.ts`.
 */
export const DEFAULT_OPTIMIZER: OptimizerName = 'gam';

/** ai4rag's `random_state` default. */
export const DEFAULT_OPTIMIZER_SEED = 64;

/** ai4rag's `n_random_nodes` default (warm-start size in successful trials). */
export const DEFAULT_RANDOM_NODES = 4;

/** Invalid input to an optimizer (unknown name, bad count, no candidates, malformed observations). */
export class OptimizerError extends ValidationError {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'OptimizerError';
  }
}

/** No trial succeeded within the budget (ai4rag's `OptimizationError`, same message). */
export class OptimizationError extends Ai4ragError {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'OptimizationError';
  }
}

/** Input of {@link proposeTrials}: everything the optimizer knows, since it keeps no state. */
export interface ProposeInput {
  /** Every valid combination, in enumeration order (duplicates by `combinationKey` are ignored). */
  candidates: readonly TrialConfig[];
  /** Known observations first, then evaluated trials, in order; `score` null = failed. */
  observations: readonly Observation[];
  /** How many configurations to propose now (≥ 1). */
  count: number;
  /** Seed of the shuffle (ai4rag default 64). */
  seed: number;
  /** Successful trials needed before the surrogate takes over. Default 4. */
  nRandomNodes?: number;
}

interface Column {
  name: string;
  /** `spline` for numeric columns with ≥ 3 values (levels ascending), else `factor` (first-seen order). */
  kind: 'factor' | 'spline';
  /** Holds a string, model or boolean value: takes part in the warm-start stratification. */
  stratified: boolean;
  levelOf: Map<string, number>;
}

interface Space {
  configs: TrialConfig[];
  keyIndex: Map<string, number>;
  columns: Column[];
  /** Level index per (kept) column, per candidate. */
  rows: number[][];
  /** Dropped single-valued columns and the value key every candidate shares. */
  fixed: Map<string, string>;
}

function fail(message: string): never {
  throw new OptimizerError(message);
}

function validate(name: unknown, input: ProposeInput): void {
  if (!OPTIMIZER_NAMES.includes(name as OptimizerName)) {
    fail(`Unknown optimizer '${String(name)}'; use one of ${OPTIMIZER_NAMES.join(', ')}.`);
  }
  if (typeof input !== 'object' || input === null) fail('Propose input must be an object.');
  const { candidates, observations, count, seed, nRandomNodes } = input;
  if (!Array.isArray(candidates) || candidates.length === 0) {
    fail('There are no candidate configurations to propose from.');
  }
  if (!Array.isArray(observations)) fail('observations must be an array.');
  if (!Number.isInteger(count) || count < 1) {
    fail(`count must be an integer ≥ 1, got ${String(count)}.`);
  }
  if (!Number.isInteger(seed)) fail(`seed must be an integer, got ${String(seed)}.`);
  if (nRandomNodes !== undefined && (!Number.isInteger(nRandomNodes) || nRandomNodes < 1)) {
    fail(`nRandomNodes must be an integer ≥ 1, got ${String(nRandomNodes)}.`);
  }
  candidates.forEach((c, i) => {
    if (typeof c !== 'object' || c === null) fail(`Candidate ${i} is not a configuration object.`);
  });
  observations.forEach((o, i) => {
    if (typeof o !== 'object' || o === null || typeof o.config !== 'object' || o.config === null) {
      fail(`Observation ${i} must be { config: object, score: number | null }.`);
    }
    if (o.score !== null && (typeof o.score !== 'number' || !Number.isFinite(o.score))) {
      fail(`Observation ${i} has score ${String(o.score)}; expected a finite number or null.`);
    }
  });
}

function isNumber(v: unknown): v is number {
  return typeof v === 'number';
}

function buildSpace(candidates: readonly TrialConfig[]): Space {
  const configs: TrialConfig[] = [];
  const keyIndex = new Map<string, number>();
  for (const c of candidates) {
    const key = combinationKey(c);
    if (keyIndex.has(key)) continue;
    keyIndex.set(key, configs.length);
    configs.push(c);
  }
  const names: string[] = [];
  const seenNames = new Set<string>();
  for (const c of configs) {
    for (const k of Object.keys(c)) {
      if (!seenNames.has(k)) {
        seenNames.add(k);
        names.push(k);
      }
    }
  }
  const columns: Column[] = [];
  const fixed = new Map<string, string>();
  for (const name of names) {
    const values = new Map<string, unknown>();
    for (const c of configs) {
      const v = c[name];
      const k = valueKey(v);
      if (!values.has(k)) values.set(k, v);
    }
    if (values.size < 2) {
      // A single value carries no information for the model, but still tells spaces apart.
      fixed.set(name, values.keys().next().value as string);
      continue;
    }
    const all = [...values.entries()];
    const numeric = all.every(([, v]) => isNumber(v));
    const kind = numeric && all.length >= 3 ? 'spline' : 'factor';
    if (kind === 'spline') all.sort((a, b) => (a[1] as number) - (b[1] as number));
    const stratified = all.some(
      ([, v]) =>
        typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'object' && v !== null),
    );
    columns.push({ name, kind, stratified, levelOf: new Map(all.map(([k], i) => [k, i])) });
  }
  const rows = configs.map((c) =>
    columns.map((col) => col.levelOf.get(valueKey(c[col.name])) ?? 0),
  );
  return { configs, keyIndex, columns, rows, fixed };
}

/**
 * Encodes a configuration outside the candidate list (e.g. a known observation cut by the grid cap),
 * or undefined when one of its values is not in the space (another model, say).
 */
function encode(space: Space, config: TrialConfig): number[] | undefined {
  for (const [name, key] of space.fixed) if (valueKey(config[name]) !== key) return undefined;
  const row: number[] = [];
  for (const col of space.columns) {
    const level = col.levelOf.get(valueKey(config[col.name]));
    if (level === undefined) return undefined;
    row.push(level);
  }
  return row;
}

/** Fisher–Yates (from the end) over `0..n-1` driven by mulberry32(seed), as ai4rag's one-time shuffle. */
function shuffledIndices(n: number, seed: number): number[] {
  const rand = mulberry32(seed);
  const idx = Array.from({ length: n }, (_, i) => i);
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    const tmp = idx[i] as number;
    idx[i] = idx[j] as number;
    idx[j] = tmp;
  }
  return idx;
}

/**
 * ai4rag 0.10.3+ proportional stratification, recomputed from the observations (stateless): over the
 * unobserved candidates in shuffled order, each gets `min over stratified columns of
 * rank_in_value_group / count_in_value_group`, where the rank of a value already covered by an
 * observation starts at 1; a stable sort by that priority gives the warm-start order.
 */
function warmStartOrder(space: Space, shuffled: readonly number[], covered: Set<number>[]) {
  const strat = space.columns.map((c, i) => (c.stratified ? i : -1)).filter((i) => i >= 0);
  const counts = strat.map(() => new Map<number, number>());
  for (const i of shuffled) {
    strat.forEach((c, s) => {
      const level = (space.rows[i] as number[])[c] as number;
      const m = counts[s] as Map<number, number>;
      m.set(level, (m.get(level) ?? 0) + 1);
    });
  }
  const ranks = strat.map((c) => {
    const m = new Map<number, number>();
    for (const level of covered[c] ?? []) m.set(level, 1);
    return m;
  });
  const priority = shuffled.map((i) => {
    let p = strat.length === 0 ? 0 : Number.POSITIVE_INFINITY;
    strat.forEach((c, s) => {
      const level = (space.rows[i] as number[])[c] as number;
      const m = ranks[s] as Map<number, number>;
      const rank = m.get(level) ?? 0;
      m.set(level, rank + 1);
      p = Math.min(p, rank / ((counts[s] as Map<number, number>).get(level) as number));
    });
    return p;
  });
  return shuffled
    .map((i, pos) => ({ i, pos, p: priority[pos] as number }))
    .sort((a, b) => a.p - b.p || a.pos - b.pos)
    .map((e) => e.i);
}

/**
 * Proposes up to `count` distinct, never-observed candidates (matched by `combinationKey`), or `[]`
 * when every candidate has been observed. A pure function of its input, so the same input always gives
 * the same proposal.
 * - `random`: ai4rag's RandomOptimizer; all candidates shuffled once with mulberry32(seed), first
 *   unobserved in that order.
 * - `gam` and `tpe`: while fewer than `nRandomNodes` observations succeeded, the stratified warm-start
 *   order (every string/model/boolean value before repeats); then the surrogate (additive model, or
 *   TPE's `Σ log l/g`) scores every unobserved candidate and the top `count` are proposed, ties by the
 *   shuffled order.
 *
 * Observations whose config is not a candidate still count toward the warm start when successful, are
 * used for fitting when all their values are known levels, and are otherwise ignored.
 * @throws {OptimizerError} for an unknown name, count < 1, a non-integer seed, no candidates or a
 * malformed observation.
 * @example
 * const next = proposeTrials('gam', { candidates: space.combinations(), observations, count: 1, seed: 64 });
 */
export function proposeTrials(name: OptimizerName, input: ProposeInput): TrialConfig[] {
  validate(name, input);
  const { observations, count, seed } = input;
  const nRandomNodes = input.nRandomNodes ?? DEFAULT_RANDOM_NODES;
  const space = buildSpace(input.candidates);
  const n = space.configs.length;
  const shuffled = shuffledIndices(n, seed);
  const observed = new Uint8Array(n);
  const covered = space.columns.map(() => new Set<number>());
  const fitRows: number[][] = [];
  const fitY: number[] = [];
  let successes = 0;
  for (const o of observations) {
    const i = space.keyIndex.get(combinationKey(o.config));
    if (i !== undefined) observed[i] = 1;
    const row = i !== undefined ? (space.rows[i] as number[]) : encode(space, o.config);
    space.columns.forEach((col, c) => {
      const level = row ? row[c] : col.levelOf.get(valueKey(o.config[col.name]));
      if (level !== undefined) (covered[c] as Set<number>).add(level);
    });
    if (o.score === null) continue;
    successes++;
    if (row) {
      fitRows.push(row);
      fitY.push(o.score);
    }
  }
  const open = shuffled.filter((i) => observed[i] === 0);
  if (open.length === 0) return [];
  const take = (order: readonly number[]) =>
    order.slice(0, count).map((i) => space.configs[i] as TrialConfig);
  if (name === 'random') return take(open);
  if (successes < nRandomNodes || fitRows.length === 0) {
    return take(warmStartOrder(space, open, covered));
  }
  const openRows = open.map((i) => space.rows[i] as number[]);
  let scores: ArrayLike<number>;
  if (name === 'gam') {
    const terms: GamTerm[] = space.columns.map((c) => ({ kind: c.kind, levels: c.levelOf.size }));
    const fit = fitGam(terms, fitRows, fitY);
    scores = openRows.map((r) => fit.predict(r));
  } else {
    const cols = space.columns.map((c) => ({
      levels: c.levelOf.size,
      ordinal: c.kind === 'spline',
    }));
    scores = tpeScores(cols, fitRows, fitY, openRows);
  }
  const order = open
    .map((i, k) => ({ i, k, s: scores[k] as number }))
    .sort((a, b) => b.s - a.s || a.k - b.k)
    .map((e) => e.i);
  return take(order);
}

/** Options of {@link optimize}. */
export interface OptimizeOptions {
  name: OptimizerName;
  candidates: readonly TrialConfig[];
  /** Scores a configuration (higher is better); null or a throw marks the trial failed. */
  objective: (config: TrialConfig) => Promise<number | null>;
  /** Trials to run, failures included; capped at the number of candidates. */
  maxEvals: number;
  seed?: number;
  /** Earlier results: used by the optimizer, never re-evaluated, not counted in `maxEvals`. */
  knownObservations?: readonly Observation[];
  nRandomNodes?: number;
  /** Proposals per round, evaluated concurrently (so concurrency is bounded by it). Default 1. */
  batchSize?: number;
}

/** Result of {@link optimize}. */
export interface OptimizeResult {
  /** The best successful observation, known observations included. */
  best: Observation;
  /** The evaluated trials, in proposal order (known observations not included). */
  observations: Observation[];
}

/**
 * Runs the optimizer loop locally: propose, evaluate (up to `batchSize` at a time), repeat until
 * `maxEvals` trials ran or every candidate was observed. A throwing objective is recorded as a failed
 * trial (score null) and never stops the loop.
 * @throws {OptimizerError} for invalid options.
 * @throws {OptimizationError} when no trial (nor known observation) succeeded.
 * @example
 * const { best } = await optimize({ name: 'gam', candidates, objective: runTrial, maxEvals: 8 });
 */
export async function optimize(o: OptimizeOptions): Promise<OptimizeResult> {
  const { name, candidates, objective, seed = DEFAULT_OPTIMIZER_SEED, batchSize = 1 } = o;
  if (typeof objective !== 'function') fail('objective must be a function.');
  if (!Number.isInteger(o.maxEvals) || o.maxEvals < 1) {
    fail(`maxEvals must be an integer ≥ 1, got ${String(o.maxEvals)}.`);
  }
  if (!Number.isInteger(batchSize) || batchSize < 1) {
    fail(`batchSize must be an integer ≥ 1, got ${String(batchSize)}.`);
  }
  const known = [...(o.knownObservations ?? [])];
  const budget = Math.min(o.maxEvals, Array.isArray(candidates) ? candidates.length : 0);
  const evaluated: Observation[] = [];
  while (evaluated.length < budget) {
    const batch = proposeTrials(name, {
      candidates,
      observations: [...known, ...evaluated],
      count: Math.min(batchSize, budget - evaluated.length),
      seed,
      ...(o.nRandomNodes === undefined ? {} : { nRandomNodes: o.nRandomNodes }),
    });
    if (batch.length === 0) break;
    const scores = await Promise.all(batch.map((config) => runObjective(objective, config)));
    batch.forEach((config, k) => {
      evaluated.push({ config, score: scores[k] ?? null });
    });
  }
  let best: Observation | undefined;
  for (const obs of [...known, ...evaluated]) {
    if (obs.score !== null && (best === undefined || obs.score > (best.score as number)))
      best = obs;
  }
  if (best === undefined) {
    throw new OptimizationError(
      'Number of evaluations has reached limit. All iterations have failed.',
    );
  }
  return { best, observations: evaluated };
}

async function runObjective(
  objective: OptimizeOptions['objective'],
  config: TrialConfig,
): Promise<number | null> {
  try {
    const score = await objective(config);
    return typeof score === 'number' && Number.isFinite(score) ? score : null;
  } catch {
    return null;
  }
}
