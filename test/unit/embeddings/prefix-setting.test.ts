import { describe, expect, it } from 'vitest';
import { parseEmbeddingPrefixes } from '../../../shared/src/embeddings/prefixes.js';
import { ValidationError } from '../../../shared/src/errors.js';

describe('parseEmbeddingPrefixes', () => {
  it.each([
    [undefined, undefined],
    ['', undefined],
    ['auto', undefined],
    ['none', {}],
    ['{"query":"q: ","document":"d: "}', { query: 'q: ', document: 'd: ' }],
    ['{"query":"q: "}', { query: 'q: ' }],
  ] as const)('reads %s', (value, expected) => {
    // Act / Assess
    expect(parseEmbeddingPrefixes(value)).toEqual(expected);
  });

  it.each(['off', '{"query": 1}', '{"passage": "p: "}', '["q"]'])(
    'rejects %s naming the setting',
    (value) => {
      // Act
      const call = () => parseEmbeddingPrefixes(value, 'AI4RAG_EMBEDDING_PREFIXES');
      // Assess
      expect(call).toThrow(ValidationError);
      expect(call).toThrow(/^AI4RAG_EMBEDDING_PREFIXES must be auto, none or JSON/);
    },
  );
});
