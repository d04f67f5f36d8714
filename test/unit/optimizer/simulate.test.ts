import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ValidationError } from '#shared/errors.js';
import { DEFAULT_OPTIMIZER } from '#shared/optimizer/optimizers.js';
import {
  parseScoreTable,
  type ScoreTableRow,
  simulateOptimizer,
} from '#shared/optimizer/simulate.js';

/** Six rows, one failed; the best (0.9) is id 2. */
const TINY: ScoreTableRow[] = [0.1, 0.5, 0.9, 0.3, null, 0.7].map((score, id) => ({
  config: { id },
  score,
}));

function fixture(name: string): ScoreTableRow[] {
  const url = new URL(`../../fixtures/optimizer/${name}.json`, import.meta.url);
  return parseScoreTable(JSON.parse(readFileSync(url, 'utf8')));
}

describe('parseScoreTable', () => {
  it('accepts { rows } and a bare array', () => {
    // Prepare
    const rows = [
      { config: { k: 3 }, score: 0.5 },
      { config: { k: 5 }, score: null },
    ];
    // Act / Assess
    expect(parseScoreTable({ rows })).toEqual(rows);
    expect(parseScoreTable(rows)).toEqual(rows);
  });

  it('names the bad row', () => {
    expect(() => parseScoreTable({ rows: [{ config: { k: 3 }, score: 'high' }] })).toThrow(
      'Score table row 0: score must be a finite number or null, got "high".',
    );
    expect(() => parseScoreTable([{ config: { k: 3 }, score: 1 }, { score: 1 }])).toThrow(
      'Score table row 1: config must be an object.',
    );
    expect(() =>
      parseScoreTable([
        { config: { k: 3 }, score: 1 },
        { config: { k: 3 }, score: 2 },
      ]),
    ).toThrow('Score table row 1 repeats configuration k=number:3.');
  });

  it('rejects a non-table, an empty table and a table without any score', () => {
    expect(() => parseScoreTable('rows')).toThrow(ValidationError);
    expect(() => parseScoreTable({ rows: [] })).toThrow('The score table has no rows.');
    expect(() => parseScoreTable([{ config: {}, score: null }])).toThrow(/nothing to find/);
  });
});

describe('simulateOptimizer', () => {
  it('gives the exact evaluations to best for random with fixed seeds', () => {
    // Act
    const r = simulateOptimizer(TINY, 'random', { maxEvals: 6, seeds: 3 });
    // Assess: seed 0 shuffles the ids to 5, 2, 3, 4, 0, 1
    expect(r).toEqual({
      optimizer: 'random',
      seeds: 3,
      maxEvals: 6,
      medianEvalsToBest: 2,
      reachedBest: 3,
      meanBestAfterN: 0.9,
      evalsToBest: [2, 4, 2],
    });
  });

  it('reports null when fewer than half of the seeds reach the best within maxEvals', () => {
    // Act
    const r = simulateOptimizer(TINY, 'random', { maxEvals: 1, seeds: 4, firstSeed: 10 });
    // Assess
    expect(r.reachedBest).toBeLessThan(2);
    expect(r.medianEvalsToBest).toBeNull();
    expect(r.evalsToBest).toHaveLength(4);
  });

  it('rejects bad options', () => {
    expect(() => simulateOptimizer(TINY, 'random', { maxEvals: 0, seeds: 1 })).toThrow(
      'maxEvals must be an integer ≥ 1, got 0.',
    );
  });

  // Figures (50 seeds, maxEvals 30, median evals to best / seeds reaching it), measured on these tables:
  //   default72-additive      random null/19  gam 10/50    tpe 16/50
  //   default72-interactions  random 29/28    gam 13.5/50  tpe 15/49
  //   models2x2-288           random null/6   gam 15/49    tpe 26/33
  //   default72-noisy         random null/22  gam 15.5/39  tpe 14.5/46
  for (const name of [
    'default72-additive',
    'default72-interactions',
    'models2x2-288',
    'default72-noisy',
  ]) {
    it(`the default optimizer beats random on ${name}`, () => {
      // Prepare
      const table = fixture(name);
      const options = { maxEvals: 30, seeds: 50 };
      // Act
      const random = simulateOptimizer(table, 'random', options);
      const chosen = simulateOptimizer(table, DEFAULT_OPTIMIZER, options);
      // Assess
      expect(chosen.reachedBest).toBeGreaterThan(random.reachedBest);
      expect(chosen.medianEvalsToBest).not.toBeNull();
      expect(chosen.medianEvalsToBest as number).toBeLessThan(
        random.medianEvalsToBest ?? Number.POSITIVE_INFINITY,
      );
      expect(chosen.meanBestAfterN).toBeGreaterThan(random.meanBestAfterN);
    });
  }
});

describe('simulateOptimizer with rounds of proposals', () => {
  it('leaves random search unchanged (its order does not depend on scores)', () => {
    // Prepare
    const table = fixture('default72-additive');

    // Act
    const one = simulateOptimizer(table, 'random', { maxEvals: 72, seeds: 5 });
    const four = simulateOptimizer(table, 'random', { maxEvals: 72, seeds: 5, batchSize: 4 });

    // Assess
    expect(four.evalsToBest).toEqual(one.evalsToBest);
  });

  it('rejects a batch size below 1', () => {
    // Act / Assess
    expect(() => simulateOptimizer(TINY, 'gam', { maxEvals: 3, seeds: 1, batchSize: 0 })).toThrow(
      ValidationError,
    );
  });
});
