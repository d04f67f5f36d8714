import { describe, expect, it } from 'vitest';
import { abbr, niceAxis, table, tickText } from '../../../shared/src/experiment/report-html.js';
import {
  questionFlags,
  WRONG_ANSWER_THRESHOLD,
} from '../../../shared/src/experiment/report-questions.js';
import type { EvaluationRecord } from '../../../shared/src/experiment/types.js';

describe('niceAxis', () => {
  it('spans the observed range with padding on round ticks, inside 0–1', () => {
    // Act
    const close = niceAxis([0.82, 0.88], [0, 1]);
    const wide = niceAxis([0.02, 0.97], [0, 1]);
    const one = niceAxis([0.5], [0, 1]);
    const quarter = niceAxis([0.8, 0.9], [0, 1]);

    // Assess
    expect(close).toEqual({
      lo: 0.8,
      hi: 0.9,
      ticks: [0.8, 0.82, 0.84, 0.86, 0.88, 0.9],
      decimals: 2,
    });
    expect(wide).toEqual({ lo: 0, hi: 1, ticks: [0, 0.2, 0.4, 0.6, 0.8, 1], decimals: 1 });
    // One value: ±0.05 around it.
    expect(one.ticks).toEqual([0.44, 0.46, 0.48, 0.5, 0.52, 0.54, 0.56]);
    // A step of 2.5 × 10ⁿ needs one more decimal to label its ticks.
    expect(quarter.ticks).toEqual([0.775, 0.8, 0.825, 0.85, 0.875, 0.9, 0.925]);
    expect(quarter.ticks.map((v) => tickText(quarter, v))).toEqual([
      '0.775',
      '0.800',
      '0.825',
      '0.850',
      '0.875',
      '0.900',
      '0.925',
    ]);
  });

  it('leaves bounds alone for values outside them, and defaults to 0–1 without values', () => {
    // Act
    const outside = niceAxis([-0.2, 1.3], [0, 1]);
    const empty = niceAxis([], [0, 1]);

    // Assess
    expect([outside.lo, outside.hi]).toEqual([-0.5, 1.5]);
    expect(empty.ticks).toEqual([0, 0.2, 0.4, 0.6, 0.8, 1]);
  });
});

describe('abbr and table', () => {
  it('abbreviates long text with the full text as a tooltip, escaped', () => {
    // Assess
    expect(abbr('BAAI/bge-m3')).toBe('BAAI/bge-m3');
    expect(abbr('mistralai/mistral-small-3.1-24b-instruct')).toBe(
      '<span title="mistralai/mistral-small-3.1-24b-instruct">mistral-small-3.1-24b-i…</span>',
    );
    expect(abbr('a-very-long-name-without-any-slash-"x"')).toBe(
      '<span title="a-very-long-name-without-any-slash-&quot;x&quot;">a-very-long-name-withou…</span>',
    );
  });

  it('renders a sortable, filterable table whose tools stay hidden until the script shows them', () => {
    // Act
    const html = table('Caption', ['a_b', { html: 'C', title: 'the c' }], ['<tr><td>1</td></tr>'], {
      id: 't',
      sortable: true,
      filter: 'type',
      flags: [['x', 'only x']],
    });

    // Assess
    expect(html).toBe(
      '<div class="table-tools" data-for="t" hidden><label>Filter <input type="search" placeholder="type" ' +
        'aria-controls="t"></label> <label>Show <select aria-controls="t"><option value="">every row</option>' +
        '<option value="x">only x</option></select></label> <output aria-live="polite"></output> ' +
        '<span class="muted">Click a column header to sort.</span></div>' +
        '<div class="wrap"><table id="t" class="sortable"><caption>Caption</caption><thead><tr>' +
        '<th scope="col">a_<wbr>b</th><th scope="col" title="the c">C</th></tr></thead>' +
        '<tbody><tr><td>1</td></tr></tbody></table></div>',
    );
  });
});

function record(metrics: Record<string, number | null>, extra: Partial<EvaluationRecord> = {}) {
  return {
    question_id: 'q0',
    question: 'Q?',
    correct_answers: ['A'],
    answer: 'A.',
    answer_contexts: [],
    metrics: Object.entries(metrics).map(([name, score]) => ({ name, evaluator: 'x', score })),
    ...extra,
  } satisfies EvaluationRecord;
}

describe('questionFlags', () => {
  it(`flags answer_correctness below ${WRONG_ANSWER_THRESHOLD} as wrong, not at the threshold`, () => {
    // Assess
    expect(questionFlags(record({ answer_correctness: 0.4999 }))).toEqual(['wrong']);
    expect(questionFlags(record({ answer_correctness: 0.5 }))).toEqual([]);
    expect(questionFlags(record({ answer_correctness: null }))).toEqual([]);
  });

  it('flags an answered unanswerable question by the abstention metric, and an error as failed only', () => {
    // Prepare
    const unanswerable = { correct_answers: [] };

    // Assess
    expect(questionFlags(record({ abstention_accuracy: 0 }, unanswerable))).toEqual([
      'unanswerable-answered',
    ]);
    expect(questionFlags(record({ abstention_accuracy: 1 }, unanswerable))).toEqual([]);
    // Answerable and abstained: the abstention metric is 0 but it is the answer that is wrong.
    expect(questionFlags(record({ answer_correctness: 0, abstention_accuracy: 0 }))).toEqual([
      'wrong',
    ]);
    // Older records without the metric are not guessed at.
    expect(questionFlags(record({}, unanswerable))).toEqual([]);
    expect(
      questionFlags(record({ answer_correctness: 0 }, { error: 'GenerationError: x' })),
    ).toEqual(['failed']);
  });
});
