import { describe, expect, it } from 'vitest';
import { estimateRun } from '../../../shared/src/experiment/estimate.js';
import type { TrialConfig } from '../../../shared/src/experiment/types.js';

function config(queryTransform: string): TrialConfig {
  return {
    foundation_model: { modelId: 'chat-a' },
    embedding_model: { modelId: 'emb' },
    chunking_method: 'recursive',
    chunk_size: 200,
    chunk_overlap: 50,
    retrieval_method: 'simple',
    window_size: 0,
    number_of_chunks: 2,
    search_mode: 'hybrid',
    ranker_strategy: 'rrf',
    ranker_k: 60,
    ranker_alpha: 1,
    query_transform: queryTransform,
  };
}

describe('estimateRun with query transforms', () => {
  it('counts the chat call of hyde and multi_query in a query_transform role, nothing for rm3 and none', () => {
    // Act
    const estimate = estimateRun({
      corpusCharacters: 4000,
      questions: ['Q?'],
      candidates: ['none', 'rm3', 'hyde', 'multi_query'].map(config),
      maxEvals: 4,
    });
    // Assess: hyde's prompt 'Please write a passage to answer the question.\nQuestion: Q?\nPassage:' is 68
    // characters (17 tokens); multi_query's system (74) + user (182) characters: 64 tokens; replies ≤ 256
    const roles = estimate.configurations.map((c) =>
      c.trial.models
        .filter((m) => m.role === 'query_transform')
        .map((m) => [m.model_id, m.calls, m.prompt_tokens, m.completion_tokens]),
    );
    expect(roles).toEqual([[], [], [['chat-a', 1, 17, 256]], [['chat-a', 1, 64, 256]]]);
  });
});
