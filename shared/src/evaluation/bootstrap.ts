import { mulberry32, type UniformRandom } from '../util/random.js';
/**
 * Seeded bootstrap confidence intervals of a mean, BCa as in `scipy.stats.bootstrap` (what unitxt uses for
 * instance metrics: 1000 resamples, 95 %, seed 42). The resampling RNG is ours (mulberry32), not NumPy's
 * PCG64, so bounds are statistically equivalent to unitxt's but not bit-identical.
 */

/** Options of {@link bootstrapCi}. */
export interface BootstrapOptions {
  /** Number of bootstrap resamples (scipy/unitxt: 1000). */
  resamples?: number;
  /** Two-sided confidence level in (0, 1) (unitxt: 0.95). */
  confidence?: number;
  /** Seed of the mulberry32 generator (unitxt: 42). Ignored when `random` is given. */
  seed?: number;
  /** 'bca' (scipy's default, unitxt's choice) or plain 'percentile'. */
  method?: 'bca' | 'percentile';
  /** Injected uniform generator, for tests or a caller-controlled stream; overrides `seed`. */
  random?: UniformRandom;
}

/** A two-sided confidence interval. */
export interface ConfidenceInterval {
  low: number;
  high: number;
}

/**
 * Complementary error function, accurate to ~1e-15 relative: a positive-term series (no cancellation)
 * below 2.5, a Lentz continued fraction above.
 */
function erfcPositive(x: number): number {
  if (x < 2.5) {
    // erf(x) = 2/√π · e^{-x²} · Σ x^{2n+1} 2^n / (1·3·…·(2n+1))
    let term = x;
    let sum = x;
    for (let n = 1; n < 200; n++) {
      term *= (2 * x * x) / (2 * n + 1);
      sum += term;
      if (term < sum * 1e-17) break;
    }
    return 1 - (2 / Math.sqrt(Math.PI)) * Math.exp(-x * x) * sum;
  }
  // erfc(x) = e^{-x²}/√π · 1/(x + (1/2)/(x + 1/(x + (3/2)/(x + …)))) , modified Lentz.
  const tiny = 1e-300;
  let f = x;
  let c = x;
  let d = 0;
  for (let k = 1; k < 500; k++) {
    const a = k / 2;
    d = x + a * d;
    d = d === 0 ? tiny : d;
    c = x + a / c;
    c = c === 0 ? tiny : c;
    d = 1 / d;
    const delta = c * d;
    f *= delta;
    if (Math.abs(delta - 1) < 1e-16) break;
  }
  return Math.exp(-x * x) / Math.sqrt(Math.PI) / f;
}

/**
 * Standard normal CDF Φ (scipy `ndtr`), accurate in both tails.
 * @example normalCdf(1.959963984540054) // 0.975
 */
export function normalCdf(z: number): number {
  if (Number.isNaN(z)) return Number.NaN;
  if (z === Number.POSITIVE_INFINITY) return 1;
  if (z === Number.NEGATIVE_INFINITY) return 0;
  const x = z / Math.SQRT2;
  return x < 0 ? 0.5 * erfcPositive(-x) : 1 - 0.5 * erfcPositive(x);
}

const A = [
  -3.969683028665376e1, 2.209460984245205e2, -2.759285104469687e2, 1.38357751867269e2,
  -3.066479806614716e1, 2.506628277459239,
] as const;
const B = [
  -5.447609879822406e1, 1.615858368580409e2, -1.556989798598866e2, 6.680131188771972e1,
  -1.328068155288572e1,
] as const;
const C = [
  -7.784894002430293e-3, -3.223964580411365e-1, -2.400758277161838, -2.549732539343734,
  4.374664141464968, 2.938163982698783,
] as const;
const D = [
  7.784695709041462e-3, 3.224671290700398e-1, 2.445134137142996, 3.754408661907416,
] as const;

/**
 * Inverse standard normal CDF Φ⁻¹ (scipy `ndtri`): Acklam's rational approximation (~1e-9) refined by
 * Halley steps against {@link normalCdf}, giving ~1e-15. Returns ±Infinity at 0 and 1, NaN outside [0, 1].
 * @example inverseNormalCdf(0.975) // 1.959963984540054
 */
export function inverseNormalCdf(p: number): number {
  if (Number.isNaN(p) || p < 0 || p > 1) return Number.NaN;
  if (p === 0) return Number.NEGATIVE_INFINITY;
  if (p === 1) return Number.POSITIVE_INFINITY;
  const pLow = 0.02425;
  let x: number;
  if (p < pLow) {
    const q = Math.sqrt(-2 * Math.log(p));
    x =
      (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5]) /
      ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1);
  } else if (p <= 1 - pLow) {
    const q = p - 0.5;
    const r = q * q;
    x =
      ((((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q) /
      (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1);
  } else {
    const q = Math.sqrt(-2 * Math.log(1 - p));
    x =
      -(((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5]) /
      ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1);
  }
  for (let i = 0; i < 2; i++) {
    // Halley step; the upper tail is refined on the complement to keep relative accuracy.
    const e = p > 0.5 ? 1 - p - normalCdf(-x) : normalCdf(x) - p;
    const u = e * Math.sqrt(2 * Math.PI) * Math.exp((x * x) / 2);
    x -= u / (1 + (x * u) / 2);
  }
  return x;
}

function mean(values: readonly number[]): number {
  let s = 0;
  for (const v of values) s += v;
  return s / values.length;
}

/** NumPy's default ('linear') percentile of an ascending-sorted array, `q` in [0, 1]. */
function percentileSorted(sorted: readonly number[], q: number): number {
  const pos = q * (sorted.length - 1);
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  const a = sorted[lo] as number;
  const b = sorted[hi] as number;
  return a + (b - a) * (pos - lo);
}

/**
 * Bootstrap CI of the mean of `values`, deterministic for a seed.
 *
 * BCa follows `scipy.stats.bootstrap` (`_bca_interval`):
 * - bias correction `z0 = Φ⁻¹(f)` with `f = (#{θ*_b < θ̂} + #{θ*_b ≤ θ̂}) / (2B)`, which is what current
 *   scipy's `_percentile_of_score` computes (the average of percentileofscore kinds 'strict' and 'weak',
 *   i.e. kind 'mean'), not plain 'weak';
 * - acceleration `a = Σ U³ / (6 (Σ U²)^{3/2})` with jackknife `U_i = (n-1)(θ̄_(·) − θ̂_(i))`;
 * - adjusted levels `α₁,₂ = Φ(z0 + (z0 + z_α)/(1 − a (z0 + z_α)))`, read from the bootstrap means with
 *   NumPy's linear-interpolation percentile.
 *
 * NaN values are dropped first. Returns `undefined` (unitxt skips the CI) for fewer than 2 values, all
 * values identical, or a degenerate BCa (non-finite adjusted level, e.g. every resample on one side).
 * @example bootstrapCi([0, 0.5, 1, 1], { seed: 42 }) // { low: …, high: … }
 */
export function bootstrapCi(
  values: readonly number[],
  options: BootstrapOptions = {},
): ConfidenceInterval | undefined {
  const { resamples = 1000, confidence = 0.95, seed = 42, method = 'bca' } = options;
  const data = values.filter((v) => !Number.isNaN(v));
  const n = data.length;
  if (n < 2 || data.every((v) => v === data[0])) return undefined;
  const random = options.random ?? mulberry32(seed);

  const boot: number[] = new Array<number>(resamples);
  for (let b = 0; b < resamples; b++) {
    let s = 0;
    for (let i = 0; i < n; i++) s += data[Math.floor(random() * n)] as number;
    boot[b] = s / n;
  }
  const sorted = [...boot].sort((x, y) => x - y);
  const alpha = (1 - confidence) / 2;

  if (method === 'percentile') {
    return { low: percentileSorted(sorted, alpha), high: percentileSorted(sorted, 1 - alpha) };
  }

  const thetaHat = mean(data);
  const total = thetaHat * n;
  const jack = data.map((v) => (total - v) / (n - 1));
  return bcaInterval(boot, sorted, thetaHat, jack, alpha);
}

/**
 * scipy's `_bca_interval` from the bootstrap replicates, the full-sample estimate and the jackknife
 * (leave-one-out) estimates; `undefined` when the adjusted levels are not finite.
 */
function bcaInterval(
  boot: readonly number[],
  sorted: readonly number[],
  thetaHat: number,
  jack: readonly number[],
  alpha: number,
): ConfidenceInterval | undefined {
  const resamples = boot.length;
  const n = jack.length;
  let below = 0;
  let atOrBelow = 0;
  for (const t of boot) {
    if (t < thetaHat) below++;
    if (t <= thetaHat) atOrBelow++;
  }
  const z0 = inverseNormalCdf((below + atOrBelow) / (2 * resamples));

  const jackMean = mean(jack);
  let num = 0;
  let den = 0;
  for (const t of jack) {
    const u = (n - 1) * (jackMean - t);
    num += u ** 3;
    den += u ** 2;
  }
  // scipy divides num by n³ and den by n²; the n factors cancel in num / den^{3/2}.
  const a = num / n ** 3 / (6 * (den / n ** 2) ** 1.5);

  const zAlpha = inverseNormalCdf(alpha);
  const n1 = z0 + zAlpha;
  const n2 = z0 - zAlpha;
  const alpha1 = normalCdf(z0 + n1 / (1 - a * n1));
  const alpha2 = normalCdf(z0 + n2 / (1 - a * n2));
  if (!Number.isFinite(alpha1) || !Number.isFinite(alpha2)) return undefined;
  return { low: percentileSorted(sorted, alpha1), high: percentileSorted(sorted, alpha2) };
}

/**
 * A statistic of `n` questions given as resampling weights: `weights[i]` is how many times question `i` is
 * in the (re)sample (all 1 for the full sample, one 0 for a jackknife sample).
 */
export type WeightedStatistic = (weights: Readonly<Float64Array>) => number;

/**
 * Bootstrap CI of any statistic of `n` questions, resampling question indices (scipy's `bootstrap` over
 * paired data): each replicate draws `n` indices once and recomputes the same `statistic` the point
 * estimate uses, so the interval belongs to that estimate. BCa's acceleration uses the leave-one-question-out
 * jackknife. Same RNG stream as {@link bootstrapCi} (n draws per replicate), so for
 * `statistic = weighted mean of values` both give the same replicates up to floating-point summation order.
 *
 * Returns `undefined` (CI skipped, as unitxt does) for fewer than 2 questions, a non-finite estimate or
 * replicate, every replicate equal, or a degenerate BCa.
 * @example
 * // mean of two metric means, each over the questions where it is defined
 * bootstrapStatisticCi(4, (w) => (w[0] * 1 + w[1] * 0) / (w[0] + w[1]) / 2 + (w[2] * 0.5 + w[3]) / (w[2] + w[3]) / 2)
 */
export function bootstrapStatisticCi(
  n: number,
  statistic: WeightedStatistic,
  options: BootstrapOptions = {},
): ConfidenceInterval | undefined {
  const { resamples = 1000, confidence = 0.95, seed = 42, method = 'bca' } = options;
  if (n < 2) return undefined;
  const weights = new Float64Array(n).fill(1);
  const thetaHat = statistic(weights);
  if (!Number.isFinite(thetaHat)) return undefined;
  const random = options.random ?? mulberry32(seed);

  const boot: number[] = new Array<number>(resamples);
  for (let b = 0; b < resamples; b++) {
    weights.fill(0);
    for (let i = 0; i < n; i++) {
      const k = Math.floor(random() * n);
      weights[k] = (weights[k] as number) + 1;
    }
    const t = statistic(weights);
    if (!Number.isFinite(t)) return undefined;
    boot[b] = t;
  }
  if (boot.every((t) => t === boot[0])) return undefined;
  const sorted = [...boot].sort((x, y) => x - y);
  const alpha = (1 - confidence) / 2;
  if (method === 'percentile') {
    return { low: percentileSorted(sorted, alpha), high: percentileSorted(sorted, 1 - alpha) };
  }

  const jack: number[] = new Array<number>(n);
  weights.fill(1);
  for (let i = 0; i < n; i++) {
    weights[i] = 0;
    jack[i] = statistic(weights);
    weights[i] = 1;
  }
  if (!jack.every(Number.isFinite)) return undefined;
  return bcaInterval(boot, sorted, thetaHat, jack, alpha);
}
