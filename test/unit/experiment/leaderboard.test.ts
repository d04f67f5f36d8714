import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { buildLeaderboard, parameterEffects } from '../../../shared/src/experiment/leaderboard.js';
import type {
  PatternPayload,
  ReportData,
  TrialRecord,
} from '../../../shared/src/experiment/types.js';

const fixture = JSON.parse(
  readFileSync(new URL('../../fixtures/experiment/report-data.json', import.meta.url), 'utf8'),
) as ReportData;

/** The smallest payload buildLeaderboard needs; only its identity is checked. */
function payload(name: string, iteration: number): PatternPayload {
  return { name, iteration } as unknown as PatternPayload;
}

function trial(
  iteration: number,
  score: number | null,
  extra: Partial<TrialRecord> = {},
): TrialRecord {
  const name = `Pattern${iteration + 1}`;
  return {
    pattern_name: name,
    iteration,
    config: {},
    score,
    duration_seconds: 1,
    ...(score === null
      ? { error: 'GenerationError: boom' }
      : { pattern: payload(name, iteration) }),
    ...extra,
  };
}

describe('buildLeaderboard', () => {
  it('ranks successful patterns by score descending and breaks ties by the earlier iteration', () => {
    // Prepare
    const trials = [trial(3, 0.5), trial(0, 0.5), trial(1, 0.75), trial(2, null), trial(4, 0.25)];

    // Act
    const board = buildLeaderboard(trials);

    // Assess
    expect(board.map((e) => [e.rank, e.pattern_name, e.score])).toEqual([
      [1, 'Pattern2', 0.75],
      [2, 'Pattern1', 0.5],
      [3, 'Pattern4', 0.5],
      [4, 'Pattern5', 0.25],
    ]);
    expect(board[0]?.pattern).toBe(trials[2]?.pattern);
  });

  it('leaves out failed trials, trials without a payload and non-finite scores', () => {
    // Prepare
    const trials = [
      trial(0, null),
      trial(1, 0.9, { pattern: undefined, cached: true }),
      trial(2, Number.NaN),
      trial(3, 0.8, { error: 'EvaluationError: scored but failed' }),
      trial(4, 0.1),
    ];

    // Act
    const board = buildLeaderboard(trials);

    // Assess
    expect(board.map((e) => e.pattern_name)).toEqual(['Pattern5']);
  });

  it('lists a pattern once when a cached trial carries its original payload', () => {
    // Prepare
    const original = trial(0, 0.6);
    const cached = { ...trial(5, 0.6), pattern_name: 'Pattern1', cached: true };

    // Act
    const board = buildLeaderboard([original, trial(1, 0.4), cached]);

    // Assess
    expect(board.map((e) => [e.rank, e.pattern_name])).toEqual([
      [1, 'Pattern1'],
      [2, 'Pattern2'],
    ]);
  });

  it('returns an empty leaderboard when no trial succeeded', () => {
    // Act
    const board = buildLeaderboard([trial(0, null), trial(1, null)]);

    // Assess
    expect(board).toEqual([]);
  });

  it('reproduces the fixture leaderboard, ties included (Pattern1 before Pattern10)', () => {
    // Act
    const board = buildLeaderboard(fixture.trials);

    // Assess
    expect(board.map((e) => e.pattern_name)).toEqual([
      'Pattern3',
      'Pattern9',
      'Pattern7',
      'Pattern6',
      'Pattern1',
      'Pattern10',
      'Pattern2',
      'Pattern4',
    ]);
    expect(board).toEqual(fixture.leaderboard);
  });
});

describe('parameterEffects', () => {
  it('computes the mean score per value and sorts parameters by spread, then name', () => {
    // Prepare
    const base = { retrieval_method: 'simple' };
    const trials: TrialRecord[] = [
      trial(0, 0.5, {
        config: {
          ...base,
          chunk_size: 512,
          foundation_model: { modelId: 'a' },
          search_mode: 'vector',
          ranker_strategy: '',
        },
      }),
      trial(1, 0.75, {
        config: {
          ...base,
          chunk_size: 1024,
          foundation_model: { modelId: 'b' },
          search_mode: 'vector',
          ranker_strategy: '',
        },
      }),
      trial(2, 0.25, {
        config: {
          ...base,
          chunk_size: 512,
          foundation_model: { modelId: 'b', contextLength: 8 },
          search_mode: 'hybrid',
          ranker_strategy: 'rrf',
        },
      }),
      trial(3, null, { config: { ...base, chunk_size: 2048 } }),
      trial(4, 0.75, { config: { ...base, chunk_size: 4096 }, cached: true }),
    ];

    // Act
    const effects = parameterEffects(trials);

    // Assess
    expect(effects).toEqual([
      {
        parameter: 'chunk_size',
        values: [
          { value: '512', meanScore: 0.375, trials: 2 },
          { value: '1024', meanScore: 0.75, trials: 1 },
        ],
        spread: 0.375,
      },
      {
        parameter: 'ranker_strategy',
        values: [
          { value: '', meanScore: 0.625, trials: 2 },
          { value: 'rrf', meanScore: 0.25, trials: 1 },
        ],
        spread: 0.375,
      },
      {
        parameter: 'search_mode',
        values: [
          { value: 'hybrid', meanScore: 0.25, trials: 1 },
          { value: 'vector', meanScore: 0.625, trials: 2 },
        ],
        spread: 0.375,
      },
      {
        parameter: 'foundation_model',
        values: [
          { value: 'a', meanScore: 0.5, trials: 1 },
          { value: 'b', meanScore: 0.5, trials: 2 },
        ],
        spread: 0,
      },
    ]);
  });

  it('returns nothing when no parameter took two values among successful trials', () => {
    // Prepare
    const trials = [
      trial(0, 0.5, { config: { chunk_size: 512 } }),
      trial(1, null, { config: { chunk_size: 1024 } }),
    ];

    // Act
    const effects = parameterEffects(trials);

    // Assess
    expect(effects).toEqual([]);
  });

  it('matches hand-computed means on the fixture, skipping the cached and the failed trial', () => {
    // Act
    const effects = parameterEffects(fixture.trials);

    // Assess
    expect(effects.map((e) => e.parameter)).toEqual([
      'number_of_chunks',
      'chunk_size',
      'ranker_strategy',
      'ranker_alpha',
      'chunk_overlap',
      'embedding_model',
      'foundation_model',
      'search_mode',
      'ranker_k',
      'chunking_method',
    ]);
    const k = effects[0];
    expect(k?.values.map((v) => [v.value, v.trials])).toEqual([
      ['3', 2],
      ['5', 3],
      ['10', 3],
    ]);
    // 3: (0.5478 + 0.4892) / 2; 10: (0.7015 + 0.6587 + 0.6922) / 3 (cached Pattern8 excluded).
    expect(k?.values[0]?.meanScore).toBeCloseTo(0.5185, 12);
    expect(k?.values[2]?.meanScore).toBeCloseTo(2.0524 / 3, 12);
    expect(k?.spread).toBeCloseTo(2.0524 / 3 - 0.5185, 12);
    const models = effects.find((e) => e.parameter === 'embedding_model');
    expect(models?.values.map((v) => v.value)).toEqual([
      'BAAI/bge-m3',
      'nomic-ai/nomic-embed-text-v1.5',
    ]);
  });
});
