import { describe, expect, it } from 'vitest';
import { ValidationError } from '#shared/errors.js';
import {
  BUILT_IN_RULES,
  combinationKey,
  createSearchSpace,
  defaultSearchSpace,
  limitCombinations,
  mergeSearchSpace,
  type Parameter,
  parameterValues,
  parseSearchSpaceOverrides,
  ruleAdjustWindowToRetrievalMethod,
  ruleChunkOverlapForChunkingMethod,
  ruleChunkSizeBiggerThanChunkOverlap,
  ruleChunkSizeWithinEmbeddingContextLength,
  ruleRankerAlphaForWeightedOnly,
  ruleRankerKForRrfOnly,
  ruleRerankCandidatesAtLeastNumberOfChunks,
  ruleRerankCandidatesForRerankerOnly,
  ruleSearchModeRankerConsistency,
  SearchSpaceError,
} from '#shared/optimizer/search-space.js';

const FM = { modelId: 'fm-a' };
const EM = { modelId: 'em-a', contextLength: 8192 };

function count(combos: Record<string, unknown>[], key: string, value: unknown): number {
  return combos.filter((c) => c[key] === value).length;
}

describe('parameterValues', () => {
  it('enumerates booleans, inclusive integer ranges and categoricals', () => {
    // Prepare
    const b: Parameter = { name: 'x', type: 'B' };
    const i: Parameter = { name: 'window_size', type: 'I', min: 1, max: 4 };
    const c: Parameter = { name: 'chunk_size', type: 'C', values: [512, 1024] };

    // Act / Assess
    expect(parameterValues(b)).toEqual([true, false]);
    expect(parameterValues(i)).toEqual([1, 2, 3, 4]);
    expect(parameterValues(c)).toEqual([512, 1024]);
  });

  it('rejects invalid definitions with a SearchSpaceError', () => {
    // Act / Assess
    expect(() => parameterValues({ name: 'a', type: 'C' })).toThrow(/needs a non-empty array/);
    expect(() => parameterValues({ name: 'a', type: 'I', min: 1.5, max: 3 })).toThrow(
      /integer min and max/,
    );
    expect(() => parameterValues({ name: 'a', type: 'I', min: 5, max: 3 })).toThrow(
      /min 5 is greater than max 3/,
    );
    expect(() => parameterValues({ name: 'a', type: 'R' as 'C' })).toThrow(/unsupported type 'R'/);
    expect(() =>
      parameterValues({ name: 'a', type: 'C', values: [{ modelId: 'm' }, { modelId: 'm' }] }),
    ).toThrow(/model 'm' twice/);
    expect(() => parameterValues({ name: 'a', type: 'C' })).toThrow(SearchSpaceError);
    expect(new SearchSpaceError('x')).toBeInstanceOf(ValidationError);
  });
});

describe('default search space', () => {
  it('has exactly 72 valid of 1,296 raw combinations for one FM and one EM', () => {
    // Prepare
    const space = createSearchSpace(
      defaultSearchSpace({ foundationModels: [FM], embeddingModels: [EM] }),
    );

    // Act
    const combos = space.combinations();

    // Assess
    expect(space.rawSize()).toBe(1296);
    expect(combos).toHaveLength(72);
    expect(space.size()).toBe(72);
    expect(count(combos, 'search_mode', 'hybrid')).toBe(48);
    expect(count(combos, 'search_mode', 'vector')).toBe(24);
    const chunking = new Set(
      combos.map((c) => `${c.chunking_method}/${c.chunk_size}/${c.chunk_overlap}`),
    );
    expect([...chunking].sort()).toEqual([
      'hybrid/1024/0',
      'hybrid/2048/0',
      'hybrid/512/0',
      'recursive/1024/128',
      'recursive/1024/256',
      'recursive/2048/128',
      'recursive/2048/256',
      'recursive/512/128',
    ]);
    const retrieval = new Set(
      combos.map((c) => `${c.search_mode}/${c.ranker_strategy}/${c.ranker_k}/${c.ranker_alpha}`),
    );
    expect([...retrieval].sort()).toEqual([
      'hybrid/rrf/60/1',
      'hybrid/weighted/0/0.5',
      'vector//0/1',
    ]);
  });

  it('enumerates in a deterministic Cartesian order with the last parameter fastest', () => {
    // Prepare
    const params = defaultSearchSpace({ foundationModels: [FM], embeddingModels: [EM] });

    // Act
    const first = createSearchSpace(params).combinations();
    const second = createSearchSpace(params).combinations();

    // Assess
    expect(first.map(combinationKey)).toEqual(second.map(combinationKey));
    expect(first[0]).toEqual({
      foundation_model: FM,
      embedding_model: EM,
      chunking_method: 'recursive',
      chunk_size: 512,
      chunk_overlap: 128,
      retrieval_method: 'simple',
      window_size: 0,
      number_of_chunks: 3,
      search_mode: 'vector',
      ranker_strategy: '',
      ranker_k: 0,
      ranker_alpha: 1,
    });
    expect(first[1]).toMatchObject({ number_of_chunks: 3, search_mode: 'hybrid', ranker_k: 60 });
    expect(first[2]).toMatchObject({ search_mode: 'hybrid', ranker_alpha: 0.5 });
  });

  it('keeps only chunk size 512 when the embedding context length is 1000 (0.9 × 1000 = 900)', () => {
    // Prepare: 512 survives as recursive/128 and hybrid/0 = 2 configs; × 3 retrieval × 3 k = 18.
    const params = defaultSearchSpace({
      foundationModels: [FM],
      embeddingModels: [{ modelId: 'small', contextLength: 1000 }],
    });

    // Act
    const combos = createSearchSpace(params).combinations();

    // Assess
    expect(combos).toHaveLength(18);
    expect(new Set(combos.map((c) => c.chunk_size))).toEqual(new Set([512]));
  });

  it('skips rule 4 when the context length is unknown', () => {
    // Act
    const size = createSearchSpace(
      defaultSearchSpace({ foundationModels: [FM], embeddingModels: [{ modelId: 'e' }] }),
    ).size();

    // Assess
    expect(size).toBe(72);
  });

  it('gives 288 combinations for 2 FMs × 2 EMs', () => {
    // Prepare
    const params = defaultSearchSpace({
      foundationModels: [FM, { modelId: 'fm-b' }],
      embeddingModels: [EM, { modelId: 'em-b', contextLength: 4096 }],
      vectorStore: 'milvus',
    });

    // Act
    const space = createSearchSpace(params);

    // Assess
    expect(space.size()).toBe(288);
    expect(space.rawSize()).toBe(5184);
  });

  it('rejects an empty model list', () => {
    // Act / Assess
    expect(() => defaultSearchSpace({ foundationModels: [], embeddingModels: [EM] })).toThrow(
      /At least one foundation model is required/,
    );
  });
});

describe('built-in rules', () => {
  it('lists the seven rules in ai4rag order, then the reranking and query-transform rules', () => {
    // Assess
    expect(BUILT_IN_RULES.map((r) => r.name)).toEqual([
      'ruleChunkOverlapForChunkingMethod',
      'ruleChunkSizeBiggerThanChunkOverlap',
      'ruleAdjustWindowToRetrievalMethod',
      'ruleChunkSizeWithinEmbeddingContextLength',
      'ruleSearchModeRankerConsistency',
      'ruleRankerKForRrfOnly',
      'ruleRankerAlphaForWeightedOnly',
      'ruleRerankCandidatesForRerankerOnly',
      'ruleRerankCandidatesAtLeastNumberOfChunks',
      'ruleRm3NeedsKeywordLeg',
      'ruleChatTransformNeedsChatModel',
      'ruleParentChunkSizeForHierarchicalOnly',
      'ruleSemanticBreakpointForSemanticOnly',
      'ruleSemanticAmountForBreakpoint',
      'ruleHierarchicalNeedsSimpleRetrieval',
    ]);
  });

  it('rule 1: hybrid needs overlap 0, other methods need overlap > 0, missing keys pass', () => {
    // Act / Assess
    const r = ruleChunkOverlapForChunkingMethod;
    expect(r({ chunking_method: 'hybrid', chunk_overlap: 0 })).toBe(true);
    expect(r({ chunking_method: 'hybrid', chunk_overlap: 128 })).toBe(false);
    expect(r({ chunking_method: 'recursive', chunk_overlap: 0 })).toBe(false);
    expect(r({ chunking_method: 'recursive', chunk_overlap: 128 })).toBe(true);
    expect(r({ chunking_method: 'hybrid' })).toBe(true);
    expect(r({ chunk_overlap: 5 })).toBe(true);
  });

  it('rule 2: chunk_size > 2 × overlap, throws when a key is missing', () => {
    // Act / Assess
    const r = ruleChunkSizeBiggerThanChunkOverlap;
    expect(r({ chunk_size: 512, chunk_overlap: 255 })).toBe(true);
    expect(r({ chunk_size: 512, chunk_overlap: 256 })).toBe(false);
    expect(() => r({ chunk_size: 512 })).toThrow(SearchSpaceError);
    expect(() => r({ chunk_overlap: 0 })).toThrow(/'chunk_size'/);
  });

  it('rule 3: window 0 ⇔ simple, window > 0 ⇔ window, throws when a key is missing', () => {
    // Act / Assess
    const r = ruleAdjustWindowToRetrievalMethod;
    expect(r({ retrieval_method: 'simple', window_size: 0 })).toBe(true);
    expect(r({ retrieval_method: 'simple', window_size: 2 })).toBe(false);
    expect(r({ retrieval_method: 'window', window_size: 0 })).toBe(false);
    expect(r({ retrieval_method: 'window', window_size: 2 })).toBe(true);
    expect(() => r({ retrieval_method: 'simple' })).toThrow(/'window_size'/);
    expect(() => r({ window_size: 0 })).toThrow(SearchSpaceError);
  });

  it('rule 4: chunk_size ≤ 0.9 × context length, skipped when unknown', () => {
    // Act / Assess
    const r = ruleChunkSizeWithinEmbeddingContextLength;
    expect(r({ chunk_size: 900, embedding_model: { modelId: 'e', contextLength: 1000 } })).toBe(
      true,
    );
    expect(r({ chunk_size: 901, embedding_model: { modelId: 'e', contextLength: 1000 } })).toBe(
      false,
    );
    expect(r({ chunk_size: 99999, embedding_model: { modelId: 'e' } })).toBe(true);
    expect(r({ chunk_size: 99999 })).toBe(true);
  });

  it('rule 5: vector needs sentinels, hybrid needs a real strategy', () => {
    // Act / Assess
    const r = ruleSearchModeRankerConsistency;
    expect(r({ search_mode: 'vector', ranker_strategy: '', ranker_k: 0, ranker_alpha: 1 })).toBe(
      true,
    );
    expect(r({ search_mode: 'vector' })).toBe(true);
    expect(r({ search_mode: 'vector', ranker_strategy: 'rrf' })).toBe(false);
    expect(r({ search_mode: 'vector', ranker_k: 60 })).toBe(false);
    expect(r({ search_mode: 'vector', ranker_alpha: 0.5 })).toBe(false);
    expect(r({ search_mode: 'graph', ranker_strategy: '' })).toBe(true);
    expect(r({ search_mode: 'hybrid', ranker_strategy: 'normalized' })).toBe(true);
    expect(r({ search_mode: 'hybrid', ranker_strategy: '' })).toBe(false);
    expect(r({ search_mode: 'hybrid' })).toBe(false);
  });

  it('rule 6: rrf ⇒ ranker_k ≠ 0, otherwise ranker_k = 0', () => {
    // Act / Assess
    const r = ruleRankerKForRrfOnly;
    expect(r({ ranker_strategy: 'rrf', ranker_k: 60 })).toBe(true);
    expect(r({ ranker_strategy: 'rrf', ranker_k: 0 })).toBe(false);
    expect(r({ ranker_strategy: 'weighted', ranker_k: 60 })).toBe(false);
    expect(r({ ranker_strategy: '', ranker_k: 0 })).toBe(true);
    expect(r({ ranker_strategy: 'rrf' })).toBe(true);
  });

  it('rule 7: weighted ⇒ ranker_alpha ≠ 1, otherwise ranker_alpha = 1', () => {
    // Act / Assess
    const r = ruleRankerAlphaForWeightedOnly;
    expect(r({ ranker_strategy: 'weighted', ranker_alpha: 0.5 })).toBe(true);
    expect(r({ ranker_strategy: 'weighted', ranker_alpha: 1 })).toBe(false);
    expect(r({ ranker_strategy: 'rrf', ranker_alpha: 0.5 })).toBe(false);
    expect(r({ ranker_strategy: 'normalized', ranker_alpha: 1 })).toBe(true);
    expect(r({ ranker_alpha: 0.5 })).toBe(true);
  });

  it.each([
    ['none with the sentinel', { reranker: 'none', rerank_candidates: 0 }, true],
    ['none with candidates', { reranker: 'none', rerank_candidates: 20 }, false],
    ['a model with candidates', { reranker: 'bge', rerank_candidates: 20 }, true],
    ['a model with the sentinel', { reranker: 'bge', rerank_candidates: 0 }, false],
    ['a model without rerank_candidates', { reranker: 'bge' }, true],
    ['no reranker key', { rerank_candidates: 20 }, true],
  ])('rule 8 (candidates only with a reranker): %s', (_name, combination, expected) => {
    // Act / Assess
    expect(ruleRerankCandidatesForRerankerOnly(combination)).toBe(expected);
  });

  it.each([
    ['candidates above k', { reranker: 'bge', rerank_candidates: 20, number_of_chunks: 10 }, true],
    [
      'candidates equal to k',
      { reranker: 'bge', rerank_candidates: 10, number_of_chunks: 10 },
      true,
    ],
    ['candidates below k', { reranker: 'bge', rerank_candidates: 5, number_of_chunks: 10 }, false],
    ['the default count (always ≥ k)', { reranker: 'bge', number_of_chunks: 10 }, true],
    ['no reranker', { reranker: 'none', rerank_candidates: 0, number_of_chunks: 10 }, true],
    [
      'window retrieval',
      {
        reranker: 'bge@tei',
        rerank_candidates: 20,
        number_of_chunks: 3,
        retrieval_method: 'window',
        window_size: 1,
      },
      true,
    ],
    ['no number_of_chunks key', { reranker: 'bge', rerank_candidates: 1 }, true],
  ])('rule 9 (candidates ≥ number_of_chunks): %s', (_name, combination, expected) => {
    // Act / Assess
    expect(ruleRerankCandidatesAtLeastNumberOfChunks(combination)).toBe(expected);
  });
});

describe('createSearchSpace', () => {
  it('requires foundation_model and embedding_model', () => {
    // Act / Assess
    expect(() =>
      createSearchSpace([{ name: 'foundation_model', type: 'C', values: [FM] }]),
    ).toThrow("Missing required parameters: 'embedding_model'.");
  });

  it('rejects unknown and duplicate names', () => {
    // Prepare
    const base = defaultSearchSpace({ foundationModels: [FM], embeddingModels: [EM] });

    // Act / Assess
    expect(() => createSearchSpace([...base, { name: 'temperature', type: 'B' }])).toThrow(
      /Not supported parameters: 'temperature'/,
    );
    expect(() =>
      createSearchSpace([...base, { name: 'chunk_size', type: 'C', values: [512] }]),
    ).toThrow(/'chunk_size' is defined twice/);
  });

  it('surfaces rule 2 errors when chunk parameters are absent', () => {
    // Prepare
    const space = createSearchSpace([
      { name: 'foundation_model', type: 'C', values: [FM] },
      { name: 'embedding_model', type: 'C', values: [EM] },
    ]);

    // Act / Assess
    expect(() => space.combinations()).toThrow(SearchSpaceError);
  });

  it('applies user rules after the built-ins', () => {
    // Prepare
    const params = defaultSearchSpace({ foundationModels: [FM], embeddingModels: [EM] });

    // Act
    const space = createSearchSpace(params, { rules: [(c) => c.search_mode === 'vector'] });

    // Assess
    expect(space.rules).toHaveLength(16);
    expect(space.size()).toBe(24);
  });

  it('caps the grid with maxCombinations reproducibly', () => {
    // Prepare
    const params = defaultSearchSpace({ foundationModels: [FM], embeddingModels: [EM] });

    // Act
    const a = createSearchSpace(params, { maxCombinations: 10, seed: 7 }).combinations();
    const b = createSearchSpace(params, { maxCombinations: 10, seed: 7 }).combinations();
    const c = createSearchSpace(params, { maxCombinations: 10, seed: 8 }).combinations();

    // Assess
    expect(a).toHaveLength(10);
    expect(a.map(combinationKey)).toEqual(b.map(combinationKey));
    expect(a.map(combinationKey)).not.toEqual(c.map(combinationKey));
    expect(() => createSearchSpace(params, { maxCombinations: 0 })).toThrow(
      /maxCombinations must be a positive integer/,
    );
  });
});

describe('limitCombinations', () => {
  it('returns distinct items in original order, the whole list when small enough', () => {
    // Prepare
    const items = Array.from({ length: 100 }, (_, i) => i);

    // Act
    const sample = limitCombinations(items, 12, 42);
    const whole = limitCombinations(items, 100, 42);

    // Assess
    expect(sample).toHaveLength(12);
    expect(new Set(sample).size).toBe(12);
    expect([...sample].sort((x, y) => x - y)).toEqual(sample);
    expect(limitCombinations(items, 12, 42)).toEqual(sample);
    expect(whole).toEqual(items);
    expect(whole).not.toBe(items);
  });
});

describe('overrides', () => {
  it('parses an override file and merges it over the defaults by name', () => {
    // Prepare
    const overrides = parseSearchSpaceOverrides({
      chunk_size: [512, 1024],
      search_mode: ['vector'],
      embedding_model: ['em-x', { modelId: 'em-y', contextLength: 512 }],
    });

    // Act
    const merged = mergeSearchSpace(
      defaultSearchSpace({ foundationModels: [FM], embeddingModels: [EM] }),
      overrides,
    );
    const space = createSearchSpace(merged);

    // Assess
    expect(overrides).toEqual([
      { name: 'chunk_size', type: 'C', values: [512, 1024] },
      { name: 'search_mode', type: 'C', values: ['vector'] },
      {
        name: 'embedding_model',
        type: 'C',
        values: [{ modelId: 'em-x' }, { modelId: 'em-y', contextLength: 512 }],
      },
    ]);
    expect(merged.map((p) => p.name)[1]).toBe('embedding_model');
    expect(merged.find((p) => p.name === 'chunk_size')?.values).toEqual([512, 1024]);
    // em-x (no context length): sizes 512 → 2 configs, 1024 → 3 configs = 5; × vector × 3 k = 15.
    // em-y (512 × 0.9 = 460.8): no chunk size fits → 0.
    expect(space.size()).toBe(15);
  });

  it('accepts the ranker_k sentinel 0 and the bounds of every range', () => {
    // Act
    const params = parseSearchSpaceOverrides({
      chunk_size: [128, 2048],
      chunk_overlap: [0, 256],
      number_of_chunks: [1, 10],
      window_size: [0, 4],
      ranker_k: [0, 1, 100],
      ranker_alpha: [0, 1],
    });

    // Assess
    expect(params).toHaveLength(6);
  });

  it('lists every problem of an invalid file in one clear message', () => {
    // Act / Assess
    expect(() =>
      parseSearchSpaceOverrides({
        chunk_size: [100, 512, 512],
        chunk_overlap: [300],
        number_of_chunks: 3,
        ranker_k: [101],
        search_mode: ['graph'],
        temperature: [0.1],
      }),
    ).toThrow(
      "Invalid search space overrides: 'chunk_size' value 100 must be an integer in 128..2048; " +
        "'chunk_size' lists 512 twice; 'chunk_overlap' value 300 must be an integer in 0..256; " +
        "'number_of_chunks' must be a non-empty array of values, got 3; " +
        "'ranker_k' value 101 must be an integer in 1..100 or the sentinel 0; " +
        "'search_mode' value 'graph' must be one of 'vector', 'hybrid'; " +
        "unknown parameter 'temperature' (allowed: foundation_model, embedding_model, chunking_method, chunk_size, chunk_overlap, retrieval_method, window_size, number_of_chunks, search_mode, ranker_strategy, ranker_k, ranker_alpha, reranker, rerank_candidates, query_transform, parent_chunk_size, semantic_breakpoint, semantic_breakpoint_amount).",
    );
    expect(() => parseSearchSpaceOverrides([1])).toThrow(/must be a JSON object/);
    expect(() => parseSearchSpaceOverrides({ window_size: [1.5] })).toThrow(
      /'window_size' value 1.5 must be an integer in 0..4/,
    );
    expect(() => parseSearchSpaceOverrides({ foundation_model: [42] })).toThrow(
      /must be a model id string/,
    );
  });

  it('adds a reranker dimension: none with the sentinel, each count only where it is at least k', () => {
    // Prepare: vector search only, so the default grid is 8 chunking configs × 3 k = 24
    const overrides = parseSearchSpaceOverrides({
      search_mode: ['vector'],
      reranker: ['none', 'bge', 'ms-marco@tei'],
      rerank_candidates: [0, 5, 40],
    });
    const params = mergeSearchSpace(
      defaultSearchSpace({ foundationModels: [FM], embeddingModels: [EM] }),
      overrides,
    );

    // Act
    const combos = createSearchSpace(params).combinations();

    // Assess: none × 0 (24); each model × 5 with k 3 and 5 (16) and × 40 with every k (24)
    expect(params.slice(-2)).toEqual([
      { name: 'reranker', type: 'C', values: ['none', 'bge', 'ms-marco@tei'] },
      { name: 'rerank_candidates', type: 'C', values: [0, 5, 40] },
    ]);
    const count = (reranker: string, candidates: number) =>
      combos.filter((c) => c.reranker === reranker && c.rerank_candidates === candidates).length;
    expect(combos).toHaveLength(24 + 2 * (16 + 24));
    expect([count('none', 0), count('none', 5), count('bge', 0)]).toEqual([24, 0, 0]);
    expect([count('bge', 5), count('bge', 40), count('ms-marco@tei', 40)]).toEqual([16, 24, 24]);
    expect(
      combos.filter((c) => c.rerank_candidates === 5 && c.number_of_chunks === 10),
    ).toHaveLength(0);
    const first = combos[0] as Record<string, unknown>;
    expect(combinationKey({ ...first, reranker: 'bge', rerank_candidates: 5 })).not.toBe(
      combinationKey(first),
    );
  });

  it('rejects malformed reranker values up front, each named', () => {
    // Act / Assess
    expect(() =>
      parseSearchSpaceOverrides({
        reranker: ['none', '', ' bge', 42, 'none'],
        rerank_candidates: [0, 201, 2.5],
      }),
    ).toThrow(
      new SearchSpaceError(
        "Invalid search space overrides: 'reranker' value '' must be 'none' or a reranker model id (optionally model@endpoint); " +
          "'reranker' value ' bge' must be 'none' or a reranker model id (optionally model@endpoint); " +
          "'reranker' value 42 must be 'none' or a reranker model id (optionally model@endpoint); " +
          "'reranker' lists 'none' twice; " +
          "'rerank_candidates' value 201 must be an integer in 1..200 or the sentinel 0; " +
          "'rerank_candidates' value 2.5 must be an integer in 1..200 or the sentinel 0.",
      ),
    );
  });

  it('rejects duplicate names in overrides passed to mergeSearchSpace', () => {
    // Act / Assess
    expect(() =>
      mergeSearchSpace(defaultSearchSpace({ foundationModels: [FM], embeddingModels: [EM] }), [
        { name: 'chunk_size', type: 'C', values: [512] },
        { name: 'chunk_size', type: 'C', values: [1024] },
      ]),
    ).toThrow(/Search space overrides: parameter 'chunk_size' is defined twice/);
  });
});
