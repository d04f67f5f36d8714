import { describe, expect, it } from 'vitest';
import {
  BM25_DIM,
  bm25DocWeights,
  bm25Idf,
  fnv1a32,
  sparseLiteral,
  termFrequencies,
  termId,
} from '../../../shared/src/vectorstores/pgvector/bm25.js';

describe('BM25 helpers', () => {
  it('hashes with 32-bit FNV-1a over UTF-8', () => {
    expect(fnv1a32('')).toBe(2166136261);
    expect(fnv1a32('a')).toBe(3826002220);
    expect(fnv1a32('foobar')).toBe(0xbf9cf968);
  });

  it('maps terms to 1-based ids below BM25_DIM', () => {
    expect(termId('a')).toBe((3826002220 % (BM25_DIM - 1)) + 1);
    expect(termId('a')).toBeGreaterThanOrEqual(1);
  });

  it('counts term frequencies by id', () => {
    // Act
    const tf = termFrequencies(['cat', 'dog', 'cat']);
    // Assess
    expect(tf.get(termId('cat'))).toBe(2);
    expect(tf.get(termId('dog'))).toBe(1);
  });

  it('computes idf and document weights with the BM25 formula', () => {
    // Act
    const w = bm25DocWeights(new Map([[7, 2]]), 10, 5, 0.9, 0.4);
    // Assess
    expect(bm25Idf(10, 1)).toBeCloseTo(1.9924301647, 9);
    expect(w.get(7)).toBeCloseTo(1.1656441718, 9);
  });

  it('writes sorted sparsevec literals without zeros', () => {
    expect(
      sparseLiteral(
        new Map([
          [5, 0.5],
          [2, 1],
          [9, 0],
        ]),
      ),
    ).toBe('{2:1,5:0.5}/1000000000');
    expect(sparseLiteral(new Map())).toBe('{}/1000000000');
  });
});
