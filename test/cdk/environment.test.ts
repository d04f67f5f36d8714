// Every function's environment, per configuration: the functions that write or read the knowledge-base collection
// agree on its embedding model, chunking and serving pattern (one source of truth), reach the store they need and
// the model endpoints, and nothing else carries them.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  FUNCTION_IDS,
  INDEX_FUNCTION_ID,
  KNOWLEDGE_BASE_FUNCTIONS,
  STREAM_FUNCTION_ID,
} from '../../lib/ai4rag-stack.js';
import { byConstructId, synthesize } from './template.js';

const PATTERN_SETTINGS = {
  vector_store_binding: { provider_type: 'pgvector', collection_name: 'ai4rag_p2' },
  chunking: { method: 'recursive', chunk_size: 384, chunk_overlap: 32 },
  embedding: { model_id: 'text-embedding-3-small' },
  retrieval: { method: 'simple', number_of_chunks: 4, search_mode: 'vector' },
  generation: {
    model_id: 'gpt-4o-mini',
    temperature: 0,
    max_completion_tokens: 300,
    context_template_text: '{document}',
    user_message_text: '{reference_documents}\n{question}',
    system_message_text: 'Be brief.',
    language: { code: 'en', name: 'English' },
  },
};

function patternFile(): string {
  const file = join(mkdtempSync(join(tmpdir(), 'ai4rag-env-')), 'pattern.json');
  writeFileSync(file, JSON.stringify({ name: 'P', iteration: 1, settings: PATTERN_SETTINGS }));
  return file;
}

type Env = Record<string, unknown>;

function environments(context: Record<string, unknown>, withIndex: boolean): Record<string, Env> {
  const { resources } = synthesize(context);
  const out: Record<string, Env> = {};
  for (const id of [
    ...FUNCTION_IDS,
    STREAM_FUNCTION_ID,
    ...(withIndex ? [INDEX_FUNCTION_ID] : []),
  ]) {
    const { properties } = byConstructId(resources, id);
    out[id] = ((properties.Environment as { Variables?: Env } | undefined)?.Variables ?? {}) as Env;
  }
  return out;
}

const CONFIGURATIONS = [
  {
    name: 'pgvector, local models',
    context: () => ({}),
    embeddingModel: 'local',
    store: 'pgvector',
    pattern: false,
  },
  {
    name: 'pgvector, an OpenAI-compatible endpoint and a serving pattern',
    context: () => ({
      openaiBaseUrl: 'https://models.example.com/v1',
      servingPattern: patternFile(),
    }),
    embeddingModel: 'text-embedding-3-small',
    store: 'pgvector',
    pattern: true,
  },
  {
    name: 'Zilliz, local models',
    context: () => ({ vectorStore: 'zilliz', zillizUri: 'https://example.zillizcloud.com' }),
    embeddingModel: 'local',
    store: 'milvus',
    pattern: false,
  },
] as const;

describe.each(CONFIGURATIONS)('function environments: $name', (c) => {
  const env = environments(c.context(), c.store === 'pgvector');
  // The scheduled index step (pgvector only) opens the knowledge base like its writers.
  const kb = [...KNOWLEDGE_BASE_FUNCTIONS, ...(c.store === 'pgvector' ? [INDEX_FUNCTION_ID] : [])];

  it('gives every knowledge-base function the same collection, store, embedding model and pattern', () => {
    const agreed = (e: Env) => ({
      collection: e.AI4RAG_COLLECTION,
      store: e.AI4RAG_STORE,
      embeddingModel: e.AI4RAG_EMBEDDING_MODEL,
      pattern: e.AI4RAG_SERVING_PATTERN,
    });
    const expected = {
      collection: 'ai4rag_default',
      store: c.store,
      embeddingModel: c.embeddingModel,
      pattern: c.pattern ? JSON.stringify({ name: 'P', settings: PATTERN_SETTINGS }) : undefined,
    };
    for (const id of kb) expect(agreed(env[id] ?? {}), id).toEqual(expected);
  });

  it('lets every knowledge-base function reach the store and the model endpoint', () => {
    for (const id of kb) {
      const e = env[id] ?? {};
      if (c.store === 'pgvector') {
        expect(
          Object.keys(e)
            .filter((k) => k.startsWith('PGVECTOR_'))
            .sort(),
          id,
        ).toEqual(['PGVECTOR_DB', 'PGVECTOR_HOST', 'PGVECTOR_PORT', 'PGVECTOR_SECRET_ARN']);
      } else {
        expect(e.MILVUS_URI, id).toBe('https://example.zillizcloud.com');
        expect(e.MILVUS_TOKEN_SECRET_ARN, id).toBeDefined();
      }
      if (c.pattern) {
        expect(e.OPENAI_BASE_URL, id).toBe('https://models.example.com/v1');
        expect(e.OPENAI_API_KEY_SECRET_ARN, id).toBeDefined();
      } else expect(e.OPENAI_BASE_URL, id).toBeUndefined();
    }
  });

  it('keeps the serving pattern off the functions that do not serve the knowledge base', () => {
    const others = [...FUNCTION_IDS].filter((id) => !KNOWLEDGE_BASE_FUNCTIONS.has(id));
    expect(others.length).toBeGreaterThan(0);
    for (const id of others) expect(env[id]?.AI4RAG_SERVING_PATTERN, id).toBeUndefined();
  });
});
