import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../../shared/src/errors.js';
import { parseExperimentInput } from '../../../shared/src/experiment/input.js';
import {
  indexCollectionName,
  indexingParams,
  patternSettings,
  resultCacheKey,
  stableStringify,
  trialSettings,
} from '../../../shared/src/experiment/params.js';
import { failureMessage } from '../../../shared/src/experiment/steps.js';

const CONFIG = {
  foundation_model: { modelId: 'local/extractive-v1' },
  embedding_model: { modelId: 'local/feature-hash-v1-384', contextLength: 8192 },
  chunking_method: 'recursive',
  chunk_size: 512,
  chunk_overlap: 128,
  retrieval_method: 'simple',
  window_size: 0,
  number_of_chunks: 5,
  search_mode: 'hybrid',
  ranker_strategy: 'rrf',
  ranker_k: 60,
  ranker_alpha: 1,
};

describe('parseExperimentInput', () => {
  it('fills ai4rag defaults', () => {
    // Act
    const input = parseExperimentInput({ benchmarkKey: 'experiments/e/input/b.json' });

    // Assess
    expect(input).toMatchObject({
      documentsPrefix: '',
      maxEvals: 8,
      seed: 64,
      nRandomNodes: 4,
      trialConcurrency: 2,
      questionConcurrency: 10,
      optimizationMetric: 'overall_score',
      knownObservations: [],
    });
  });

  it.each([
    [{ benchmarkKey: 'inputs/b.json' }, "benchmarkKey: must be a key under 'experiments/'"],
    [{ benchmarkKey: 'experiments/../b.json' }, "benchmarkKey: must be a key under 'experiments/'"],
    [{ benchmarkKey: 'experiments/b.json', maxEvals: 0 }, 'maxEvals'],
    [{ benchmarkKey: 'experiments/b.json', experimentId: 'a b' }, 'experimentId'],
    [{ benchmarkKey: 'experiments/b.json', surprise: 1 }, 'surprise'],
    [
      { benchmarkKey: 'experiments/b.json', searchSpace: { embedding_model: ['x'] } },
      'choose models with foundationModels',
    ],
    [
      { benchmarkKey: 'experiments/b.json', optimizationMetric: 'answer_relevance' },
      "requires a 'judge' evaluator",
    ],
    [
      { benchmarkKey: 'experiments/b.json', prices: { 'gpt-4o': { input: -1 } } },
      'prices.gpt-4o.input',
    ],
  ])('rejects %j naming the problem', (raw, message) => {
    // Act / Assess
    expect(() => parseExperimentInput(raw)).toThrow(ValidationError);
    expect(() => parseExperimentInput(raw)).toThrow(message);
  });
});

describe('trial parameters', () => {
  it("splits a combination into ai4rag's indexing params", () => {
    // Act
    const indexing = indexingParams(trialSettings(CONFIG), 384);

    // Assess
    expect(indexing).toEqual({
      chunking: {
        chunking_method: 'recursive',
        chunk_size: 512,
        chunk_overlap: 128,
        include_metadata: false,
      },
      embedding: {
        model_id: 'local/feature-hash-v1-384',
        embedding_params: { embedding_dimension: 384, context_length: 8192 },
      },
    });
  });

  it('writes only the retrieval keys that apply to the pattern settings', () => {
    // Act
    const rrf = patternSettings(trialSettings(CONFIG), 'pglite', 'ai4rag_x', 384).retrieval;
    const vector = patternSettings(
      trialSettings({ ...CONFIG, search_mode: 'vector', ranker_strategy: '', ranker_k: 0 }),
      'pglite',
      'ai4rag_x',
      384,
    ).retrieval;

    // Assess
    expect(rrf).toEqual({
      method: 'simple',
      number_of_chunks: 5,
      search_mode: 'hybrid',
      ranker_strategy: 'rrf',
      ranker_k: 60,
    });
    expect(vector).toEqual({ method: 'simple', number_of_chunks: 5, search_mode: 'vector' });
  });

  it('names an index by corpus and indexing params only', () => {
    // Prepare
    const a = indexingParams(trialSettings(CONFIG), 384);
    const b = indexingParams(trialSettings({ ...CONFIG, number_of_chunks: 10 }), 384);
    const c = indexingParams(trialSettings({ ...CONFIG, chunk_size: 1024 }), 384);

    // Act / Assess
    expect(indexCollectionName('h', a)).toBe(indexCollectionName('h', b));
    expect(indexCollectionName('h', a)).not.toBe(indexCollectionName('h', c));
    expect(indexCollectionName('h', a)).not.toBe(indexCollectionName('other', a));
    expect(indexCollectionName('h', a)).toMatch(/^ai4rag_x_[0-9a-f]{20}$/);
    expect(resultCacheKey('h', 'b', a, 1)).not.toBe(resultCacheKey('h', 'b', a, 2));
  });

  it('serializes with sorted keys at every level', () => {
    // Act / Assess
    expect(stableStringify({ b: 1, a: { d: [1, { f: 2, e: 3 }], c: undefined } })).toBe(
      '{"a":{"d":[1,{"e":3,"f":2}]},"b":1}',
    );
  });
});

describe('failureMessage', () => {
  it('reads the Lambda error that Step Functions puts in Cause', () => {
    // Act / Assess
    expect(
      failureMessage({
        Error: 'TrialError',
        Cause: JSON.stringify({ errorType: 'TrialError', errorMessage: 'no question answered' }),
      }),
    ).toBe('TrialError: no question answered');
    expect(failureMessage({ Error: 'States.Timeout', Cause: 'task timed out' })).toBe(
      'States.Timeout: task timed out',
    );
    expect(failureMessage(new RangeError('bad'))).toBe('RangeError: bad');
  });
});
