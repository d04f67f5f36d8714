import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../../shared/src/errors.js';
import {
  answerCorrectness,
  answerTokens,
  contextCorrectness,
  faithfulness,
  normalizeAnswer,
  tokenOverlap,
} from '../../../shared/src/evaluation/unitxt.js';

const ANSWER = 'Paris is the capital, with about 2 million people.';
const CHUNKS = [
  'France is a country in Western Europe.',
  'Paris is the capital and largest city of France.',
];
const GT = ['The capital is Paris, home to roughly 2.1 million residents.'];

describe('normalizeAnswer', () => {
  it('tokenizes the worked example answer into 8 tokens without the article', () => {
    // Act
    const tokens = answerTokens(ANSWER);

    // Assess
    expect(tokens).toEqual(['paris', 'is', 'capital', 'with', 'about', '2', 'million', 'people']);
  });

  it('deletes ASCII punctuation inside tokens: "2.1" becomes "21" and "U.S." becomes "us"', () => {
    // Act / Assess
    expect(normalizeAnswer('2.1')).toBe('21');
    expect(normalizeAnswer('U.S.')).toBe('us');
    expect(normalizeAnswer("capital's")).toBe('capitals');
  });

  it('removes the articles a, an and the as whole words only', () => {
    // Act / Assess
    expect(normalizeAnswer('A cat and an owl saw THE theatre')).toBe('cat and owl saw theatre');
  });

  it('keeps Unicode punctuation such as an em dash or a curly apostrophe', () => {
    // Act / Assess
    expect(normalizeAnswer('Paris—the capital’s heart')).toBe('paris— capital’s heart');
  });

  it('treats accented letters as word characters around articles, like Python re', () => {
    // Act / Assess
    expect(normalizeAnswer('éa café a thé')).toBe('éa café thé');
  });

  it('collapses whitespace, including a no-break space, and yields no token for an empty string', () => {
    // Act / Assess
    expect(normalizeAnswer('  x \t\n y\u00a0z  ')).toBe('x y z');
    expect(normalizeAnswer('x\u001cy\u0085z\ufeffw')).toBe('x y z\ufeffw');
    expect(answerTokens('')).toEqual([]);
    expect(answerTokens(' the . ')).toEqual([]);
  });
});

describe('tokenOverlap', () => {
  it('scores the worked example: precision 0.5, recall 4/9, f1 8/17', () => {
    // Act
    const s = tokenOverlap(ANSWER, GT);

    // Assess
    expect(s.precision).toBe(0.5);
    expect(s.recall).toBeCloseTo(4 / 9, 15);
    expect(s.f1).toBeCloseTo(8 / 17, 15);
    expect(Number(s.f1.toFixed(4))).toBe(0.4706);
  });

  it('counts repeated tokens as a multiset intersection', () => {
    // Act
    const s = tokenOverlap('yes yes yes no', ['yes no no']);

    // Assess: common = {yes: 1, no: 1}
    expect(s.precision).toBe(0.5);
    expect(s.recall).toBeCloseTo(2 / 3, 15);
  });

  it('takes each maximum independently across references', () => {
    // Prepare: ref 1 gives P 1/4, R 1; ref 2 gives P 1, R 1/2
    const refs = ['red', 'red blue green yellow purple orange pink white'];

    // Act
    const s = tokenOverlap('red blue green yellow', refs);

    // Assess
    expect(s.precision).toBe(1);
    expect(s.recall).toBe(1);
    expect(s.f1).toBeCloseTo(2 / 3, 15);
  });

  it('scores 0 for an empty answer or no common token', () => {
    // Act / Assess
    expect(tokenOverlap('', ['anything'])).toEqual({ precision: 0, recall: 0, f1: 0 });
    expect(tokenOverlap('the', ['the'])).toEqual({ precision: 0, recall: 0, f1: 0 });
    expect(tokenOverlap('blue', ['red'])).toEqual({ precision: 0, recall: 0, f1: 0 });
  });

  it('rejects an empty reference list with a ValidationError', () => {
    // Act / Assess
    expect(() => tokenOverlap('x', [])).toThrow(ValidationError);
    expect(() => tokenOverlap('x', [])).toThrow(/at least one reference/);
  });
});

describe('ai4rag metrics', () => {
  it('gives faithfulness 0.375 on the worked example (best single chunk)', () => {
    // Act / Assess
    expect(faithfulness(ANSWER, CHUNKS)).toBe(0.375);
  });

  it('gives answer_correctness 4/9 on the worked example', () => {
    // Act
    const v = answerCorrectness(ANSWER, GT);

    // Assess
    expect(v).toBeCloseTo(4 / 9, 15);
    expect(Number(v.toFixed(4))).toBe(0.4444);
  });

  it('gives context_correctness 1/rank over chunks with duplicates kept', () => {
    // Act / Assess
    expect(contextCorrectness(['doc_b', 'doc_a', 'doc_a'], ['doc_a'])).toBe(0.5);
    expect(contextCorrectness(['doc_b', 'doc_b', 'doc_c', 'doc_a'], ['doc_a', 'doc_c'])).toBe(
      1 / 3,
    );
    expect(contextCorrectness(['doc_b'], ['doc_a'])).toBe(0);
    expect(contextCorrectness([], ['doc_a'])).toBe(0);
  });
});
