import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../../shared/src/errors.js';
import {
  SearchParamsError,
  validateSearchParams,
} from '../../../shared/src/retrieval/search-params.js';
import type { SearchParams } from '../../../shared/src/vectorstores/types.js';

describe('validateSearchParams', () => {
  it('fills the vector defaults (ai4rag sentinels)', () => {
    // Act
    const p = validateSearchParams({ k: 3 });
    // Assess
    expect(p).toEqual({
      k: 3,
      includeScores: false,
      searchMode: 'vector',
      rankerStrategy: '',
      rankerK: 0,
      rankerAlpha: 1,
    });
  });

  it('accepts explicit sentinels for vector search', () => {
    // Act
    const p = validateSearchParams({ k: 1, rankerStrategy: '', rankerK: 0, rankerAlpha: 1 });
    // Assess
    expect(p.rankerStrategy).toBe('');
  });

  it('defaults rrf k to 60 and weighted alpha to 0.5', () => {
    // Act
    const rrf = validateSearchParams({ k: 5, searchMode: 'hybrid', rankerStrategy: 'rrf' });
    const weighted = validateSearchParams({
      k: 5,
      searchMode: 'hybrid',
      rankerStrategy: 'weighted',
    });
    // Assess
    expect([rrf.rankerK, rrf.rankerAlpha]).toEqual([60, 1]);
    expect([weighted.rankerK, weighted.rankerAlpha]).toEqual([0, 0.5]);
  });

  it('keeps explicit hybrid values and the filter', () => {
    // Act
    const p = validateSearchParams({
      k: 10,
      includeScores: true,
      searchMode: 'hybrid',
      rankerStrategy: 'weighted',
      rankerAlpha: 0,
      filter: { document_id: 'd1' },
    });
    // Assess
    expect(p).toEqual({
      k: 10,
      includeScores: true,
      searchMode: 'hybrid',
      rankerStrategy: 'weighted',
      rankerK: 0,
      rankerAlpha: 0,
      filter: { op: 'eq', path: ['document_id'], value: 'd1' },
    });
  });

  it('accepts normalized with sentinels only', () => {
    // Act
    const p = validateSearchParams({ k: 2, searchMode: 'hybrid', rankerStrategy: 'normalized' });
    // Assess
    expect([p.rankerStrategy, p.rankerK, p.rankerAlpha]).toEqual(['normalized', 0, 1]);
  });

  const bad: [string, SearchParams, RegExp][] = [
    ['k of 0', { k: 0 }, /k must be an integer/],
    ['a fractional k', { k: 2.5 }, /k must be an integer/],
    [
      'a ranker strategy on vector search',
      { k: 3, rankerStrategy: 'rrf' },
      /rankerStrategy must be ''/,
    ],
    ['a ranker k on vector search', { k: 3, rankerK: 60 }, /rankerK must be 0/],
    ['a ranker alpha on vector search', { k: 3, rankerAlpha: 0.5 }, /rankerAlpha must be 1/],
    [
      'hybrid without a strategy',
      { k: 3, searchMode: 'hybrid' },
      /one of rrf, weighted, normalized/,
    ],
    [
      'hybrid with the empty strategy',
      { k: 3, searchMode: 'hybrid', rankerStrategy: '' },
      /one of rrf/,
    ],
    ['rrf with k 0', { k: 3, searchMode: 'hybrid', rankerStrategy: 'rrf', rankerK: 0 }, /1\.\.100/],
    [
      'rrf with k 101',
      { k: 3, searchMode: 'hybrid', rankerStrategy: 'rrf', rankerK: 101 },
      /1\.\.100/,
    ],
    [
      'rrf with an alpha',
      { k: 3, searchMode: 'hybrid', rankerStrategy: 'rrf', rankerAlpha: 0.5 },
      /only allowed with the weighted/,
    ],
    [
      'weighted with a k',
      { k: 3, searchMode: 'hybrid', rankerStrategy: 'weighted', rankerK: 60 },
      /only allowed with the rrf/,
    ],
    [
      'weighted with alpha 1',
      { k: 3, searchMode: 'hybrid', rankerStrategy: 'weighted', rankerAlpha: 1 },
      /\[0, 1\)/,
    ],
    [
      'weighted with a negative alpha',
      { k: 3, searchMode: 'hybrid', rankerStrategy: 'weighted', rankerAlpha: -0.1 },
      /\[0, 1\)/,
    ],
    [
      'normalized with an alpha',
      { k: 3, searchMode: 'hybrid', rankerStrategy: 'normalized', rankerAlpha: 0.3 },
      /only allowed with the weighted/,
    ],
    ['an unknown mode', { k: 3, searchMode: 'graph' as never }, /searchMode must be/],
    ['a filter with a bad key', { k: 3, filter: { 'a b': 1 } }, /invalid filter/],
    [
      'a filter with an unknown operator',
      { k: 3, filter: { 'user.a': { regex: 'x' } } },
      /invalid filter: filter\.user\.a\.regex: unknown operator "regex"/,
    ],
  ];
  for (const [what, params, message] of bad) {
    it(`rejects ${what}`, () => {
      // Act
      const act = () => validateSearchParams(params);
      // Assess
      expect(act).toThrow(SearchParamsError);
      expect(act).toThrow(message);
    });
  }

  it('raises a ValidationError subclass', () => {
    expect(() => validateSearchParams({ k: -1 })).toThrow(ValidationError);
  });
});
