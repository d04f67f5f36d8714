import { describe, expect, it } from 'vitest';
import { CollectionNameError } from '../../../shared/src/vectorstores/errors.js';
import {
  auxiliaryName,
  quoteIdent,
  resolveCollectionName,
} from '../../../shared/src/vectorstores/naming.js';

describe('resolveCollectionName', () => {
  it('generates ai4rag_<UTC timestamp>_<8 random chars> when no name is given', () => {
    // Prepare
    const now = new Date(Date.UTC(2026, 0, 2, 3, 4, 5));
    const seq = [0, 0.999, 0.5, 0.03, 0, 0, 0, 0];
    let i = 0;
    // Act
    const name = resolveCollectionName(undefined, now, () => seq[i++] ?? 0);
    // Assess
    expect(name).toBe('ai4rag_20260102030405_a9sbaaaa');
  });

  it('sanitizes a supplied name to [A-Za-z0-9_] and keeps its case', () => {
    expect(resolveCollectionName('ai4rag-My.coll ection')).toBe('ai4rag_My_coll_ection');
  });

  it('refuses a name longer than 63 characters, showing where it would be cut', () => {
    // Arrange
    const name = `ai4rag_${'x'.repeat(300)}`;

    // Act + Assess
    expect(() => resolveCollectionName(name)).toThrow(CollectionNameError);
    expect(() => resolveCollectionName(name)).toThrow(
      `is 307 characters; at most 63 are kept, so it would be cut to "ai4rag_${'x'.repeat(56)}"`,
    );
    expect(resolveCollectionName(`ai4rag_${'x'.repeat(56)}`)).toHaveLength(63);
  });

  it('refuses names with non-ASCII characters, which would share ai4rag___', () => {
    // Act + Assess
    for (const name of ['ai4rag_日本', 'ai4rag_中国']) {
      expect(() => resolveCollectionName(name)).toThrow(
        `collection name "${name}" would be stored as "ai4rag___", which every name differing only in its non-ASCII characters shares`,
      );
    }
    // The name an earlier version stored it under (SHA-1 suffix) stays usable as given.
    expect(() => resolveCollectionName('ai4rag_日本')).toThrow('"ai4rag____0fcdbe47"');
    expect(resolveCollectionName('ai4rag____0fcdbe47')).toBe('ai4rag____0fcdbe47');
  });

  it('rejects a name that does not start with ai4rag', () => {
    expect(() => resolveCollectionName('my_ai4rag')).toThrow(CollectionNameError);
    expect(() => resolveCollectionName('')).toThrow(/must start with 'ai4rag'/);
  });
});

describe('quoteIdent', () => {
  it('lower-cases and double-quotes a safe identifier', () => {
    expect(quoteIdent('ai4rag_Docs')).toBe('"ai4rag_docs"');
  });

  it('rejects quotes, spaces, empty and over-long identifiers', () => {
    for (const bad of ['a"b', 'a b', '', 'x'.repeat(64), 'drop;table']) {
      expect(() => quoteIdent(bad)).toThrow(CollectionNameError);
    }
  });
});

describe('auxiliaryName', () => {
  it('appends 8 hex of sha1(name) and the suffix', () => {
    expect(auxiliaryName('ai4rag_docs', 't')).toBe('ai4rag_docs_3f82c91c_t');
  });

  it('stays within 63 characters and distinguishes names sharing a 50-char prefix', () => {
    // Prepare
    const a = `ai4rag_${'p'.repeat(50)}_one`;
    const b = `ai4rag_${'p'.repeat(50)}_two`;
    // Act
    const [na, nb] = [auxiliaryName(a, 'd'), auxiliaryName(b, 'd')];
    // Assess
    expect(na).toHaveLength(61);
    expect(na).not.toBe(nb);
    expect(quoteIdent(na)).toBe(`"${na}"`);
  });
});
