import { describe, expect, it } from 'vitest';
import { estimateRun } from '../../../shared/src/experiment/estimate.js';
import type { TrialConfig } from '../../../shared/src/experiment/types.js';
import { AUTO_LANGUAGE, type PromptTemplates } from '../../../shared/src/generation/templates.js';

/** A scaffold of 1 + len(question) + 2 × (passages − 1) characters (see estimate.test.ts). */
const TEMPLATES: PromptTemplates = {
  system: 'S',
  user: '{question}{reference_documents}',
  context: '{document}',
  language: AUTO_LANGUAGE,
};

function config(over: Partial<Record<string, unknown>>): TrialConfig {
  return {
    foundation_model: { modelId: 'chat-a' },
    embedding_model: { modelId: 'emb' },
    chunk_size: 200,
    retrieval_method: 'simple',
    window_size: 0,
    number_of_chunks: 2,
    search_mode: 'vector',
    ...over,
  };
}

describe('estimateRun with the chunking methods (issue 15)', () => {
  it('keeps hierarchical indexes of different parents apart, embeds children only and answers from parents', () => {
    // Prepare: 4000 characters = 1000 corpus tokens; question 'abcd'
    const candidates = [
      config({ chunking_method: 'hierarchical', chunk_overlap: 50, parent_chunk_size: 400 }),
      config({ chunking_method: 'hierarchical', chunk_overlap: 50, parent_chunk_size: 800 }),
      config({ chunking_method: 'semantic', chunk_overlap: 0 }),
      config({
        chunking_method: 'semantic',
        chunk_overlap: 0,
        semantic_breakpoint: 'gradient',
        semantic_breakpoint_amount: 90,
      }),
    ];
    // Act
    const estimate = estimateRun({
      corpusCharacters: 4000,
      questions: ['abcd'],
      candidates,
      maxEvals: 4,
      templates: TEMPLATES,
      maxCompletionTokens: 10,
    });
    // Assess: children 1000 × 200 / 150 = 1334 tokens; semantic 1000 chunk tokens + 3 × 1000 sentence-group tokens
    expect(estimate.configurations.map((c) => [c.index, c.indexTokens])).toEqual([
      ['hierarchical 200/50 ⊂ 400 · emb', 1334],
      ['hierarchical 200/50 ⊂ 800 · emb', 1334],
      ['semantic 200/0 · emb', 4000],
      ['semantic 200/0 gradient 90 · emb', 4000],
    ]);
    // Prompts: ceil(7 / 4) = 2 scaffold tokens + 2 passages of 400 (800) / of 800 (1600, capped at the 1334 of the
    // index) / of 200 (400)
    expect(estimate.configurations.map((c) => c.promptTokensPerQuestion)).toEqual([
      802, 1336, 402, 402,
    ]);
    expect(estimate.indexes.map((i) => i.tokens)).toEqual([1334, 1334, 4000, 4000]);
  });
});
