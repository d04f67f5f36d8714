import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../../shared/src/errors.js';
import { termStatsFromCounts } from '../../../shared/src/generation/term-stats.js';
import { rm3Expand, rm3Options, rm3QueryText } from '../../../shared/src/retrieval/rm3.js';
import { analyze } from '../../../shared/src/text/analyzer.js';

// A tiny corpus: two feedback documents of the query 'cat food', with first-pass scores 2 and 1.
// d1 'cat food cat fish': tf cat 2, food 1, fish 1 (|d|₁ 4); d2 'dog food bones': dog, food, bone 1 each (3).
const FEEDBACK = [
  { text: 'The cat food, cat fish', score: 2 },
  { text: 'dog food bones', score: 1 },
];

function rounded(terms: { term: string; weight: number; word: string }[]) {
  return terms.map((t) => [t.term, Number(t.weight.toFixed(6)), t.word]);
}

describe('rm3Expand', () => {
  it('interpolates the unit-L1 query with the relevance model (Anserini defaults)', () => {
    // Prepare: rm = cat 2/4·2 = 1, food 1/4·2 + 1/3·1 = 5/6, fish 1/2, dog 1/3, bone 1/3 (sum 3);
    // 0.5·q + 0.5·rm/3: cat 1/4 + 1/6 = 5/12, food 1/4 + 5/36 = 7/18, fish 1/12, bone = dog = 1/18
    // Act
    const terms = rm3Expand('cat food', FEEDBACK);
    // Assess: ties (bone, dog) by term; 'bone' is written back as the word seen, 'bones'
    expect(rounded(terms)).toEqual([
      ['cat', 0.416667, 'cat'],
      ['food', 0.388889, 'food'],
      ['fish', 0.083333, 'fish'],
      ['bone', 0.055556, 'bones'],
      ['dog', 0.055556, 'dog'],
    ]);
    expect(terms.reduce((s, t) => s + t.weight, 0)).toBeCloseTo(1, 12);
  });

  it('prunes the relevance model to fbTerms terms before normalising', () => {
    // Prepare: top 3 of rm: cat 1, food 5/6, fish 1/2 (sum 7/3) → 3/7, 5/14, 3/14
    // Act
    const terms = rm3Expand('cat food', FEEDBACK, { fbTerms: 3 });
    // Assess: cat 1/4 + 3/14 = 13/28, food 1/4 + 5/28 = 3/7, fish 3/28
    expect(rounded(terms)).toEqual([
      ['cat', 0.464286, 'cat'],
      ['food', 0.428571, 'food'],
      ['fish', 0.107143, 'fish'],
    ]);
  });

  it('uses only the first fbDocs documents and weighs the query by originalQueryWeight', () => {
    // Prepare: d1 only: rm = cat 1/2, food 1/4, fish 1/4; λ = 0.8
    // Act
    const terms = rm3Expand('cat food', FEEDBACK, { fbDocs: 1, originalQueryWeight: 0.8 });
    // Assess: cat 0.4 + 0.1, food 0.4 + 0.05, fish 0.05
    expect(rounded(terms)).toEqual([
      ['cat', 0.5, 'cat'],
      ['food', 0.45, 'food'],
      ['fish', 0.05, 'fish'],
    ]);
  });

  it('drops feedback terms found in more than 10 % of the corpus when term statistics are given', () => {
    // Prepare: 'food' is in 50 of 100 chunks, everything else in 1; the query keeps it
    const stats = termStatsFromCounts(100, (t) => (t === 'food' ? 50 : 1));
    // Act: d1 cat 2, fish 1 (3); d2 dog 1, bone 1 (2): rm cat 4/3, fish 2/3, dog 1/2, bone 1/2 (sum 3)
    const terms = rm3Expand('cat food', FEEDBACK, {}, stats);
    // Assess: cat 1/4 + 2/9, food 1/4, fish 1/9, bone = dog = 1/12
    expect(rounded(terms)).toEqual([
      ['cat', 0.472222, 'cat'],
      ['food', 0.25, 'food'],
      ['fish', 0.111111, 'fish'],
      ['bone', 0.083333, 'bones'],
      ['dog', 0.083333, 'dog'],
    ]);
  });

  it('returns the query alone when no feedback document has a usable term', () => {
    expect(rounded(rm3Expand('cats', [{ text: 'a of the', score: 3 }]))).toEqual([
      ['cat', 0.5, 'cats'],
    ]);
  });

  it.each([
    [{ fbDocs: 0 }, 'rm3 fbDocs must be an integer ≥ 1, got 0'],
    [{ fbTerms: 1.5 }, 'rm3 fbTerms must be an integer ≥ 1, got 1.5'],
    [{ originalQueryWeight: 2 }, 'rm3 originalQueryWeight must be in [0, 1], got 2'],
  ])('rejects %j', (options, message) => {
    expect(() => rm3Options(options)).toThrow(new ValidationError(message));
  });
});

describe('rm3QueryText', () => {
  it('repeats each word in proportion to its weight, and analyzes back to exactly the terms', () => {
    // Prepare: weights 5/12, 7/18, 1/12, 1/18, 1/18 → 20, round(18.67) 19, 4, round(2.67) 3, 3
    const terms = rm3Expand('cat food', FEEDBACK);
    // Act
    const text = rm3QueryText(terms);
    // Assess
    const counts = new Map<string, number>();
    for (const t of analyze(text)) counts.set(t, (counts.get(t) ?? 0) + 1);
    expect([...counts]).toEqual([
      ['cat', 20],
      ['food', 19],
      ['fish', 4],
      ['bone', 3],
      ['dog', 3],
    ]);
    expect(text.startsWith('cat cat')).toBe(true);
    expect(text).toContain('bones bones bones dog');
  });

  it('is empty for an empty expansion', () => {
    expect(rm3QueryText([])).toBe('');
  });
});
