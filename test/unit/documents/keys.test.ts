import { describe, expect, it } from 'vitest';
import { buildKeyIndex, documentKeyVariants, matchDocumentKey } from '#shared/documents/index.js';

describe('documentKeyVariants', () => {
  it.each([
    ['guide/intro.md', ['guide/intro.md', 'guide/intro']],
    ['Report.PDF', ['Report.PDF', 'Report']],
    ['Super_Bowl_50', ['Super_Bowl_50']],
    ['St._Louis', ['St._Louis']],
    ['v1.2/notes', ['v1.2/notes']],
    ['.md', ['.md']],
  ])('gives the variants of %s', (key, expected) => {
    // Act
    const variants = documentKeyVariants(key);

    // Assess
    expect(variants).toEqual(expected);
  });
});

describe('matchDocumentKey', () => {
  const keys = [
    'guide/intro.md',
    'intro.md',
    'faq.txt',
    'faq.md',
    'faq',
    'a/notes.md',
    'a/notes.txt',
  ];

  it.each([
    ['guide/intro', 'guide/intro.md'],
    ['guide/intro.md', 'guide/intro.md'],
    ['intro.md', 'intro.md'],
    ['intro', 'intro.md'],
    ['faq', 'faq'],
    ['faq.txt', 'faq.txt'],
  ])('matches %s to %s', (benchmarkKey, expected) => {
    // Act
    const match = matchDocumentKey(benchmarkKey, keys);

    // Assess
    expect(match).toBe(expected);
  });

  it.each(['a/notes', 'missing', 'guide/intro.txt', 'Intro'])(
    'returns undefined for the ambiguous or unknown key %s',
    (benchmarkKey) => {
      // Act
      const match = matchDocumentKey(benchmarkKey, keys);

      // Assess
      expect(match).toBeUndefined();
    },
  );

  it('indexes every unambiguous variant for O(1) look-ups', () => {
    // Act
    const index = buildKeyIndex(['x/one.md', 'two.txt', 'two.md', 'three']);

    // Assess
    expect([...index.entries()].sort()).toEqual([
      ['three', 'three'],
      ['two.md', 'two.md'],
      ['two.txt', 'two.txt'],
      ['x/one', 'x/one.md'],
      ['x/one.md', 'x/one.md'],
    ]);
  });
});
