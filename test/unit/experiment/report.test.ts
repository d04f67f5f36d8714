import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { parse } from 'node-html-parser';
import { describe, expect, it } from 'vitest';
import { renderReport } from '../../../shared/src/experiment/report.js';
import { REPORT_SCRIPT } from '../../../shared/src/experiment/report-script.js';
import type { ReportData, TrialRecord } from '../../../shared/src/experiment/types.js';

/** `report-data.json` (hand-made, 10 trials, 3 questions) or one of the `report-data-examples*.json` runs. */
function loadFixture(name = 'report-data.json'): ReportData {
  return JSON.parse(
    readFileSync(new URL(`../../fixtures/experiment/${name}`, import.meta.url), 'utf8'),
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

  it('writes leaderboard cells as mean [ci_low, ci_high], one column per varying setting, n/a for missing values', () => {
    // Prepare
    const html = renderReport(loadFixture());

    // Act
    const rows = cellTexts(html, '#leaderboard tbody tr');
    const head = cellTexts(html, '#leaderboard thead tr')[0];
    const root = parse(html);

    // Assess
    expect(head).toEqual([
      'Rank',
      'Pattern',
      'Score (overall_score)',
      'answer corr.',
      'faithful.',
      'context corr.',
      'Chunking',
      'Chunk size',
      'Overlap',
      'Embedding',
      'Chunks',
      'Search',
      'Ranker',
      'Model',
    ]);
    expect(
      root.querySelectorAll('#leaderboard thead th').map((th) => th.getAttribute('title')),
    ).toEqual([
      undefined,
      undefined,
      'overall_score',
      'answer_correctness',
      'faithfulness',
      'context_correctness',
      'chunking_method',
      'chunk_size',
      'chunk_overlap (hybrid and semantic chunking have none)',
      'embedding_model',
      'number_of_chunks',
      'search_mode',
      'ranker_strategy, ranker_k, ranker_alpha',
      'foundation_model',
    ]);
    expect(rows[0]).toEqual([
      '1',
      'Pattern3',
      '0.7015 [0.636, 0.767]',
      '0.6333 [0.5621, 0.7045]',
      '0.8012 [0.7431, 0.8593]',
      '0.67 [0.5796, 0.7604]',
      'recursive',
      '2048',
      '256',
      'BAAI/bge-m3',
      '10',
      'hybrid',
      'weighted α=0.5',
      'mistral-small-3.1-24b-i…',
    ]);
    // Hybrid chunking has no overlap and vector search no ranker: no placeholder value.
    expect(rows[3]?.slice(6)).toEqual([
      'hybrid',
      '2048',
      '–',
      'BAAI/bge-m3',
      '10',
      'hybrid',
      'rrf k=60',
      'granite-3.3-8b-instruct',
    ]);
    expect(rows[2]?.[12]).toBe('–');
    // The abbreviated model keeps its full id as a tooltip.
    expect(
      root.querySelector('#leaderboard tbody tr td:last-child span')?.getAttribute('title'),
    ).toBe('mistralai/mistral-small-3.1-24b-instruct');
    // Settings every pattern shares are said once, above the table.
    expect(root.querySelector('#leaderboard-same')?.text).toBe(
      'Same in every pattern: retrieval_method simple.',
    );
    // Pattern2: faithfulness without CI; Pattern4: context_correctness without mean.
    expect(rows[6]?.[4]).toBe('0.6612 [n/a]');
    expect(rows[7]?.[5]).toBe('n/a');
    // Sort keys: the value shown; missing values empty (sorted last).
    expect(
      root
        .querySelectorAll('#leaderboard tbody tr')[7]
        ?.querySelectorAll('td')
        .map((td) => td.getAttribute('data-v'))
        .slice(0, 5),
    ).toEqual(['8', '0.4892', '0.4105', '0.5679', '']);
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

  it('loads nothing from outside the file and runs only its own script, allowed by its hash', () => {
    // Act
    const html = renderReport(loadFixture());

    // Assess
    expect(html).not.toMatch(/https?:\/\//i);
    expect(html).not.toMatch(/<link\b/i);
    expect(html).not.toMatch(/\bsrc\s*=/i);
    expect(html).not.toMatch(/url\(/i);
    expect(html).not.toMatch(/@import/i);
    expect(html.match(/<script/gi)).toHaveLength(1);
    const script = /<script>([\s\S]*?)<\/script>/.exec(html)?.[1];
    expect(script).toBe(REPORT_SCRIPT);
    const hash = createHash('sha256')
      .update(script as string, 'utf8')
      .digest('base64');
    expect(html).toContain(
      `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; ` +
        `script-src 'sha256-${hash}'; base-uri 'none'; form-action 'none'">`,
    );
    // Without the script the tables are complete and the filter boxes stay hidden.
    const root = parse(html);
    const tools = root.querySelectorAll('.table-tools');
    expect(tools.map((t) => t.getAttribute('data-for'))).toEqual([
      'leaderboard',
      'trials-table',
      'question-table',
      'compare-table',
    ]);
    for (const t of tools) expect(t.hasAttribute('hidden')).toBe(true);
    expect(root.querySelectorAll('table.sortable').map((t) => t.id)).toEqual([
      'leaderboard',
      'trials-table',
      'question-table',
      'compare-table',
    ]);
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
    expect(html.match(/<script/gi)).toHaveLength(1);
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
    expect(cellTexts(html, '#question-table thead tr')[0]).toEqual([
      'Id',
      'Question',
      'Answer',
      'Correct answers',
      'overall',
      'answer corr.',
      'faithful.',
      'context corr.',
      'Error',
    ]);
    expect(rows).toHaveLength(3);
    expect(rows[2]).toEqual([
      'q2 failed',
      'Who approves travel above the budget limit?',
      '',
      'The department head',
      '0',
      'n/a',
      '0',
      'n/a',
      'GenerationError: foundation model returned no message content',
    ]);
    expect(rows[0]?.slice(4, 8)).toEqual(['0.9722', '1', '0.9167', '1']);
  });

  it('highlights wrong answers and answers to unanswerable questions, with a legend', () => {
    // Prepare: the sample corpus run (50 questions, 5 unanswerable).
    const html = renderReport(loadFixture('report-data-examples.json'));

    // Act
    const root = parse(html);
    const flagged = root
      .querySelectorAll('#question-table tbody tr[data-flags]')
      .map((r) => [r.querySelector('th')?.text, r.getAttribute('data-flags'), r.classNames]);

    // Assess
    expect(root.querySelectorAll('#question-table tbody tr')).toHaveLength(50);
    expect(flagged).toEqual([
      ['q3 wrong', 'wrong', 'flag-wrong'],
      ['q26 wrong', 'wrong', 'flag-wrong'],
      ['q29 wrong', 'wrong', 'flag-wrong'],
      ['q39 wrong', 'wrong', 'flag-wrong'],
      ['q41 wrong', 'wrong', 'flag-wrong'],
      ['q47 unanswerable, answered', 'unanswerable-answered', 'flag-unanswerable-answered'],
    ]);
    // q3 is answerable but the model said it cannot answer: answer_correctness 0, shown as low.
    const q3 = root.querySelectorAll('#question-table tbody tr')[3];
    expect(q3?.querySelector('td.low')?.text).toBe('0');
    // q45 is unanswerable and the model abstained: not highlighted.
    const q45 = root.querySelectorAll('#question-table tbody tr')[45];
    expect(q45?.getAttribute('data-flags')).toBeUndefined();
    expect(q45?.querySelectorAll('td')[2]?.text).toBe('none (unanswerable)');
    expect(root.querySelectorAll('#questions .legend li').map((li) => li.text)).toEqual([
      'wrong answer (5): answer_correctness below 0.5: fewer than half of the best-matching reference answer’s tokens are in the answer',
      'answered an unanswerable question (1): the benchmark has no reference answer for it (unanswerable) and the answer did not say it cannot answer (abstention_accuracy 0)',
      'no answer (failed) (0): the question could not be answered or scored; the error is in the row',
    ]);
    expect(
      root
        .querySelectorAll('.table-tools[data-for="question-table"] option')
        .map((o) => o.getAttribute('value')),
    ).toEqual(['', 'wrong', 'unanswerable-answered', 'failed']);
  });

  it('compares the top two patterns question by question, highlighting where they differ', () => {
    // Prepare
    const html = renderReport(loadFixture());

    // Act
    const root = parse(html);
    const rows = root.querySelectorAll('#compare-table tbody tr');

    // Assess
    expect(cellTexts(html, '#compare-table thead tr')[0]).toEqual([
      'Id',
      'Question',
      'Answer #1',
      'Answer #2',
      'overall #1',
      'overall #2',
      'Δ (#1 − #2)',
      'answer corr. #1',
      'answer corr. #2',
    ]);
    expect(cellTexts(html, '#compare-table tbody tr').map((r) => [r[0], ...r.slice(4)])).toEqual([
      ['q0', '0.9722', '0.9444', '0.0278', '1', '1'],
      ['q1', '0.1111', '0.9524', '-0.8413', '0', '1'],
      ['q2', '0', '0.8', '-0.8', 'n/a', '1'],
    ]);
    expect(rows.map((r) => r.getAttribute('data-flags'))).toEqual([
      'first-better',
      'differs second-better',
      'differs second-better',
    ]);
    // Differing answers: both answer cells; differing scores: the higher cell.
    expect(rows.map((r) => r.querySelectorAll('td.differs').length)).toEqual([0, 2, 2]);
    expect(rows.map((r) => r.querySelectorAll('td.better').map((td) => td.text))).toEqual([
      ['0.9722'],
      ['0.9524', '1'],
      ['0.8'],
    ]);
    expect(rows[2]?.querySelectorAll('td')[1]?.text).toBe(
      'GenerationError: foundation model returned no message content',
    );
    expect(root.querySelector('#compare-summary')?.text).toBe(
      'Answers differ on 2 of 3 questions. On overall_score, #1 scores higher on 1, #2 on 2, and they are equal on 0.',
    );
    expect(root.querySelector('#compare p')?.text).toBe(
      '#1 Pattern3 (overall_score 0.7015) and #2 Pattern9 (0.6922). Their settings differ in: ' +
        'Chunk size 2048 (#1) vs 1024 (#2); Chunk overlap 256 (#1) vs 128 (#2); ' +
        'Embedding model BAAI/bge-m3 (#1) vs nomic-ai/nomic-embed-text-v1.5 (#2); ' +
        'Embedding dimension 1024 (#1) vs 768 (#2).',
    );
  });

  it('says so when the top two patterns answered alike, or when there is no second pattern to compare', () => {
    // Prepare
    const alike = loadFixture('report-data-examples.json');
    const single = loadFixture();
    single.leaderboard = single.leaderboard.slice(0, 1);
    const older = loadFixture();
    delete older.runner_up_evaluation;

    // Act
    const [a, s, o] = [alike, single, older].map((d) => parse(renderReport(d)));

    // Assess
    expect(a?.querySelectorAll('#compare p')[2]?.text).toBe(
      'The two patterns gave the same answer, with the same overall_score, to every question: the settings ' +
        'in which they differ changed no answer.',
    );
    expect(a?.querySelector('#compare-summary')?.text).toBe(
      'Answers differ on 0 of 50 questions. On overall_score, #1 scores higher on 0, #2 on 0, and they are equal on 50.',
    );
    expect(a?.querySelector('#compare details summary')?.text).toBe('Side by side anyway');
    expect(a?.querySelectorAll('#compare details #compare-table tbody tr')).toHaveLength(50);
    expect(s?.querySelector('#compare')?.text).toBe(
      'Top two patterns, question by questionFewer than two successful patterns: nothing to compare.',
    );
    expect(o?.querySelector('#compare')?.text).toBe(
      'Top two patterns, question by questionThis report’s data has no per-question records of Pattern9 ' +
        '(report data written before they were recorded).',
    );
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
    // Trials, CIs and one chart per parameter with two or more values where it applies (8 in the fixture).
    expect(svgs).toHaveLength(10);
    for (const svg of svgs) {
      expect(svg.getAttribute('role')).toBe('img');
      expect(svg.firstChild?.rawTagName).toBe('title');
    }
    const trials = root.querySelector('#trials-chart svg');
    expect(trials?.querySelectorAll('circle')).toHaveLength(9);
    expect(trials?.querySelectorAll('g.failed')).toHaveLength(1);
    expect(trials?.querySelector('path')?.getAttribute('d')).toBe('M66,124.32H214.44V54.15H734');
    const ci = root.querySelector('#ci-chart svg');
    expect(ci?.querySelectorAll('circle')).toHaveLength(5 * 4);
    expect(root.querySelector('#effects h3')?.text).toBe('number_of_chunks · spread 0.1656');
  });

  it('scales the score axes to the observed scores and labels their values', () => {
    // Prepare: scores 0.4892–0.7015, and a run whose two trials scored 0.82 and 0.88.
    const data = loadFixture();
    const close = loadFixture();
    close.trials = close.trials
      .slice(0, 2)
      .map((t, i) => ({ ...t, score: [0.82, 0.88][i] as number }));

    // Act
    const root = parse(renderReport(data));
    const closeRoot = parse(renderReport(close));

    // Assess
    const labels = (r: typeof root, sel: string) =>
      r.querySelectorAll(`${sel} svg > text`).map((t) => t.text);
    expect(labels(root, '#trials-chart').slice(0, 7)).toEqual([
      '0.45',
      '0.50',
      '0.55',
      '0.60',
      '0.65',
      '0.70',
      '0.75',
    ]);
    expect(labels(root, '#ci-chart').slice(0, 6)).toEqual([
      '0.4',
      '0.5',
      '0.6',
      '0.7',
      '0.8',
      '0.9',
    ]);
    expect(labels(closeRoot, '#trials-chart').slice(0, 6)).toEqual([
      '0.80',
      '0.82',
      '0.84',
      '0.86',
      '0.88',
      '0.90',
    ]);
    // 0.06 apart on an axis 0.1 tall of 236 px: 141.6 px, not the 14 px of a 0–1 axis.
    expect(
      closeRoot.querySelectorAll('#trials-chart circle').map((c) => c.getAttribute('cy')),
    ).toEqual(['204.8', '63.2']);
  });

  it('draws parameter bars from the shared axis baseline, with the values and counts', () => {
    // Act
    const root = parse(renderReport(loadFixture()));

    // Assess
    const figures = root.querySelectorAll('#effects figure');
    expect(figures).toHaveLength(8);
    const chunks = figures[0];
    // Axis 0.50–0.75 over 230 px from x=60: bars are (mean − 0.5) / 0.25 × 230 wide.
    expect(
      chunks?.querySelectorAll('rect').map((r) => [r.getAttribute('x'), r.getAttribute('width')]),
    ).toEqual([
      ['60', '17.02'],
      ['60', '125.33'],
      ['60', '169.4'],
    ]);
    expect(chunks?.querySelectorAll('svg > text').map((t) => t.text)).toEqual([
      '0.50',
      '0.55',
      '0.60',
      '0.65',
      '0.70',
      '0.75',
    ]);
    expect(chunks?.querySelectorAll('g text').map((t) => t.text)).toEqual([
      '3',
      '0.5185 (n=2)',
      '5',
      '0.6362 (n=3)',
      '10',
      '0.6841 (n=3)',
    ]);
    expect(chunks?.querySelector('line.overall')?.getAttribute('x1')).toBe('174.78');
    expect(root.querySelectorAll('#effects p.note')[1]?.text).toBe(
      'Every chart shares one axis, 0.50 to 0.75: bars start at its baseline 0.50, not at 0, so close means ' +
        'look different. Dashed line: mean of all counted trials (0.6248).',
    );
  });

  it('computes marginals only over the trials where a parameter applies; one value is listed as fixed', () => {
    // Act
    const root = parse(renderReport(loadFixture()));

    // Assess
    expect(root.querySelectorAll('#effects h3').map((h) => h.text)).toEqual([
      'number_of_chunks · spread 0.1656',
      'chunk_size · spread 0.1303',
      'chunk_overlap · spread 0.0913',
      'ranker_strategy · spread 0.0906',
      'embedding_model · spread 0.0774',
      'foundation_model · spread 0.0633',
      'search_mode · spread 0.0473',
      'chunking_method · spread 0.0287',
    ]);
    const strategy = root.querySelectorAll('#effects figure')[3];
    // No `(none)` for the vector-search trials: rrf (Pattern2, 6, 10) and weighted (Pattern3, 9).
    expect(strategy?.querySelectorAll('g text').map((t) => t.text)).toEqual([
      'rrf',
      '0.6063 (n=3)',
      'weighted',
      '0.6968 (n=2)',
    ]);
    expect(strategy?.querySelector('figcaption')?.text).toBe(
      'Over 5 trial(s) where search_mode = hybrid.',
    );
    expect(root.querySelector('#effects-fixed')?.text).toBe(
      'Fixed (one value wherever it applies): ranker_alpha = 0.5 (2 trial(s) where ranker_strategy = weighted); ' +
        'ranker_k = 60 (3 trial(s) where ranker_strategy = rrf); retrieval_method = simple (8 trial(s)).',
    );
    expect(root.querySelector('#effects-unused')?.text).toBe(
      'Not used by any trial: window_size (applies when retrieval_method = window).',
    );
    expect(root.querySelector('#effects')?.text).not.toContain('ranker_k · spread');
  });

  it('shows a fully cached re-run the same effects as the run that filled the cache, and says so', () => {
    // Prepare: two real runs of the sample corpus, the second answered entirely from the cache.
    const first = parse(renderReport(loadFixture('report-data-examples.json')));
    const cached = loadFixture('report-data-examples-cached.json');
    expect(cached.trials.every((t) => t.cached === true)).toBe(true);

    // Act
    const rerun = parse(renderReport(cached));

    // Assess
    const charts = (r: typeof first) =>
      r
        .querySelectorAll('#effects figure')
        .map((f) => [
          f.querySelector('h3')?.text,
          f.querySelectorAll('g text').map((t) => t.text.replace(/, \d+ cached/, '')),
        ]);
    expect(charts(rerun)).toEqual(charts(first));
    expect(charts(rerun).map((c) => c[0])).toEqual([
      'chunk_overlap · spread 0.103',
      'search_mode · spread 0.0978',
      'chunking_method · spread 0.0489',
      'ranker_strategy · spread 0.0103',
      'number_of_chunks · spread 0.0056',
      'chunk_size · spread 0.0011',
    ]);
    expect(rerun.querySelector('#effects')?.text).not.toContain('No parameter took');
    expect(rerun.querySelector('#effects p.note')?.text).toContain(
      'Counted: 12 successful trial(s), one per distinct configuration, 12 of them answered from the ' +
        'result cache (an earlier evaluation of the same configuration; its score counts like any other).',
    );
    expect(rerun.querySelectorAll('#effects figure')[0]?.querySelectorAll('g text')[1]?.text).toBe(
      '0.7884 (n=1, 1 cached)',
    );
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
    // The score column shows the score with the optimization metric's interval.
    expect(cellTexts(html, '#leaderboard tbody tr')[0]?.[2]).toBe('0.1235 [0.9123, 1]');
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
    expect(root.querySelector('#effects')?.text).toContain(
      'No successful trials, so there are no parameter effects.',
    );
    expect(root.querySelector('#questions')?.text).toContain('No per-question records.');
    expect(root.querySelector('#compare')?.text).toContain('Fewer than two successful patterns');
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
    expect(rows[0]?.slice(0, 3)).toEqual(['1', 'Pattern1', '0.6123 [n/a]']);
    const root = parse(html);
    expect(root.querySelectorAll('#trials-chart circle')).toHaveLength(1);
    expect(root.querySelector('#trials-chart circle')?.getAttribute('cx')).toBe('400');
    expect(root.querySelector('#effects')?.text).toContain('No parameter took two or more values');
    expect(root.querySelector('#events')?.text).toContain('No events were recorded.');
  });
});
