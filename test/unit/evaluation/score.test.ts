import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../../shared/src/errors.js';
import { bootstrapStatisticCi } from '../../../shared/src/evaluation/bootstrap.js';
import { round4, scoreEvaluationData } from '../../../shared/src/evaluation/score.js';

const WORKED = {
  question: 'What is the capital of France?',
  answer: 'Paris is the capital, with about 2 million people.',
  contexts: [
    'France is a country in Western Europe.',
    'Paris is the capital and largest city of France.',
  ],
  context_ids: ['doc_b', 'doc_a'],
  ground_truths: ['The capital is Paris, home to roughly 2.1 million residents.'],
  ground_truths_context_ids: ['doc_a'],
};

// q0: AC 4/9, F 0.375, CC 0.5 → overall (0.4444+0.375+0.5)/3 = 0.4398
// q1: AC 1, F 1, CC 0 → overall 0.6667
// q2: AC null (no ground truth), F 0 (no context), CC 1/2 → overall 0.25
const THREE = [
  WORKED,
  {
    answer: 'Berlin',
    contexts: ['Berlin is in Germany'],
    context_ids: ['x'],
    ground_truths: ['Berlin'],
    ground_truths_context_ids: ['y'],
  },
  {
    answer: 'I do not know',
    contexts: [],
    context_ids: ['z', 'y'],
    ground_truths: [],
    ground_truths_context_ids: ['y'],
  },
];

function values(result: ReturnType<typeof scoreEvaluationData>, name: string) {
  return result.question_scores.map((q) => q.metrics.find((m) => m.name === name)?.value);
}

describe('scoreEvaluationData', () => {
  it('computes exact per-question values and means on a hand-computed set', () => {
    // Act
    const r = scoreEvaluationData(THREE);

    // Assess
    expect(r.question_scores.map((q) => q.question_id)).toEqual(['q0', 'q1', 'q2']);
    expect(values(r, 'answer_correctness')).toEqual([0.4444, 1, null]);
    expect(values(r, 'faithfulness')).toEqual([0.375, 1, 0]);
    expect(values(r, 'context_correctness')).toEqual([0.5, 0, 0.5]);
    expect(values(r, 'overall_score')).toEqual([0.4398, 0.6667, 0.25]);
    expect(r.metrics.map((m) => [m.name, m.evaluator, m.scores.mean])).toEqual([
      ['answer_correctness', 'unitxt', 0.7222],
      ['faithfulness', 'unitxt', 0.4583],
      ['context_correctness', 'unitxt', 0.3333],
      ['overall_score', 'custom', 0.5046],
    ]);
    expect(r.question_scores[0]?.metrics.map((m) => m.evaluator)).toEqual([
      'unitxt',
      'unitxt',
      'unitxt',
      'custom',
    ]);
  });

  it('bootstraps the overall_score CI from its own statistic, the mean of the metric means', () => {
    // Prepare: an independent weighted form of the statistic (each metric over the questions where it is defined)
    const cols = {
      ac: [4 / 9, 1, null],
      f: [0.375, 1, 0],
      cc: [0.5, 0, 0.5],
    };
    const wmean = (col: (number | null)[], w: Readonly<Float64Array>) => {
      let s = 0;
      let n = 0;
      col.forEach((v, i) => {
        if (v !== null) {
          s += (w[i] as number) * v;
          n += w[i] as number;
        }
      });
      return n > 0 ? [s / n] : [];
    };
    const expected = bootstrapStatisticCi(
      3,
      (w) => {
        const means = [...wmean(cols.ac, w), ...wmean(cols.f, w), ...wmean(cols.cc, w)];
        return means.reduce((a, b) => a + b, 0) / means.length;
      },
      { seed: 5 },
    );

    // Act
    const overall = scoreEvaluationData(THREE, { seed: 5 }).metrics.find(
      (m) => m.name === 'overall_score',
    );

    // Assess
    expect(expected).toBeDefined();
    expect(overall?.scores.ci_low).toBe(round4(expected?.low ?? Number.NaN));
    expect(overall?.scores.ci_high).toBe(round4(expected?.high ?? Number.NaN));
  });

  it('puts overall_score inside its CI on a mixed answerable/unanswerable benchmark', () => {
    // Prepare: 80 answerable + 80 unanswerable questions (a block of 8 + 8, ten times).
    // Unanswerable questions have no ground truths nor gold documents: only faithfulness is defined for them.
    const item = (
      answer: string,
      gt: string[],
      contexts: string[],
      ids: string[],
      gold: string[],
    ) => ({
      answer,
      contexts,
      context_ids: ids,
      ground_truths: gt,
      ground_truths_context_ids: gold,
    });
    const full = item('paris', ['paris'], ['paris'], ['d1'], ['d1']); // AC 1, F 1, CC 1
    const halfAc = item('paris', ['paris france'], ['paris'], ['d1'], ['d1']); // AC 0.5, F 1, CC 1
    const halfCc = item('paris', ['paris'], ['other', 'paris'], ['x', 'd1'], ['d1']); // AC 1, F 1, CC 0.5
    const noCc = item('paris', ['paris'], ['paris'], ['x'], ['d1']); // AC 1, F 1, CC 0
    const abstain = item('cannot answer', [], ['paris'], ['d1'], []); // F 0
    const unfaithful = item('paris', [], ['paris'], ['d1'], []); // F 1
    const block = [
      full,
      full,
      full,
      halfCc,
      halfAc,
      full,
      full,
      noCc,
      ...Array.from({ length: 6 }, () => abstain),
      unfaithful,
      unfaithful,
    ];
    const items = Array.from({ length: 10 }, () => block)
      .flat()
      .map((it, i) => ({ ...it, question_id: `q${i}` }));

    // Act
    const r = scoreEvaluationData(items);
    const overall = r.metrics.find((m) => m.name === 'overall_score')?.scores;

    // Assess: AC 7.5/8 = 0.9375 and CC 6.5/8 = 0.8125 over answerable questions, F 10/16 = 0.625 over all;
    // overall (0.9375 + 0.625 + 0.8125) / 3 = 0.7917, while the mean of the per-question overall scores is
    // (5 × 1 + 2 × 2.5/3 + 2/3 + 6 × 0 + 2 × 1) / 16 = 0.5833: a CI of the latter would not contain 0.7917.
    expect(r.metrics.map((m) => m.scores.mean)).toEqual([0.9375, 0.625, 0.8125, 0.7917]);
    const perQuestion = values(r, 'overall_score') as number[];
    expect(round4(perQuestion.reduce((a, b) => a + b, 0) / perQuestion.length)).toBe(0.5833);
    // Before this fix the CI came from the per-question overall scores: [0.5167, 0.6573] (seed 42).
    expect(overall).toEqual({ mean: 0.7917, ci_low: 0.7551, ci_high: 0.826 });
    expect(overall?.ci_low as number).toBeLessThan(0.7917);
    expect(overall?.ci_high as number).toBeGreaterThan(0.7917);
    expect(overall?.ci_low as number).toBeGreaterThan(0.5833);
    for (const m of r.metrics) {
      expect(m.scores.ci_low as number).toBeLessThanOrEqual(m.scores.mean as number);
      expect(m.scores.ci_high as number).toBeGreaterThanOrEqual(m.scores.mean as number);
    }
  });

  it('reports null CI bounds when every value is identical', () => {
    // Act
    const r = scoreEvaluationData([WORKED, { ...WORKED, question_id: 'other' }]);

    // Assess
    for (const m of r.metrics) {
      expect(m.scores.ci_low).toBeNull();
      expect(m.scores.ci_high).toBeNull();
    }
    expect(r.metrics[1]?.scores.mean).toBe(0.375);
    expect(r.question_scores.map((q) => q.question_id)).toEqual(['q0', 'other']);
  });

  it('gives a null mean when no question has ground truths', () => {
    // Act
    const r = scoreEvaluationData([{ ...WORKED, ground_truths: [] }]);

    // Assess
    expect(r.metrics[0]?.scores).toEqual({ mean: null, ci_low: null, ci_high: null });
    expect(r.metrics[3]?.scores.mean).toBe(0.4375);
  });

  it('names the item index and field of invalid input', () => {
    // Act / Assess
    expect(() => scoreEvaluationData([WORKED, { ...WORKED, contexts: 'x' }])).toThrow(
      /evaluation item 1: contexts/,
    );
    expect(() => scoreEvaluationData([{ ...WORKED, answr: 'x' }])).toThrow(ValidationError);
    expect(() => scoreEvaluationData([])).toThrow(/non-empty/);
    expect(() =>
      scoreEvaluationData([
        { ...WORKED, question_id: 'a' },
        { ...WORKED, question_id: 'a' },
      ]),
    ).toThrow(/duplicate question_id "a"/);
  });
});

describe('round4', () => {
  it('rounds like Python round(v, 4), exact ties to even', () => {
    // Act / Assess
    expect(round4(0.03125)).toBe(0.0312);
    expect(round4(0.09375)).toBe(0.0938);
    expect(round4(0.00015)).toBe(0.0001);
    expect(round4(4 / 9)).toBe(0.4444);
    expect(round4(Number.NaN)).toBeNull();
  });
});
