/**
 * Tree-structured Parzen estimator over a discrete grid: split the successful observations into "good"
 * (top γ) and "bad", model each column's level distribution in both groups with a smoothing prior, and
 * score every candidate exactly by `Σ_columns log(l(v) / g(v))`. Pure and synchronous.
 */

/** One column of the discrete space: its number of levels and whether levels are ordered. */
export interface TpeColumn {
  levels: number;
  /** Ordered (numeric, ascending) levels also lend a share of their weight to adjacent levels. */
  ordinal: boolean;
}

/** Tuning of {@link tpeScores}. */
export interface TpeOptions {
  /** Fraction of successful observations counted as "good" (at least 1, at most n − 1). Default 0.15. */
  gamma?: number;
  /** Weight of the uniform prior in each density, in observations. Default 2. */
  priorWeight?: number;
  /** Share of an observation's weight given to each adjacent level of an ordinal column. Default 0 (off: it did not help on the replay tables). */
  neighbourWeight?: number;
}

/** Defaults of {@link TpeOptions}, chosen by replay on the synthetic score tables. */
export const TPE_DEFAULTS: Readonly<Required<TpeOptions>> = Object.freeze({
  gamma: 0.15,
  priorWeight: 2,
  neighbourWeight: 0,
});

/**
 * Scores candidate rows (level index per column) by the TPE acquisition `Σ log(l/g)`; higher is more
 * promising. Observations are sorted by score descending (stable), the first `max(1, ceil(γ·n))`
 * (capped at n − 1 when n ≥ 2) form the good group.
 * @example
 * const s = tpeScores([{ levels: 2, ordinal: false }], [[0], [1], [1]], [0.9, 0.1, 0.2], [[0], [1]]);
 * s[0] > s[1]; // true
 */
export function tpeScores(
  columns: readonly TpeColumn[],
  rows: readonly (readonly number[])[],
  y: readonly number[],
  candidates: readonly (readonly number[])[],
  options: TpeOptions = {},
): Float64Array {
  const { gamma, priorWeight, neighbourWeight } = { ...TPE_DEFAULTS, ...options };
  const n = rows.length;
  const order = rows.map((_, i) => i).sort((a, b) => (y[b] as number) - (y[a] as number) || a - b);
  let nGood = Math.max(1, Math.ceil(gamma * n));
  if (n >= 2) nGood = Math.min(nGood, n - 1);
  const logRatio: Float64Array[] = columns.map((col, c) => {
    const good = new Float64Array(col.levels);
    const bad = new Float64Array(col.levels);
    order.forEach((i, rank) => {
      const target = rank < nGood ? good : bad;
      const level = (rows[i] as readonly number[])[c] as number;
      addKernel(target, level, col.ordinal ? neighbourWeight : 0);
    });
    const nBad = n - nGood;
    const out = new Float64Array(col.levels);
    for (let l = 0; l < col.levels; l++) {
      const prior = priorWeight / col.levels;
      const lv = ((good[l] as number) + prior) / (nGood + priorWeight);
      const gv = ((bad[l] as number) + prior) / (nBad + priorWeight);
      out[l] = Math.log(lv / gv);
    }
    return out;
  });
  const scores = new Float64Array(candidates.length);
  candidates.forEach((row, k) => {
    let s = 0;
    for (let c = 0; c < columns.length; c++) {
      s += (logRatio[c] as Float64Array)[row[c] as number] as number;
    }
    scores[k] = s;
  });
  return scores;
}

/** Adds one observation at `level`, moving `w` of its unit weight to each existing neighbour. */
function addKernel(target: Float64Array, level: number, w: number): void {
  const left = level > 0 && w > 0;
  const right = level < target.length - 1 && w > 0;
  const centre = 1 - (left ? w : 0) - (right ? w : 0);
  target[level] = (target[level] as number) + centre;
  if (left) target[level - 1] = (target[level - 1] as number) + w;
  if (right) target[level + 1] = (target[level + 1] as number) + w;
}
