import { describe, expect, it } from 'vitest';
import {
  bootstrapCi,
  bootstrapStatisticCi,
  inverseNormalCdf,
  normalCdf,
} from '../../../shared/src/evaluation/bootstrap.js';
import { mulberry32 } from '../../../shared/src/util/random.js';

/** A generator replaying fixed uniforms, cycling. */
function replay(values: number[]): () => number {
  let i = 0;
  return () => values[i++ % values.length] as number;
}

/** NumPy 'linear' percentile, written independently of the module. */
function npPercentile(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  const h = (s.length - 1) * q;
  const i = Math.floor(h);
  const next = s[Math.min(i + 1, s.length - 1)] as number;
  return (s[i] as number) + (h - i) * (next - (s[i] as number));
}

describe('normal distribution helpers', () => {
  it('inverts the normal CDF to 1e-9 at known quantiles', () => {
    // Act / Assess
    expect(inverseNormalCdf(0.975)).toBeCloseTo(1.959963984540054, 9);
    expect(inverseNormalCdf(0.025)).toBeCloseTo(-1.959963984540054, 9);
    expect(inverseNormalCdf(0.5)).toBe(0);
    expect(inverseNormalCdf(0.8413447460685429)).toBeCloseTo(1, 9);
    expect(inverseNormalCdf(1e-10)).toBeCloseTo(-6.361340902404056, 9);
    expect(inverseNormalCdf(0)).toBe(Number.NEGATIVE_INFINITY);
    expect(inverseNormalCdf(1)).toBe(Number.POSITIVE_INFINITY);
  });

  it('computes the normal CDF accurately in the body and the tail', () => {
    // Act / Assess
    expect(normalCdf(1)).toBeCloseTo(0.8413447460685429, 14);
    expect(normalCdf(-3)).toBeCloseTo(0.0013498980316301, 14);
    expect(normalCdf(-6.361340902404056) / 1e-10).toBeCloseTo(1, 9);
    expect(normalCdf(0)).toBe(0.5);
  });
});

describe('bootstrapCi', () => {
  it('returns the same interval for the same seed', () => {
    // Prepare
    const xs = [0.1, 0.4, 0.35, 0.8, 0.9, 0.05, 0.6];

    // Act
    const a = bootstrapCi(xs, { seed: 7 });
    const b = bootstrapCi(xs, { seed: 7 });

    // Assess
    expect(a).toEqual(b);
    expect(a).toBeDefined();
  });

  it('brackets the mean of a skewed sample', () => {
    // Prepare
    const xs = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 5];
    const mean = 7 / 11;

    // Act
    const ci = bootstrapCi(xs);

    // Assess
    expect(ci).toBeDefined();
    expect(ci?.low).toBeLessThanOrEqual(mean);
    expect(ci?.high).toBeGreaterThanOrEqual(mean);
    expect(ci?.low).toBeGreaterThanOrEqual(0);
  });

  it('skips the interval for one value, constant values, or only NaN besides one value', () => {
    // Act / Assess
    expect(bootstrapCi([0.5])).toBeUndefined();
    expect(bootstrapCi([0.3, 0.3, 0.3])).toBeUndefined();
    expect(bootstrapCi([0.3, Number.NaN, Number.NaN])).toBeUndefined();
    expect(bootstrapCi([])).toBeUndefined();
  });

  it('matches a hand-computed percentile interval with injected resample draws', () => {
    // Prepare: draws map to indices floor(r·3): [0,0,0] [0,1,2] [2,2,1] [2,2,2] → means 1, 2, 8/3, 3
    const draws = [0, 0, 0, 0, 0.4, 0.7, 0.7, 0.7, 0.4, 0.7, 0.7, 0.7];

    // Act
    const ci = bootstrapCi([1, 2, 3], {
      method: 'percentile',
      resamples: 4,
      confidence: 0.5,
      random: replay(draws),
    });

    // Assess: positions 0.75 and 2.25 in [1, 2, 8/3, 3]
    expect(ci?.low).toBeCloseTo(1.75, 14);
    expect(ci?.high).toBeCloseTo(8 / 3 + 0.25 * (3 - 8 / 3), 14);
  });

  it('matches an independent BCa computation on the same resamples', () => {
    // Prepare
    const xs = [0, 0.2, 0.2, 0.5, 1, 0.9];
    const n = xs.length;
    const resamples = 200;
    const gen = mulberry32(123);
    const means: number[] = [];
    for (let b = 0; b < resamples; b++) {
      let s = 0;
      for (let i = 0; i < n; i++) s += xs[Math.floor(gen() * n)] as number;
      means.push(s / n);
    }
    const theta = xs.reduce((s, v) => s + v, 0) / n;
    const f =
      (means.filter((m) => m < theta).length + means.filter((m) => m <= theta).length) /
      (2 * resamples);
    const z0 = inverseNormalCdf(f);
    const jack = xs.map(
      (_, i) => xs.filter((__, j) => j !== i).reduce((s, v) => s + v, 0) / (n - 1),
    );
    const jbar = jack.reduce((s, v) => s + v, 0) / n;
    const u = jack.map((t) => (n - 1) * (jbar - t));
    const accel =
      u.reduce((s, v) => s + v ** 3, 0) /
      n ** 3 /
      (6 * (u.reduce((s, v) => s + v ** 2, 0) / n ** 2) ** 1.5);
    const z = inverseNormalCdf(0.05);
    const level = (zz: number) => normalCdf(z0 + (z0 + zz) / (1 - accel * (z0 + zz)));

    // Act
    const ci = bootstrapCi(xs, { resamples, confidence: 0.9, seed: 123 });

    // Assess
    expect(ci?.low).toBeCloseTo(npPercentile(means, level(z)), 12);
    expect(ci?.high).toBeCloseTo(npPercentile(means, level(-z)), 12);
    expect(ci?.low).not.toBeCloseTo(npPercentile(means, 0.05), 6);
  });
});

describe('bootstrapStatisticCi', () => {
  const data = [0.1, 0.9, 0.4, 0.4, 1, 0, 0.75, 0.3, 0.6, 0.2];
  const weightedMean = (w: Readonly<Float64Array>) => {
    let s = 0;
    let n = 0;
    data.forEach((v, i) => {
      s += (w[i] as number) * v;
      n += w[i] as number;
    });
    return s / n;
  };

  it.each(['bca', 'percentile'] as const)(
    'gives bootstrapCi’s %s interval when the statistic is the mean (same question draws)',
    (method) => {
      // Act
      const general = bootstrapStatisticCi(data.length, weightedMean, { seed: 7, method });
      const plain = bootstrapCi(data, { seed: 7, method });

      // Assess
      expect(general?.low).toBeCloseTo(plain?.low as number, 12);
      expect(general?.high).toBeCloseTo(plain?.high as number, 12);
    },
  );

  it('skips the interval for one question, a constant statistic, or a non-finite one', () => {
    // Act / Assess
    expect(bootstrapStatisticCi(1, weightedMean)).toBeUndefined();
    expect(bootstrapStatisticCi(5, () => 0.5)).toBeUndefined();
    expect(bootstrapStatisticCi(5, (w) => ((w[0] as number) > 0 ? 1 : Number.NaN))).toBeUndefined();
  });
});
