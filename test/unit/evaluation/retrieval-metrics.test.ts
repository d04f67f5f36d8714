import { describe, expect, it } from 'vitest';
import {
  distinctDocuments,
  meanMetrics,
  mrrAt,
  ndcgAt,
  questionMetrics,
  recallAt,
} from '../../../shared/src/evaluation/retrieval-metrics.js';

describe('retrieval metrics', () => {
  it('ranks documents by their best chunk', () => {
    expect(distinctDocuments(['a', 'b', 'a', 'c', 'b'])).toEqual(['a', 'b', 'c']);
  });

  it('computes recall@k as the share of gold documents in the first k distinct documents', () => {
    const gold = new Set(['b', 'd']);
    expect(recallAt(['a', 'b', 'c', 'd'], gold, 1)).toBe(0);
    expect(recallAt(['a', 'b', 'c', 'd'], gold, 2)).toBe(0.5);
    expect(recallAt(['a', 'b', 'c', 'd'], gold, 4)).toBe(1);
    expect(recallAt(['a'], new Set(), 1)).toBe(0);
  });

  it('computes MRR@k from the first gold document only within k', () => {
    expect(mrrAt(['x', 'y', 'g'], new Set(['g']), 10)).toBeCloseTo(1 / 3, 12);
    expect(mrrAt(['x', 'y', 'g'], new Set(['g']), 2)).toBe(0);
  });

  it('computes binary nDCG@k with the ideal ranking over min(|gold|, k)', () => {
    // gold at ranks 2 and 3: DCG = 1/log2(3) + 1/log2(4); IDCG = 1 + 1/log2(3)
    const expected = (1 / Math.log2(3) + 0.5) / (1 + 1 / Math.log2(3));
    expect(ndcgAt(['x', 'a', 'b'], new Set(['a', 'b']), 10)).toBeCloseTo(expected, 12);
    expect(ndcgAt(['a', 'b'], new Set(['a', 'b']), 10)).toBe(1);
    expect(ndcgAt(['x'], new Set(['a']), 10)).toBe(0);
  });

  it('scores duplicated chunks of one document once', () => {
    // Prepare
    const ranked = ['a', 'a', 'a', 'b'];
    // Act
    const m = questionMetrics(ranked, ['b']);
    // Assess
    expect(m).toEqual({
      'recall@1': 0,
      'recall@5': 1,
      'recall@10': 1,
      'mrr@10': 0.5,
      'ndcg@10': 1 / Math.log2(3),
    });
  });

  it('averages metrics over questions', () => {
    const m = meanMetrics([questionMetrics(['a'], ['a']), questionMetrics(['b'], ['a'])]);
    expect(m['recall@1']).toBe(0.5);
    expect(m['ndcg@10']).toBe(0.5);
    expect(meanMetrics([])['mrr@10']).toBe(0);
  });
});
