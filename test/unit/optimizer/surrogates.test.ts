import { describe, expect, it } from 'vitest';
import { fitGam, type GamTerm } from '#shared/optimizer/gam.js';
import { tpeScores } from '#shared/optimizer/tpe.js';

describe('fitGam', () => {
  it('recovers an exactly additive function on a full factorial', () => {
    // Prepare: factor (3 levels) + spline (4 ordered levels)
    const terms: GamTerm[] = [
      { kind: 'factor', levels: 3 },
      { kind: 'spline', levels: 4 },
    ];
    const a = [0, 0.3, 0.1];
    const b = [0, 0.1, 0.15, 0.12];
    const rows: number[][] = [];
    const y: number[] = [];
    for (let i = 0; i < 3; i++) {
      for (let j = 0; j < 4; j++) {
        rows.push([i, j]);
        y.push(0.2 + (a[i] as number) + (b[j] as number));
      }
    }
    // Act
    const fit = fitGam(terms, rows, y);
    // Assess
    expect(fit.lambda).toBe(0.001);
    rows.forEach((r, k) => {
      expect(fit.predict(r)).toBeCloseTo(y[k] as number, 3);
    });
  });

  it('falls back to the largest λ when every λ leaves less than one residual degree of freedom', () => {
    // Prepare: one observation
    const terms: GamTerm[] = [{ kind: 'factor', levels: 2 }];
    // Act
    const fit = fitGam(terms, [[0]], [0.7]);
    // Assess
    expect(fit.lambda).toBe(100);
    expect(fit.predict([0])).toBeCloseTo(0.7, 12);
    expect(fit.predict([1])).toBeCloseTo(0.7, 12);
  });

  it('predicts the mean of an unseen level (shrinkage to zero effect)', () => {
    // Prepare: level 2 never observed
    const terms: GamTerm[] = [{ kind: 'factor', levels: 3 }];
    const rows = [[0], [0], [1], [1]];
    const y = [0.2, 0.2, 0.6, 0.6];
    // Act
    const fit = fitGam(terms, rows, y);
    // Assess
    expect(fit.predict([2])).toBeCloseTo(0.4, 6);
    expect(fit.predict([1])).toBeGreaterThan(fit.predict([2]));
  });
});

describe('tpeScores', () => {
  it('scores levels by the log ratio of good and bad densities with the prior', () => {
    // Prepare: 4 observations → 1 good (γ 0.15 → ceil 0.6 = 1), 3 bad; prior weight 2 over 2 levels
    const columns = [{ levels: 2, ordinal: false }];
    const rows = [[0], [1], [1], [0]];
    const y = [0.9, 0.1, 0.2, 0.3];
    // Act
    const s = tpeScores(columns, rows, y, [[0], [1]]);
    // Assess: l = (1+1)/3, (0+1)/3; g = (1+1)/5, (2+1)/5
    expect(s[0]).toBeCloseTo(Math.log(2 / 3 / (2 / 5)), 12);
    expect(s[1]).toBeCloseTo(Math.log(1 / 3 / (3 / 5)), 12);
  });

  it('spreads weight to adjacent ordinal levels when neighbourWeight is set', () => {
    // Prepare
    const columns = [{ levels: 3, ordinal: true }];
    const rows = [[0], [2]];
    const y = [1, 0];
    // Act
    const s = tpeScores(columns, rows, y, [[0], [1], [2]], {
      gamma: 0.5,
      priorWeight: 3,
      neighbourWeight: 0.25,
    });
    // Assess: good = [0.75, 0.25, 0] + 1, bad = [0, 0.25, 0.75] + 1, both over 4
    expect(Array.from(s)).toEqual([Math.log(1.75 / 1), Math.log(1.25 / 1.25), Math.log(1 / 1.75)]);
  });
});
