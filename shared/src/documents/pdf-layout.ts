import { collapseWhitespace } from './render.js';
import type { DocBlock } from './types.js';

/** A positioned run of text, as pdf.js reports it (PDF coordinates, origin bottom-left). */
export interface PdfTextItem {
  str: string;
  x: number;
  y: number;
  width: number;
  fontSize: number;
}

interface Line {
  y: number;
  size: number;
  segments: { x: number; text: string }[];
}

/** Items closer than this (in points) vertically are on the same line. */
const SAME_LINE = 2;

function toLines(items: readonly PdfTextItem[]): Line[] {
  const visible = items.filter((item) => item.str.trim() !== '');
  const rows: PdfTextItem[][] = [];
  for (const item of [...visible].sort((a, b) => b.y - a.y || a.x - b.x)) {
    const row = rows[rows.length - 1];
    if (row && Math.abs((row[0]?.y ?? 0) - item.y) < SAME_LINE) row.push(item);
    else rows.push([item]);
  }
  return rows.map((row) => {
    row.sort((a, b) => a.x - b.x);
    const size = row.reduce((max, item) => Math.max(max, item.fontSize), Number.NEGATIVE_INFINITY);
    const segments: { x: number; text: string; end: number }[] = [];
    for (const item of row) {
      const last = segments[segments.length - 1];
      const gap = last ? item.x - last.end : Number.POSITIVE_INFINITY;
      if (last && gap <= size * 1.2) {
        last.text += gap > size * 0.15 ? ` ${item.str}` : item.str;
        last.end = item.x + item.width;
      } else {
        segments.push({ x: item.x, text: item.str, end: item.x + item.width });
      }
    }
    return {
      y: row[0]?.y ?? 0,
      size,
      segments: segments.map(({ x, text }) => ({ x, text: collapseWhitespace(text) })),
    };
  });
}

/** The font size carrying most characters: the body text size. */
function bodySize(lines: readonly Line[]): number {
  const weight = new Map<number, number>();
  for (const line of lines) {
    const chars = line.segments.reduce((sum, s) => sum + s.text.length, 0);
    const size = Math.round(line.size * 2) / 2;
    weight.set(size, (weight.get(size) ?? 0) + chars);
  }
  let best = 0;
  let bestWeight = -1;
  for (const [size, chars] of weight) {
    if (chars > bestWeight) {
      best = size;
      bestWeight = chars;
    }
  }
  return best;
}

/**
 * Rebuilds structure from positioned PDF text: lines in a larger font than the body become
 * headings (level by size rank), lines with several widely spaced segments become table rows,
 * `-`/`•` lines become list items, and the rest are joined into paragraphs on vertical gaps.
 * A heuristic, but it keeps headings and tables of simply laid-out PDFs (reports, handbooks).
 */
export function pdfLayoutToBlocks(pages: readonly (readonly PdfTextItem[])[]): DocBlock[] {
  const pageLines = pages.map(toLines);
  const body = bodySize(pageLines.flat());
  const headingSizes = [
    ...new Set(
      pageLines
        .flat()
        .filter((line) => line.size > body + 0.5 && line.segments.length === 1)
        .map((line) => Math.round(line.size * 2) / 2),
    ),
  ].sort((a, b) => b - a);

  const blocks: DocBlock[] = [];
  for (const lines of pageLines) {
    let paragraph: string[] = [];
    let table: { columns: number[]; rows: string[][] } | undefined;
    let list: string[] | undefined;
    let previous: Line | undefined;
    const flush = (): void => {
      const text = collapseWhitespace(paragraph.join(' '));
      if (text) blocks.push({ type: 'paragraph', text });
      paragraph = [];
      if (table) blocks.push({ type: 'table', rows: table.rows });
      table = undefined;
      if (list) blocks.push({ type: 'list', items: list });
      list = undefined;
    };
    for (const line of lines) {
      const gap = previous ? previous.y - line.y : 0;
      const loose = previous !== undefined && gap > Math.max(previous.size, line.size) * 1.6;
      const size = Math.round(line.size * 2) / 2;
      const text = line.segments.map((s) => s.text).join(' ');
      if (line.segments.length === 1 && headingSizes.includes(size)) {
        flush();
        blocks.push({ type: 'heading', level: Math.min(headingSizes.indexOf(size) + 1, 6), text });
      } else if (line.segments.length > 1) {
        // Table rows sit further apart than wrapped text lines (cell padding): allow more gap.
        if (!table || gap > Math.max(previous?.size ?? 0, line.size) * 2.2) {
          flush();
          table = { columns: line.segments.map((s) => s.x), rows: [] };
        }
        const columns = table.columns;
        const row = columns.map(() => '');
        for (const segment of line.segments) {
          let index = 0;
          columns.forEach((x, i) => {
            if (segment.x >= x - SAME_LINE) index = i;
          });
          row[index] = collapseWhitespace(`${row[index] ?? ''} ${segment.text}`);
        }
        table.rows.push(row);
      } else if (/^[-•]\s/.test(text)) {
        if (!list || loose) flush();
        list ??= [];
        list.push(text.replace(/^[-•]\s+/, ''));
      } else if (list && !loose) {
        list[list.length - 1] = `${list[list.length - 1] ?? ''} ${text}`;
      } else {
        if (loose || table || list) flush();
        paragraph.push(text);
      }
      previous = line;
    }
    flush();
  }
  return blocks;
}
