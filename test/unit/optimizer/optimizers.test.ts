import { describe, expect, it } from 'vitest';
import { ValidationError } from '#shared/errors.js';
import type { Observation, TrialConfig } from '#shared/experiment/types.js';
import {
  DEFAULT_OPTIMIZER,
  OPTIMIZER_NAMES,
  OptimizationError,
  OptimizerError,
  type OptimizerName,
  optimize,
  proposeTrials,
} from '#shared/optimizer/optimizers.js';
import {
  combinationKey,
  createSearchSpace,
  defaultSearchSpace,
} from '#shared/optimizer/search-space.js';

const DEFAULT_72 = createSearchSpace(
  defaultSearchSpace({
    foundationModels: [{ modelId: 'local/extractive-v1' }],
    embeddingModels: [{ modelId: 'local/feature-hash-v1-384', contextLength: 8192 }],
  }),
).combinations();

const SIX = Array.from({ length: 6 }, (_, i) => ({ id: i }));

/** a ∈ {x, y, z} × b ∈ {p, q}: 6 candidates. */
const SMALL = ['x', 'y', 'z'].flatMap((a) => ['p', 'q'].map((b) => ({ a, b })));

/** An exactly additive function over a 3 × 3 × 4 grid (n numeric, 4 levels → spline term). */
const A_EFFECT: Record<string, number> = { x: 0, y: 0.3, z: 0.1 };
const B_EFFECT: Record<string, number> = { p: 0.05, q: 0, r: 0.2 };
const N_EFFECT: Record<number, number> = { 1: 0, 2: 0.1, 3: 0.15, 4: 0.12 };
const ADDITIVE: TrialConfig[] = ['x', 'y', 'z'].flatMap((a) =>
  ['p', 'q', 'r'].flatMap((b) => [1, 2, 3, 4].map((n) => ({ a, b, n }))),
);
function additive(c: TrialConfig): number {
  return (
    0.2 +
    (A_EFFECT[c.a as string] as number) +
    (B_EFFECT[c.b as string] as number) +
    (N_EFFECT[c.n as number] as number)
  );
}

function ids(configs: TrialConfig[]): unknown[] {
  return configs.map((c) => c.id);
}

describe('proposeTrials: random', () => {
  it('proposes the seeded Fisher–Yates order of all candidates', () => {
    // Prepare
    const input = { candidates: SIX, observations: [], count: 6 };
    // Act
    const seed64 = proposeTrials('random', { ...input, seed: 64 });
    const seed0 = proposeTrials('random', { ...input, seed: 0 });
    // Assess
    expect(ids(seed64)).toEqual([3, 1, 0, 4, 2, 5]);
    expect(ids(seed0)).toEqual([5, 2, 3, 4, 0, 1]);
  });

  it('skips observed candidates and keeps the shuffled order', () => {
    // Prepare
    const observations: Observation[] = [
      { config: { id: 3 }, score: 0.5 },
      { config: { id: 0 }, score: null },
    ];
    // Act
    const next = proposeTrials('random', { candidates: SIX, observations, count: 3, seed: 64 });
    // Assess
    expect(ids(next)).toEqual([1, 4, 2]);
  });

  it('returns an empty list when every candidate is observed', () => {
    // Prepare
    const observations = SIX.map((config) => ({ config, score: 0.1 }));
    // Act
    const next = proposeTrials('gam', { candidates: SIX, observations, count: 2, seed: 64 });
    // Assess
    expect(next).toEqual([]);
  });
});

describe('proposeTrials: stratified warm start', () => {
  it('covers every search mode, chunking method and ranker strategy in the first 4 of the default space', () => {
    // Act
    const first = proposeTrials('gam', {
      candidates: DEFAULT_72,
      observations: [],
      count: 4,
      seed: 64,
    });
    // Assess
    expect(
      first.map((c) => [
        c.chunking_method,
        c.chunk_size,
        c.chunk_overlap,
        c.number_of_chunks,
        c.ranker_strategy,
      ]),
    ).toEqual([
      ['recursive', 1024, 256, 3, 'rrf'],
      ['recursive', 1024, 256, 10, ''],
      ['recursive', 1024, 256, 3, 'weighted'],
      ['hybrid', 1024, 0, 5, 'weighted'],
    ]);
    expect(new Set(first.map((c) => c.search_mode))).toEqual(new Set(['vector', 'hybrid']));
    expect(new Set(first.map((c) => c.chunking_method))).toEqual(new Set(['recursive', 'hybrid']));
  });

  it('covers every value for other seeds too', () => {
    for (const seed of [0, 1, 2, 3, 17, 99]) {
      // Act
      const first = proposeTrials('tpe', {
        candidates: DEFAULT_72,
        observations: [],
        count: 4,
        seed,
      });
      // Assess
      expect(new Set(first.map((c) => c.search_mode)).size).toBe(2);
      expect(new Set(first.map((c) => c.chunking_method)).size).toBe(2);
      expect(new Set(first.map((c) => c.ranker_strategy)).size).toBe(3);
    }
  });

  it('proposes the same warm-start sequence one at a time as in one batch', () => {
    // Prepare
    const batch = proposeTrials('gam', {
      candidates: DEFAULT_72,
      observations: [],
      count: 4,
      seed: 64,
    });
    const observations: Observation[] = [];
    // Act
    for (let i = 0; i < 4; i++) {
      const [next] = proposeTrials('gam', {
        candidates: DEFAULT_72,
        observations,
        count: 1,
        seed: 64,
      });
      observations.push({ config: next as TrialConfig, score: 0.5 });
    }
    // Assess
    expect(observations.map((o) => combinationKey(o.config))).toEqual(batch.map(combinationKey));
  });

  it('starts with the values not covered by known observations', () => {
    // Prepare: y and z are known, so x must come first
    const observations: Observation[] = [
      { config: { a: 'y', b: 'p' }, score: 0.4 },
      { config: { a: 'z', b: 'q' }, score: 0.2 },
    ];
    // Act
    const [next] = proposeTrials('gam', { candidates: SMALL, observations, count: 1, seed: 64 });
    // Assess
    expect(next?.a).toBe('x');
  });

  it('skips the warm start when the known observations hold nRandomNodes successes', () => {
    // Prepare: z and q are clearly best
    const observations: Observation[] = [
      { config: { a: 'x', b: 'p' }, score: 0.1 },
      { config: { a: 'y', b: 'p' }, score: 0.2 },
      { config: { a: 'z', b: 'p' }, score: 0.5 },
      { config: { a: 'x', b: 'q' }, score: 0.3 },
    ];
    // Act
    const gam = proposeTrials('gam', { candidates: SMALL, observations, count: 1, seed: 64 });
    const tpe = proposeTrials('tpe', { candidates: SMALL, observations, count: 1, seed: 64 });
    // Assess
    expect(gam).toEqual([{ a: 'z', b: 'q' }]);
    expect(tpe).toEqual([{ a: 'z', b: 'q' }]);
  });

  it('does not count failed observations toward the warm start', () => {
    // Prepare: 3 successes and 1 failure, nRandomNodes 4
    const observations: Observation[] = [
      { config: { a: 'x', b: 'p' }, score: 0.1 },
      { config: { a: 'y', b: 'p' }, score: 0.2 },
      { config: { a: 'z', b: 'p' }, score: 0.5 },
      { config: { a: 'x', b: 'q' }, score: null },
    ];
    // Act
    const next = proposeTrials('gam', { candidates: SMALL, observations, count: 2, seed: 64 });
    const warm = proposeTrials('tpe', { candidates: SMALL, observations, count: 2, seed: 64 });
    // Assess: still the warm-start order (shared by gam and tpe), not the surrogate's pick first
    expect(next).toEqual(warm);
    expect(next).toEqual([
      { a: 'y', b: 'q' },
      { a: 'z', b: 'q' },
    ]);
  });
});

describe('proposeTrials: surrogates', () => {
  it('GAM proposes the argmax of an exactly additive function right after the warm start', () => {
    // Prepare: a warm start of 10 (the model has 3 + 3 + 4 level coefficients)
    const observations: Observation[] = [];
    const input = { candidates: ADDITIVE, count: 1, seed: 64, nRandomNodes: 10 };
    for (let i = 0; i < 10; i++) {
      const [c] = proposeTrials('gam', { ...input, observations });
      observations.push({ config: c as TrialConfig, score: additive(c as TrialConfig) });
    }
    const argmax = { a: 'y', b: 'r', n: 3 };
    expect(observations.map((o) => combinationKey(o.config))).not.toContain(combinationKey(argmax));
    // Act
    const next = proposeTrials('gam', { ...input, observations });
    // Assess
    expect(next).toEqual([argmax]);
  });

  it('is deterministic for a seed and never re-proposes a candidate', () => {
    for (const name of OPTIMIZER_NAMES) {
      // Prepare
      const run = () => {
        const observations: Observation[] = [];
        for (;;) {
          const next = proposeTrials(name, {
            candidates: DEFAULT_72,
            observations,
            count: 5,
            seed: 7,
          });
          if (next.length === 0) return observations;
          for (const c of next) {
            const score = c.search_mode === 'hybrid' ? null : (c.chunk_size as number) / 4096;
            observations.push({ config: c, score });
          }
        }
      };
      // Act
      const first = run();
      const second = run();
      // Assess
      const keys = first.map((o) => combinationKey(o.config));
      expect(new Set(keys).size).toBe(72);
      expect(keys).toEqual(second.map((o) => combinationKey(o.config)));
    }
  });

  it('proposes distinct candidates when count > 1 and caps at the unobserved ones', () => {
    // Prepare
    const observations = SMALL.slice(0, 4).map((config, i) => ({ config, score: i / 10 }));
    // Act
    const next = proposeTrials('gam', { candidates: SMALL, observations, count: 5, seed: 64 });
    // Assess
    expect(next.map(combinationKey).sort()).toEqual(SMALL.slice(4).map(combinationKey).sort());
  });

  it('ignores observations outside the candidates without crashing but counts them', () => {
    // Prepare: 4 successes, one of them on an unknown value
    const observations: Observation[] = [
      { config: { a: 'w', b: 'p' }, score: 0.9 },
      { config: { a: 'x', b: 'p' }, score: 0.1 },
      { config: { a: 'y', b: 'p' }, score: 0.2 },
      { config: { a: 'z', b: 'p' }, score: 0.5 },
    ];
    // Act
    const next = proposeTrials('gam', { candidates: SMALL, observations, count: 1, seed: 64 });
    // Assess: the surrogate ran (warm start done) and picked z
    expect(next[0]?.a).toBe('z');
  });

  it('fits on a known observation outside the candidates when all its values are in the space', () => {
    // Prepare: candidates lack (z, q) (capped grid) but a known observation has it, scored best
    const candidates = SMALL.filter((c) => !(c.a === 'z' && c.b === 'q'));
    const observations: Observation[] = [
      { config: { a: 'z', b: 'q' }, score: 0.9 },
      { config: { a: 'x', b: 'p' }, score: 0.1 },
      { config: { a: 'y', b: 'p' }, score: 0.2 },
      { config: { a: 'x', b: 'q' }, score: 0.3 },
    ];
    // Act
    const next = proposeTrials('gam', { candidates, observations, count: 1, seed: 64 });
    // Assess: learnt that z and q are good; (z, q) itself is not a candidate
    expect(next).toEqual([{ a: 'z', b: 'p' }]);
  });

  it('does not fit on an observation whose single-valued parameter differs from the space', () => {
    // Prepare: every candidate uses model m1; the observations used m2
    const candidates = SMALL.map((c) => ({ ...c, model: { modelId: 'm1' } }));
    const observations: Observation[] = SMALL.slice(0, 4).map((c, i) => ({
      config: { ...c, model: { modelId: 'm2' } },
      score: i / 10,
    }));
    // Act
    const gam = proposeTrials('gam', { candidates, observations, count: 2, seed: 64 });
    const tpe = proposeTrials('tpe', { candidates, observations, count: 2, seed: 64 });
    // Assess: counted as successes, nothing to fit on → both fall back to the warm-start order
    // (a fit would have put yq, the best pattern seen, first)
    expect(gam).toEqual(tpe);
    expect(gam.map((c) => `${c.a}${c.b}`)).toEqual(['zp', 'yq']);
  });

  it('proposes for 1296 candidates × 100 observations in well under 100 ms', () => {
    // Prepare
    const values = (n: number) => Array.from({ length: n }, (_, i) => i);
    const candidates = values(6).flatMap((a) =>
      values(6).flatMap((b) =>
        values(6).flatMap((c) => values(6).map((d) => ({ a: `a${a}`, b: `b${b}`, c: c * 100, d }))),
      ),
    );
    const observations = candidates
      .filter((_, i) => i % 13 === 0)
      .slice(0, 100)
      .map((config, i) => ({ config, score: i % 7 === 0 ? null : ((i * 37) % 100) / 100 }));
    expect(observations).toHaveLength(100);
    const input = { candidates, observations, count: 1, seed: 64 };
    for (const name of OPTIMIZER_NAMES) proposeTrials(name, input); // warm up
    for (const name of OPTIMIZER_NAMES) {
      // Act
      const t0 = performance.now();
      const next = proposeTrials(name, input);
      const ms = performance.now() - t0;
      // Assess
      expect(next).toHaveLength(1);
      expect(ms).toBeLessThan(100);
    }
  });
});

describe('proposeTrials: validation', () => {
  const base = { candidates: SMALL, observations: [], count: 1, seed: 64 };

  it('rejects an unknown optimizer name', () => {
    expect(() => proposeTrials('bayes' as OptimizerName, base)).toThrow(OptimizerError);
    expect(() => proposeTrials('bayes' as OptimizerName, base)).toThrow(
      "Unknown optimizer 'bayes'; use one of random, gam, tpe.",
    );
  });

  it('rejects a count below 1', () => {
    expect(() => proposeTrials('random', { ...base, count: 0 })).toThrow(
      'count must be an integer ≥ 1, got 0.',
    );
  });

  it('rejects an empty candidate list', () => {
    expect(() => proposeTrials('gam', { ...base, candidates: [] })).toThrow(ValidationError);
  });

  it('rejects a non-finite score', () => {
    const observations = [{ config: { a: 'x', b: 'p' }, score: Number.NaN }];
    expect(() => proposeTrials('gam', { ...base, observations })).toThrow(
      'Observation 0 has score NaN; expected a finite number or null.',
    );
  });

  it('uses gam as the default optimizer', () => {
    expect(DEFAULT_OPTIMIZER).toBe('gam');
  });
});

describe('optimize', () => {
  it('throws OptimizationError when every trial fails', async () => {
    // Prepare
    let calls = 0;
    const objective = async () => {
      calls++;
      throw new Error('boom');
    };
    // Act
    const run = optimize({ name: 'gam', candidates: SMALL, objective, maxEvals: 3 });
    // Assess
    await expect(run).rejects.toThrow(OptimizationError);
    await expect(
      optimize({ name: 'gam', candidates: SMALL, objective: async () => null, maxEvals: 3 }),
    ).rejects.toThrow('Number of evaluations has reached limit. All iterations have failed.');
    expect(calls).toBe(3);
  });

  it('records throwing trials as failures, counts them in maxEvals and returns the best', async () => {
    // Prepare
    const objective = async (c: TrialConfig) => {
      if (c.b === 'q') throw new Error('trial failed');
      return { x: 0.1, y: 0.7, z: 0.4 }[c.a as string] as number;
    };
    // Act
    const { best, observations } = await optimize({
      name: 'random',
      candidates: SMALL,
      objective,
      maxEvals: 4,
      seed: 64,
    });
    // Assess
    expect(observations).toHaveLength(4);
    const expected = proposeTrials('random', {
      candidates: SMALL,
      observations: [],
      count: 4,
      seed: 64,
    });
    expect(observations.map((o) => o.config)).toEqual(expected);
    expect(observations.map((o) => o.score)).toEqual(
      expected.map((c) => (c.b === 'q' ? null : { x: 0.1, y: 0.7, z: 0.4 }[c.a as string])),
    );
    const scored = observations.filter((o) => o.score !== null);
    expect(best.score).toBe(Math.max(...scored.map((o) => o.score as number)));
  });

  it('does not spend budget on known observations and caps maxEvals at the candidates', async () => {
    // Prepare
    const known: Observation[] = [
      { config: { a: 'x', b: 'p' }, score: 0.99 },
      { config: { a: 'x', b: 'q' }, score: 0.1 },
    ];
    const seen: string[] = [];
    const objective = async (c: TrialConfig) => {
      seen.push(combinationKey(c));
      return 0.5;
    };
    // Act
    const { best, observations } = await optimize({
      name: 'tpe',
      candidates: SMALL,
      objective,
      maxEvals: 100,
      knownObservations: known,
    });
    // Assess: 6 candidates − 2 known = 4 evaluated; the known best wins
    expect(observations).toHaveLength(4);
    expect(seen).not.toContain(combinationKey({ a: 'x', b: 'p' }));
    expect(best).toEqual(known[0]);
  });

  it('runs at most batchSize trials concurrently', async () => {
    // Prepare
    let running = 0;
    let peak = 0;
    const objective = async (c: TrialConfig) => {
      running++;
      peak = Math.max(peak, running);
      await new Promise((r) => setTimeout(r, 2));
      running--;
      return (c.n as number) / 10;
    };
    // Act
    const { observations, best } = await optimize({
      name: 'gam',
      candidates: ADDITIVE,
      objective,
      maxEvals: 11,
      batchSize: 3,
    });
    // Assess
    expect(observations).toHaveLength(11);
    expect(peak).toBe(3);
    expect(best.score).toBe(0.4);
  });
});
