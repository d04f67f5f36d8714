/**
 * A small additive model (GAM) for the optimizer's surrogate: factor terms for categorical columns and
 * discrete penalized splines for ordered numeric columns, fitted by penalized least squares with the
 * smoothing parameter chosen by generalized cross-validation. Pure and synchronous.
 */
import { CholeskyDecomposition, Matrix } from 'ml-matrix';

/**
 * One additive term over a column whose values are encoded as level indices `0..levels-1`.
 * `factor` = one coefficient per level with a ridge penalty (no order assumed, unlike ai4rag ≤0.12's
 * LabelEncoder + spline). `spline` = one coefficient per level, levels in ascending value order, with a
 * ridge plus second-difference penalty, so neighbouring levels share strength (a discrete P-spline).
 */
export interface GamTerm {
  kind: 'factor' | 'spline';
  levels: number;
}

/** A fitted additive model. */
export interface GamFit {
  /** The smoothing parameter GCV picked from the grid. */
  lambda: number;
  /** Effective degrees of freedom at that λ (trace of the hat matrix). */
  edf: number;
  /** Predicted score of a row of level indices (one per term). */
  predict(row: readonly number[]): number;
}

/**
 * The λ grid GCV searches. Scores are in metric units (0..1), so λ = 1 shrinks a level seen once by
 * half; the grid spans "almost interpolate" to "almost the mean".
 */
export const GAM_LAMBDAS: readonly number[] = Object.freeze([1e-3, 1e-2, 0.1, 1, 10, 100]);

/** Penalty on the (otherwise free) intercept, only to keep the system positive definite. */
const INTERCEPT_JITTER = 1e-9;

/**
 * Fits `y ≈ μ + Σ_t f_t(level_t)` by solving `(XᵀX + λP)β = Xᵀ(y − ȳ)` for every λ in the grid and
 * keeping the one with the lowest GCV score `n·RSS / (n − edf)²`. λ values leaving less than one
 * residual degree of freedom are skipped (GCV is undefined there); when all are, the largest λ is used.
 * Rows are level indices per term; indices must be in range (the caller encodes them).
 * @example
 * const fit = fitGam([{ kind: 'factor', levels: 2 }], [[0], [1]], [0.2, 0.8]);
 * fit.predict([1]) > fit.predict([0]); // true
 */
export function fitGam(
  terms: readonly GamTerm[],
  rows: readonly (readonly number[])[],
  y: readonly number[],
  lambdas: readonly number[] = GAM_LAMBDAS,
): GamFit {
  const n = rows.length;
  const offsets: number[] = [];
  let p = 1;
  for (const t of terms) {
    offsets.push(p);
    p += t.levels;
  }
  const mean = n === 0 ? 0 : y.reduce((s, v) => s + v, 0) / n;
  // XᵀX and Xᵀy from the sparse design (each row has 1 + terms.length ones).
  const xtx = new Float64Array(p * p);
  const xty = new Float64Array(p);
  const idx = new Int32Array(terms.length + 1);
  for (let i = 0; i < n; i++) {
    const row = rows[i] as readonly number[];
    idx[0] = 0;
    for (let t = 0; t < terms.length; t++) idx[t + 1] = (offsets[t] as number) + (row[t] as number);
    const yi = (y[i] as number) - mean;
    for (let a = 0; a < idx.length; a++) {
      const ia = idx[a] as number;
      xty[ia] = (xty[ia] as number) + yi;
      for (let b = 0; b < idx.length; b++) {
        const k = ia * p + (idx[b] as number);
        xtx[k] = (xtx[k] as number) + 1;
      }
    }
  }
  const penalty = penaltyMatrix(terms, offsets, p);
  const xtxM = new Matrix(p, p);
  for (let a = 0; a < p; a++) for (let b = 0; b < p; b++) xtxM.set(a, b, xtx[a * p + b] as number);
  const rhs = Matrix.columnVector(Array.from(xty));

  let best: { lambda: number; edf: number; beta: Float64Array; gcv: number } | undefined;
  let fallback: { lambda: number; edf: number; beta: Float64Array } | undefined;
  for (const lambda of lambdas) {
    const a = new Matrix(p, p);
    for (let r = 0; r < p; r++) {
      for (let c = 0; c < p; c++) {
        a.set(r, c, (xtx[r * p + c] as number) + lambda * (penalty[r * p + c] as number));
      }
    }
    const chol = new CholeskyDecomposition(a);
    if (!chol.isPositiveDefinite()) continue;
    const beta = Float64Array.from(chol.solve(rhs).getColumn(0));
    const z = chol.solve(xtxM);
    let edf = 0;
    for (let d = 0; d < p; d++) edf += z.get(d, d);
    if (fallback === undefined || lambda > fallback.lambda) fallback = { lambda, edf, beta };
    const dfResid = n - edf;
    if (dfResid < 1) continue;
    let rss = 0;
    for (let i = 0; i < n; i++) {
      const row = rows[i] as readonly number[];
      let f = beta[0] as number;
      for (let t = 0; t < terms.length; t++) {
        f += beta[(offsets[t] as number) + (row[t] as number)] as number;
      }
      const e = (y[i] as number) - mean - f;
      rss += e * e;
    }
    const gcv = (n * rss) / (dfResid * dfResid);
    if (best === undefined || gcv < best.gcv) best = { lambda, edf, beta, gcv };
  }
  const chosen = best ?? fallback;
  if (chosen === undefined) {
    // Unreachable with positive λ: every block is penalized, so XᵀX + λP is positive definite.
    return { lambda: Number.NaN, edf: 0, predict: () => mean };
  }
  const { beta } = chosen;
  return {
    lambda: chosen.lambda,
    edf: chosen.edf,
    predict(row) {
      let f = mean + (beta[0] as number);
      for (let t = 0; t < terms.length; t++) {
        f += beta[(offsets[t] as number) + (row[t] as number)] as number;
      }
      return f;
    },
  };
}

function penaltyMatrix(terms: readonly GamTerm[], offsets: readonly number[], p: number) {
  const pen = new Float64Array(p * p);
  pen[0] = INTERCEPT_JITTER;
  terms.forEach((t, ti) => {
    const o = offsets[ti] as number;
    for (let l = 0; l < t.levels; l++) pen[(o + l) * p + o + l] = 1;
    if (t.kind !== 'spline') return;
    // + D₂ᵀD₂ over the ordered levels: Σ (β[l] − 2β[l+1] + β[l+2])².
    for (let l = 0; l + 2 < t.levels; l++) {
      const d = [1, -2, 1];
      for (let a = 0; a < 3; a++) {
        for (let b = 0; b < 3; b++) {
          const k = (o + l + a) * p + o + l + b;
          pen[k] = (pen[k] as number) + (d[a] as number) * (d[b] as number);
        }
      }
    }
  });
  return pen;
}
