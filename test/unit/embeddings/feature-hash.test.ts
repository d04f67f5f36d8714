import { describe, expect, it } from 'vitest';
import {
  FeatureHashEmbedder,
  featureHashVector,
} from '../../../shared/src/embeddings/feature-hash.js';
import { ValidationError } from '../../../shared/src/errors.js';

function cosine(a: number[], b: number[]): number {
  let dot = 0;
  for (let i = 0; i < a.length; i++) dot += (a[i] as number) * (b[i] as number);
  return dot;
}

function norm(v: number[]): number {
  return Math.sqrt(cosine(v, v));
}

describe('featureHashVector', () => {
  it('produces the golden vector for a fixed sentence at dimension 8', () => {
    // Prepare
    const text = 'The cat sat on the mat';

    // Act
    const vector = featureHashVector(text, 8);

    // Assess
    const golden = [
      0.052107909758165996, 0.10421581951633198, 0.052107909758165996, 0.5827880633494859,
      -0.17085837707949708, -0.31994714989917483, -0.6870038828658178, 0.20132950315741074,
    ];
    expect(vector).toHaveLength(8);
    vector.forEach((x, i) => {
      expect(x).toBeCloseTo(golden[i] as number, 12);
    });
  });

  it('puts the three unigrams of a fixed sentence on golden components at dimension 384', () => {
    // Prepare
    const text = 'The proteins were binding to receptors';

    // Act
    const vector = featureHashVector(text, 384);

    // Assess
    const large = vector
      .map((x, i) => [i, x] as const)
      .filter(([, x]) => Math.abs(x) > 0.2)
      .map(([i]) => i);
    expect(large).toEqual([125, 173, 314]);
    expect(vector[125]).toBeCloseTo(0.5245897208058841, 12);
    expect(vector[314]).toBeCloseTo(0.5513600778951238, 12);
  });

  it('is deterministic across calls, including after the word memo is warm', () => {
    // Prepare
    const text = 'Feature hashing maps words to buckets; words repeat, buckets repeat.';

    // Act
    const first = featureHashVector(text, 64);
    const second = featureHashVector(text, 64);

    // Assess
    expect(second).toEqual(first);
  });

  it('returns unit-norm vectors', () => {
    // Act
    const vector = featureHashVector('Quarterly revenue grew by 12 % in Europe.', 384);

    // Assess
    expect(norm(vector)).toBeCloseTo(1, 12);
  });

  it('places similar sentences closer than unrelated ones', () => {
    // Prepare
    const a = featureHashVector('cat sat on the mat');
    const b = featureHashVector('a cat sitting on a mat');
    const c = featureHashVector('quarterly revenue report');

    // Act
    const similar = cosine(a, b);
    const unrelatedA = cosine(a, c);
    const unrelatedB = cosine(b, c);

    // Assess
    expect(similar).toBeGreaterThan(0.5);
    expect(Math.abs(unrelatedA)).toBeLessThan(0.1);
    expect(Math.abs(unrelatedB)).toBeLessThan(0.1);
  });

  it('lets morphological variants share features', () => {
    // Act
    const variants = cosine(featureHashVector('protein'), featureHashVector('proteins'));
    const unrelated = cosine(featureHashVector('protein'), featureHashVector('quarterly'));

    // Assess
    expect(variants).toBeGreaterThan(0.9);
    expect(Math.abs(unrelated)).toBeLessThan(0.2);
  });

  it('gives a misspelling a positive similarity through shared character n-grams', () => {
    // Act
    const misspelt = cosine(
      featureHashVector('protien folding kinetics'),
      featureHashVector('protein folding kinetics'),
    );
    const unrelated = cosine(
      featureHashVector('protien folding kinetics'),
      featureHashVector('tax revenue report'),
    );

    // Assess
    expect(misspelt).toBeGreaterThan(unrelated + 0.3);
  });

  it('damps repeated terms instead of counting them linearly', () => {
    // Prepare
    const once = featureHashVector('graphene battery');
    const many = featureHashVector(`${'graphene '.repeat(20)}battery`);

    // Act
    const similarity = cosine(once, many);

    // Assess: damped, 20 repeats weigh 1 + ln 20 ~ 4 (cosine ~0.82); linear counting would give ~0.74
    expect(similarity).toBeGreaterThan(0.8);
  });

  it('returns a zero vector (not NaN) for text without words', () => {
    // Act
    const empty = featureHashVector('', 16);
    const punctuation = featureHashVector(' --- ... !!! ', 16);

    // Assess
    expect(empty).toEqual(new Array(16).fill(0));
    expect(punctuation).toEqual(new Array(16).fill(0));
  });

  it('embeds a stopword-only text through its char-grams', () => {
    // Act
    const vector = featureHashVector('the and of', 32);

    // Assess
    expect(norm(vector)).toBeCloseTo(1, 12);
  });

  it('rejects a dimension that is not a positive integer', () => {
    // Act / Assess
    expect(() => featureHashVector('x', 0)).toThrow(ValidationError);
    expect(() => featureHashVector('x', 2.5)).toThrow(ValidationError);
  });
});

describe('FeatureHashEmbedder', () => {
  it('names its model after the dimension and defaults to 384', () => {
    // Act
    const byDefault = new FeatureHashEmbedder();
    const small = new FeatureHashEmbedder({ dimension: 64 });

    // Assess
    expect(byDefault.modelId).toBe('local/feature-hash-v1-384');
    expect(byDefault.dimension).toBe(384);
    expect(byDefault.contextLength).toBe(8192);
    expect(small.modelId).toBe('local/feature-hash-v1-64');
  });

  it('embeds documents in order and queries with the same features', async () => {
    // Prepare
    const embedder = new FeatureHashEmbedder({ dimension: 32 });
    const texts = ['alpha beta', 'gamma delta', ''];

    // Act
    const docs = await embedder.embedDocuments(texts);
    const query = await embedder.embedQuery('gamma delta');

    // Assess
    expect(docs).toHaveLength(3);
    expect(docs[0]).toEqual(featureHashVector('alpha beta', 32));
    expect(docs[1]).toEqual(query);
    expect(docs[2]).toEqual(new Array(32).fill(0));
  });

  it('rejects an invalid dimension', () => {
    // Act / Assess
    expect(() => new FeatureHashEmbedder({ dimension: -1 })).toThrow(ValidationError);
  });
});
