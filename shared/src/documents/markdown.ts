import { collapseWhitespace } from './render.js';
import { normalizeNewlines } from './text.js';
import type { DocBlock } from './types.js';

/** Result of a structural parse: blocks in reading order and the document title, if any. */
export interface ParsedStructure {
  blocks: DocBlock[];
  title?: string | undefined;
}

const HEADING = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/;
const FENCE = /^ {0,3}(`{3,}|~{3,})/;
const LIST_ITEM = /^[ \t]*(?:[-*+]|\d{1,9}[.)])[ \t]+(.*)$/;
const TABLE_SEPARATOR = /^[ \t]*\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$/;

function splitTableRow(line: string): string[] {
  let row = line.trim();
  if (row.startsWith('|')) row = row.slice(1);
  if (row.endsWith('|') && !row.endsWith('\\|')) row = row.slice(0, -1);
  return row.split(/(?<!\\)\|/).map((cell) => collapseWhitespace(cell.replace(/\\\|/g, '|')));
}

function isTableStart(line: string, next: string | undefined): boolean {
  return next !== undefined && line.includes('|') && TABLE_SEPARATOR.test(next);
}

/**
 * Parses the markdown subset handbooks actually use (ATX headings, paragraphs, `-`/`*`/`1.`
 * lists, pipe tables, fenced code, blockquotes). Not CommonMark-complete: the blocks only drive
 * structure-aware chunking, the text itself stays verbatim.
 *
 * @example
 * parseMarkdown('# Title\n\nHello').blocks; // [{ type: 'heading', level: 1, text: 'Title' }, ...]
 */
export function parseMarkdown(source: string): ParsedStructure {
  const lines = normalizeNewlines(source).split('\n');
  const blocks: DocBlock[] = [];
  let paragraph: string[] = [];
  let list: string[] | undefined;
  let title: string | undefined;

  const flushParagraph = (): void => {
    const text = collapseWhitespace(paragraph.join(' '));
    if (text) blocks.push({ type: 'paragraph', text });
    paragraph = [];
  };
  const flushList = (): void => {
    if (list && list.length > 0) blocks.push({ type: 'list', items: list });
    list = undefined;
  };
  const flush = (): void => {
    flushParagraph();
    flushList();
  };

  let i = 0;
  while (i < lines.length) {
    const line = lines[i] ?? '';
    const fence = FENCE.exec(line);
    if (fence) {
      flush();
      const marker = fence[1] ?? '```';
      const body: string[] = [];
      i++;
      while (i < lines.length && !(lines[i] ?? '').trimStart().startsWith(marker)) {
        body.push(lines[i] ?? '');
        i++;
      }
      blocks.push({ type: 'code', text: body.join('\n') });
      i++;
      continue;
    }
    const heading = HEADING.exec(line);
    if (heading) {
      flush();
      const text = collapseWhitespace(heading[2] ?? '');
      const level = heading[1]?.length ?? 1;
      if (text) {
        blocks.push({ type: 'heading', level, text });
        if (level === 1 && title === undefined) title = text;
      }
      i++;
      continue;
    }
    if (line.trim() === '') {
      flush();
      i++;
      continue;
    }
    if (isTableStart(line, lines[i + 1])) {
      flush();
      const rows = [splitTableRow(line)];
      i += 2;
      while (i < lines.length && (lines[i] ?? '').includes('|') && (lines[i] ?? '').trim()) {
        rows.push(splitTableRow(lines[i] ?? ''));
        i++;
      }
      blocks.push({ type: 'table', rows });
      continue;
    }
    const item = LIST_ITEM.exec(line);
    if (item) {
      flushParagraph();
      list ??= [];
      list.push(collapseWhitespace(item[1] ?? ''));
      i++;
      continue;
    }
    const quoted = line.replace(/^ {0,3}>[ \t]?/, '');
    if (list && /^[ \t]+\S/.test(line)) {
      // An indented line under a list item continues that item.
      list[list.length - 1] = collapseWhitespace(`${list[list.length - 1] ?? ''} ${line}`);
    } else {
      flushList();
      paragraph.push(quoted);
    }
    i++;
  }
  flush();
  return { blocks, title };
}
