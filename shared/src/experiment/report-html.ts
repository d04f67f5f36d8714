/**
 * HTML and SVG building blocks of the experiment report: escaping, number formatting, tables with the markup the
 * report script sorts and filters (./report-script.ts), abbreviations with the full text as a tooltip, and axes
 * scaled to the data.
 */
import { round4 } from '../evaluation/score.js';

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/** Escapes text for element content and quoted attribute values alike. */
export function esc(value: unknown): string {
  return String(value).replace(/[&<>"']/g, (c) => ESCAPES[c] ?? c);
}

export function finite(value: number | null | undefined): value is number {
  return typeof value === 'number' && Number.isFinite(value);
}

/** A number with at most 4 decimals (Python-style rounding, as the metrics), or `n/a`. */
export function num(value: number | null | undefined): string {
  if (!finite(value)) return 'n/a';
  const r = round4(value);
  return r === null ? 'n/a' : String(r === 0 ? 0 : r);
}

/** An SVG coordinate: 2 decimals are far below a pixel and keep the markup short. */
export function px(value: number): string {
  return String(Number(value.toFixed(2)));
}

/** Keeps chart labels inside their column; the full text stays in the element's `<title>`. */
export function shorten(text: string, max = 46): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/**
 * Escaped text, abbreviated when longer than `max` characters (a model id loses its `org/` prefix first, then the
 * end is cut), with the full text as a `title` tooltip so nothing is lost and the filter still finds it.
 */
export function abbr(text: string, max = 24): string {
  if (text.length <= max) return esc(text);
  const slash = text.lastIndexOf('/');
  const tail = slash > 0 && slash < text.length - 1 ? text.slice(slash + 1) : text;
  return `<span title="${esc(text)}">${esc(shorten(tail, max))}</span>`;
}

/** A header label whose underscores may break (`answer_<wbr>correctness`), so long metric names wrap. */
export function headLabel(text: string): string {
  return esc(text).replace(/_/g, '_<wbr>');
}

/** A `<th scope="col">`: `html` is already escaped; `title` (plain text) becomes a tooltip. */
export interface HeadCell {
  html: string;
  title?: string;
}

/** Options of {@link table}. */
export interface TableOptions {
  id?: string;
  /** Rows can be sorted by clicking a header (needs the report script; no colspan in the body). */
  sortable?: boolean;
  /** A filter box (shown by the report script) with this placeholder. */
  filter?: string;
  /** Choices of the filter's row-flag menu: `[flag, label]`; rows carry `data-flags`. */
  flags?: readonly (readonly [string, string])[];
}

/** Header cells from plain strings (escaped, underscores breakable). */
export function heads(labels: readonly string[]): HeadCell[] {
  return labels.map((l) => ({ html: headLabel(l) }));
}

/**
 * A captioned table. With `filter`, a hidden `.table-tools` bar precedes it; the report script shows it and
 * wires it up, so without JavaScript the table is simply all rows.
 */
export function table(
  caption: string,
  head: readonly (string | HeadCell)[],
  rows: readonly string[],
  options: TableOptions = {},
): string {
  const cells = head.map((h) => (typeof h === 'string' ? { html: headLabel(h) } : h));
  const classes = options.sortable === true ? ' class="sortable"' : '';
  const id = options.id === undefined ? '' : ` id="${esc(options.id)}"`;
  const tools =
    options.filter === undefined || options.id === undefined
      ? ''
      : `<div class="table-tools" data-for="${esc(options.id)}" hidden>` +
        `<label>Filter <input type="search" placeholder="${esc(options.filter)}" aria-controls="${esc(options.id)}"></label>` +
        (options.flags === undefined
          ? ''
          : ` <label>Show <select aria-controls="${esc(options.id)}"><option value="">every row</option>` +
            options.flags
              .map(([flag, label]) => `<option value="${esc(flag)}">${esc(label)}</option>`)
              .join('') +
            `</select></label>`) +
        ` <output aria-live="polite"></output>` +
        (options.sortable === true
          ? ' <span class="muted">Click a column header to sort.</span>'
          : '') +
        `</div>`;
  return (
    `${tools}<div class="wrap"><table${id}${classes}><caption>${esc(caption)}</caption>` +
    `<thead><tr>${cells
      .map(
        (h) =>
          `<th scope="col"${h.title === undefined ? '' : ` title="${esc(h.title)}"`}>${h.html}</th>`,
      )
      .join('')}</tr></thead>` +
    `<tbody>${rows.join('')}</tbody></table></div>`
  );
}

/** A numeric cell: right-aligned, sorted by `value` (missing values last). */
export function numCell(
  value: number | null | undefined,
  html = esc(num(value)),
  cls = '',
): string {
  // The key is the value as shown (4 decimals), so rows that look equal sort as equal.
  const v = finite(value) ? String(round4(value)) : '';
  return `<td class="num${cls === '' ? '' : ` ${cls}`}" data-v="${v}">${html}</td>`;
}

/** An axis over a data range: `lo`..`hi` on tick multiples of `step`. */
export interface Axis {
  lo: number;
  hi: number;
  ticks: number[];
  /** Decimals that label every tick exactly. */
  decimals: number;
}

/**
 * An axis scaled to `values`: their range padded by 8 % on each side (±0.05 for one value), widened to whole
 * ticks of 1, 2, 2.5 or 5 × 10ⁿ (about five of them), and kept inside `bounds` when every value is inside them
 * (scores stay within 0–1). Scores between 0.82 and 0.88 get an axis 0.80–0.90, not 0–1.
 * @example niceAxis([0.82, 0.88], [0, 1]) // { lo: 0.8, hi: 0.9, ticks: [0.8, 0.82, …, 0.9], decimals: 2 }
 */
export function niceAxis(values: readonly number[], bounds?: readonly [number, number]): Axis {
  const data = values.filter(finite);
  let min = data.length === 0 ? 0 : Math.min(...data);
  let max = data.length === 0 ? 1 : Math.max(...data);
  const span = max - min;
  const pad = span > 0 ? span * 0.08 : 0.05;
  const inside = bounds !== undefined && min >= bounds[0] && max <= bounds[1];
  min -= pad;
  max += pad;
  if (inside) {
    min = Math.max(min, bounds[0]);
    max = Math.min(max, bounds[1]);
  }
  const raw = (max - min) / 5;
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  const step = ([1, 2, 2.5, 5, 10].map((m) => m * magnitude).find((s) => s >= raw * (1 - 1e-9)) ??
    10 * magnitude) as number;
  const decimals = Math.max(
    0,
    -Math.floor(Math.log10(step) + 1e-9) + (step / magnitude === 2.5 ? 1 : 0),
  );
  const first = Math.floor(min / step + 1e-9);
  const last = Math.ceil(max / step - 1e-9);
  const ticks: number[] = [];
  for (let i = first; i <= last; i++) ticks.push(Number((i * step).toFixed(decimals + 2)));
  return { lo: ticks[0] as number, hi: ticks[ticks.length - 1] as number, ticks, decimals };
}

/** A tick label with the axis' decimals. */
export function tickText(axis: Axis, v: number): string {
  return v.toFixed(axis.decimals);
}

export type Scale = (v: number) => number;

export function linear(d0: number, d1: number, r0: number, r1: number): Scale {
  const span = d1 - d0 || 1;
  return (v: number) => r0 + ((v - d0) / span) * (r1 - r0);
}

export function svgOpen(
  id: string,
  width: number,
  height: number,
  title: string,
  desc: string,
): string {
  return (
    `<svg viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" role="img" ` +
    `aria-labelledby="${id}-title ${id}-desc"><title id="${id}-title">${esc(title)}</title>` +
    `<desc id="${id}-desc">${esc(desc)}</desc>`
  );
}

/** Short column labels of the usual metrics; the full name is the header's tooltip. */
const METRIC_LABELS: Record<string, string> = {
  answer_correctness: 'answer corr.',
  context_correctness: 'context corr.',
  faithfulness: 'faithful.',
  overall_score: 'overall',
  abstention_accuracy: 'abstention',
  answer_relevance: 'relevance',
};

/** A metric's column header: a short label when it has one, the full name (and `note`) as the tooltip. */
export function metricHead(name: string, note = ''): HeadCell {
  const label = METRIC_LABELS[name];
  const suffix = note === '' ? '' : ` <span class="muted">${esc(note)}</span>`;
  return {
    html: `${label === undefined ? headLabel(name) : esc(label)}${suffix}`,
    title: note === '' ? name : `${name} ${note}`,
  };
}

/** ai4rag's leaderboard order of metric columns after the optimization metric. */
const METRIC_ORDER = ['answer_correctness', 'faithfulness', 'context_correctness'];

/** Metric names: the optimization metric, then ai4rag's trio, then the rest as found. */
export function orderMetrics(found: readonly string[], optimizationMetric: string): string[] {
  const rank = (name: string): number => {
    if (name === optimizationMetric) return 0;
    const i = METRIC_ORDER.indexOf(name);
    return i === -1 ? METRIC_ORDER.length + 1 : i + 1;
  };
  return [...new Set(found)]
    .map((name, index) => ({ name, index }))
    .sort((a, b) => rank(a.name) - rank(b.name) || a.index - b.index)
    .map((m) => m.name);
}
