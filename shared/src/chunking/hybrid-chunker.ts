import type { DocBlock, LoadedDocument } from '../documents/types.js';
import { approxTokens, CHARS_PER_TOKEN } from './limits.js';
import {
  renderMarkdownTable,
  renderTableHeader,
  renderTableRow,
  tableWidth,
} from './markdown-table.js';
import { splitTextRecursive } from './recursive-splitter.js';

/** A hybrid chunk before ids and sequence numbers are assigned. */
export interface HybridPiece {
  /** Contextualized text: heading titles one per line, then the body. */
  text: string;
  /** Heading path titles, outermost first (empty before the first heading). */
  headings: string[];
}

interface Body {
  /** Heading path key, to recognise peers. */
  key: string;
  headings: string[];
  prefix: string;
  body: string;
  /** Index of the block it came from: pieces of one block were split to fit and are never re-joined. */
  block: number;
}

const FENCE_OPEN = '```\n';
const FENCE_CLOSE = '\n```';
/** Blank-line separator of merged peers. */
const PEER_JOINER = '\n\n';

function tokensOfLength(length: number): number {
  return Math.ceil(length / CHARS_PER_TOKEN);
}

/** Length of `prefix + '\n' + body`, or of `body` alone when there is no prefix. */
function contextLength(prefix: string, bodyLength: number): number {
  return prefix === '' ? bodyLength : prefix.length + 1 + bodyLength;
}

/** docling's `contextualize`: the heading titles, each on its own line, then the text. */
function contextualize(prefix: string, body: string): string {
  return prefix === '' ? body : `${prefix}\n${body}`;
}

/**
 * The heading prefix of a chunk. Pathologically long heading paths would leave no room for the body, so
 * outer headings are dropped from the *text* (never from the metadata) until the prefix takes at most half
 * of the budget.
 */
function headingPrefix(headings: readonly string[], chunkSize: number): string {
  for (let first = 0; first < headings.length; first += 1) {
    const prefix = headings.slice(first).join('\n');
    if (approxTokens(`${prefix}\n`) <= chunkSize / 2) return prefix;
  }
  return '';
}

/** Splits an oversized text with the recursive splitter (no overlap) so each piece fits `budget` tokens. */
function splitToBudget(text: string, budget: number): string[] {
  return splitTextRecursive(text, { chunkSize: Math.max(1, budget), chunkOverlap: 0 });
}

function paragraphBodies(
  text: string,
  prefix: string,
  chunkSize: number,
  budget: number,
): string[] {
  const body = text.trim();
  if (body === '') return [];
  if (tokensOfLength(contextLength(prefix, body.length)) <= chunkSize) return [body];
  return splitToBudget(body, budget);
}

function codeBodies(text: string, prefix: string, chunkSize: number, budget: number): string[] {
  const code = text.replace(/^(?:[ \t]*\r?\n)+/, '').trimEnd();
  if (code === '') return [];
  const fenced = `${FENCE_OPEN}${code}${FENCE_CLOSE}`;
  if (tokensOfLength(contextLength(prefix, fenced.length)) <= chunkSize) return [fenced];
  const fenceTokens = approxTokens(FENCE_OPEN + FENCE_CLOSE);
  return splitToBudget(code, budget - fenceTokens).map((p) => `${FENCE_OPEN}${p}${FENCE_CLOSE}`);
}

/**
 * Packs consecutive lines (joined by '\n') while the contextualized text fits; a line too large on its own
 * is split with the recursive splitter. `head` (table header) is repeated at the top of every piece.
 */
function packLines(
  lines: readonly string[],
  head: string,
  prefix: string,
  chunkSize: number,
  budget: number,
): string[] {
  const out: string[] = [];
  const headLength = head === '' ? 0 : head.length + 1;
  let current: string[] = [];
  let currentLength = 0;
  const flush = (): void => {
    if (current.length > 0)
      out.push(head === '' ? current.join('\n') : `${head}\n${current.join('\n')}`);
    current = [];
    currentLength = 0;
  };
  for (const line of lines) {
    const added = currentLength + (current.length > 0 ? 1 : 0) + line.length;
    if (tokensOfLength(contextLength(prefix, headLength + added)) <= chunkSize) {
      current.push(line);
      currentLength = added;
      continue;
    }
    flush();
    if (tokensOfLength(contextLength(prefix, headLength + line.length)) <= chunkSize) {
      current.push(line);
      currentLength = line.length;
      continue;
    }
    for (const fragment of splitToBudget(
      line,
      budget - approxTokens(head === '' ? '' : `${head}\n`),
    )) {
      out.push(head === '' ? fragment : `${head}\n${fragment}`);
    }
  }
  flush();
  return out;
}

function listBodies(
  items: readonly string[],
  prefix: string,
  chunkSize: number,
  budget: number,
): string[] {
  const lines = items
    .map((i) => i.trim())
    .filter((i) => i !== '')
    .map((i) => `- ${i}`);
  if (lines.length === 0) return [];
  return packLines(lines, '', prefix, chunkSize, budget);
}

function tableBodies(
  rows: readonly (readonly string[])[],
  prefix: string,
  chunkSize: number,
  budget: number,
): string[] {
  const markdown = renderMarkdownTable(rows);
  if (markdown === '') return [];
  if (tokensOfLength(contextLength(prefix, markdown.length)) <= chunkSize) return [markdown];
  const width = tableWidth(rows);
  const [header, ...body] = rows;
  const head = renderTableHeader(header ?? [], width);
  // A header that leaves no room for a row cannot be repeated: split the table as plain text instead.
  if (budget - approxTokens(`${head}\n`) < 1 || body.length === 0)
    return splitToBudget(markdown, budget);
  const lines = body.map((r) => renderTableRow(r, width));
  return packLines(lines, head, prefix, chunkSize, budget);
}

function blockBodies(block: DocBlock, prefix: string, chunkSize: number): string[] {
  const budget = chunkSize - (prefix === '' ? 0 : approxTokens(`${prefix}\n`));
  switch (block.type) {
    case 'paragraph':
      return paragraphBodies(block.text, prefix, chunkSize, budget);
    case 'code':
      return codeBodies(block.text, prefix, chunkSize, budget);
    case 'list':
      return listBodies(block.items, prefix, chunkSize, budget);
    case 'table':
      return tableBodies(block.rows, prefix, chunkSize, budget);
    case 'heading':
      return [];
  }
}

/** Paragraph blocks of a plain text, for documents that came without structure. */
function paragraphBlocks(text: string): DocBlock[] {
  return text
    .split(/\r?\n[ \t]*\r?\n/)
    .map((p) => p.trim())
    .filter((p) => p !== '')
    .map((p) => ({ type: 'paragraph', text: p }));
}

/**
 * docling's `merge_peers`: consecutive bodies under the same heading path merge while they fit. Pieces of
 * one split block are not merged back together: the splitter counts tokens per piece (sum of ceilings), so
 * re-joining them would fit and would insert a paragraph break in the middle of the block.
 */
function mergePeers(bodies: readonly Body[], chunkSize: number): HybridPiece[] {
  const out: HybridPiece[] = [];
  let group: Body[] = [];
  let groupLength = 0;
  const flush = (): void => {
    const first = group[0];
    if (first !== undefined) {
      const text = contextualize(first.prefix, group.map((b) => b.body).join(PEER_JOINER));
      out.push({ text, headings: first.headings });
    }
    group = [];
    groupLength = 0;
  };
  for (const b of bodies) {
    const first = group[0];
    const last = group[group.length - 1];
    if (first !== undefined && first.key === b.key && last?.block !== b.block) {
      const merged = groupLength + PEER_JOINER.length + b.body.length;
      if (tokensOfLength(contextLength(b.prefix, merged)) <= chunkSize) {
        group.push(b);
        groupLength = merged;
        continue;
      }
    }
    flush();
    group.push(b);
    groupLength = b.body.length;
  }
  flush();
  return out;
}

/**
 * Structure-aware chunking in the manner of docling's `HybridChunker(contextualize=True, merge_peers=True)`
 * with a 4-chars-per-token tokenizer: walks the blocks keeping the heading path, turns each non-heading
 * block into pieces that fit `chunkSize` once the heading titles are prepended (tables split by rows with
 * the header repeated; lists by items; other oversized text by the recursive splitter), then merges
 * consecutive pieces under the same heading path. Documents without blocks fall back to paragraphs of
 * their text.
 * @example hybridSplit(doc, 512).map((p) => p.text) // ['Guide\nInstall\nRun the installer.', ...]
 */
export function hybridSplit(doc: LoadedDocument, chunkSize: number): HybridPiece[] {
  const blocks = doc.blocks.length > 0 ? doc.blocks : paragraphBlocks(doc.text);
  let path: { level: number; text: string }[] = [];
  const bodies: Body[] = [];
  for (const [index, block] of blocks.entries()) {
    if (block.type === 'heading') {
      const title = block.text.replace(/\s+/g, ' ').trim();
      if (title === '') continue;
      path = path.filter((h) => h.level < block.level);
      path.push({ level: block.level, text: title });
      continue;
    }
    const headings = path.map((h) => h.text);
    const prefix = headingPrefix(headings, chunkSize);
    const key = headings.join('\u0000');
    for (const body of blockBodies(block, prefix, chunkSize)) {
      if (body.trim() !== '') bodies.push({ key, headings, prefix, body, block: index });
    }
  }
  return mergePeers(bodies, chunkSize);
}
