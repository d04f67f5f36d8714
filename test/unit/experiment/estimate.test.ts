import { describe, expect, it } from 'vitest';
import { judgePrompt } from '../../../shared/src/evaluation/judge.js';
import { estimateRun } from '../../../shared/src/experiment/estimate.js';
import type { TrialConfig } from '../../../shared/src/experiment/types.js';
import { AUTO_LANGUAGE, type PromptTemplates } from '../../../shared/src/generation/templates.js';

/**
 * Templates whose scaffold is countable by hand: 'S' (1 character) and the question followed by the passages,
 * joined by '\n\n' — with P empty passages, 1 + len(question) + 2 × (P − 1) characters.
 */
const TEMPLATES: PromptTemplates = {
  system: 'S',
  user: '{question}{reference_documents}',
  context: '{document}',
  language: AUTO_LANGUAGE,
};
/** 4 and 8 characters: 1 + 2 query-embedding tokens per trial. */
const QUESTIONS = ['abcd', 'abcdefgh'];
const PRICES = {
  'chat-a': { input: 1, output: 2 },
  emb: { input: 0.1 },
  'judge-m': { input: 0.5, output: 0.5 },
};

function config(over: Partial<Record<string, unknown>>): TrialConfig {
  return {
    foundation_model: { modelId: 'chat-a' },
    embedding_model: { modelId: 'emb' },
    chunking_method: 'recursive',
    chunk_size: 200,
    chunk_overlap: 50,
    retrieval_method: 'simple',
    window_size: 0,
    number_of_chunks: 2,
    search_mode: 'vector',
    ...over,
  };
}

/**
 * c1 and c2 share the index recursive 200/50 (4000 characters = 1000 tokens, × 200 / 150 = 1334 tokens); c3 builds
 * recursive 100/0 (1000 tokens) and retrieves 1 chunk with a window of 1: 3 passages.
 */
const CANDIDATES = [
  config({}),
  config({ number_of_chunks: 10 }),
  config({
    chunk_size: 100,
    chunk_overlap: 0,
    number_of_chunks: 1,
    retrieval_method: 'window',
    window_size: 1,
  }),
];

const run = (maxEvals: number) =>
  estimateRun({
    corpusCharacters: 4000,
    questions: QUESTIONS,
    candidates: CANDIDATES,
    maxEvals,
    judgeModel: 'judge-m',
    templates: TEMPLATES,
    maxCompletionTokens: 100,
    prices: PRICES,
  });

describe('estimateRun', () => {
  it('counts every configuration of a run that evaluates them all, each index once', () => {
    // Act
    const estimate = run(3);

    // Assess
    // Prompts: c1 2 passages: ceil(7/4) + 400 = 402 and ceil(11/4) + 400 = 403 → 805; c2 10 passages (2000 tokens,
    // capped at the 1334 of the index): ceil(23/4) + 1334 + ceil(27/4) + 1334 = 2681; c3 3 passages of 100:
    // ceil(9/4) + 300 + ceil(13/4) + 300 = 607. The judge prompt is 616 characters around the question:
    // ceil(620/4) + 100 + ceil(624/4) + 100 = 511 per trial, replies 2 × 256.
    expect(judgePrompt('', '')).toHaveLength(616);
    expect(estimate.configurations.map((c) => [c.index, c.indexTokens])).toEqual([
      ['recursive 200/50 · emb', 1334],
      ['recursive 200/50 · emb', 1334],
      ['recursive 100/0 · emb', 1000],
    ]);
    expect(estimate.configurations.map((c) => c.trial.models.map((m) => m.prompt_tokens))).toEqual([
      [805, 511, 3],
      [2681, 511, 3],
      [607, 511, 3],
    ]);
    expect(estimate.configurations.map((c) => c.trial.cost_usd)).toEqual([
      // (805 + 200 × 2) + (511 + 512) × 0.5 + 3 × 0.1 (0.3 millionths: 0), in millionths
      0.001717, 0.003593, 0.001519,
    ]);
    expect(estimate.exhaustive).toBe(true);
    expect(estimate.total).toEqual({
      models: [
        {
          model_id: 'chat-a',
          role: 'generation',
          calls: 6,
          prompt_tokens: 4093,
          completion_tokens: 600,
          cost_usd: 0.005293,
        },
        {
          model_id: 'judge-m',
          role: 'judge',
          calls: 6,
          prompt_tokens: 1533,
          completion_tokens: 1536,
          cost_usd: 0.001535,
        },
        // 3 trials × 3 query tokens + the two indexes (1334 + 1000)
        {
          model_id: 'emb',
          role: 'embedding',
          calls: 8,
          prompt_tokens: 2343,
          completion_tokens: 0,
          approximate: true,
          cost_usd: 0.000234,
        },
      ],
      prompt_tokens: 7969,
      completion_tokens: 2136,
      cost_usd: 0.007062,
    });
  });

  it('bounds a run that evaluates fewer: the most expensive configurations and indexes', () => {
    // Act
    const estimate = run(1);

    // Assess
    expect(estimate.exhaustive).toBe(false);
    expect(estimate.trials).toBe(1);
    // c2 (the costliest trial) and the index recursive 200/50 (the costliest index).
    expect(estimate.total).toEqual({
      models: [
        {
          model_id: 'chat-a',
          role: 'generation',
          calls: 2,
          prompt_tokens: 2681,
          completion_tokens: 200,
          cost_usd: 0.003081,
        },
        {
          model_id: 'judge-m',
          role: 'judge',
          calls: 2,
          prompt_tokens: 511,
          completion_tokens: 512,
          cost_usd: 0.000512,
        },
        {
          model_id: 'emb',
          role: 'embedding',
          calls: 3,
          prompt_tokens: 1337,
          completion_tokens: 0,
          approximate: true,
          cost_usd: 0.000134,
        },
      ],
      prompt_tokens: 4529,
      completion_tokens: 712,
      cost_usd: 0.003727,
    });
    expect(estimate.assumptions.at(-2)).toBe(
      'the optimizer picks 1 of 3 configurations as it runs: the total is an upper bound (the 1 most expensive, with the 1 most expensive indexes)',
    );
  });

  it('gives tokens only without a price table', () => {
    // Act
    const estimate = estimateRun({
      corpusCharacters: 4000,
      questions: QUESTIONS,
      candidates: CANDIDATES,
      maxEvals: 3,
      templates: TEMPLATES,
      maxCompletionTokens: 100,
    });
    // Assess
    expect(estimate.total.prompt_tokens).toBe(4093 + 2343);
    expect('cost_usd' in estimate.total).toBe(false);
  });
});
