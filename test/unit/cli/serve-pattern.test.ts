import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { patternEnv } from '../../../bin/cli/serve.js';
import { ValidationError } from '../../../shared/src/errors.js';

const PATTERN = {
  name: 'Pattern3',
  settings: {
    vector_store_binding: {
      provider_type: 'pglite',
      collection_name: 'ai4rag_x_0123456789abcdef0123',
    },
    chunking: {
      method: 'recursive',
      chunk_size: 1024,
      chunk_overlap: 256,
      include_metadata: false,
    },
    embedding: { model_id: 'local/feature-hash-v1-384' },
    retrieval: {
      method: 'simple',
      number_of_chunks: 5,
      search_mode: 'hybrid',
      ranker_strategy: 'rrf',
      ranker_k: 60,
    },
    generation: { model_id: 'local/extractive-v1', temperature: 0.1, max_completion_tokens: 1024 },
  },
};

function write(content: string): string {
  const file = join(mkdtempSync(join(tmpdir(), 'ai4rag-pattern-')), 'pattern.json');
  writeFileSync(file, content);
  return file;
}

describe('serve --pattern', () => {
  it("serves the pattern's settings over the pattern's own index", () => {
    // Prepare
    const file = write(JSON.stringify(PATTERN));

    // Act
    const env = patternEnv(file);

    // Assess
    expect(env.AI4RAG_COLLECTION).toBe('ai4rag_x_0123456789abcdef0123');
    expect(JSON.parse(env.AI4RAG_SERVING_PATTERN as string)).toEqual(PATTERN);
  });

  it('keeps an explicit --collection', () => {
    // Act
    const env = patternEnv(write(JSON.stringify(PATTERN)), 'ai4rag_kb');

    // Assess
    expect(env.AI4RAG_COLLECTION).toBe('ai4rag_kb');
  });

  it.each([
    ['{ not json', 'not valid JSON'],
    [JSON.stringify({ settings: { retrieval: { method: 'simple' } } }), "not a pattern's settings"],
  ])('rejects %s with a clear error', (content, message) => {
    // Act / Assess
    expect(() => patternEnv(write(content))).toThrow(ValidationError);
    expect(() => patternEnv(write(content))).toThrow(message);
  });

  it('rejects a file that cannot be read', () => {
    // Act / Assess
    expect(() => patternEnv('/nonexistent/pattern.json')).toThrow('cannot read --pattern');
  });
});
