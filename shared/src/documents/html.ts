import { type HTMLElement, type Node, NodeType, parse } from 'node-html-parser';
import { DocumentParseError } from './errors.js';
import { DEFAULT_MAX_NESTING_DEPTH } from './limits.js';
import type { ParsedStructure } from './markdown.js';
import { collapseWhitespace } from './render.js';
import type { DocBlock } from './types.js';

/** Elements whose content is boilerplate or code, never document text. */
const DROPPED = new Set([
  'script',
  'style',
  'nav',
  'header',
  'footer',
  'noscript',
  'template',
  'svg',
  'head',
]);

/** Elements that end the current run of inline text. */
const BLOCK = new Set([
  'address',
  'article',
  'aside',
  'blockquote',
  'body',
  'caption',
  'dd',
  'details',
  'dialog',
  'div',
  'dl',
  'dt',
  'fieldset',
  'figcaption',
  'figure',
  'form',
  'h1',
  'h2',
  'h3',
  'h4',
  'h5',
  'h6',
  'hr',
  'html',
  'li',
  'main',
  'ol',
  'p',
  'pre',
  'section',
  'summary',
  'table',
  'ul',
]);

function tagOf(node: Node): string {
  return node.nodeType === NodeType.ELEMENT_NODE
    ? ((node as HTMLElement).rawTagName ?? '').toLowerCase()
    : '';
}

function listItems(list: HTMLElement): string[] {
  const items: string[] = [];
  for (const child of list.childNodes) {
    if (tagOf(child) !== 'li') continue;
    const own: string[] = [];
    const nested: string[] = [];
    for (const part of child.childNodes) {
      const tag = tagOf(part);
      // Loops, not push(...spread): a spread of a huge list overflows the call stack.
      if (tag === 'ul' || tag === 'ol')
        for (const item of listItems(part as HTMLElement)) nested.push(item);
      else own.push(part.text);
    }
    const text = collapseWhitespace(own.join(''));
    if (text) items.push(text);
    for (const item of nested) items.push(item);
  }
  return items;
}

function tableRows(table: HTMLElement): string[][] {
  const rows: string[][] = [];
  for (const tr of table.querySelectorAll('tr')) {
    const cells = tr.childNodes
      .filter((cell) => tagOf(cell) === 'td' || tagOf(cell) === 'th')
      .map((cell) => collapseWhitespace(cell.text));
    if (cells.some((cell) => cell.length > 0)) rows.push(cells);
  }
  return rows;
}

function walk(node: HTMLElement, blocks: DocBlock[]): void {
  let inline: string[] = [];
  const flush = (): void => {
    // Text nodes carry their own spacing; joining with '' keeps "<b>25</b>." as "25.".
    const text = collapseWhitespace(inline.join(''));
    if (text) blocks.push({ type: 'paragraph', text });
    inline = [];
  };
  for (const child of node.childNodes) {
    if (child.nodeType === NodeType.TEXT_NODE) {
      inline.push(child.text);
      continue;
    }
    if (child.nodeType !== NodeType.ELEMENT_NODE) continue;
    const element = child as HTMLElement;
    const tag = tagOf(element);
    if (DROPPED.has(tag)) continue;
    if (tag === 'br') {
      inline.push(' ');
      continue;
    }
    if (!BLOCK.has(tag)) {
      inline.push(element.text);
      continue;
    }
    flush();
    const heading = /^h([1-6])$/.exec(tag);
    if (heading) {
      const text = collapseWhitespace(element.text);
      if (text) blocks.push({ type: 'heading', level: Number(heading[1]), text });
    } else if (tag === 'ul' || tag === 'ol') {
      const items = listItems(element);
      if (items.length > 0) blocks.push({ type: 'list', items });
    } else if (tag === 'table') {
      const caption = element.querySelector('caption');
      if (caption) {
        const text = collapseWhitespace(caption.text);
        if (text) blocks.push({ type: 'paragraph', text });
      }
      const rows = tableRows(element);
      if (rows.length > 0) blocks.push({ type: 'table', rows });
    } else if (tag === 'pre') {
      const text = element.text.replace(/^\n/, '').replace(/\s+$/, '');
      if (text.trim()) blocks.push({ type: 'code', text });
    } else if (tag !== 'hr') {
      walk(element, blocks);
    }
  }
  flush();
}

/** Options of {@link parseHtml}. */
export interface HtmlParseOptions {
  /** Names the document in error messages. Default `HTML`. */
  label?: string;
  /** Deepest element nesting accepted. Default `DEFAULT_MAX_NESTING_DEPTH` (512). */
  maxDepth?: number;
}

/** Elements that never hold children. */
const VOID_ELEMENTS = new Set(
  'area base br col embed hr img input link meta param source track wbr'.split(' '),
);
/** Elements whose end tag may be omitted (the next sibling closes them): never counted as nesting. */
const OPTIONAL_END = new Set(
  'html head body p li dt dd tr td th option optgroup thead tbody tfoot colgroup caption rb rt rp rtc'.split(
    ' ',
  ),
);
const TAG = /<!--[\s\S]*?(?:-->|$)|<(\/?)([a-zA-Z][a-zA-Z0-9:-]*)\b[^>]*?(\/?)>/g;

/**
 * Whether the markup opens elements more than `limit` deep, read from the raw tags in one linear pass (before
 * parsing: the parser takes quadratic time on 100,000 unclosed `<div>`s). Void elements, self-closing tags and
 * elements whose end tag may be omitted are not counted; `script` and `style` contents are skipped.
 */
export function rawNestingExceeds(html: string, limit: number): boolean {
  let depth = 0;
  TAG.lastIndex = 0;
  for (let m = TAG.exec(html); m !== null; m = TAG.exec(html)) {
    const name = m[2]?.toLowerCase();
    if (name === undefined) continue; // a comment
    const closing = m[1] === '/';
    if (!closing && (name === 'script' || name === 'style')) {
      const end = html.toLowerCase().indexOf(`</${name}`, TAG.lastIndex);
      TAG.lastIndex = end < 0 ? html.length : end;
      continue;
    }
    if (VOID_ELEMENTS.has(name) || OPTIONAL_END.has(name) || m[3] === '/') continue;
    if (closing) depth = Math.max(0, depth - 1);
    else if (++depth > limit) return true;
  }
  return false;
}

/** True when an element sits more than `limit` elements deep; iterative, so any depth is safe. */
function nestedDeeperThan(root: HTMLElement, limit: number): boolean {
  const stack: [Node, number][] = [[root, 0]];
  for (let entry = stack.pop(); entry; entry = stack.pop()) {
    const [node, depth] = entry;
    if (depth > limit) return true;
    for (const child of node.childNodes) {
      if (child.nodeType === NodeType.ELEMENT_NODE) stack.push([child, depth + 1]);
    }
  }
  return false;
}

/**
 * Extracts headings, paragraphs, lists, tables and code from HTML, dropping page chrome
 * (script, style, nav, header, footer) that would otherwise pollute retrieval. Also used for
 * DOCX, via mammoth's HTML. node-html-parser parses iteratively, but its text getters and our
 * walk recurse: nesting is measured first, iteratively, and refused past `maxDepth`.
 *
 * @throws {DocumentParseError} `too_deep` when elements nest deeper than `maxDepth`.
 * @example
 * parseHtml('<h1>Fleet</h1><p>Six barges.</p>').blocks.length; // 2
 */
export function parseHtml(html: string, options: HtmlParseOptions = {}): ParsedStructure {
  const maxDepth = options.maxDepth ?? DEFAULT_MAX_NESTING_DEPTH;
  if (rawNestingExceeds(html, maxDepth)) {
    throw new DocumentParseError(
      'too_deep',
      `${options.label ?? 'HTML'}: HTML nested deeper than ${maxDepth} elements; refused`,
    );
  }
  // node-html-parser keeps a doctype as a text node; it is never content.
  const root = parse(html.replace(/<!doctype[^>]*>/gi, ''), {
    comment: false,
    blockTextElements: { script: true, style: true, noscript: true, pre: true },
  });
  if (nestedDeeperThan(root, maxDepth)) {
    throw new DocumentParseError(
      'too_deep',
      `${options.label ?? 'HTML'}: HTML nested deeper than ${maxDepth} elements; refused`,
    );
  }
  const blocks: DocBlock[] = [];
  walk(root, blocks);
  const titleText = collapseWhitespace(root.querySelector('title')?.text ?? '');
  const firstH1 = blocks.find((block) => block.type === 'heading' && block.level === 1);
  const title = titleText || (firstH1?.type === 'heading' ? firstH1.text : undefined);
  return { blocks, title };
}
