/**
 * The experiment report: one self-contained HTML document (inline CSS and SVG, no script, no external
 * resource) that can be mailed, archived or opened offline years later and still render the same. A
 * Content-Security-Policy meta tag forbids every fetch and script, so even a string that escaped escaping
 * could not run or phone home.
 */

import type { MetricScores } from '../evaluation/score.js';
import { round4 } from '../evaluation/score.js';
import type { ParameterEffect } from './leaderboard.js';
import { parameterEffects } from './leaderboard.js';
import type {
  EvaluationRecord,
  LeaderboardEntry,
  PatternPayload,
  ReportData,
  StatusEvent,
  TrialRecord,
  UsageSummary,
} from './types.js';

/** How many of the best patterns the confidence-interval chart shows. */
const CI_CHART_PATTERNS = 5;

/** ai4rag's leaderboard order of metric columns after the optimization metric. */
const METRIC_ORDER = ['answer_correctness', 'faithfulness', 'context_correctness'];

/** Okabe–Ito colours: distinguishable with the common colour-vision deficiencies, dark enough on white. */
const PALETTE = ['#0072b2', '#d55e00', '#009e73', '#cc79a7', '#7a6500', '#56b4e9', '#000000'];

const FAILED_COLOUR = '#b3261e';

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/** Escapes text for element content and quoted attribute values alike. */
function esc(value: unknown): string {
  return String(value).replace(/[&<>"']/g, (c) => ESCAPES[c] ?? c);
}

/** A number with at most 4 decimals (Python-style rounding, as the metrics), or `n/a`. */
function num(value: number | null | undefined): string {
  if (typeof value !== 'number' || !Number.isFinite(value)) return 'n/a';
  const r = round4(value);
  return r === null ? 'n/a' : String(r === 0 ? 0 : r);
}

/** An SVG coordinate: 2 decimals are far below a pixel and keep the markup short. */
function px(value: number): string {
  return String(Number(value.toFixed(2)));
}

function finite(value: number | null | undefined): value is number {
  return typeof value === 'number' && Number.isFinite(value);
}

/** `0.612 [0.55, 0.67]`; `n/a` for a missing mean, `[n/a]` for a missing interval. */
function metricText(scores: MetricScores | undefined): string {
  if (scores === undefined || !finite(scores.mean)) return 'n/a';
  if (!finite(scores.ci_low) && !finite(scores.ci_high)) return `${num(scores.mean)} [n/a]`;
  return `${num(scores.mean)} [${num(scores.ci_low)}, ${num(scores.ci_high)}]`;
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
  const found: string[] = [];
  for (const p of patterns) {
    for (const m of p.evaluation.metrics) if (!found.includes(m.name)) found.push(m.name);
  }
  const rank = (name: string): number => {
    if (name === optimizationMetric) return 0;
    const i = METRIC_ORDER.indexOf(name);
    return i === -1 ? METRIC_ORDER.length + 1 : i + 1;
  };
  return found
    .map((name, index) => ({ name, index }))
    .sort((a, b) => rank(a.name) - rank(b.name) || a.index - b.index)
    .map((m) => m.name);
}

function formatDate(iso: string): string {
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return iso;
  return `${new Date(t).toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

const CSS = `
:root { color-scheme: light; }
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 1200px; padding: 1.5rem; color: #1b1f24; background: #fff;
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
.wrap { overflow-x: auto; }
table { border-collapse: collapse; margin: .5rem 0; font-size: .9rem; }
th, td { border: 1px solid #d0d7de; padding: .3rem .5rem; text-align: left; vertical-align: top; }
thead th { background: #eaeef2; }
tbody th { background: #f6f8fa; font-weight: 600; }
tbody tr:nth-child(even) td { background: #fafbfc; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.best td, tr.best th { background: #e6f1fa; }
td.text { white-space: pre-wrap; overflow-wrap: anywhere; min-width: 14rem; max-width: 32rem; }
.error, td.error { color: ${FAILED_COLOUR}; }
.level-warning { color: #7a4b00; font-weight: 600; }
.level-error { color: ${FAILED_COLOUR}; font-weight: 600; }
figure { margin: 1rem 0; }
svg { max-width: 100%; height: auto; font-family: inherit; }
.effects { display: grid; grid-template-columns: repeat(auto-fill, minmax(420px, 1fr)); gap: 0 1rem; }
details { margin: .5rem 0; }
summary { cursor: pointer; font-weight: 600; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; background: #f6f8fa; padding: .5rem; border-radius: 4px; }
footer { margin-top: 2rem; font-size: .8rem; color: #4a5563; }
@media print {
  body { max-width: none; padding: 0; font-size: 11px; }
  .wrap { overflow: visible; }
  tr, figure, .card { break-inside: avoid; }
  h2 { break-after: avoid; }
}
`;

function table(
  caption: string,
  head: readonly string[],
  rows: readonly string[],
  attrs = '',
): string {
  return (
    `<div class="wrap"><table${attrs}><caption>${esc(caption)}</caption>` +
    `<thead><tr>${head.map((h) => `<th scope="col">${esc(h)}</th>`).join('')}</tr></thead>` +
    `<tbody>${rows.join('')}</tbody></table></div>`
  );
}

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

function settingsRows(pattern: PatternPayload): [string, unknown][] {
  const s = pattern.settings;
  const rows: [string, unknown][] = [
    ['Chunking method', s.chunking.method],
    ['Chunk size', s.chunking.chunk_size],
    ['Chunk overlap', s.chunking.chunk_overlap],
    ['Include metadata', s.chunking.include_metadata],
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

function renderLeaderboard(data: ReportData, entries: readonly LeaderboardEntry[]): string {
  if (entries.length === 0) {
    return `<section id="leaderboard-section"><h2>Leaderboard</h2><p>No successful trials, so there is no leaderboard.</p></section>`;
  }
  const metrics = metricNames(
    entries.map((e) => e.pattern),
    data.optimization_metric,
  );
  const reranked = entries.some((e) => e.pattern.settings.retrieval.reranker !== undefined);
  const transformed = entries.some(
    (e) => e.pattern.settings.retrieval.query_transform !== undefined,
  );
  const configHead = [
    'Chunking method',
    'Chunk size',
    'Chunk overlap',
    'Embedding model',
    'Retrieval method',
    'number_of_chunks',
    'search_mode',
    'Ranker strategy',
    'Ranker k',
    'Ranker alpha',
    // Only when some pattern reranks, so reports of experiments without reranking keep their columns.
    ...(reranked ? ['Reranker'] : []),
    // Likewise only when some pattern transforms its queries.
    ...(transformed ? ['Query transform'] : []),
    'Foundation model',
  ];
  // Only when the trials recorded tokens, so reports of older experiments keep their columns.
  const withUsage = entries.some((e) => e.usage !== undefined);
  const head = [
    'Rank',
    'Pattern',
    `Score (${data.optimization_metric})`,
    ...metrics.map((m) => `${m} mean [95% CI]`),
    ...configHead,
    ...(withUsage ? ['Tokens', 'Cost (USD)'] : []),
  ];
  const rows = entries.map((e, i) => {
    const s = e.pattern.settings;
    const config = [
      s.chunking.method,
      s.chunking.chunk_size,
      s.chunking.chunk_overlap,
      s.embedding.model_id,
      s.retrieval.method,
      s.retrieval.number_of_chunks,
      s.retrieval.search_mode,
      s.retrieval.ranker_strategy,
      s.retrieval.ranker_k,
      s.retrieval.ranker_alpha,
      ...(reranked ? [rerankerText(s)] : []),
      ...(transformed ? [s.retrieval.query_transform ?? 'none'] : []),
      s.generation.model_id,
    ];
    return (
      `<tr${i === 0 ? ' class="best"' : ''} data-pattern="${esc(e.pattern_name)}">` +
      `<td class="num">${esc(e.rank)}</td><th scope="row">${esc(e.pattern_name)}</th>` +
      `<td class="num"><strong>${esc(num(e.score))}</strong></td>` +
      metrics
        .map((m) => `<td class="num">${esc(metricText(metricScores(e.pattern, m)))}</td>`)
        .join('') +
      config
        .map((v) => `<td${typeof v === 'number' ? ' class="num"' : ''}>${esc(valueText(v))}</td>`)
        .join('') +
      (withUsage ? usageCells(e.usage, e.cached === true) : '') +
      `</tr>`
    );
  });
  return (
    `<section id="leaderboard-section"><h2>Leaderboard</h2>` +
    table(
      `Successful patterns, best ${data.optimization_metric} first (ties: earlier iteration first).`,
      head,
      rows,
      ' id="leaderboard"',
    ) +
    `</section>`
  );
}

type Scale = (v: number) => number;

function linear(d0: number, d1: number, r0: number, r1: number): Scale {
  const span = d1 - d0 || 1;
  return (v: number) => r0 + ((v - d0) / span) * (r1 - r0);
}

function ticks(lo: number, hi: number, count: number): number[] {
  const out: number[] = [];
  for (let i = 0; i <= count; i++) out.push(lo + ((hi - lo) * i) / count);
  return out;
}

function svgOpen(id: string, width: number, height: number, title: string, desc: string): string {
  return (
    `<svg viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" role="img" ` +
    `aria-labelledby="${id}-title ${id}-desc"><title id="${id}-title">${esc(title)}</title>` +
    `<desc id="${id}-desc">${esc(desc)}</desc>`
  );
}

function isFailed(t: TrialRecord): boolean {
  return !finite(t.score) || t.error !== undefined;
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
  const y0 = Math.min(0, ...scores);
  const y1 = Math.max(1, ...scores);
  const x = linear(x0, x1, m.l + 10, W - m.r - 10);
  const y = linear(y0, y1, H - m.b, m.t);
  const parts: string[] = [];
  for (const v of ticks(y0, y1, 4)) {
    parts.push(
      `<line x1="${m.l}" x2="${W - m.r}" y1="${px(y(v))}" y2="${px(y(v))}" stroke="#d0d7de"/>` +
        `<text x="${m.l - 6}" y="${px(y(v) + 4)}" text-anchor="end" font-size="11" fill="#4a5563">${esc(num(v))}</text>`,
    );
  }
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
      `${trials.length} trials by iteration; ${failed} failed; best score ${num(best)}.`,
    ) +
    parts.join('') +
    `</svg><figcaption>Dots: evaluated trials (hollow: result taken from the cache). ` +
    `Blue steps: best score so far. <span class="error">×</span> on the axis: failed trial. ` +
    `The values are listed in the trial table below.</figcaption></figure>${renderTrialTable(trials)}</section>`
  );
}

function configText(config: Record<string, unknown>): string {
  return Object.entries(config)
    .map(([k, v]) => `${k}=${valueText(v)}`)
    .join(', ');
}

/** Tokens and cost cells of a trial; a cached trial's are what its original evaluation cost, marked so. */
function usageCells(usage: UsageSummary | undefined, cached: boolean): string {
  const mark = usage !== undefined && cached ? ' (cached, not spent again)' : '';
  return (
    `<td class="num">${esc(usage === undefined ? '–' : (usage.prompt_tokens + usage.completion_tokens).toLocaleString('en-US'))}${esc(mark)}</td>` +
    `<td class="num">${esc(usdText(usage?.cost_usd))}</td>`
  );
}

function renderTrialTable(trials: readonly TrialRecord[]): string {
  const withUsage = trials.some((t) => t.usage !== undefined);
  const rows = trials.map((t) => {
    const status = isFailed(t) ? 'failed' : t.cached === true ? 'cached' : 'evaluated';
    return (
      `<tr><td class="num">${esc(t.iteration)}</td><th scope="row">${esc(t.pattern_name)}</th>` +
      `<td class="num">${esc(num(t.score))}</td><td${status === 'failed' ? ' class="error"' : ''}>${status}</td>` +
      `<td class="num">${esc(num(t.duration_seconds))}</td>` +
      (withUsage ? usageCells(t.usage, t.cached === true) : '') +
      `<td>${esc(configText(t.config))}</td></tr>`
    );
  });
  return (
    `<details id="trial-table"><summary>All trials (${trials.length})</summary>` +
    table(
      'Every trial in iteration order',
      [
        'Iteration',
        'Pattern',
        'Score',
        'Status',
        'Duration (s)',
        ...(withUsage ? ['Tokens', 'Cost (USD)'] : []),
        'Configuration',
      ],
      rows,
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
    table('Experiment totals', ['', 'Tokens', 'Cost (USD)'], totals, ' id="usage-totals"') +
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
      ' id="usage-models"',
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
  const d0 = Math.min(0, ...values);
  const d1 = Math.max(1, ...values);
  const W = 760;
  const labelW = 190;
  const valueW = 150;
  const rowH = 18;
  const groupGap = 12;
  const axisH = 28;
  const x = linear(d0, d1, labelW, W - valueW);
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
  // Grid lines are drawn first so the interval bars stay on top of them.
  const grid: string[] = [];
  for (const v of ticks(d0, d1, 4)) {
    grid.push(
      `<line x1="${px(x(v))}" x2="${px(x(v))}" y1="4" y2="${plotBottom}" stroke="#d0d7de" stroke-dasharray="3 3"/>` +
        `<text x="${px(x(v))}" y="${plotBottom + 16}" text-anchor="middle" font-size="11" fill="#4a5563">${esc(num(v))}</text>`,
    );
  }
  const H = plotBottom + axisH;
  return (
    `<section id="ci-chart">${heading}<figure>` +
    svgOpen(
      'chart-ci',
      W,
      H,
      `Metric means with 95% confidence intervals, top ${top.length} patterns`,
      'For each pattern and metric: a dot at the mean and a bar from the lower to the upper bound.',
    ) +
    grid.join('') +
    parts.join('') +
    `</svg><figcaption>Dot: mean; bar: 95% bootstrap confidence interval. Overlapping intervals mean ` +
    `the benchmark cannot tell those patterns apart.</figcaption></figure></section>`
  );
}

/** Keeps chart labels inside their column; the full text stays in the element's `<title>`. */
function shorten(text: string, max = 46): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

function renderEffect(effect: ParameterEffect, index: number): string {
  // Model ids are long: size the label column to the longest label (about 6.2 px per 11 px glyph).
  const labels = effect.values.map((v) => shorten(v.value === '' ? '(none)' : v.value));
  const labelW = Math.round(
    Math.min(300, Math.max(60, Math.max(...labels.map((l) => l.length)) * 6.2 + 14)),
  );
  const valueW = 110;
  const W = labelW + 240 + valueW;
  const rowH = 22;
  const top = 6;
  const means = effect.values.map((v) => v.meanScore).filter(finite);
  const d0 = Math.min(0, ...means);
  const d1 = Math.max(1, ...means);
  const x = linear(d0, d1, labelW, W - valueW);
  const H = top + effect.values.length * rowH + 8;
  const bars = effect.values.map((v, i) => {
    const yTop = top + i * rowH;
    const from = x(Math.min(0, v.meanScore));
    const to = x(Math.max(0, v.meanScore));
    const shown = v.value === '' ? '(none)' : v.value;
    return (
      `<g><title>${esc(`${effect.parameter} = ${shown}: mean ${num(v.meanScore)} over ${v.trials} trials`)}</title>` +
      `<text x="${labelW - 6}" y="${yTop + 15}" text-anchor="end" font-size="11" fill="#1b1f24">${esc(labels[i])}</text>` +
      `<rect x="${px(from)}" y="${yTop + 3}" width="${px(Math.max(to - from, 1))}" height="${rowH - 6}" fill="${PALETTE[0]}"/>` +
      `<text x="${W - valueW + 6}" y="${yTop + 15}" font-size="11" fill="#1b1f24">${esc(`${num(v.meanScore)} (n=${v.trials})`)}</text></g>`
    );
  });
  return (
    `<figure><h3>${esc(effect.parameter)} <span class="muted">· spread ${esc(num(effect.spread))}</span></h3>` +
    svgOpen(
      `chart-effect-${index}`,
      W,
      H,
      `Mean score per ${effect.parameter} value`,
      `${effect.values.length} values; spread between best and worst mean ${num(effect.spread)}.`,
    ) +
    `<line x1="${px(x(0))}" x2="${px(x(0))}" y1="${top}" y2="${H - 8}" stroke="#57606a"/>` +
    bars.join('') +
    `</svg></figure>`
  );
}

function renderEffects(data: ReportData): string {
  const effects = parameterEffects(data.trials);
  const heading = `<h2>Parameter effects</h2>`;
  if (effects.length === 0) {
    return (
      `<section id="effects">${heading}<p>No parameter took two or more values among the successful ` +
      `trials, so there is nothing to compare.</p></section>`
    );
  }
  return (
    `<section id="effects">${heading}<p class="note">Mean ${esc(data.optimization_metric)} of the ` +
    `successful, non-cached trials for each value of a parameter, largest spread first. These are ` +
    `marginal means over the combinations the optimizer visited, not controlled comparisons.</p>` +
    `<div class="effects">${effects.map(renderEffect).join('')}</div></section>`
  );
}

function renderQuestions(
  records: readonly EvaluationRecord[],
  best: LeaderboardEntry | undefined,
): string {
  const heading = `<h2>Per-question results${best ? ` of ${esc(best.pattern_name)}` : ''}</h2>`;
  if (records.length === 0) {
    return `<section id="questions">${heading}<p>No per-question records.</p></section>`;
  }
  const metrics: string[] = [];
  for (const r of records)
    for (const m of r.metrics) if (!metrics.includes(m.name)) metrics.push(m.name);
  const rows = records.map((r) => {
    const contexts =
      r.answer_contexts.length === 0
        ? ''
        : `<details><summary>${r.answer_contexts.length} retrieved contexts</summary>` +
          r.answer_contexts
            .map((c) => `<p><strong>${esc(c.document_key)}</strong></p><pre>${esc(c.text)}</pre>`)
            .join('') +
          `</details>`;
    const answers =
      r.correct_answers.length === 0
        ? '<span class="muted">none</span>'
        : `<ul>${r.correct_answers.map((a) => `<li>${esc(a)}</li>`).join('')}</ul>`;
    return (
      `<tr><th scope="row">${esc(r.question_id)}</th><td class="text">${esc(r.question)}</td>` +
      `<td class="text">${esc(r.answer)}${contexts}</td><td class="text">${answers}</td>` +
      metrics
        .map(
          (name) =>
            `<td class="num">${esc(num(r.metrics.find((m) => m.name === name)?.score))}</td>`,
        )
        .join('') +
      `<td class="error">${r.error === undefined ? '' : esc(r.error)}</td></tr>`
    );
  });
  return (
    `<section id="questions">${heading}` +
    table(
      'Each benchmark question with the answer and scores of the best pattern',
      ['Id', 'Question', 'Answer', 'Correct answers', ...metrics, 'Error'],
      rows,
      ' id="question-table"',
    ) +
    `</section>`
  );
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
      ' id="failed-table"',
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
 * Renders an experiment as one HTML document that needs nothing else to display: no script, font,
 * stylesheet, image or fetch (a CSP meta tag enforces it), charts as inline SVG with `<title>`s, every
 * user-provided string escaped. It renders for any valid {@link ReportData}: no successful trial, a single
 * trial, missing scores or intervals (shown as `n/a`). The leaderboard is shown in `rank` order; the rank-1
 * entry is the best pattern and `best_evaluation` is taken to be its per-question records.
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
    renderQuestions(data.best_evaluation, best),
    renderFailures(data.trials),
    renderEvents(data.events),
    '</main>',
    `<footer>Generated by ai4rag-serverless. This file is self-contained and works offline.</footer>`,
  ];
  return (
    `<!doctype html>\n<html lang="en"><head><meta charset="utf-8">` +
    `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">` +
    `<meta name="viewport" content="width=device-width, initial-scale=1">` +
    `<title>RAG optimization report · ${esc(data.experiment_id)}</title><style>${CSS}</style></head>` +
    `<body>${body.join('\n')}</body></html>\n`
  );
}
