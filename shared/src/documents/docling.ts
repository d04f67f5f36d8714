import { DocumentParseError } from './errors.js';
import { DEFAULT_MAX_NESTING_DEPTH } from './limits.js';
import type { ParsedStructure } from './markdown.js';
import { collapseWhitespace } from './render.js';
import type { DocBlock } from './types.js';

interface DoclingRef {
  $ref?: unknown;
}
interface DoclingNode {
  label?: unknown;
  text?: unknown;
  level?: unknown;
  children?: unknown;
  data?: { grid?: unknown };
}

const SKIPPED_LABELS = new Set(['page_header', 'page_footer']);

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function resolveRef(
  doc: Record<string, unknown>,
  ref: string,
): { kind: string; node: DoclingNode } | undefined {
  const match = /^#\/(texts|tables|groups|pictures|body)(?:\/(\d+))?$/.exec(ref);
  if (!match) return undefined;
  const kind = match[1] ?? '';
  if (kind === 'body') return isRecord(doc.body) ? { kind, node: doc.body } : undefined;
  const list = doc[kind];
  const node = Array.isArray(list) ? list[Number(match[2])] : undefined;
  return isRecord(node) ? { kind, node } : undefined;
}

function tableRows(node: DoclingNode): string[][] {
  const grid = node.data?.grid;
  if (!Array.isArray(grid)) return [];
  const rows: string[][] = [];
  for (const row of grid) {
    if (!Array.isArray(row)) continue;
    const cells = row.map((cell) =>
      isRecord(cell) && typeof cell.text === 'string' ? collapseWhitespace(cell.text) : '',
    );
    if (cells.some((cell) => cell)) rows.push(cells);
  }
  return rows;
}

/** Options of {@link parseDocling}. */
export interface DoclingParseOptions {
  /** Deepest `$ref` nesting (groups within groups) accepted. Default `DEFAULT_MAX_NESTING_DEPTH` (512). */
  maxDepth?: number;
}

/**
 * Reads a DoclingDocument (the JSON that Docling produces after its own layout analysis) in body
 * reading order. `title` becomes a level-1 heading, so section headers sit one level below it.
 * JSON.parse itself handles any nesting; the body walk recurses along `$ref`s, so its depth is bounded.
 *
 * @throws {DocumentParseError} `corrupt` when the JSON is invalid or is not a DoclingDocument,
 *   `too_deep` when groups nest deeper than `maxDepth`.
 */
export function parseDocling(
  json: string,
  label: string,
  options: DoclingParseOptions = {},
): ParsedStructure {
  const maxDepth = options.maxDepth ?? DEFAULT_MAX_NESTING_DEPTH;
  let doc: unknown;
  try {
    doc = JSON.parse(json);
  } catch (error: unknown) {
    throw new DocumentParseError(
      'corrupt',
      `${label}: invalid JSON (${error instanceof Error ? error.message : String(error)})`,
      { cause: error },
    );
  }
  if (!isRecord(doc) || doc.schema_name !== 'DoclingDocument' || !isRecord(doc.body)) {
    throw new DocumentParseError(
      'corrupt',
      `${label}: JSON is not a DoclingDocument (expected schema_name "DoclingDocument" with a body)`,
    );
  }
  const root = doc;
  const blocks: DocBlock[] = [];
  let title: string | undefined;
  const seen = new Set<string>();

  const visitChildren = (children: unknown, depth: number): void => {
    if (!Array.isArray(children)) return;
    for (const child of children) {
      const ref = isRecord(child) ? (child as DoclingRef).$ref : undefined;
      if (typeof ref !== 'string' || seen.has(ref)) continue;
      seen.add(ref);
      const resolved = resolveRef(root, ref);
      if (resolved) visit(resolved.kind, resolved.node, depth + 1);
    }
  };

  const visit = (kind: string, node: DoclingNode, depth: number): void => {
    if (depth > maxDepth) {
      throw new DocumentParseError(
        'too_deep',
        `${label}: DoclingDocument nested deeper than ${maxDepth} levels; refused`,
      );
    }
    if (kind === 'tables') {
      const rows = tableRows(node);
      if (rows.length > 0) blocks.push({ type: 'table', rows });
    } else if (kind === 'texts') {
      const label = typeof node.label === 'string' ? node.label : 'text';
      const raw = typeof node.text === 'string' ? node.text : '';
      const text = label === 'code' ? raw.trim() : collapseWhitespace(raw);
      if (text && !SKIPPED_LABELS.has(label)) {
        if (label === 'title') {
          blocks.push({ type: 'heading', level: 1, text });
          title ??= text;
        } else if (label === 'section_header') {
          const level = typeof node.level === 'number' ? node.level : 1;
          blocks.push({ type: 'heading', level: Math.min(Math.max(level + 1, 2), 6), text });
        } else if (label === 'list_item') {
          const last = blocks[blocks.length - 1];
          if (last?.type === 'list') last.items.push(text);
          else blocks.push({ type: 'list', items: [text] });
        } else if (label === 'code') {
          blocks.push({ type: 'code', text });
        } else {
          blocks.push({ type: 'paragraph', text });
        }
      }
    }
    visitChildren(node.children, depth);
  };

  visitChildren((root.body as DoclingNode).children, 0);
  return { blocks, title };
}
