import { describe, expect, it } from 'vitest';
import { buildTermStats } from '../../../shared/src/generation/term-stats.js';

describe('buildTermStats', () => {
  it('computes the smoothed BM25 idf over analyzed terms, counting a term once per text', () => {
    // Prepare
    const texts = ['The cat sat with cats.', 'A dog sat.', 'Cats!'];
    // Act
    const stats = buildTermStats(texts);
    // Assess
    expect(stats.documents).toBe(3);
    expect(stats.idf('cat')).toBeCloseTo(Math.log(1 + 1.5 / 2.5), 12);
    expect(stats.idf('dog')).toBeCloseTo(Math.log(1 + 2.5 / 1.5), 12);
    expect(stats.idf('sat')).toBeCloseTo(Math.log(1.6), 12);
  });

  it('gives an unknown term the maximum idf', () => {
    // Prepare
    const stats = buildTermStats(['The cat sat.', 'A dog sat.']);
    // Act
    const unknown = stats.idf('mongolia');
    // Assess
    expect(unknown).toBeCloseTo(Math.log(1 + 2.5 / 0.5), 12);
    expect(unknown).toBeGreaterThan(stats.idf('cat'));
  });

  it('keeps a positive idf for a term found in every text', () => {
    // Prepare / Act
    const stats = buildTermStats(['river one', 'river two']);
    // Assess
    expect(stats.idf('river')).toBeCloseTo(Math.log(1 + 0.5 / 2.5), 12);
  });

  it('reads any iterable once, such as a generator', () => {
    // Prepare
    function* texts() {
      yield 'alpha beta';
      yield 'beta gamma';
    }
    // Act
    const stats = buildTermStats(texts());
    // Assess
    expect(stats.documents).toBe(2);
    expect(stats.idf('beta')).toBeCloseTo(Math.log(1 + 0.5 / 2.5), 12);
  });

  it('handles an empty corpus', () => {
    // Prepare / Act
    const stats = buildTermStats([]);
    // Assess
    expect(stats.documents).toBe(0);
    expect(stats.idf('anything')).toBeCloseTo(Math.log(2), 12);
  });
});
