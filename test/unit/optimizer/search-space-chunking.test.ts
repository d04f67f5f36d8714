import { describe, expect, it } from 'vitest';
import {
  createSearchSpace,
  defaultParentChunkSize,
  defaultSearchSpace,
  mergeSearchSpace,
  parseSearchSpaceOverrides,
  ruleChunkOverlapForChunkingMethod,
  ruleHierarchicalNeedsSimpleRetrieval,
  ruleParentChunkSizeForHierarchicalOnly,
  ruleSemanticAmountForBreakpoint,
  ruleSemanticBreakpointForSemanticOnly,
  SearchSpaceError,
} from '../../../shared/src/optimizer/search-space.js';

const MODELS = {
  foundationModels: [{ modelId: 'fm' }],
  embeddingModels: [{ modelId: 'em', contextLength: 8192 }],
};

/** The chunking columns of a grid, in its order. */
function chunkingOf(combos: Record<string, unknown>[]): string[] {
  const seen = new Set<string>();
  for (const c of combos) {
    seen.add(
      [
        c.chunking_method,
        c.chunk_size,
        c.chunk_overlap,
        c.parent_chunk_size ?? '-',
        c.semantic_breakpoint ?? '-',
        c.semantic_breakpoint_amount ?? '-',
      ].join('/'),
    );
  }
  return [...seen];
}

describe('search space: chunking methods (issue 15)', () => {
  it('keeps the default space at 72 combinations (the new parameters are not in it)', () => {
    // Act
    const space = createSearchSpace(defaultSearchSpace(MODELS));
    // Assess
    expect(space.size()).toBe(72);
    expect(space.parameters.map((p) => p.name)).not.toContain('parent_chunk_size');
  });

  it('rule 1: semantic needs overlap 0 like hybrid; fixed and hierarchical need overlap > 0 like recursive', () => {
    // Act / Assess
    const r = ruleChunkOverlapForChunkingMethod;
    expect(r({ chunking_method: 'semantic', chunk_overlap: 0 })).toBe(true);
    expect(r({ chunking_method: 'semantic', chunk_overlap: 128 })).toBe(false);
    expect(r({ chunking_method: 'fixed', chunk_overlap: 128 })).toBe(true);
    expect(r({ chunking_method: 'fixed', chunk_overlap: 0 })).toBe(false);
    expect(r({ chunking_method: 'hierarchical', chunk_overlap: 64 })).toBe(true);
    expect(r({ chunking_method: 'hierarchical', chunk_overlap: 0 })).toBe(false);
  });

  it('rule 12: hierarchical needs parent_chunk_size > chunk_size, other methods the sentinel 0', () => {
    // Act / Assess
    const r = ruleParentChunkSizeForHierarchicalOnly;
    expect(r({ chunking_method: 'hierarchical', chunk_size: 512, parent_chunk_size: 2048 })).toBe(
      true,
    );
    expect(r({ chunking_method: 'hierarchical', chunk_size: 512, parent_chunk_size: 512 })).toBe(
      false,
    );
    expect(r({ chunking_method: 'hierarchical', chunk_size: 512, parent_chunk_size: 0 })).toBe(
      false,
    );
    expect(r({ chunking_method: 'recursive', chunk_size: 512, parent_chunk_size: 0 })).toBe(true);
    expect(r({ chunking_method: 'semantic', chunk_size: 512, parent_chunk_size: 2048 })).toBe(
      false,
    );
    expect(r({ chunking_method: 'hierarchical', chunk_size: 512 })).toBe(true);
    expect(r({ parent_chunk_size: 2048 })).toBe(true);
  });

  it('rule 13: semantic needs a breakpoint and a non-zero amount, other methods the sentinels', () => {
    // Act / Assess
    const r = ruleSemanticBreakpointForSemanticOnly;
    const sem = { chunking_method: 'semantic' };
    expect(r({ ...sem, semantic_breakpoint: 'gradient', semantic_breakpoint_amount: 90 })).toBe(
      true,
    );
    expect(r({ ...sem, semantic_breakpoint: '', semantic_breakpoint_amount: 90 })).toBe(false);
    expect(r({ ...sem, semantic_breakpoint: 'percentile', semantic_breakpoint_amount: 0 })).toBe(
      false,
    );
    expect(r({ ...sem })).toBe(true);
    const rec = { chunking_method: 'recursive' };
    expect(r({ ...rec, semantic_breakpoint: '', semantic_breakpoint_amount: 0 })).toBe(true);
    expect(r({ ...rec, semantic_breakpoint: 'percentile', semantic_breakpoint_amount: 0 })).toBe(
      false,
    );
    expect(r({ ...rec, semantic_breakpoint: '', semantic_breakpoint_amount: 95 })).toBe(false);
  });

  it('rule 14: standard_deviation takes at most 10 deviations; percentiles go to 100', () => {
    // Act / Assess
    const r = ruleSemanticAmountForBreakpoint;
    expect(r({ semantic_breakpoint: 'standard_deviation', semantic_breakpoint_amount: 3 })).toBe(
      true,
    );
    expect(r({ semantic_breakpoint: 'standard_deviation', semantic_breakpoint_amount: 95 })).toBe(
      false,
    );
    expect(r({ semantic_breakpoint: 'percentile', semantic_breakpoint_amount: 95 })).toBe(true);
  });

  it('rule 15: hierarchical only with simple retrieval', () => {
    // Act / Assess
    const r = ruleHierarchicalNeedsSimpleRetrieval;
    expect(r({ chunking_method: 'hierarchical', retrieval_method: 'simple' })).toBe(true);
    expect(r({ chunking_method: 'hierarchical', retrieval_method: 'window' })).toBe(false);
    expect(r({ chunking_method: 'recursive', retrieval_method: 'window' })).toBe(true);
  });

  it('an override spanning recursive, semantic and hierarchical keeps exactly the valid chunking configurations', () => {
    // Prepare
    const overrides = parseSearchSpaceOverrides({
      chunking_method: ['recursive', 'fixed', 'semantic', 'hierarchical'],
      chunk_size: [256, 512],
      chunk_overlap: [0, 64],
      parent_chunk_size: [0, 512, 1024],
      semantic_breakpoint: ['', 'percentile', 'standard_deviation'],
      semantic_breakpoint_amount: [0, 3, 95],
      retrieval_method: ['simple', 'window'],
      window_size: [0, 1],
      number_of_chunks: [3],
      search_mode: ['vector'],
      ranker_strategy: [''],
      ranker_k: [0],
      ranker_alpha: [1],
    });
    // Act
    const combos = createSearchSpace(
      mergeSearchSpace(defaultSearchSpace(MODELS), overrides),
    ).combinations();
    // Assess
    expect(chunkingOf(combos)).toEqual([
      'recursive/256/64/0//0',
      'recursive/512/64/0//0',
      'fixed/256/64/0//0',
      'fixed/512/64/0//0',
      'semantic/256/0/0/percentile/3',
      'semantic/256/0/0/percentile/95',
      'semantic/256/0/0/standard_deviation/3',
      'semantic/512/0/0/percentile/3',
      'semantic/512/0/0/percentile/95',
      'semantic/512/0/0/standard_deviation/3',
      'hierarchical/256/64/512//0',
      'hierarchical/256/64/1024//0',
      'hierarchical/512/64/1024//0',
    ]);
    const windows = combos.filter((c) => c.retrieval_method === 'window');
    expect(new Set(windows.map((c) => c.chunking_method))).toEqual(
      new Set(['recursive', 'fixed', 'semantic']),
    );
    // 4 recursive/fixed + 6 semantic configs × 2 retrieval modes, 3 hierarchical × simple only
    expect(combos).toHaveLength(10 * 2 + 3);
  });

  it('refuses bad values of the new parameters, naming each key', () => {
    // Act
    const act = () =>
      parseSearchSpaceOverrides({
        chunking_method: ['semantic', 'llm'],
        parent_chunk_size: [128, 9000, 1.5],
        semantic_breakpoint: ['elbow'],
        semantic_breakpoint_amount: [-1, 101],
      });
    // Assess
    expect(act).toThrow(SearchSpaceError);
    expect(act).toThrow(
      "Invalid search space overrides: 'chunking_method' value 'llm' must be one of 'recursive', 'hybrid', 'fixed', " +
        "'semantic', 'hierarchical'; 'parent_chunk_size' value 128 must be an integer in 129..8192 or the sentinel 0; " +
        "'parent_chunk_size' value 9000 must be an integer in 129..8192 or the sentinel 0; 'parent_chunk_size' value " +
        "1.5 must be an integer in 129..8192 or the sentinel 0; 'semantic_breakpoint' value 'elbow' must be one of " +
        "'percentile', 'standard_deviation', 'gradient' or the sentinel ''; 'semantic_breakpoint_amount' value -1 " +
        'must be a number in (0, 100] (a percentile, or at most 10 standard deviations) or the sentinel 0; ' +
        "'semantic_breakpoint_amount' value 101 must be a number in (0, 100] (a percentile, or at most 10 standard " +
        'deviations) or the sentinel 0.',
    );
  });

  it('defaults a parent to four children, capped at 8192 tokens', () => {
    // Act / Assess
    expect(defaultParentChunkSize(512)).toBe(2048);
    expect(defaultParentChunkSize(2048)).toBe(8192);
    expect(defaultParentChunkSize(4000)).toBe(8192);
  });
});
