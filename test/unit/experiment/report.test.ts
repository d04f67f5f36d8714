import { readFileSync } from 'node:fs';
import { parse } from 'node-html-parser';
import { describe, expect, it } from 'vitest';
import { renderReport } from '../../../shared/src/experiment/report.js';
import type { ReportData, TrialRecord } from '../../../shared/src/experiment/types.js';

function loadFixture(): ReportData {
  return JSON.parse(
    readFileSync(new URL('../../fixtures/experiment/report-data.json', import.meta.url), 'utf8'),
  ) as ReportData;
}

function cellTexts(html: string, rowSelector: string): string[][] {
  return parse(html)
    .querySelectorAll(rowSelector)
    .map((row) => row.querySelectorAll('th, td').map((c) => c.text.trim()));
}

const HOSTILE = `<script>alert("x")</script> it's & "quoted"`;

describe('renderReport', () => {
  it('renders one HTML document with every pattern name and the best pattern first', () => {
    // Prepare
    const data = loadFixture();

    // Act
    const html = renderReport(data);

    // Assess
    expect(html.startsWith('<!doctype html>')).toBe(true);
    expect(html.trimEnd().endsWith('</html>')).toBe(true);
    for (const t of data.trials) expect(html).toContain(t.pattern_name);
    const root = parse(html);
    const rows = root.querySelectorAll('#leaderboard tbody tr');
    expect(rows).toHaveLength(data.leaderboard.length);
    expect(rows.map((r) => r.getAttribute('data-pattern'))).toEqual([
      'Pattern3',
      'Pattern9',
      'Pattern7',
      'Pattern6',
      'Pattern1',
      'Pattern10',
      'Pattern2',
      'Pattern4',
    ]);
    expect(root.querySelector('#best h3')?.text).toContain('Pattern3');
  });

  it('writes leaderboard cells as mean [ci_low, ci_high] and n/a for missing values', () => {
    // Prepare
    const html = renderReport(loadFixture());

    // Act
    const rows = cellTexts(html, '#leaderboard tbody tr');
    const head = cellTexts(html, '#leaderboard thead tr')[0];

    // Assess
    expect(head?.slice(0, 7)).toEqual([
      'Rank',
      'Pattern',
      'Score (overall_score)',
      'overall_score mean [95% CI]',
      'answer_correctness mean [95% CI]',
      'faithfulness mean [95% CI]',
      'context_correctness mean [95% CI]',
    ]);
    expect(rows[0]).toEqual([
      '1',
      'Pattern3',
      '0.7015',
      '0.7015 [0.636, 0.767]',
      '0.6333 [0.5621, 0.7045]',
      '0.8012 [0.7431, 0.8593]',
      '0.67 [0.5796, 0.7604]',
      'recursive',
      '2048',
      '256',
      'BAAI/bge-m3',
      'simple',
      '10',
      'hybrid',
      'weighted',
      '–',
      '0.5',
      'mistralai/mistral-small-3.1-24b-instruct',
    ]);
    // Pattern2: faithfulness without CI; Pattern4: context_correctness without mean.
    expect(rows[6]?.[5]).toBe('0.6612 [n/a]');
    expect(rows[7]?.[6]).toBe('n/a');
  });

  it('shows the header facts: trials run, failed and cached, questions and documents', () => {
    // Prepare
    const html = renderReport(loadFixture());

    // Act
    const facts = Object.fromEntries(
      parse(html)
        .querySelectorAll('.facts div')
        .map((d) => [d.querySelector('dt')?.text, d.querySelector('dd')?.text]),
    );

    // Assess
    expect(facts).toEqual({
      Experiment: 'exp-2026-11-28-handbook',
      Date: '2026-11-28 14:03 UTC',
      Optimizer: 'gam',
      'Optimization metric': 'overall_score',
      'Trials run': '10',
      'Trials failed': '1',
      'Trials cached': '1',
      Questions: '3',
      Documents: '42',
      'Valid combinations (max_combinations)': '288',
    });
  });

  it('loads nothing from outside the file', () => {
    // Act
    const html = renderReport(loadFixture());

    // Assess
    expect(html).not.toMatch(/https?:\/\//i);
    expect(html).not.toMatch(/<script/i);
    expect(html).not.toMatch(/<link\b/i);
    expect(html).not.toMatch(/\bsrc\s*=/i);
    expect(html).not.toMatch(/url\(/i);
    expect(html).not.toMatch(/@import/i);
    expect(html).toContain(
      `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">`,
    );
  });

  it('escapes every user-provided string', () => {
    // Prepare
    const data = loadFixture();
    const best = data.leaderboard[0];
    const q = data.best_evaluation[0];
    const failed = data.trials.find((t) => t.score === null);
    if (!best || !q || !failed) throw new Error('fixture changed');
    data.experiment_id = HOSTILE;
    best.pattern.settings.generation.model_id = HOSTILE;
    best.pattern.settings.generation.system_message_text = HOSTILE;
    q.question = HOSTILE;
    q.answer = HOSTILE;
    q.correct_answers = [HOSTILE];
    q.error = HOSTILE;
    failed.error = HOSTILE;
    data.events.push({ level: 'error', message: HOSTILE, time: HOSTILE });

    // Act
    const html = renderReport(data);

    // Assess
    expect(html).not.toMatch(/<script/i);
    expect(html).toContain(
      '&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; it&#39;s &amp; &quot;quoted&quot;',
    );
    const root = parse(html);
    expect(root.querySelector('#question-table tbody tr td')?.text).toBe(HOSTILE);
    expect(root.querySelector('#failed-table tbody tr td.error')?.text).toBe(HOSTILE);
    expect(root.querySelector('title')?.text).toBe(`RAG optimization report · ${HOSTILE}`);
    expect(root.querySelectorAll('#leaderboard tbody tr')).toHaveLength(8);
  });

  it('lists the per-question results of the best pattern with their errors', () => {
    // Prepare
    const html = renderReport(loadFixture());

    // Act
    const rows = cellTexts(html, '#question-table tbody tr');

    // Assess
    expect(rows).toHaveLength(3);
    expect(rows[2]).toEqual([
      'q2',
      'Who approves travel above the budget limit?',
      '',
      'The department head',
      'n/a',
      '0',
      'n/a',
      '0',
      'GenerationError: foundation model returned no message content',
    ]);
    expect(rows[0]?.slice(4, 8)).toEqual(['1', '0.9167', '1', '0.9722']);
  });

  it('lists failed trials with their errors and keeps the status log collapsible', () => {
    // Prepare
    const data = loadFixture();

    // Act
    const root = parse(renderReport(data));

    // Assess
    const failed = root.querySelectorAll('#failed-table tbody tr');
    expect(failed).toHaveLength(1);
    expect(failed[0]?.querySelector('th')?.text).toBe('Pattern5');
    expect(failed[0]?.text).toContain('RateLimitError: 429 rate limit exceeded');
    const log = root.querySelector('#events details');
    expect(log?.querySelector('summary')?.text).toBe(`${data.events.length} status events`);
    expect(log?.querySelectorAll('tbody tr')).toHaveLength(data.events.length);
  });

  it('draws the charts as titled inline SVG: one point per scored trial and a mark per failure', () => {
    // Prepare
    const data = loadFixture();

    // Act
    const root = parse(renderReport(data));

    // Assess
    const svgs = root.querySelectorAll('svg');
    // Trials, CIs and one chart per parameter with two or more values (10 in the fixture).
    expect(svgs).toHaveLength(12);
    for (const svg of svgs) {
      expect(svg.getAttribute('role')).toBe('img');
      expect(svg.firstChild?.rawTagName).toBe('title');
    }
    const trials = root.querySelector('#trials-chart svg');
    expect(trials?.querySelectorAll('circle')).toHaveLength(9);
    expect(trials?.querySelectorAll('g.failed')).toHaveLength(1);
    expect(trials?.querySelector('path')?.getAttribute('d')).toBe('M66,107.5H214.44V86.45H734');
    const ci = root.querySelector('#ci-chart svg');
    expect(ci?.querySelectorAll('circle')).toHaveLength(5 * 4);
    expect(root.querySelector('#effects h3')?.text).toBe('number_of_chunks · spread 0.1656');
  });

  it('declares a scope on every table header cell', () => {
    // Act
    const root = parse(renderReport(loadFixture()));

    // Assess
    const ths = root.querySelectorAll('th');
    expect(ths.length).toBeGreaterThan(50);
    for (const th of ths) expect(['col', 'row']).toContain(th.getAttribute('scope'));
  });

  it('prints numbers with at most 4 decimals', () => {
    // Prepare
    const data = loadFixture();
    const first = data.leaderboard[0];
    if (!first) throw new Error('fixture changed');
    first.score = 0.123456789;
    const metric = first.pattern.evaluation.metrics.find((m) => m.name === 'overall_score');
    if (metric) metric.scores = { mean: 0.98765432, ci_low: 0.912345678, ci_high: 1 };

    // Act
    const html = renderReport(data);

    // Assess
    expect(html).not.toMatch(/\d\.\d{5,}/);
    expect(cellTexts(html, '#leaderboard tbody tr')[0]?.slice(2, 4)).toEqual([
      '0.1235',
      '0.9877 [0.9123, 1]',
    ]);
  });

  it('still renders and says so when no trial succeeded', () => {
    // Prepare
    const data = loadFixture();
    data.trials = data.trials.map(
      (t): TrialRecord => ({
        pattern_name: t.pattern_name,
        iteration: t.iteration,
        config: t.config,
        score: null,
        error: 'EmbeddingError: model unavailable',
        duration_seconds: 1,
      }),
    );
    data.leaderboard = [];
    data.best_evaluation = [];

    // Act
    const html = renderReport(data);

    // Assess
    const root = parse(html);
    expect(root.querySelector('#leaderboard')).toBeNull();
    expect(root.querySelector('#best')?.text).toContain('No successful trials');
    expect(root.querySelector('#leaderboard-section')?.text).toContain('No successful trials');
    expect(root.querySelector('#effects')?.text).toContain('No parameter took two or more values');
    expect(root.querySelector('#questions')?.text).toContain('No per-question records.');
    expect(root.querySelectorAll('#failed-table tbody tr')).toHaveLength(10);
    expect(root.querySelectorAll('#trials-chart g.failed')).toHaveLength(10);
    expect(root.querySelector('#trials-chart path:not(g path)')).toBeNull();
    expect(html.trimEnd().endsWith('</html>')).toBe(true);
  });

  it('renders a single trial, with its scores and null CIs as n/a', () => {
    // Prepare
    const data = loadFixture();
    const only = data.trials[0];
    const entry = data.leaderboard.find((e) => e.pattern_name === 'Pattern1');
    if (!only?.pattern || !entry) throw new Error('fixture changed');
    for (const m of only.pattern.evaluation.metrics)
      m.scores = { ...m.scores, ci_low: null, ci_high: null };
    data.trials = [only];
    data.leaderboard = [{ ...entry, rank: 1, pattern: only.pattern }];
    data.events = [];

    // Act
    const html = renderReport(data);

    // Assess
    const rows = cellTexts(html, '#leaderboard tbody tr');
    expect(rows).toHaveLength(1);
    expect(rows[0]?.slice(0, 4)).toEqual(['1', 'Pattern1', '0.6123', '0.6123 [n/a]']);
    const root = parse(html);
    expect(root.querySelectorAll('#trials-chart circle')).toHaveLength(1);
    expect(root.querySelector('#trials-chart circle')?.getAttribute('cx')).toBe('400');
    expect(root.querySelector('#effects')?.text).toContain('No parameter took two or more values');
    expect(root.querySelector('#events')?.text).toContain('No events were recorded.');
  });
});
