import { describe, expect, it } from 'vitest';
import { validateChunkingOptions } from '../../shared/src/chunking/index.js';
import {
  DEFAULT_CHUNKING,
  defaultRetrievalFor,
  LEXICAL_RETRIEVAL,
  SEMANTIC_RETRIEVAL,
} from '../../shared/src/defaults.js';
import { DEFAULT_EMBEDDING_MODEL } from '../../shared/src/embeddings/factory.js';
import { validateSearchParams } from '../../shared/src/retrieval/search-params.js';

describe('runtime defaults', () => {
  it('lets BM25 lead with the local lexical embedder and fuses with RRF for semantic models', () => {
    expect(defaultRetrievalFor(DEFAULT_EMBEDDING_MODEL)).toBe(LEXICAL_RETRIEVAL);
    expect(defaultRetrievalFor('local')).toBe(LEXICAL_RETRIEVAL);
    expect(defaultRetrievalFor('text-embedding-3-small')).toBe(SEMANTIC_RETRIEVAL);
    expect(LEXICAL_RETRIEVAL).toEqual({
      searchMode: 'hybrid',
      rankerStrategy: 'weighted',
      rankerK: 0,
      rankerAlpha: 0.2,
    });
    expect(SEMANTIC_RETRIEVAL).toEqual({
      searchMode: 'hybrid',
      rankerStrategy: 'rrf',
      rankerK: 60,
      rankerAlpha: 1,
    });
  });

  it.each([LEXICAL_RETRIEVAL, SEMANTIC_RETRIEVAL])(
    'passes the search-parameter rules: %j',
    (defaults) => {
      expect(() => validateSearchParams({ k: 5, ...defaults })).not.toThrow();
    },
  );

  it('uses a valid chunking configuration', () => {
    expect(() => validateChunkingOptions(DEFAULT_CHUNKING)).not.toThrow();
  });
});
