import { describe, expect, it } from 'vitest';
import { ValidationError } from '#shared/errors.js';
import {
  needsPreSelection,
  type PairScore,
  PreSelectionError,
  sampleQuestions,
  selectModels,
} from '#shared/optimizer/preselection.js';

const pair = (
  foundationModel: string,
  embeddingModel: string,
  score: number | null,
): PairScore => ({
  foundationModel,
  embeddingModel,
  score,
});

describe('selectModels', () => {
  it('keeps the models of the best pairs, not the best averages', () => {
    // Prepare: fm-b has the best average, fm-a the best single pair
    const pairs = [
      pair('fm-a', 'em-1', 0.9),
      pair('fm-a', 'em-2', 0.1),
      pair('fm-b', 'em-1', 0.6),
      pair('fm-b', 'em-2', 0.6),
      pair('fm-c', 'em-3', 0.65),
      pair('fm-d', 'em-1', 0.62),
    ];
    // Act
    const picked = selectModels(pairs, 2, 2);
    // Assess
    expect(picked).toEqual({
      foundationModels: ['fm-a', 'fm-c'],
      embeddingModels: ['em-1', 'em-3'],
    });
  });

  it('uses 3 foundation and 2 embedding models by default, null as −∞, ties in input order', () => {
    // Prepare
    const pairs = [
      pair('f1', 'e1', null),
      pair('f2', 'e2', 0.5),
      pair('f3', 'e3', 0.5),
      pair('f4', 'e1', 0.4),
      pair('f5', 'e2', 0.3),
    ];
    // Act
    const picked = selectModels(pairs);
    // Assess
    expect(picked).toEqual({ foundationModels: ['f2', 'f3', 'f4'], embeddingModels: ['e2', 'e3'] });
  });

  it('fills remaining slots from failed pairs after the scored ones', () => {
    // Act
    const picked = selectModels([pair('f1', 'e1', null), pair('f2', 'e1', 0.2)], 3, 2);
    // Assess
    expect(picked).toEqual({ foundationModels: ['f2', 'f1'], embeddingModels: ['e1'] });
  });

  it('throws PreSelectionError when no pair has a score', () => {
    expect(() => selectModels([pair('f1', 'e1', null)])).toThrow(PreSelectionError);
    expect(() => selectModels([])).toThrow(
      'Models pre-selection failed: no foundation/embedding model pair produced a score.',
    );
  });

  it('rejects a non-positive count', () => {
    expect(() => selectModels([pair('f', 'e', 1)], 0)).toThrow(ValidationError);
  });
});

describe('needsPreSelection', () => {
  it('triggers on more than 3 foundation or more than 2 embedding models', () => {
    expect(needsPreSelection(3, 2)).toBe(false);
    expect(needsPreSelection(4, 1)).toBe(true);
    expect(needsPreSelection(1, 3)).toBe(true);
    expect(needsPreSelection(5, 5, { foundation: 5, embedding: 5 })).toBe(false);
  });
});

describe('sampleQuestions', () => {
  it('picks 5 questions with seed 17, in their original order', () => {
    // Act
    const sample = sampleQuestions(['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h']);
    // Assess
    expect(sample).toEqual(['a', 'c', 'd', 'e', 'f']);
    expect(sampleQuestions(['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'])).toEqual(sample);
  });

  it('returns the whole set when it has at most n questions', () => {
    const qs = ['q0', 'q1', 'q2'];
    const sample = sampleQuestions(qs, 5, 1);
    expect(sample).toEqual(qs);
    expect(sample).not.toBe(qs);
  });
});
