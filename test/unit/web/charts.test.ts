import { describe, expect, it } from 'vitest';
import { parameterApplies } from '../../../shared/src/experiment/report-effects.js';
import { applies, variedParameters } from '../../../web/src/charts.js';
import type { CatalogTrial } from '../../../web/src/types.js';

/** A scored trial of the catalog with the given configuration. */
function trial(iteration: number, score: number, config: Record<string, unknown>): CatalogTrial {
  return { iteration, score, config } as unknown as CatalogTrial;
}

const vector = { search_mode: 'vector', ranker_strategy: '', ranker_k: 0, ranker_alpha: 1 };
const rrf = (k: number) => ({
  search_mode: 'hybrid',
  ranker_strategy: 'rrf',
  ranker_k: k,
  ranker_alpha: 1,
});

describe('web charts: which settings apply to a trial', () => {
  it('agrees with the report on every parameter of these configurations', () => {
    const configs: Record<string, unknown>[] = [
      { ...vector, chunking_method: 'recursive', chunk_overlap: 64 },
      {
        ...rrf(60),
        chunking_method: 'semantic',
        chunk_overlap: 0,
        semantic_breakpoint: 'percentile',
      },
      { chunking_method: 'hierarchical', parent_chunk_size: 1024, semantic_breakpoint: '' },
      { chunking_method: 'hybrid', chunk_overlap: 0, retrieval_method: 'window', window_size: 2 },
      { reranker: 'none', rerank_candidates: 0, ranker_k: 0 },
      {
        reranker: 'bge-reranker',
        rerank_candidates: 20,
        search_mode: 'hybrid',
        ranker_strategy: 'weighted',
        ranker_alpha: 0.5,
      },
    ];
    for (const config of configs) {
      for (const key of Object.keys(config)) {
        expect(applies(config, key), `${key} in ${JSON.stringify(config)}`).toBe(
          parameterApplies(key, config),
        );
      }
    }
  });

  it('counts ranker_k only over hybrid trials, overlap not for semantic chunking, a trial without search_mode as vector', () => {
    expect(applies({ ranker_k: 60 }, 'ranker_k')).toBe(false);
    expect(applies({ chunking_method: 'semantic', chunk_overlap: 0 }, 'chunk_overlap')).toBe(false);
    expect(applies({ chunking_method: 'fixed', chunk_overlap: 32 }, 'chunk_overlap')).toBe(true);
    expect(
      applies({ chunking_method: 'recursive', parent_chunk_size: 0 }, 'parent_chunk_size'),
    ).toBe(false);
  });

  it('lists a setting as varied only when it took two values where it applies', () => {
    const trials = [
      trial(1, 0.5, { ...vector, number_of_chunks: 5 }),
      trial(2, 0.6, { ...rrf(60), number_of_chunks: 5 }),
      trial(3, 0.7, { ...rrf(60), number_of_chunks: 3 }),
    ];
    // ranker_k is 0 (the sentinel) on the vector trial and 60 on both hybrid trials: one value where it applies.
    expect(variedParameters(trials).sort()).toEqual(['number_of_chunks', 'search_mode']);
    trials.push(trial(4, 0.4, { ...rrf(20), number_of_chunks: 3 }));
    expect(variedParameters(trials).sort()).toEqual([
      'number_of_chunks',
      'ranker_k',
      'search_mode',
    ]);
  });
});
