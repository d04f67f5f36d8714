import { describe, expect, it } from 'vitest';
import { parseServingPattern } from '../../../functions/_shared/env.js';
import { runtimeConfig } from '../../../functions/_shared/runtime-common.js';
import {
  chunkingOptions,
  indexingParams,
  patternSettings,
  resultCacheKey,
  trialSettings,
} from '../../../shared/src/experiment/params.js';
import {
  parameterApplies,
  parameterMarginals,
} from '../../../shared/src/experiment/report-effects.js';
import type { TrialConfig, TrialRecord } from '../../../shared/src/experiment/types.js';

const BASE = {
  foundation_model: { modelId: 'local' },
  embedding_model: { modelId: 'local', contextLength: 512 },
  chunk_size: 256,
  retrieval_method: 'simple',
  window_size: 0,
  number_of_chunks: 3,
  search_mode: 'vector',
};
const RECURSIVE = { ...BASE, chunking_method: 'recursive', chunk_overlap: 64 };
const SEMANTIC = {
  ...BASE,
  chunking_method: 'semantic',
  chunk_overlap: 0,
  semantic_breakpoint: 'gradient',
  semantic_breakpoint_amount: 90,
};
const HIERARCHICAL = {
  ...BASE,
  chunking_method: 'hierarchical',
  chunk_overlap: 32,
  parent_chunk_size: 1024,
};

describe('chunking methods in trial settings (issue 15)', () => {
  it('maps each method to its ChunkingOptions, sentinels to nothing', () => {
    // Act / Assess
    expect(chunkingOptions(RECURSIVE)).toEqual({
      method: 'recursive',
      chunkSize: 256,
      chunkOverlap: 64,
    });
    expect(
      chunkingOptions({ ...RECURSIVE, parent_chunk_size: 0, semantic_breakpoint: '' }),
    ).toEqual({ method: 'recursive', chunkSize: 256, chunkOverlap: 64 });
    expect(chunkingOptions(SEMANTIC)).toEqual({
      method: 'semantic',
      chunkSize: 256,
      chunkOverlap: 0,
      breakpoint: 'gradient',
      breakpointAmount: 90,
    });
    expect(
      chunkingOptions({ ...SEMANTIC, semantic_breakpoint: '', semantic_breakpoint_amount: 0 }),
    ).toEqual({ method: 'semantic', chunkSize: 256, chunkOverlap: 0 });
    expect(chunkingOptions(HIERARCHICAL)).toEqual({
      method: 'hierarchical',
      chunkSize: 256,
      chunkOverlap: 32,
      parentChunkSize: 1024,
    });
    // Without parent_chunk_size (or with its sentinel) a parent holds four children
    const { parent_chunk_size: _p, ...noParent } = HIERARCHICAL;
    expect(chunkingOptions(noParent).parentChunkSize).toBe(1024);
    expect(chunkingOptions({ ...HIERARCHICAL, parent_chunk_size: 0 }).parentChunkSize).toBe(1024);
  });

  it('puts the method parameters in the indexing params and pattern settings only where they apply', () => {
    // Act
    const rec = patternSettings(trialSettings(RECURSIVE), 'pglite', 'c', 384).chunking;
    const sem = patternSettings(trialSettings(SEMANTIC), 'pglite', 'c', 384).chunking;
    const hier = indexingParams(trialSettings(HIERARCHICAL), 384).chunking;
    // Assess
    expect(rec).toEqual({
      method: 'recursive',
      chunk_size: 256,
      chunk_overlap: 64,
      include_metadata: false,
    });
    expect(sem).toEqual({
      method: 'semantic',
      chunk_size: 256,
      chunk_overlap: 0,
      include_metadata: false,
      semantic_breakpoint: 'gradient',
      semantic_breakpoint_amount: 90,
    });
    expect(hier).toEqual({
      chunking_method: 'hierarchical',
      chunk_size: 256,
      chunk_overlap: 32,
      include_metadata: false,
      parent_chunk_size: 1024,
    });
  });

  it('keeps the cache key of a configuration without the new parameters, and tells parent sizes apart', () => {
    // Prepare
    const key = (c: TrialConfig) =>
      resultCacheKey('corpus', 'bench', indexingParams(trialSettings(c), 384), {});
    // Act / Assess: sentinels of other methods do not change a recursive trial's key
    expect(key({ ...RECURSIVE, parent_chunk_size: 0, semantic_breakpoint_amount: 0 })).toBe(
      key(RECURSIVE),
    );
    expect(key(HIERARCHICAL)).not.toBe(key({ ...HIERARCHICAL, parent_chunk_size: 2048 }));
  });
});

describe('chunking methods in a served pattern (issue 15)', () => {
  it.each([
    [
      HIERARCHICAL,
      { method: 'hierarchical', chunkSize: 256, chunkOverlap: 32, parentChunkSize: 1024 },
    ],
    [
      SEMANTIC,
      {
        method: 'semantic',
        chunkSize: 256,
        chunkOverlap: 0,
        breakpoint: 'gradient',
        breakpointAmount: 90,
      },
    ],
    [RECURSIVE, { method: 'recursive', chunkSize: 256, chunkOverlap: 64 }],
  ])(
    'pattern.json settings of %j give the runtime the same chunking options',
    (config, expected) => {
      // Prepare
      const settings = patternSettings(trialSettings(config), 'pglite', 'ai4rag_x', 384);
      // Act
      const runtime = runtimeConfig({
        store: 'pglite',
        collection: 'ai4rag_x',
        queueUrls: {},
        servingPattern: parseServingPattern(JSON.stringify({ name: 'Pattern1', settings })),
      });
      // Assess
      expect(runtime.chunking).toEqual(expected);
      expect(runtime.chunking).toEqual(chunkingOptions(config));
    },
  );
});

describe('chunking methods in the report effects (issue 15)', () => {
  it('applies parent_chunk_size to hierarchical only, breakpoints to semantic only, overlap not to semantic', () => {
    // Assess
    expect(parameterApplies('parent_chunk_size', HIERARCHICAL)).toBe(true);
    expect(parameterApplies('parent_chunk_size', { ...RECURSIVE, parent_chunk_size: 0 })).toBe(
      false,
    );
    expect(parameterApplies('semantic_breakpoint', SEMANTIC)).toBe(true);
    expect(parameterApplies('semantic_breakpoint_amount', SEMANTIC)).toBe(true);
    expect(
      parameterApplies('semantic_breakpoint', { ...HIERARCHICAL, semantic_breakpoint: '' }),
    ).toBe(false);
    expect(parameterApplies('chunk_overlap', SEMANTIC)).toBe(false);
    expect(parameterApplies('chunk_overlap', HIERARCHICAL)).toBe(true);
    expect(parameterApplies('chunking_method', SEMANTIC)).toBe(true);
  });

  it('shows chunking_method as an effect, and the method parameters only over their own trials', () => {
    // Prepare
    const trial = (iteration: number, score: number, config: TrialConfig): TrialRecord => ({
      pattern_name: `Pattern${iteration + 1}`,
      iteration,
      config: { parent_chunk_size: 0, semantic_breakpoint: '', ...config },
      score,
      duration_seconds: 1,
    });
    const trials = [
      trial(0, 0.25, RECURSIVE),
      trial(1, 0.5, SEMANTIC),
      trial(2, 1, HIERARCHICAL),
      trial(3, 0.5, { ...HIERARCHICAL, parent_chunk_size: 2048 }),
    ];
    // Act
    const m = parameterMarginals(trials);
    // Assess
    const effect = (p: string) => m.effects.find((e) => e.parameter === p);
    expect(effect('chunking_method')?.values).toEqual([
      { value: 'hierarchical', meanScore: 0.75, trials: 2, cached: 0 },
      { value: 'recursive', meanScore: 0.25, trials: 1, cached: 0 },
      { value: 'semantic', meanScore: 0.5, trials: 1, cached: 0 },
    ]);
    expect(effect('parent_chunk_size')).toMatchObject({
      trials: 2,
      condition: 'chunking_method = hierarchical',
      values: [
        { value: '1024', meanScore: 1, trials: 1 },
        { value: '2048', meanScore: 0.5, trials: 1 },
      ],
    });
    expect(effect('chunk_overlap')?.values.map((v) => v.value)).toEqual(['32', '64']);
    expect(m.fixed.filter((f) => f.parameter.startsWith('semantic_'))).toEqual([
      {
        parameter: 'semantic_breakpoint',
        value: 'gradient',
        trials: 1,
        condition: 'chunking_method = semantic',
      },
      {
        parameter: 'semantic_breakpoint_amount',
        value: '90',
        trials: 1,
        condition: 'chunking_method = semantic',
      },
    ]);
  });
});
