/**
 * The experiment report: one self-contained HTML document (inline CSS and SVG, one small inline script, no
 * external resource) that can be mailed, archived or opened offline years later and still render the same. A
 * Content-Security-Policy meta tag forbids every fetch and every script but the report's own (allowed by its
 * SHA-256 hash), so even a string that escaped escaping could not run or phone home. The script only sorts and
 * filters tables; with JavaScript off every table is plain, complete HTML.
 */

import type { MetricScores } from '../evaluation/score.js';
import { combinationKey } from '../optimizer/search-space.js';
import type { Marginal, Marginals } from './report-effects.js';
import { parameterApplies, parameterMarginals } from './report-effects.js';
import {
  type Axis,
  abbr,
  esc,
  finite,
  type HeadCell,
  headLabel,
  heads,
  linear,
  metricHead,
  niceAxis,
  num,
  numCell,
  orderMetrics,
  px,
  shorten,
  svgOpen,
  table,
  tickText,
} from './report-html.js';
import { renderComparison, renderQuestions, type SettingDifference } from './report-questions.js';
import { REPORT_SCRIPT, REPORT_SCRIPT_HASH } from './report-script.js';
import type {
  LeaderboardEntry,
  PatternPayload,
  ReportData,
  StatusEvent,
  TrialRecord,
  UsageSummary,
} from './types.js';

/** How many of the best patterns the confidence-interval chart shows. */
const CI_CHART_PATTERNS = 5;

/** Okabe–Ito colours: distinguishable with the common colour-vision deficiencies, dark enough on white. */
const PALETTE = ['#0072b2', '#d55e00', '#009e73', '#cc79a7', '#7a6500', '#56b4e9', '#000000'];

const FAILED_COLOUR = '#b3261e';

/** The report's Content-Security-Policy: nothing may load; inline styles and the report script may run. */
export const REPORT_CSP = `default-src 'none'; style-src 'unsafe-inline'; script-src ${REPORT_SCRIPT_HASH}; base-uri 'none'; form-action 'none'`;

/** `0.612 [0.55, 0.67]`; `n/a` for a missing mean, `[n/a]` for a missing interval. */
function metricText(scores: MetricScores | undefined): string {
  if (scores === undefined || !finite(scores.mean)) return 'n/a';
  if (!finite(scores.ci_low) && !finite(scores.ci_high)) return `${num(scores.mean)} [n/a]`;
  return `${num(scores.mean)} [${num(scores.ci_low)}, ${num(scores.ci_high)}]`;
}

/** A metric cell: the mean, and its interval on a second, smaller line (same text as {@link metricText}). */
function metricCell(scores: MetricScores | undefined): string {
  const text = metricText(scores);
  const cut = text.indexOf(' [');
  if (cut === -1) return numCell(scores?.mean, esc(text));
  return numCell(
    scores?.mean,
    `${esc(text.slice(0, cut))} <span class="ci">${esc(text.slice(cut + 1))}</span>`,
  );
}

/** The score cell: the score in bold with the optimization metric's interval below it. */
function scoreCell(score: number, scores: MetricScores | undefined): string {
  const ci = scores === undefined ? '' : metricText({ ...scores, mean: score });
  const cut = ci.indexOf(' [');
  return numCell(
    score,
    `<strong>${esc(num(score))}</strong>${cut === -1 ? '' : ` <span class="ci">${esc(ci.slice(cut + 1))}</span>`}`,
  );
}

/** Any config or settings value as text (models by `modelId`, `''` as `(none)`). */
function valueText(value: unknown): string {
  if (value === undefined || value === null) return '–';
  if (typeof value === 'number') return num(value);
  if (typeof value === 'object') {
    const modelId = (value as { modelId?: unknown }).modelId;
    return typeof modelId === 'string' ? modelId : JSON.stringify(value);
  }
  const text = String(value);
  return text === '' ? '(none)' : text;
}

function metricScores(pattern: PatternPayload, name: string): MetricScores | undefined {
  return pattern.evaluation.metrics.find((m) => m.name === name)?.scores;
}

/** Metric names across patterns: the optimization metric, then ai4rag's trio, then the rest as found. */
function metricNames(patterns: readonly PatternPayload[], optimizationMetric: string): string[] {
  return orderMetrics(
    patterns.flatMap((p) => p.evaluation.metrics.map((m) => m.name)),
    optimizationMetric,
  );
}

function formatDate(iso: string): string {
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return iso;
  return `${new Date(t).toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

const CSS = `
:root { color-scheme: light; }
* { box-sizing: border-box; }
[hidden] { display: none !important; }
body { margin: 0 auto; max-width: 1320px; padding: 1.5rem; color: #1b1f24; background: #fff;
  font: 15px/1.5 system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif; }
h1 { font-size: 1.6rem; margin: 0 0 .25rem; }
h2 { font-size: 1.25rem; margin: 2rem 0 .5rem; padding-bottom: .25rem; border-bottom: 2px solid #d0d7de; }
h3 { font-size: 1.05rem; margin: 1rem 0 .5rem; }
p.note, figcaption, .muted { color: #4a5563; }
.facts { display: grid; grid-template-columns: repeat(auto-fill, minmax(190px, 1fr)); gap: .5rem 1rem; margin: 1rem 0; }
.facts div { border: 1px solid #d0d7de; border-radius: 6px; padding: .4rem .6rem; }
.facts dt { font-size: .8rem; color: #4a5563; }
.facts dd { margin: 0; font-weight: 600; overflow-wrap: anywhere; }
.card { border: 2px solid #0072b2; border-radius: 8px; padding: .5rem 1rem 1rem; background: #f5f9fc; }
.card-grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(320px, 1fr)); gap: 1rem; }
.wrap { max-width: 100%; overflow-x: auto; }
table { border-collapse: collapse; margin: .5rem 0; font-size: .875rem; width: 100%; }
caption { text-align: left; color: #4a5563; padding-bottom: .25rem; }
th, td { border: 1px solid #d0d7de; padding: .3rem .4rem; text-align: left; vertical-align: top; overflow-wrap: break-word; }
thead th { background: #eaeef2; vertical-align: bottom; font-size: .8125rem; }
thead th[title] { text-decoration: underline dotted; }
tbody th { background: #f6f8fa; font-weight: 600; }
tbody tr:nth-child(even) td { background: #fafbfc; }
td.num { text-align: right; font-variant-numeric: tabular-nums; overflow-wrap: normal; }
td.num .ci { display: block; font-size: .75rem; color: #4a5563; }
td span[title] { text-decoration: underline dotted #8c959f; }
tr.best td, tr.best th { background: #e6f1fa; }
#leaderboard, #trials-table { font-size: .8125rem; }
td.text { white-space: pre-wrap; overflow-wrap: anywhere; min-width: 9rem; }
td.text ul { margin: 0; padding-left: 1.1rem; white-space: normal; }
.error, td.error { color: ${FAILED_COLOUR}; }
.level-warning { color: #7a4b00; font-weight: 600; }
.level-error { color: ${FAILED_COLOUR}; font-weight: 600; }
button.sort { all: unset; cursor: pointer; display: block; width: 100%; }
button.sort:focus-visible { outline: 2px solid #0072b2; outline-offset: 2px; }
th[aria-sort] button.sort::after { content: ' ▲'; font-size: .7rem; }
th[aria-sort="descending"] button.sort::after { content: ' ▼'; }
.table-tools { display: flex; flex-wrap: wrap; gap: .5rem 1rem; align-items: center; margin: .5rem 0 0; font-size: .9rem; }
.table-tools input { width: 22rem; max-width: 100%; font: inherit; padding: .2rem .4rem; }
.table-tools select { font: inherit; }
.legend { list-style: none; padding: 0; margin: .5rem 0; font-size: .875rem; }
.legend li { margin: .15rem 0; }
.swatch { display: inline-block; width: 1.6em; height: 1em; vertical-align: -.15em; margin-right: .4em; border: 1px solid #8c959f; }
tbody tr.flag-wrong > td, tbody tr.flag-wrong > th, .swatch.flag-wrong { background: #fdecea; }
tbody tr.flag-unanswerable-answered > td, tbody tr.flag-unanswerable-answered > th, .swatch.flag-unanswerable-answered { background: #fff3cd; }
tbody tr.flag-failed > td, tbody tr.flag-failed > th, .swatch.flag-failed { background: #eeeff1; }
.swatch.flag-wrong, tbody tr.flag-wrong > th:first-child { border-left: 5px solid #b3261e; }
.swatch.flag-unanswerable-answered, tbody tr.flag-unanswerable-answered > th:first-child { border-left: 5px solid #9a6700; }
.swatch.flag-failed, tbody tr.flag-failed > th:first-child { border-left: 5px solid #57606a; }
#question-table td.text { width: 14%; }
#question-table td.text:nth-of-type(2) { width: 30%; }
#compare-table td.text { width: 27%; }
#compare-table td.text:nth-of-type(1) { width: 18%; }
tbody th .badge { display: block; width: max-content; max-width: 6rem; white-space: normal; font-size: .7rem; font-weight: 400; }
.badge { display: inline-block; border: 1px solid currentColor; border-radius: 3px; padding: 0 .25rem; margin: .1rem 0; }
td.low { color: ${FAILED_COLOUR}; font-weight: 700; }
#compare-table tbody td.differs, .swatch.differs { background: #fff3cd; }
#compare-table tbody td.better, .swatch.better { background: #dff3e4; font-weight: 700; }
figure { margin: 1rem 0; }
svg { max-width: 100%; height: auto; font-family: inherit; }
.effects { display: grid; grid-template-columns: repeat(auto-fill, minmax(420px, 1fr)); gap: 0 1.5rem; }
.effects figure { margin: .5rem 0; }
.effects figcaption { font-size: .8rem; }
details { margin: .5rem 0; }
summary { cursor: pointer; font-weight: 600; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; background: #f6f8fa; padding: .5rem; border-radius: 4px; }
footer { margin-top: 2rem; font-size: .8rem; color: #4a5563; }
@media print {
  body { max-width: none; padding: 0; font-size: 11px; }
  .wrap { overflow: visible; }
  .table-tools { display: none !important; }
  tr, figure, .card { break-inside: avoid; }
  h2 { break-after: avoid; }
}
`;

/** Tokens of a summary as text, e.g. `1,234 (1,000 prompt + 234 completion)`; `–` without one. */
function tokensText(u: UsageSummary | undefined): string {
  if (u === undefined) return '–';
  const total = u.prompt_tokens + u.completion_tokens;
  return `${total.toLocaleString('en-US')} (${u.prompt_tokens.toLocaleString('en-US')} prompt + ${u.completion_tokens.toLocaleString('en-US')} completion)`;
}

/** USD with up to 6 decimals (a millionth of a dollar, as the costs are rounded); `–` when unknown. */
function usdText(usd: number | undefined): string {
  return usd === undefined ? '–' : `$${Number(usd.toFixed(6))}`;
}

function renderHeader(data: ReportData): string {
  const failed = data.trials.filter((t) => !finite(t.score) || t.error !== undefined).length;
  const cached = data.trials.filter((t) => t.cached === true).length;
  const usage = data.usage;
  const usageFacts: [string, string][] =
    usage === undefined
      ? []
      : [
          ['Tokens spent', esc(tokensText(usage.spent))],
          ...(usage.priced
            ? ([['Cost spent (USD)', esc(usdText(usage.spent.cost_usd))]] as [string, string][])
            : []),
        ];
  const facts: [string, string][] = [
    ['Experiment', esc(data.experiment_id)],
    ['Date', `<time datetime="${esc(data.created_at)}">${esc(formatDate(data.created_at))}</time>`],
    ['Optimizer', esc(data.optimizer)],
    ['Optimization metric', esc(data.optimization_metric)],
    ['Trials run', esc(data.trials.length)],
    ['Trials failed', esc(failed)],
    ['Trials cached', esc(cached)],
    ['Questions', esc(data.questions)],
    ['Documents', esc(data.documents)],
    ['Valid combinations (max_combinations)', esc(data.max_combinations)],
    ...usageFacts,
  ];
  return (
    `<header><h1>RAG optimization report</h1>` +
    `<p class="muted">Experiment <strong>${esc(data.experiment_id)}</strong></p>` +
    `<dl class="facts">${facts.map(([k, v]) => `<div><dt>${esc(k)}</dt><dd>${v}</dd></div>`).join('')}</dl></header>`
  );
}

/** The reranker and its candidate count; `none` without reranking. */
function rerankerText(s: PatternPayload['settings']): string {
  const r = s.retrieval.reranker;
  return r === undefined ? 'none' : `${r.model_id} (${r.candidates} candidates)`;
}

/** The rows of a chunking method's own parameters (hierarchical, semantic), where the pattern has them. */
function chunkingMethodRows(s: PatternPayload['settings']): [string, unknown][] {
  const c = s.chunking;
  const rows: [string, unknown][] = [];
  if (c.parent_chunk_size !== undefined) rows.push(['Parent chunk size', c.parent_chunk_size]);
  if (c.semantic_breakpoint !== undefined)
    rows.push(['Semantic breakpoint', c.semantic_breakpoint]);
  if (c.semantic_breakpoint_amount !== undefined)
    rows.push(['Semantic breakpoint amount', c.semantic_breakpoint_amount]);
  return rows;
}

/** The chunking method as one value, with the parent size of hierarchical chunking (`hierarchical ⊂ 2048`). */
function chunkingText(s: PatternPayload['settings']): string {
  const c = s.chunking;
  return c.parent_chunk_size === undefined ? c.method : `${c.method} ⊂ ${c.parent_chunk_size}`;
}

function settingsRows(pattern: PatternPayload): [string, unknown][] {
  const s = pattern.settings;
  const rows: [string, unknown][] = [
    ['Chunking method', s.chunking.method],
    ['Chunk size', s.chunking.chunk_size],
    ['Chunk overlap', s.chunking.chunk_overlap],
    ['Include metadata', s.chunking.include_metadata],
    ...chunkingMethodRows(s),
    ['Embedding model', s.embedding.model_id],
    ['Embedding dimension', s.embedding.embedding_params.embedding_dimension],
    ['Embedding context length', s.embedding.embedding_params.context_length ?? 'unknown'],
    ['Retrieval method', s.retrieval.method],
    ['Number of chunks', s.retrieval.number_of_chunks],
    ['Search mode', s.retrieval.search_mode],
  ];
  if (s.retrieval.window_size !== undefined) rows.push(['Window size', s.retrieval.window_size]);
  if (s.retrieval.ranker_strategy !== undefined)
    rows.push(['Ranker strategy', s.retrieval.ranker_strategy]);
  if (s.retrieval.ranker_k !== undefined) rows.push(['Ranker k', s.retrieval.ranker_k]);
  if (s.retrieval.ranker_alpha !== undefined) rows.push(['Ranker alpha', s.retrieval.ranker_alpha]);
  if (s.retrieval.reranker !== undefined) rows.push(['Reranker', rerankerText(s)]);
  if (s.retrieval.query_transform !== undefined)
    rows.push(['Query transform', s.retrieval.query_transform]);
  rows.push(
    ['Foundation model', s.generation.model_id],
    ['Temperature', s.generation.temperature],
    ['Max completion tokens', s.generation.max_completion_tokens],
    ['Language', `${s.generation.language.name} (${s.generation.language.code})`],
    ['Vector store', s.vector_store_binding.provider_type],
    ['Collection', s.vector_store_binding.collection_name],
  );
  return rows;
}

function renderBest(data: ReportData, best: LeaderboardEntry | undefined): string {
  if (best === undefined) {
    return (
      `<section id="best"><h2>Best pattern</h2>` +
      `<p class="error"><strong>No successful trials:</strong> the experiment produced no pattern to recommend. ` +
      `See the failed trials and the status log below.</p></section>`
    );
  }
  const p = best.pattern;
  const settings = settingsRows(p).map(
    ([k, v]) => `<tr><th scope="row">${esc(k)}</th><td>${esc(valueText(v))}</td></tr>`,
  );
  const metrics = metricNames([p], data.optimization_metric).map((name) => {
    const m = p.evaluation.metrics.find((x) => x.name === name);
    const label = name === data.optimization_metric ? `${name} (optimized)` : name;
    return (
      `<tr><th scope="row">${esc(label)}</th><td class="num">${esc(num(m?.scores.mean))}</td>` +
      `<td class="num">${esc(num(m?.scores.ci_low))}</td><td class="num">${esc(num(m?.scores.ci_high))}</td></tr>`
    );
  });
  const g = p.settings.generation;
  const prompts =
    `<details><summary>Prompt templates</summary>` +
    `<h3>System message</h3><pre>${esc(g.system_message_text)}</pre>` +
    `<h3>User message</h3><pre>${esc(g.user_message_text)}</pre>` +
    `<h3>Context template</h3><pre>${esc(g.context_template_text)}</pre></details>`;
  return (
    `<section id="best"><h2>Best pattern</h2><div class="card">` +
    `<h3>${esc(p.name)} <span class="muted">· ${esc(data.optimization_metric)} ${esc(num(best.score))}` +
    ` · iteration ${esc(p.iteration)} · ${esc(num(p.duration_seconds))} s</span></h3>` +
    `<div class="card-grid"><div>${table('Settings', ['Setting', 'Value'], settings)}</div>` +
    `<div>${table('Metric means with 95% confidence interval', ['Metric', 'Mean', 'CI low', 'CI high'], metrics)}</div></div>` +
    `${prompts}</div></section>`
  );
}

/** One configuration column of the leaderboard: its cell for a pattern, shown only when patterns differ in it. */
interface ConfigColumn {
  head: string;
  /** The parameter behind an abbreviated head, as a header tooltip. */
  title?: string;
  /** The parameter's name where the "same in every pattern" line names it. */
  name: string;
  /** Plain text of the value (compared to decide whether the column varies; shown above when it does not). */
  text: (s: PatternPayload['settings']) => string;
  /** The cell's content (escaped); defaults to the text. */
  html?: (s: PatternPayload['settings']) => string;
  /** A numeric sort key. */
  value?: (s: PatternPayload['settings']) => number | undefined;
}

/** The ranker of a hybrid search as one value (`rrf k=60`, `weighted α=0.5`); `–` without one. */
function rankerText(s: PatternPayload['settings']): string {
  const r = s.retrieval;
  if (r.search_mode !== 'hybrid' || r.ranker_strategy === undefined || r.ranker_strategy === '')
    return '–';
  if (r.ranker_strategy === 'rrf' && r.ranker_k !== undefined) return `rrf k=${r.ranker_k}`;
  if (r.ranker_strategy === 'weighted' && r.ranker_alpha !== undefined)
    return `weighted α=${num(r.ranker_alpha)}`;
  return r.ranker_strategy;
}

/** Hybrid and semantic chunking cut without overlap (search-space rule 1). */
function noOverlap(s: PatternPayload['settings']): boolean {
  return s.chunking.method === 'hybrid' || s.chunking.method === 'semantic';
}

const CONFIG_COLUMNS: readonly ConfigColumn[] = [
  {
    head: 'Chunking',
    title: 'chunking_method',
    name: 'chunking_method',
    text: chunkingText,
  },
  {
    head: 'Chunk size',
    title: 'chunk_size',
    name: 'chunk_size',
    text: (s) => String(s.chunking.chunk_size),
    value: (s) => s.chunking.chunk_size,
  },
  {
    head: 'Overlap',
    title: 'chunk_overlap (hybrid and semantic chunking have none)',
    name: 'chunk_overlap',
    text: (s) => (noOverlap(s) ? '–' : String(s.chunking.chunk_overlap)),
    value: (s) => (noOverlap(s) ? undefined : s.chunking.chunk_overlap),
  },
  {
    head: 'Embedding',
    title: 'embedding_model',
    name: 'embedding_model',
    text: (s) => s.embedding.model_id,
    html: (s) => abbr(s.embedding.model_id),
  },
  {
    head: 'Retrieval',
    title: 'retrieval_method (window_size)',
    name: 'retrieval_method',
    text: (s) =>
      s.retrieval.method === 'window' && s.retrieval.window_size !== undefined
        ? `window ${s.retrieval.window_size}`
        : s.retrieval.method,
  },
  {
    head: 'Chunks',
    title: 'number_of_chunks',
    name: 'number_of_chunks',
    text: (s) => String(s.retrieval.number_of_chunks),
    value: (s) => s.retrieval.number_of_chunks,
  },
  {
    head: 'Search',
    title: 'search_mode',
    name: 'search_mode',
    text: (s) => s.retrieval.search_mode,
  },
  {
    head: 'Ranker',
    title: 'ranker_strategy, ranker_k, ranker_alpha',
    name: 'ranker',
    text: rankerText,
  },
  {
    head: 'Reranker',
    name: 'reranker',
    text: rerankerText,
    html: (s) => abbr(rerankerText(s), 32),
  },
  {
    head: 'Query transform',
    name: 'query_transform',
    text: (s) => s.retrieval.query_transform ?? 'none',
  },
  {
    head: 'Model',
    title: 'foundation_model',
    name: 'foundation_model',
    text: (s) => s.generation.model_id,
    html: (s) => abbr(s.generation.model_id),
  },
];

function renderLeaderboard(data: ReportData, entries: readonly LeaderboardEntry[]): string {
  if (entries.length === 0) {
    return `<section id="leaderboard-section"><h2>Leaderboard</h2><p>No successful trials, so there is no leaderboard.</p></section>`;
  }
  const metrics = metricNames(
    entries.map((e) => e.pattern),
    data.optimization_metric,
  );
  // Only the settings the patterns differ in get a column; the others are listed once above the table.
  const varying: ConfigColumn[] = [];
  const same: string[] = [];
  for (const c of CONFIG_COLUMNS) {
    const texts = new Set(entries.map((e) => c.text(e.pattern.settings)));
    if (texts.size > 1) varying.push(c);
    else {
      const only = [...texts][0] as string;
      // Reranker and query transform are mentioned only when used.
      if (
        (c.head === 'Reranker' || c.head === 'Query transform') &&
        (only === 'none' || only === '–')
      )
        continue;
      if (only !== '–') same.push(`${c.name} ${only}`);
    }
  }
  // Only when the trials recorded tokens, so reports of older experiments keep their columns.
  const withUsage = entries.some((e) => e.usage !== undefined);
  const withCost = entries.some((e) => e.usage?.cost_usd !== undefined);
  // The score is the optimization metric's mean: its column shows that metric, the others follow.
  const others = metrics.filter((m) => m !== data.optimization_metric);
  const head: HeadCell[] = [
    ...heads(['Rank', 'Pattern']),
    {
      html: `Score <span class="muted">(${headLabel(data.optimization_metric)})</span>`,
      title: data.optimization_metric,
    },
    ...others.map((m) => metricHead(m)),
    ...varying.map((c) => ({
      html: esc(c.head),
      ...(c.title !== undefined && { title: c.title }),
    })),
    ...(withUsage ? heads(['Tokens']) : []),
    ...(withCost ? heads(['Cost (USD)']) : []),
  ];
  const rows = entries.map((e, i) => {
    const s = e.pattern.settings;
    return (
      `<tr${i === 0 ? ' class="best"' : ''} data-pattern="${esc(e.pattern_name)}"${e.cached === true ? ' data-flags="cached"' : ''}>` +
      numCell(e.rank) +
      `<th scope="row">${esc(e.pattern_name)}</th>` +
      scoreCell(e.score, metricScores(e.pattern, data.optimization_metric)) +
      others.map((m) => metricCell(metricScores(e.pattern, m))).join('') +
      varying
        .map((c) => {
          const html = c.html === undefined ? esc(c.text(s)) : c.html(s);
          return c.value === undefined ? `<td>${html}</td>` : numCell(c.value(s), html);
        })
        .join('') +
      (withUsage ? tokensCell(e.usage, e.cached === true) : '') +
      (withCost ? numCell(e.usage?.cost_usd, esc(usdText(e.usage?.cost_usd))) : '') +
      `</tr>`
    );
  });
  const cached = entries.filter((e) => e.cached === true).length;
  return (
    `<section id="leaderboard-section"><h2>Leaderboard</h2>` +
    (same.length === 0
      ? ''
      : `<p id="leaderboard-same" class="note">Same in every pattern: ${same.map((x) => abbr(x, 60)).join(' · ')}.</p>`) +
    table(
      `Successful patterns, best ${data.optimization_metric} first (ties: earlier iteration first). ` +
        'Metrics: mean, with the 95% confidence interval below it.' +
        (cached > 0 ? ` ${cached} from the result cache.` : ''),
      head,
      rows,
      { id: 'leaderboard', sortable: true, filter: 'e.g. hybrid rrf, 1024, Pattern3' },
    ) +
    `</section>`
  );
}

function isFailed(t: TrialRecord): boolean {
  return !finite(t.score) || t.error !== undefined;
}

/** Horizontal grid lines with labels on the left, for a vertical score axis. */
function yGrid(axis: Axis, y: (v: number) => number, x0: number, x1: number): string {
  return axis.ticks
    .map(
      (v) =>
        `<line x1="${x0}" x2="${x1}" y1="${px(y(v))}" y2="${px(y(v))}" stroke="#d0d7de"/>` +
        `<text x="${x0 - 6}" y="${px(y(v) + 4)}" text-anchor="end" font-size="11" fill="#4a5563">${esc(tickText(axis, v))}</text>`,
    )
    .join('');
}

/** Vertical grid lines with labels below, for a horizontal score axis. */
function xGrid(axis: Axis, x: (v: number) => number, y0: number, y1: number): string {
  return axis.ticks
    .map(
      (v) =>
        `<line x1="${px(x(v))}" x2="${px(x(v))}" y1="${y0}" y2="${y1}" stroke="#d0d7de" stroke-dasharray="3 3"/>` +
        `<text x="${px(x(v))}" y="${y1 + 14}" text-anchor="middle" font-size="11" fill="#4a5563">${esc(tickText(axis, v))}</text>`,
    )
    .join('');
}

function renderTrialChart(data: ReportData): string {
  const trials = data.trials
    .map((t, index) => ({ t, index }))
    .sort((a, b) => a.t.iteration - b.t.iteration || a.index - b.index)
    .map((x) => x.t);
  if (trials.length === 0) {
    return `<section id="trials-chart"><h2>Score per trial</h2><p>No trials were run.</p></section>`;
  }
  const W = 760;
  const H = 300;
  const m = { l: 56, r: 16, t: 16, b: 48 };
  const its = trials.map((t) => t.iteration);
  let x0 = Math.min(...its);
  let x1 = Math.max(...its);
  if (x0 === x1) {
    x0 -= 1;
    x1 += 1;
  }
  const scores = trials.filter((t) => !isFailed(t)).map((t) => t.score as number);
  // The axis spans the observed scores (padded), so trials 0.82 and 0.88 are visibly apart.
  const axis = niceAxis(scores, [0, 1]);
  const x = linear(x0, x1, m.l + 10, W - m.r - 10);
  const y = linear(axis.lo, axis.hi, H - m.b, m.t);
  const parts: string[] = [yGrid(axis, y, m.l, W - m.r)];
  const distinct = [...new Set(its)];
  const step = Math.max(1, Math.ceil(distinct.length / 12));
  distinct.forEach((it, i) => {
    if (i % step !== 0) return;
    parts.push(
      `<text x="${px(x(it))}" y="${H - m.b + 16}" text-anchor="middle" font-size="11" fill="#4a5563">${esc(it)}</text>`,
    );
  });
  parts.push(
    `<line x1="${m.l}" x2="${W - m.r}" y1="${H - m.b}" y2="${H - m.b}" stroke="#57606a"/>`,
    `<line x1="${m.l}" x2="${m.l}" y1="${m.t}" y2="${H - m.b}" stroke="#57606a"/>`,
    `<text x="${(m.l + W - m.r) / 2}" y="${H - 8}" text-anchor="middle" font-size="12">Trial iteration</text>`,
    `<text transform="translate(14 ${(m.t + H - m.b) / 2}) rotate(-90)" text-anchor="middle" font-size="12">${esc(data.optimization_metric)}</text>`,
  );
  // Running best as a step line: flat until a trial beats it, then a vertical jump at that trial.
  let best: number | undefined;
  let path = '';
  for (const t of trials) {
    if (isFailed(t)) continue;
    const s = t.score as number;
    if (best === undefined) path = `M${px(x(t.iteration))},${px(y(s))}`;
    else if (s > best) path += `H${px(x(t.iteration))}V${px(y(s))}`;
    if (best === undefined || s > best) best = s;
  }
  if (path !== '') {
    path += `H${px(x(Math.max(...its)))}`;
    parts.push(`<path d="${path}" fill="none" stroke="${PALETTE[0]}" stroke-width="2"/>`);
  }
  for (const t of trials) {
    const cx = px(x(t.iteration));
    if (isFailed(t)) {
      const cy = H - m.b - 8;
      const label = `${t.pattern_name} (iteration ${t.iteration}) failed: ${t.error ?? 'no score'}`;
      parts.push(
        `<g class="failed"><title>${esc(label)}</title><path d="M${px(x(t.iteration) - 5)},${cy - 5}l10,10m0,-10l-10,10" ` +
          `stroke="${FAILED_COLOUR}" stroke-width="2.5"/></g>`,
      );
      continue;
    }
    const label = `${t.pattern_name} (iteration ${t.iteration}): ${num(t.score)}${t.cached === true ? ' (cached)' : ''}`;
    const fill = t.cached === true ? '#fff' : '#1b1f24';
    parts.push(
      `<circle cx="${cx}" cy="${px(y(t.score as number))}" r="4.5" fill="${fill}" stroke="#1b1f24" stroke-width="1.5">` +
        `<title>${esc(label)}</title></circle>`,
    );
  }
  const failed = trials.filter(isFailed).length;
  return (
    `<section id="trials-chart"><h2>Score per trial</h2><figure>` +
    svgOpen(
      'chart-trials',
      W,
      H,
      `${data.optimization_metric} per trial`,
      `${trials.length} trials by iteration; ${failed} failed; best score ${num(best)}; score axis ${tickText(axis, axis.lo)} to ${tickText(axis, axis.hi)}.`,
    ) +
    parts.join('') +
    `</svg><figcaption>Dots: evaluated trials (hollow: result taken from the cache). ` +
    `Blue steps: best score so far. <span class="error">×</span> on the axis: failed trial. ` +
    `The score axis spans the observed scores (${esc(tickText(axis, axis.lo))} to ${esc(tickText(axis, axis.hi))}), not 0 to 1. ` +
    `The values are listed in the trial table below.</figcaption></figure>${renderTrialTable(trials)}</section>`
  );
}

/** A configuration as `name=value` pairs, leaving out the parameters that do not apply to it. */
function configText(config: Record<string, unknown>): string {
  return Object.entries(config)
    .filter(([k]) => parameterApplies(k, config))
    .map(([k, v]) => `${k}=${valueText(v)}`)
    .join(', ');
}

/** The tokens cell of a trial; a cached trial's are what its original evaluation cost, marked so. */
function tokensCell(usage: UsageSummary | undefined, cached: boolean): string {
  const total = usage === undefined ? undefined : usage.prompt_tokens + usage.completion_tokens;
  const mark =
    usage !== undefined && cached
      ? ' <span class="muted" title="cached: what the original evaluation cost; not spent again">(cached)</span>'
      : '';
  return numCell(total, `${esc(total === undefined ? '–' : total.toLocaleString('en-US'))}${mark}`);
}

function renderTrialTable(trials: readonly TrialRecord[]): string {
  const withUsage = trials.some((t) => t.usage !== undefined);
  const withCost = trials.some((t) => t.usage?.cost_usd !== undefined);
  const rows = trials.map((t) => {
    const status = isFailed(t) ? 'failed' : t.cached === true ? 'cached' : 'evaluated';
    return (
      `<tr data-flags="${status}">${numCell(t.iteration)}<th scope="row">${esc(t.pattern_name)}</th>` +
      numCell(t.score) +
      `<td${status === 'failed' ? ' class="error"' : ''}>${status}</td>` +
      numCell(t.duration_seconds) +
      (withUsage ? tokensCell(t.usage, t.cached === true) : '') +
      (withCost ? numCell(t.usage?.cost_usd, esc(usdText(t.usage?.cost_usd))) : '') +
      `<td title="${esc(
        Object.entries(t.config)
          .map(([k, v]) => `${k}=${valueText(v)}`)
          .join(', '),
      )}">${esc(configText(t.config))}</td></tr>`
    );
  });
  return (
    `<details id="trial-table"><summary>All trials (${trials.length})</summary>` +
    table(
      'Every trial in iteration order (configurations without the parameters that do not apply to them)',
      [
        'Iteration',
        'Pattern',
        'Score',
        'Status',
        'Duration (s)',
        ...(withUsage ? ['Tokens'] : []),
        ...(withCost ? ['Cost (USD)'] : []),
        'Configuration',
      ],
      rows,
      {
        id: 'trials-table',
        sortable: true,
        filter: 'e.g. chunk_size=1024',
        flags: [
          ['evaluated', 'evaluated'],
          ['cached', 'cached'],
          ['failed', 'failed'],
        ],
      },
    ) +
    `</details>`
  );
}

function usageRows(u: UsageSummary, label: string): string[] {
  return u.models.map(
    (m) =>
      `<tr><td>${esc(label)}</td><td>${esc(m.role)}</td><th scope="row">${esc(m.model_id)}</th>` +
      `<td class="num">${esc(m.calls)}</td><td class="num">${esc(m.prompt_tokens.toLocaleString('en-US'))}</td>` +
      `<td class="num">${esc(m.completion_tokens.toLocaleString('en-US'))}</td>` +
      `<td class="num">${esc(usdText(m.cost_usd))}</td>` +
      `<td>${esc(
        [
          m.approximate === true ? 'approximate: ceil(characters / 4)' : '',
          (m.unreported_calls ?? 0) > 0 ? `${m.unreported_calls} call(s) reported no tokens` : '',
        ]
          .filter((x) => x !== '')
          .join('; '),
      )}</td></tr>`,
  );
}

function renderUsage(data: ReportData): string {
  const usage = data.usage;
  const heading = `<h2>Tokens and cost</h2>`;
  if (usage === undefined) {
    return `<section id="usage">${heading}<p>This experiment recorded no tokens.</p></section>`;
  }
  const totals = [
    `<tr><th scope="row">Spent by this run</th><td class="num">${esc(tokensText(usage.spent))}</td><td class="num">${esc(usdText(usage.spent.cost_usd))}</td></tr>`,
    `<tr><th scope="row">Cached trials (original cost, not spent again)</th><td class="num">${esc(tokensText(usage.cached))}</td><td class="num">${esc(usdText(usage.cached.cost_usd))}</td></tr>`,
  ];
  const notes = [
    usage.priced
      ? 'Costs use the experiment’s price table (USD per million tokens); a total is shown only when every model has a price, and local models cost nothing.'
      : 'No price table was given (--prices FILE): tokens only.',
    'Embedding tokens are approximated as ceil(characters / 4) of the texts embedded (index chunks when a trial built its index, and the questions); chat tokens are what the models reported.',
    ...(usage.trials_without_usage > 0
      ? [
          `${usage.trials_without_usage} trial(s) have no token record (failed trials, or cache entries from before tokens were recorded).`,
        ]
      : []),
  ];
  return (
    `<section id="usage">${heading}` +
    table('Experiment totals', ['', 'Tokens', 'Cost (USD)'], totals, { id: 'usage-totals' }) +
    table(
      'Tokens per model and role',
      [
        'Trials',
        'Role',
        'Model',
        'Calls',
        'Prompt tokens',
        'Completion tokens',
        'Cost (USD)',
        'Note',
      ],
      [...usageRows(usage.spent, 'spent'), ...usageRows(usage.cached, 'cached')],
      { id: 'usage-models' },
    ) +
    `<p class="note">${notes.map(esc).join(' ')}</p></section>`
  );
}

function renderCiChart(data: ReportData, entries: readonly LeaderboardEntry[]): string {
  const top = entries.slice(0, CI_CHART_PATTERNS);
  const heading = `<h2>Metric confidence intervals of the top patterns</h2>`;
  if (top.length === 0) {
    return `<section id="ci-chart">${heading}<p>No successful trials, nothing to compare.</p></section>`;
  }
  const metrics = metricNames(
    top.map((e) => e.pattern),
    data.optimization_metric,
  );
  const values = top.flatMap((e) =>
    metrics.flatMap((name) => {
      const s = metricScores(e.pattern, name);
      return s === undefined ? [] : [s.mean, s.ci_low, s.ci_high].filter(finite);
    }),
  );
  const axis = niceAxis(values, [0, 1]);
  const W = 760;
  const labelW = 190;
  const valueW = 150;
  const rowH = 18;
  const groupGap = 12;
  const axisH = 28;
  const x = linear(axis.lo, axis.hi, labelW, W - valueW);
  const parts: string[] = [];
  let yPos = 8;
  for (const e of top) {
    parts.push(
      `<text x="4" y="${yPos + 13}" font-size="12" font-weight="700">#${esc(e.rank)} ${esc(shorten(e.pattern_name, 80))}</text>`,
    );
    yPos += rowH;
    metrics.forEach((name, mi) => {
      const s = metricScores(e.pattern, name);
      const colour = PALETTE[mi % PALETTE.length] as string;
      const cy = yPos + rowH / 2;
      const text = metricText(s);
      parts.push(
        `<g><title>${esc(`${e.pattern_name} ${name}: ${text}`)}</title>` +
          `<text x="16" y="${px(cy + 4)}" font-size="11" fill="#1b1f24">${esc(shorten(name, 28))}</text>`,
      );
      if (s !== undefined && finite(s.mean)) {
        if (finite(s.ci_low) && finite(s.ci_high)) {
          const a = px(x(s.ci_low));
          const b = px(x(s.ci_high));
          parts.push(
            `<line x1="${a}" x2="${b}" y1="${px(cy)}" y2="${px(cy)}" stroke="${colour}" stroke-width="2"/>` +
              `<line x1="${a}" x2="${a}" y1="${px(cy - 5)}" y2="${px(cy + 5)}" stroke="${colour}" stroke-width="2"/>` +
              `<line x1="${b}" x2="${b}" y1="${px(cy - 5)}" y2="${px(cy + 5)}" stroke="${colour}" stroke-width="2"/>`,
          );
        }
        parts.push(`<circle cx="${px(x(s.mean))}" cy="${px(cy)}" r="4" fill="${colour}"/>`);
      }
      parts.push(
        `<text x="${W - valueW + 8}" y="${px(cy + 4)}" font-size="11" fill="#1b1f24">${esc(text)}</text></g>`,
      );
      yPos += rowH;
    });
    yPos += groupGap;
  }
  const plotBottom = yPos;
  const H = plotBottom + axisH;
  return (
    `<section id="ci-chart">${heading}<figure>` +
    svgOpen(
      'chart-ci',
      W,
      H,
      `Metric means with 95% confidence intervals, top ${top.length} patterns`,
      `For each pattern and metric: a dot at the mean and a bar from the lower to the upper bound; axis ${tickText(axis, axis.lo)} to ${tickText(axis, axis.hi)}.`,
    ) +
    // Grid lines are drawn first so the interval bars stay on top of them.
    xGrid(axis, x, 4, plotBottom) +
    parts.join('') +
    `</svg><figcaption>Dot: mean; bar: 95% bootstrap confidence interval; the axis spans the values shown ` +
    `(${esc(tickText(axis, axis.lo))} to ${esc(tickText(axis, axis.hi))}). Overlapping intervals mean ` +
    `the benchmark cannot tell those patterns apart.</figcaption></figure></section>`
  );
}

function renderEffect(effect: Marginal, index: number, axis: Axis, overall: number): string {
  // Model ids are long: size the label column to the longest label (about 6.2 px per 11 px glyph).
  const labels = effect.values.map((v) => shorten(v.value === '' ? '(none)' : v.value, 40));
  const labelW = Math.round(
    Math.min(260, Math.max(60, Math.max(...labels.map((l) => l.length)) * 6.2 + 14)),
  );
  const valueTexts = effect.values.map(
    (v) => `${num(v.meanScore)} (n=${v.trials}${v.cached > 0 ? `, ${v.cached} cached` : ''})`,
  );
  // Wide enough for the longest value text (about 6.2 px per 11 px glyph).
  const valueW = Math.round(Math.max(124, Math.max(...valueTexts.map((t) => t.length)) * 6.2 + 14));
  const plotW = 230;
  const W = labelW + plotW + valueW;
  const rowH = 22;
  const top = 6;
  const x = linear(axis.lo, axis.hi, labelW, labelW + plotW);
  const plotBottom = top + effect.values.length * rowH;
  const H = plotBottom + 20;
  const bars = effect.values.map((v, i) => {
    const yTop = top + i * rowH;
    const shown = v.value === '' ? '(none)' : v.value;
    const cachedNote = v.cached > 0 ? `, ${v.cached} cached` : '';
    const valueText = valueTexts[i] as string;
    return (
      `<g><title>${esc(`${effect.parameter} = ${shown}: mean ${num(v.meanScore)} over ${v.trials} trial(s)${cachedNote}`)}</title>` +
      `<text x="${labelW - 6}" y="${yTop + 15}" text-anchor="end" font-size="11" fill="#1b1f24">${esc(labels[i])}</text>` +
      `<rect x="${labelW}" y="${yTop + 3}" width="${px(Math.max(x(v.meanScore) - labelW, 1))}" height="${rowH - 6}" fill="${PALETTE[0]}"/>` +
      `<text x="${W - valueW + 6}" y="${yTop + 15}" font-size="11" fill="#1b1f24">${esc(valueText)}</text></g>`
    );
  });
  const mean = px(x(overall));
  return (
    `<figure><h3>${esc(effect.parameter)} <span class="muted">· spread ${esc(num(effect.spread))}</span></h3>` +
    svgOpen(
      `chart-effect-${index}`,
      W,
      H,
      `Mean score per ${effect.parameter} value`,
      `${effect.values.length} values over ${effect.trials} trials; spread between best and worst mean ${num(effect.spread)}; bars start at ${tickText(axis, axis.lo)}.`,
    ) +
    xGrid(axis, x, top, plotBottom) +
    bars.join('') +
    `<line x1="${labelW}" x2="${labelW}" y1="${top}" y2="${plotBottom}" stroke="#57606a"/>` +
    `<line class="overall" x1="${mean}" x2="${mean}" y1="${top}" y2="${plotBottom}" stroke="${PALETTE[1]}" stroke-width="1.5" stroke-dasharray="4 2"><title>${esc(`mean of all counted trials: ${num(overall)}`)}</title></line>` +
    `</svg><figcaption>Over ${effect.trials} trial(s)${effect.condition === undefined ? '' : ` where ${esc(effect.condition)}`}.</figcaption></figure>`
  );
}

function conditionText(p: { condition?: string }): string {
  return p.condition === undefined ? '' : ` where ${p.condition}`;
}

function renderEffects(data: ReportData): string {
  const marginals: Marginals = parameterMarginals(data.trials);
  const heading = `<h2>Parameter effects</h2>`;
  if (marginals.trials === 0) {
    return `<section id="effects">${heading}<p>No successful trials, so there are no parameter effects.</p></section>`;
  }
  const counted =
    `Counted: ${marginals.trials} successful trial(s), one per distinct configuration` +
    (marginals.cached > 0
      ? `, ${marginals.cached} of them answered from the result cache (an earlier evaluation of the same configuration; its score counts like any other)`
      : '') +
    (marginals.duplicates > 0
      ? `; ${marginals.duplicates} repeated configuration(s) counted once`
      : '') +
    '.';
  const fixed =
    marginals.fixed.length === 0
      ? ''
      : `<p id="effects-fixed"><strong>Fixed</strong> (one value wherever it applies): ${marginals.fixed
          .map(
            (f) =>
              `${esc(f.parameter)} = ${abbr(f.value === '' ? '(none)' : f.value, 40)} <span class="muted">(${f.trials} trial(s)${esc(conditionText(f))})</span>`,
          )
          .join('; ')}.</p>`;
  const unused =
    marginals.unused.length === 0
      ? ''
      : `<p id="effects-unused"><strong>Not used by any trial:</strong> ${marginals.unused
          .map(
            (u) =>
              `${esc(u.parameter)} <span class="muted">(applies when ${esc(u.condition)})</span>`,
          )
          .join('; ')}.</p>`;
  if (marginals.effects.length === 0) {
    return (
      `<section id="effects">${heading}<p>No parameter took two or more values among the successful ` +
      `trials where it applies, so there is nothing to compare. ${esc(counted)}</p>${fixed}${unused}</section>`
    );
  }
  // One axis for every chart, spanning the means shown, so spreads compare across parameters.
  const axis = niceAxis(
    marginals.effects.flatMap((e) => e.values.map((v) => v.meanScore)),
    [0, 1],
  );
  const scored = data.trials.filter((t) => !isFailed(t));
  const seen = new Set<string>();
  let sum = 0;
  let n = 0;
  for (const t of scored) {
    const key = combinationKey(t.config);
    if (seen.has(key)) continue;
    seen.add(key);
    sum += t.score as number;
    n += 1;
  }
  const overall = sum / n;
  return (
    `<section id="effects">${heading}<p class="note">Mean ${esc(data.optimization_metric)} for each value of a ` +
    `parameter, over the trials where the parameter applies (ranker_k only with rrf, ranker_alpha only with ` +
    `weighted, the ranker only with hybrid search, window_size only with window retrieval, chunk_overlap not ` +
    `with hybrid chunking), largest spread first. ${esc(counted)} These are marginal means over the ` +
    `combinations the optimizer visited, not controlled comparisons.</p>` +
    `<p class="note">Every chart shares one axis, ${esc(tickText(axis, axis.lo))} to ${esc(tickText(axis, axis.hi))}: ` +
    `bars start at its baseline ${esc(tickText(axis, axis.lo))}, not at 0, so close means look different. ` +
    `<span style="color:${PALETTE[1]}">Dashed line</span>: mean of all counted trials (${esc(num(overall))}).</p>` +
    fixed +
    unused +
    `<div class="effects">${marginals.effects.map((e, i) => renderEffect(e, i, axis, overall)).join('')}</div></section>`
  );
}

/** The settings in which the two best patterns differ (for the comparison). */
function settingDifferences(
  a: LeaderboardEntry | undefined,
  b: LeaderboardEntry | undefined,
): SettingDifference[] {
  if (a === undefined || b === undefined) return [];
  const rowsB = new Map(settingsRows(b.pattern).map(([k, v]) => [k, valueText(v)]));
  const out: SettingDifference[] = [];
  const keys = new Set<string>();
  for (const [k, v] of settingsRows(a.pattern)) {
    keys.add(k);
    if (k === 'Collection') continue;
    const x = valueText(v);
    const y = rowsB.get(k) ?? '–';
    if (x !== y) out.push([k, x, y]);
  }
  for (const [k, y] of rowsB) if (!keys.has(k) && k !== 'Collection') out.push([k, '–', y]);
  return out;
}

function renderFailures(trials: readonly TrialRecord[]): string {
  const failed = trials.filter(isFailed);
  const heading = `<h2>Failed trials</h2>`;
  if (failed.length === 0)
    return `<section id="failures">${heading}<p>No trial failed.</p></section>`;
  const rows = failed.map(
    (t) =>
      `<tr><td class="num">${esc(t.iteration)}</td><th scope="row">${esc(t.pattern_name)}</th>` +
      `<td class="error text">${esc(t.error ?? 'no score')}</td><td>${esc(configText(t.config))}</td></tr>`,
  );
  return (
    `<section id="failures">${heading}` +
    table(
      'Trials that produced no score, with their errors',
      ['Iteration', 'Pattern', 'Error', 'Configuration'],
      rows,
      { id: 'failed-table' },
    ) +
    `</section>`
  );
}

function renderEvents(events: readonly StatusEvent[]): string {
  const rows = events.map(
    (e) =>
      `<tr><td>${esc(e.time)}</td><td class="level-${esc(e.level)}">${esc(e.level)}</td>` +
      `<td>${esc(e.step ?? '')}</td><td class="text">${esc(e.message)}</td></tr>`,
  );
  return (
    `<section id="events"><h2>Status log</h2><details><summary>${events.length} status events</summary>` +
    (events.length === 0
      ? '<p>No events were recorded.</p>'
      : table(
          'Status events in the order they were emitted',
          ['Time', 'Level', 'Step', 'Message'],
          rows,
        )) +
    `</details></section>`
  );
}

/**
 * Renders an experiment as one HTML document that needs nothing else to display: no font, stylesheet, image or
 * fetch, and no script but its own sort-and-filter script (a CSP meta tag enforces it, allowing that script by
 * hash); charts as inline SVG with `<title>`s, every user-provided string escaped. It renders for any valid
 * {@link ReportData}: no successful trial, a single trial, missing scores or intervals (shown as `n/a`), report
 * data without the runner-up's records. The leaderboard is shown in `rank` order; the rank-1 entry is the best
 * pattern and `best_evaluation` is taken to be its per-question records, `runner_up_evaluation` the rank-2's.
 * @param data - The experiment's report data, as built by the finalize step.
 * @returns The complete HTML document (UTF-8 text, starting with `<!doctype html>`).
 * @example await writeFile('report.html', renderReport(reportData), 'utf8');
 */
export function renderReport(data: ReportData): string {
  const entries = [...data.leaderboard].sort((a, b) => a.rank - b.rank);
  const best = entries[0];
  const body = [
    renderHeader(data),
    '<main>',
    renderBest(data, best),
    renderLeaderboard(data, entries),
    renderUsage(data),
    renderTrialChart(data),
    renderCiChart(data, entries),
    renderEffects(data),
    renderQuestions(data.best_evaluation, best, data.optimization_metric),
    renderComparison(
      entries,
      data.best_evaluation,
      data.runner_up_evaluation,
      data.optimization_metric,
      settingDifferences(best, entries[1]),
    ),
    renderFailures(data.trials),
    renderEvents(data.events),
    '</main>',
    `<footer>Generated by ai4rag-serverless. This file is self-contained and works offline; its only script ` +
      `sorts and filters the tables.</footer>`,
  ];
  return (
    `<!doctype html>\n<html lang="en"><head><meta charset="utf-8">` +
    `<meta http-equiv="Content-Security-Policy" content="${REPORT_CSP}">` +
    `<meta name="viewport" content="width=device-width, initial-scale=1">` +
    `<title>RAG optimization report · ${esc(data.experiment_id)}</title><style>${CSS}</style></head>` +
    `<body>${body.join('\n')}<script>${REPORT_SCRIPT}</script></body></html>\n`
  );
}
