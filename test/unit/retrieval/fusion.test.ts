import { describe, expect, it } from 'vitest';
import { normalizedFuse, rrfFuse, weightedFuse } from '../../../shared/src/retrieval/fusion.js';

const list = (...pairs: [string, number][]) => pairs.map(([id, score]) => ({ id, score }));

describe('rrfFuse', () => {
  it('sums 1/(k + rank) over lists with ranks from 1', () => {
    // Prepare
    const dense = list(['a', 0.9], ['b', 0.8], ['c', 0.1]);
    const keyword = list(['c', 12], ['a', 5], ['d', 1]);
    // Act
    const fused = rrfFuse([dense, keyword], 60);
    // Assess
    expect(fused.map((f) => f.id)).toEqual(['a', 'c', 'b', 'd']);
    expect(fused[0]?.score).toBeCloseTo(1 / 61 + 1 / 62, 12);
    expect(fused[0]?.score).toBeCloseTo(0.032522475, 8);
    expect(fused[1]?.score).toBeCloseTo(0.032266459, 8);
    expect(fused[2]?.score).toBeCloseTo(0.016129032, 8);
    expect(fused[3]?.score).toBeCloseTo(0.015873016, 8);
  });

  it('defaults k to 60', () => {
    // Act
    const fused = rrfFuse([list(['a', 1])]);
    // Assess
    expect(fused).toEqual([{ id: 'a', score: 1 / 61 }]);
  });

  it('breaks score ties by best single rank, then by id', () => {
    // Prepare: with k = 0 every id scores exactly 1
    const lists = [list(['c', 9], ['a', 1]), list(['d', 9], ['a', 1]), list(['b', 9])];
    // Act
    const fused = rrfFuse(lists, 0);
    // Assess
    expect(fused.map((f) => [f.id, f.score])).toEqual([
      ['b', 1],
      ['c', 1],
      ['d', 1],
      ['a', 1],
    ]);
  });

  it('keys entries by id, so equal texts under different ids stay separate', () => {
    // Act
    const fused = rrfFuse([list(['x', 1], ['X', 1])], 60);
    // Assess
    expect(fused.map((f) => f.id)).toEqual(['x', 'X']);
  });

  it('rejects a negative k', () => {
    expect(() => rrfFuse([], -1)).toThrow(/RRF k/);
  });
});

describe('weightedFuse', () => {
  it('mixes min-max normalized scores with alpha on the dense side', () => {
    // Prepare
    const dense = list(['a', 0.9], ['b', 0.5], ['c', 0.1]);
    const keyword = list(['c', 12], ['d', 6], ['a', 3]);
    // Act
    const fused = weightedFuse(dense, keyword, 0.7);
    // Assess
    expect(fused.map((f) => f.id)).toEqual(['a', 'b', 'c', 'd']);
    expect(fused.map((f) => f.score)).toEqual([
      expect.closeTo(0.7, 12),
      expect.closeTo(0.35, 12),
      expect.closeTo(0.3, 12),
      expect.closeTo(0.1, 12),
    ]);
  });

  it('maps a list of equal scores to 1.0 and a missing entry to 0', () => {
    // Act
    const fused = weightedFuse(list(['a', 0.5], ['b', 0.5]), list(['c', 4]), 0.25);
    // Assess
    expect(fused).toEqual([
      { id: 'c', score: 0.75 },
      { id: 'a', score: 0.25 },
      { id: 'b', score: 0.25 },
    ]);
  });

  it('rejects alpha outside [0, 1]', () => {
    expect(() => weightedFuse([], [], 1.5)).toThrow(/alpha/);
    expect(() => weightedFuse([], [], Number.NaN)).toThrow(/alpha/);
  });
});

describe('normalizedFuse', () => {
  it('normalizes each list by (s - (mu - 3 sigma)) / 6 sigma and sums', () => {
    // Prepare
    const first = list(['a', 3], ['b', 2], ['c', 1]);
    const second = list(['c', 10], ['d', 10]);
    // Act
    const fused = normalizedFuse([first, second]);
    // Assess
    expect(fused.map((f) => f.id)).toEqual(['c', 'd', 'a', 'b']);
    expect(fused.map((f) => f.score)).toEqual([
      expect.closeTo(1.2958758548, 9),
      expect.closeTo(1, 12),
      expect.closeTo(0.7041241452, 9),
      expect.closeTo(0.5, 12),
    ]);
  });

  it('clips an outlier beyond 3 sigma to 1', () => {
    // Prepare: one 10 and ten 0s → z(10) = 3.16
    const items = list(
      ['top', 10],
      ...Array.from({ length: 10 }, (_, i): [string, number] => [`z${i}`, 0]),
    );
    // Act
    const fused = normalizedFuse([items]);
    // Assess
    expect(fused[0]).toEqual({ id: 'top', score: 1 });
    expect(fused[1]?.score).toBeCloseTo(0.4472953723, 9);
  });

  it('treats float noise around identical scores as sigma 0', () => {
    // Act
    const fused = normalizedFuse([list(['a', 0.1], ['b', 0.1], ['c', 0.1])]);
    // Assess
    expect(fused.map((f) => f.score)).toEqual([1, 1, 1]);
  });
});
