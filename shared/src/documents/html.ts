import { type HTMLElement, type Node, NodeType, parse } from 'node-html-parser';
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
      if (tag === 'ul' || tag === 'ol') nested.push(...listItems(part as HTMLElement));
      else own.push(part.text);
    }
    const text = collapseWhitespace(own.join(''));
    if (text) items.push(text);
    items.push(...nested);
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

/**
 * Extracts headings, paragraphs, lists, tables and code from HTML, dropping page chrome
 * (script, style, nav, header, footer) that would otherwise pollute retrieval. Also used for
 * DOCX, via mammoth's HTML.
 *
 * @example
 * parseHtml('<h1>Fleet</h1><p>Six barges.</p>').blocks.length; // 2
 */
export function parseHtml(html: string): ParsedStructure {
  // node-html-parser keeps a doctype as a text node; it is never content.
  const root = parse(html.replace(/<!doctype[^>]*>/gi, ''), {
    comment: false,
    blockTextElements: { script: true, style: true, noscript: true, pre: true },
  });
  const blocks: DocBlock[] = [];
  walk(root, blocks);
  const titleText = collapseWhitespace(root.querySelector('title')?.text ?? '');
  const firstH1 = blocks.find((block) => block.type === 'heading' && block.level === 1);
  const title = titleText || (firstH1?.type === 'heading' ? firstH1.text : undefined);
  return { blocks, title };
}
