import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { DEFAULT_OPTIMIZER } from '#shared/optimizer/optimizers.js';
import { parseScoreTable, simulateOptimizer } from '#shared/optimizer/simulate.js';

/**
 * The score table recorded with `ai4rag experiment --record-table` over the whole default search space (72
 * configurations) on ClapNQ dev (180 answerable + 180 unanswerable questions, local models). Committed as a
 * fixture: it holds configurations and scores only, no dataset text.
 */
const table = parseScoreTable(
  JSON.parse(
    readFileSync(
      new URL('../../fixtures/optimizer/clapnq-dev-scores.json', import.meta.url),
      'utf8',
    ),
  ),
);

describe('optimizers replayed on the recorded ClapNQ score table (50 seeds)', () => {
  const run = (name: 'random' | 'gam' | 'tpe') =>
    simulateOptimizer(table, name, { maxEvals: table.length, seeds: 50 });

  it('covers the full default search space', () => {
    // Assess
    expect(table).toHaveLength(72);
    expect(table.every((r) => r.score !== null)).toBe(true);
  });

  it('the default optimizer reaches the best configuration in fewer evaluations than random, and no more than gam', () => {
    // Act
    const chosen = run(DEFAULT_OPTIMIZER);
    const random = run('random');
    const gam = run('gam');

    // Assess
    expect(chosen.medianEvalsToBest).not.toBeNull();
    expect(chosen.medianEvalsToBest as number).toBeLessThan(random.medianEvalsToBest as number);
    expect(chosen.medianEvalsToBest as number).toBeLessThanOrEqual(gam.medianEvalsToBest as number);
  });
});
