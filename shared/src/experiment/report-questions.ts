/**
 * The report's per-question sections: the best pattern's answers with wrong answers, answers to unanswerable
 * questions and failures highlighted, and the top two patterns side by side.
 */
import {
  abbr,
  esc,
  finite,
  type HeadCell,
  metricHead,
  num,
  numCell,
  orderMetrics,
  table,
} from './report-html.js';
import type { EvaluationRecord, LeaderboardEntry } from './types.js';

/**
 * An answer is highlighted as wrong when its `answer_correctness` is below this: fewer than half of the
 * best-matching reference answer's tokens appear in it (the metric is that token recall, unitxt's).
 */
export const WRONG_ANSWER_THRESHOLD = 0.5;

/** Why a question's row is highlighted. */
export type QuestionFlag = 'wrong' | 'unanswerable-answered' | 'failed';

/** Labels of {@link QuestionFlag}s, in legend order. */
export const QUESTION_FLAGS: readonly (readonly [QuestionFlag, string])[] = [
  ['wrong', 'wrong answer'],
  ['unanswerable-answered', 'answered an unanswerable question'],
  ['failed', 'no answer (failed)'],
];

function metricScore(r: EvaluationRecord | undefined, name: string): number | null | undefined {
  return r?.metrics.find((m) => m.name === name)?.score;
}

/**
 * The highlights of one question. `failed`: it has an error. `wrong`: `answer_correctness` below
 * {@link WRONG_ANSWER_THRESHOLD}. `unanswerable-answered`: the benchmark gives no reference answer (how it marks
 * an unanswerable question, as the `abstention_accuracy` metric reads it) and that metric is 0, i.e. the answer
 * did not say it cannot answer. Records without the metric (older cache entries) are not flagged so.
 */
export function questionFlags(r: EvaluationRecord): QuestionFlag[] {
  if (r.error !== undefined) return ['failed'];
  const flags: QuestionFlag[] = [];
  const correctness = metricScore(r, 'answer_correctness');
  if (finite(correctness) && correctness < WRONG_ANSWER_THRESHOLD) flags.push('wrong');
  if (r.correct_answers.length === 0 && metricScore(r, 'abstention_accuracy') === 0) {
    flags.push('unanswerable-answered');
  }
  return flags;
}

/** The short badge of a flag in the Id cell (the label is its tooltip). */
const FLAG_BADGES: Record<QuestionFlag, string> = {
  wrong: 'wrong',
  'unanswerable-answered': 'unanswerable, answered',
  failed: 'failed',
};

function flagLabel(flag: QuestionFlag): string {
  return QUESTION_FLAGS.find(([f]) => f === flag)?.[1] ?? flag;
}

function rowAttrs(flags: readonly string[]): string {
  return flags.length === 0
    ? ''
    : ` class="${flags.map((f) => `flag-${f}`).join(' ')}" data-flags="${esc(flags.join(' '))}"`;
}

function legend(records: readonly EvaluationRecord[]): string {
  const counts = new Map<QuestionFlag, number>();
  for (const r of records)
    for (const f of questionFlags(r)) counts.set(f, (counts.get(f) ?? 0) + 1);
  const explain: Record<QuestionFlag, string> = {
    wrong: `answer_correctness below ${WRONG_ANSWER_THRESHOLD}: fewer than half of the best-matching reference answer’s tokens are in the answer`,
    'unanswerable-answered':
      'the benchmark has no reference answer for it (unanswerable) and the answer did not say it cannot answer (abstention_accuracy 0)',
    failed: 'the question could not be answered or scored; the error is in the row',
  };
  return `<ul class="legend">${QUESTION_FLAGS.map(
    ([flag, label]) =>
      `<li><span class="swatch flag-${flag}" aria-hidden="true"></span><strong>${esc(label)}</strong> ` +
      `(${counts.get(flag) ?? 0}): ${esc(explain[flag])}</li>`,
  ).join('')}</ul>`;
}

function answersList(r: EvaluationRecord): string {
  return r.correct_answers.length === 0
    ? '<span class="muted">none (unanswerable)</span>'
    : `<ul>${r.correct_answers.map((a) => `<li>${esc(a)}</li>`).join('')}</ul>`;
}

/**
 * The best pattern's per-question table: each question with its answer (retrieved contexts collapsed), the
 * reference answers, every metric and the error; highlighted rows, a legend, a filter box and a flag menu.
 */
export function renderQuestions(
  records: readonly EvaluationRecord[],
  best: LeaderboardEntry | undefined,
  optimizationMetric: string,
): string {
  const heading = `<h2>Per-question results${best ? ` of ${esc(best.pattern_name)}` : ''}</h2>`;
  if (records.length === 0) {
    return `<section id="questions">${heading}<p>No per-question records.</p></section>`;
  }
  const metrics = orderMetrics(
    records.flatMap((r) => r.metrics.map((m) => m.name)),
    optimizationMetric,
  );
  const withErrors = records.some((r) => r.error !== undefined);
  const rows = records.map((r) => {
    const flags = questionFlags(r);
    const contexts =
      r.answer_contexts.length === 0
        ? ''
        : `<details><summary>${r.answer_contexts.length} retrieved contexts</summary>` +
          r.answer_contexts
            .map((c) => `<p><strong>${esc(c.document_key)}</strong></p><pre>${esc(c.text)}</pre>`)
            .join('') +
          `</details>`;
    return (
      `<tr${rowAttrs(flags)}><th scope="row">${esc(r.question_id)}` +
      flags
        .map(
          (f) => ` <span class="badge" title="${esc(flagLabel(f))}">${esc(FLAG_BADGES[f])}</span>`,
        )
        .join('') +
      `</th>` +
      `<td class="text">${esc(r.question)}</td>` +
      `<td class="text">${esc(r.answer)}${contexts}</td><td class="text">${answersList(r)}</td>` +
      metrics
        .map((name) => {
          const v = metricScore(r, name);
          const low = name === 'answer_correctness' && finite(v) && v < WRONG_ANSWER_THRESHOLD;
          return numCell(v, esc(num(v)), low ? 'low' : '');
        })
        .join('') +
      (withErrors ? `<td class="error">${r.error === undefined ? '' : esc(r.error)}</td>` : '') +
      `</tr>`
    );
  });
  return (
    `<section id="questions">${heading}${legend(records)}` +
    table(
      'Each benchmark question with the answer and scores of the best pattern',
      [
        'Id',
        'Question',
        'Answer',
        'Correct answers',
        ...metrics.map((m) => metricHead(m)),
        ...(withErrors ? ['Error'] : []),
      ],
      rows,
      {
        id: 'question-table',
        sortable: true,
        filter: 'words in the question, answer or reference',
        flags: QUESTION_FLAGS,
      },
    ) +
    `</section>`
  );
}

/** A setting of the two compared patterns that differs: label and both values as text. */
export type SettingDifference = readonly [string, string, string];

/**
 * The top two patterns side by side per question: both answers (highlighted where they differ), both scores of
 * the optimization metric and of `answer_correctness` (the higher one highlighted), and the difference.
 */
export function renderComparison(
  entries: readonly LeaderboardEntry[],
  best: readonly EvaluationRecord[],
  runnerUp: readonly EvaluationRecord[] | undefined,
  optimizationMetric: string,
  settings: readonly SettingDifference[],
): string {
  const heading = `<h2>Top two patterns, question by question</h2>`;
  const [a, b] = entries;
  if (a === undefined || b === undefined) {
    return `<section id="compare">${heading}<p>Fewer than two successful patterns: nothing to compare.</p></section>`;
  }
  if (runnerUp === undefined || best.length === 0) {
    return (
      `<section id="compare">${heading}<p>This report’s data has no per-question records of ${esc(b.pattern_name)} ` +
      `(report data written before they were recorded).</p></section>`
    );
  }
  const second = new Map(runnerUp.map((r) => [r.question_id, r]));
  const scoreNames = [optimizationMetric, 'answer_correctness'].filter(
    (name, i, all) =>
      all.indexOf(name) === i && best.some((r) => metricScore(r, name) !== undefined),
  );
  let differ = 0;
  const wins = { first: 0, second: 0, equal: 0 };
  const rows = best.map((r) => {
    const s = second.get(r.question_id);
    const answersDiffer = s !== undefined && r.answer.trim() !== s.answer.trim();
    if (answersDiffer) differ += 1;
    const flags: string[] = answersDiffer ? ['differs'] : [];
    const va = metricScore(r, optimizationMetric);
    const vb = metricScore(s, optimizationMetric);
    if (finite(va) && finite(vb)) {
      if (va > vb) {
        wins.first += 1;
        flags.push('first-better');
      } else if (vb > va) {
        wins.second += 1;
        flags.push('second-better');
      } else wins.equal += 1;
    }
    const answer = (x: EvaluationRecord | undefined): string =>
      `<td class="text${answersDiffer ? ' differs' : ''}">${
        x === undefined
          ? '<span class="muted">not asked</span>'
          : x.error !== undefined
            ? `<span class="error">${esc(x.error)}</span>`
            : esc(x.answer)
      }</td>`;
    const scores = scoreNames
      .map((name) => {
        const x = metricScore(r, name);
        const y = metricScore(s, name);
        const cls = (mine: typeof x, other: typeof y): string =>
          finite(mine) && finite(other) && mine > other ? 'better' : '';
        const cells = numCell(x, esc(num(x)), cls(x, y)) + numCell(y, esc(num(y)), cls(y, x));
        if (name !== optimizationMetric) return cells;
        const delta = finite(x) && finite(y) ? x - y : null;
        return cells + numCell(delta, esc(delta === null ? 'n/a' : num(delta)));
      })
      .join('');
    return (
      `<tr${rowAttrs(flags)}><th scope="row">${esc(r.question_id)}</th><td class="text">${esc(r.question)}</td>` +
      answer(r) +
      answer(s) +
      scores +
      `</tr>`
    );
  });
  const head: HeadCell[] = [
    { html: 'Id' },
    { html: 'Question' },
    { html: 'Answer #1', title: a.pattern_name },
    { html: 'Answer #2', title: b.pattern_name },
    ...scoreNames.flatMap((name): HeadCell[] => [
      { html: `${metricHead(name).html} #1`, title: `${name} of ${a.pattern_name}` },
      { html: `${metricHead(name).html} #2`, title: `${name} of ${b.pattern_name}` },
      ...(name === optimizationMetric
        ? [{ html: 'Δ (#1 − #2)', title: `${name} of ${a.pattern_name} minus ${b.pattern_name}` }]
        : []),
    ]),
  ];
  const settingsText =
    settings.length === 0
      ? `Their settings are the same.`
      : `Their settings differ in: ${settings
          .map(([label, x, y]) => `${esc(label)} ${abbr(x, 40)} (#1) vs ${abbr(y, 40)} (#2)`)
          .join('; ')}.`;
  return (
    `<section id="compare">${heading}` +
    `<p><strong>#1 ${esc(a.pattern_name)}</strong> (${esc(optimizationMetric)} ${esc(num(a.score))}) and ` +
    `<strong>#2 ${esc(b.pattern_name)}</strong> (${esc(num(b.score))}). ${settingsText}</p>` +
    `<p id="compare-summary">Answers differ on ${differ} of ${best.length} questions. On ${esc(optimizationMetric)}, ` +
    `#1 scores higher on ${wins.first}, #2 on ${wins.second}, and they are equal on ${wins.equal}.</p>` +
    `<ul class="legend"><li><span class="swatch differs" aria-hidden="true"></span>the two answers differ</li>` +
    `<li><span class="swatch better" aria-hidden="true"></span>the higher of the two scores</li></ul>` +
    (differ === 0 && wins.first === 0 && wins.second === 0
      ? `<p><strong>The two patterns gave the same answer, with the same ${esc(optimizationMetric)}, to every question</strong>: ` +
        `the settings in which they differ changed no answer.</p><details><summary>Side by side anyway</summary>`
      : '<div>') +
    table('The two best patterns’ answers and scores per question', head, rows, {
      id: 'compare-table',
      sortable: true,
      filter: 'words in the question or answers',
      flags: [
        ['differs', 'answers differ'],
        ['first-better', '#1 scores higher'],
        ['second-better', '#2 scores higher'],
      ],
    }) +
    (differ === 0 && wins.first === 0 && wins.second === 0 ? '</details>' : '</div>') +
    `</section>`
  );
}
