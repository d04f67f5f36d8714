import { describe, expect, it } from 'vitest';
import {
  parameterApplies,
  parameterMarginals,
} from '../../../shared/src/experiment/report-effects.js';
import type { TrialConfig, TrialRecord } from '../../../shared/src/experiment/types.js';

const VECTOR = { search_mode: 'vector', ranker_strategy: '', ranker_k: 0, ranker_alpha: 1 };
const RRF = { search_mode: 'hybrid', ranker_strategy: 'rrf', ranker_k: 60, ranker_alpha: 1 };
const WEIGHTED = {
  search_mode: 'hybrid',
  ranker_strategy: 'weighted',
  ranker_k: 0,
  ranker_alpha: 0.5,
};

function trial(
  iteration: number,
  score: number | null,
  config: TrialConfig,
  extra: Partial<TrialRecord> = {},
): TrialRecord {
  return {
    pattern_name: `Pattern${iteration + 1}`,
    iteration,
    config,
    score,
    duration_seconds: 1,
    ...(score === null && { error: 'EmbeddingError: down' }),
    ...extra,
  };
}

describe('parameterApplies', () => {
  it('follows the search-space rules: ranker only with hybrid search, k only with rrf, alpha only with weighted', () => {
    // Assess
    expect(
      ['ranker_strategy', 'ranker_k', 'ranker_alpha'].map((p) => parameterApplies(p, VECTOR)),
    ).toEqual([false, false, false]);
    expect(
      ['ranker_strategy', 'ranker_k', 'ranker_alpha'].map((p) => parameterApplies(p, RRF)),
    ).toEqual([true, true, false]);
    expect(
      ['ranker_strategy', 'ranker_k', 'ranker_alpha'].map((p) => parameterApplies(p, WEIGHTED)),
    ).toEqual([true, false, true]);
    // Without ranker_strategy the value decides: anything but the sentinel applies.
    expect(parameterApplies('ranker_k', { search_mode: 'hybrid', ranker_k: 20 })).toBe(true);
    expect(parameterApplies('ranker_k', { search_mode: 'hybrid', ranker_k: 0 })).toBe(false);
    // A missing search_mode is vector, the trial default.
    expect(parameterApplies('ranker_strategy', { ranker_strategy: 'rrf' })).toBe(false);
  });

  it('applies window_size only to window retrieval, chunk_overlap not to hybrid chunking, candidates only with a reranker', () => {
    // Assess
    expect(parameterApplies('window_size', { retrieval_method: 'simple', window_size: 0 })).toBe(
      false,
    );
    expect(parameterApplies('window_size', { retrieval_method: 'window', window_size: 2 })).toBe(
      true,
    );
    expect(parameterApplies('window_size', { window_size: 3 })).toBe(true);
    expect(parameterApplies('chunk_overlap', { chunking_method: 'hybrid', chunk_overlap: 0 })).toBe(
      false,
    );
    expect(
      parameterApplies('chunk_overlap', { chunking_method: 'recursive', chunk_overlap: 128 }),
    ).toBe(true);
    expect(parameterApplies('rerank_candidates', { reranker: 'none', rerank_candidates: 0 })).toBe(
      false,
    );
    expect(
      parameterApplies('rerank_candidates', {
        reranker: 'local/overlap-v1',
        rerank_candidates: 20,
      }),
    ).toBe(true);
    // Reranker and query transform are choices in every trial ('none' included); an absent key never applies.
    expect(parameterApplies('reranker', { reranker: 'none' })).toBe(true);
    expect(parameterApplies('query_transform', { query_transform: 'none' })).toBe(true);
    expect(parameterApplies('chunk_size', {})).toBe(false);
  });
});

describe('parameterMarginals', () => {
  it('averages each parameter over the trials where it applies and lists one-valued ones as fixed', () => {
    // Prepare
    const trials = [
      trial(0, 0.5, { chunk_size: 512, model: { modelId: 'm/a' }, ...VECTOR }),
      trial(1, 0.8, { chunk_size: 1024, model: { modelId: 'm/a' }, ...RRF }),
      trial(2, 0.6, { chunk_size: 512, model: { modelId: 'm/a' }, ...WEIGHTED }),
      trial(3, 0.7, { chunk_size: 1024, model: { modelId: 'm/a' }, ...RRF, ranker_k: 20 }),
      trial(4, null, { chunk_size: 2048, model: { modelId: 'm/b' }, ...RRF }),
    ];

    // Act
    const m = parameterMarginals(trials);

    // Assess
    expect(m.effects).toEqual([
      {
        parameter: 'chunk_size',
        values: [
          { value: '512', meanScore: 0.55, trials: 2, cached: 0 },
          { value: '1024', meanScore: 0.75, trials: 2, cached: 0 },
        ],
        spread: 0.75 - 0.55,
        trials: 4,
      },
      {
        parameter: 'search_mode',
        values: [
          { value: 'hybrid', meanScore: (0.8 + 0.6 + 0.7) / 3, trials: 3, cached: 0 },
          { value: 'vector', meanScore: 0.5, trials: 1, cached: 0 },
        ],
        spread: (0.8 + 0.6 + 0.7) / 3 - 0.5,
        trials: 4,
      },
      {
        parameter: 'ranker_strategy',
        values: [
          { value: 'rrf', meanScore: 0.75, trials: 2, cached: 0 },
          { value: 'weighted', meanScore: 0.6, trials: 1, cached: 0 },
        ],
        spread: 0.75 - 0.6,
        trials: 3,
        condition: 'search_mode = hybrid',
      },
      {
        parameter: 'ranker_k',
        values: [
          { value: '20', meanScore: 0.7, trials: 1, cached: 0 },
          { value: '60', meanScore: 0.8, trials: 1, cached: 0 },
        ],
        spread: 0.8 - 0.7,
        trials: 2,
        condition: 'ranker_strategy = rrf',
      },
    ]);
    expect(m.effects[1]?.spread).toBeCloseTo(0.2, 12);
    expect(m.fixed).toEqual([
      { parameter: 'model', value: 'm/a', trials: 4 },
      {
        parameter: 'ranker_alpha',
        value: '0.5',
        trials: 1,
        condition: 'ranker_strategy = weighted',
      },
    ]);
    expect(m.unused).toEqual([]);
    expect([m.trials, m.cached, m.duplicates]).toEqual([4, 0, 0]);
  });

  it('counts cached trials, so a re-run answered entirely from the cache has the same effects', () => {
    // Prepare
    const configs = [
      { chunk_size: 512, ...VECTOR },
      { chunk_size: 1024, ...VECTOR },
      { chunk_size: 1024, ...RRF },
    ];
    const scores = [0.4, 0.6, 0.9];
    const first = configs.map((c, i) => trial(i, scores[i] as number, c));
    const rerun = configs.map((c, i) =>
      trial(i, scores[i] as number, c, { cached: true, duration_seconds: 0 }),
    );

    // Act
    const a = parameterMarginals(first);
    const b = parameterMarginals(rerun);

    // Assess
    const strip = (m: typeof a) =>
      m.effects.map((e) => ({ ...e, values: e.values.map(({ cached: _c, ...v }) => v) }));
    expect(strip(b)).toEqual(strip(a));
    expect(b.effects.map((e) => e.parameter)).toEqual(['search_mode', 'chunk_size']);
    expect(b.effects[1]?.values).toEqual([
      { value: '512', meanScore: 0.4, trials: 1, cached: 1 },
      { value: '1024', meanScore: 0.75, trials: 2, cached: 2 },
    ]);
    expect([b.trials, b.cached, b.duplicates]).toEqual([3, 3, 0]);
    expect(b.unused).toEqual([
      { parameter: 'ranker_alpha', condition: 'ranker_strategy = weighted' },
    ]);
  });

  it('counts a repeated configuration once and ignores failed trials', () => {
    // Prepare
    const trials = [
      trial(0, 0.4, { chunk_size: 512 }),
      trial(1, 0.6, { chunk_size: 1024 }),
      trial(2, 0.6, { chunk_size: 1024 }, { cached: true }),
      trial(3, null, { chunk_size: 2048 }),
    ];

    // Act
    const m = parameterMarginals(trials);

    // Assess
    expect(m.effects[0]?.values).toEqual([
      { value: '512', meanScore: 0.4, trials: 1, cached: 0 },
      { value: '1024', meanScore: 0.6, trials: 1, cached: 0 },
    ]);
    expect([m.trials, m.cached, m.duplicates]).toEqual([2, 0, 1]);
  });

  it('reports nothing to compare for a single trial, and nothing at all without a successful one', () => {
    // Act
    const one = parameterMarginals([trial(0, 0.5, { chunk_size: 512, ...VECTOR })]);
    const none = parameterMarginals([trial(0, null, { chunk_size: 512 })]);

    // Assess
    expect(one.effects).toEqual([]);
    expect(one.fixed).toEqual([
      { parameter: 'chunk_size', value: '512', trials: 1 },
      { parameter: 'search_mode', value: 'vector', trials: 1 },
    ]);
    expect(one.unused.map((u) => u.parameter)).toEqual([
      'ranker_alpha',
      'ranker_k',
      'ranker_strategy',
    ]);
    expect(none).toEqual({
      effects: [],
      fixed: [],
      unused: [],
      trials: 0,
      cached: 0,
      duplicates: 0,
    });
  });
});
