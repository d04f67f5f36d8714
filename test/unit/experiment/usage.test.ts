import { describe, expect, it } from 'vitest';
import type { TrialRecord } from '../../../shared/src/experiment/types.js';
import {
  embeddingUsage,
  experimentUsage,
  summarizeUsage,
} from '../../../shared/src/experiment/usage.js';

const CHAT = {
  modelId: 'gpt-4o-mini',
  role: 'generation' as const,
  calls: 3,
  promptTokens: 3000,
  completionTokens: 300,
  unreportedCalls: 1,
};

function trial(name: string, cached: boolean, tokens: number): TrialRecord {
  return {
    pattern_name: name,
    iteration: 0,
    config: {},
    score: 0.5,
    duration_seconds: 1,
    ...(cached && { cached: true }),
    usage: summarizeUsage([{ ...CHAT, unreportedCalls: 0, promptTokens: tokens }]),
  };
}

describe('summarizeUsage', () => {
  it('sums rows of one model and role, orders the roles and prices every row', () => {
    // Prepare
    const rows = [
      embeddingUsage('text-embedding-3-small', ['12345678', 'abc']),
      CHAT,
      embeddingUsage('text-embedding-3-small', ['x'.repeat(4_000_000)]),
    ];
    // Act
    const summary = summarizeUsage(rows, {
      'gpt-4o-mini': { input: 0.15, output: 0.6 },
      'text-embedding-3-small': { input: 0.02 },
    });
    // Assess
    expect(summary).toEqual({
      models: [
        {
          model_id: 'gpt-4o-mini',
          role: 'generation',
          calls: 3,
          prompt_tokens: 3000,
          completion_tokens: 300,
          unreported_calls: 1,
          // (3000 × 0.15 + 300 × 0.6) / 1e6
          cost_usd: 0.00063,
        },
        {
          model_id: 'text-embedding-3-small',
          role: 'embedding',
          calls: 3,
          // ceil(8 / 4) + ceil(3 / 4) + 1,000,000
          prompt_tokens: 1_000_003,
          completion_tokens: 0,
          approximate: true,
          cost_usd: 0.02,
        },
      ],
      prompt_tokens: 1_003_003,
      completion_tokens: 300,
      cost_usd: 0.02063,
    });
  });

  it('gives no total cost when a model has no price, and no cost at all without a table', () => {
    // Prepare
    const rows = [CHAT, embeddingUsage('local/feature-hash-v1-384', ['abcd'])];
    // Act
    const partial = summarizeUsage(rows, {});
    const none = summarizeUsage(rows);
    // Assess
    expect(partial.models.map((m) => m.cost_usd)).toEqual([undefined, 0]);
    expect('cost_usd' in partial).toBe(false);
    expect(none.models.every((m) => !('cost_usd' in m))).toBe(true);
    expect('cost_usd' in none).toBe(false);
  });
});

describe('experimentUsage', () => {
  it('keeps the cached trials’ original cost apart from the spend', () => {
    // Prepare
    const failed: TrialRecord = { ...trial('Pattern3', false, 0), score: null, error: 'E: x' };
    delete failed.usage;
    const trials = [trial('Pattern1', false, 1000), trial('Pattern2', true, 2000), failed];
    // Act
    const usage = experimentUsage(trials, { 'gpt-4o-mini': { input: 1, output: 2 } });
    // Assess
    expect([usage.spent.prompt_tokens, usage.spent.cost_usd]).toEqual([1000, 0.0016]);
    expect([usage.cached.prompt_tokens, usage.cached.cost_usd]).toEqual([2000, 0.0026]);
    expect(usage.trials_without_usage).toBe(1);
    expect(usage.priced).toBe(true);
  });
});
