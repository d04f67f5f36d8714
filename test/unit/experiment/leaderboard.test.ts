import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { buildLeaderboard } from '../../../shared/src/experiment/leaderboard.js';
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
