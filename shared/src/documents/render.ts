import type { DocBlock } from './types.js';

/** Collapses runs of whitespace (including newlines) to one space, so block text compares cleanly. */
export function collapseWhitespace(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

function escapeCell(cell: string): string {
  return cell.replace(/\|/g, '\\|');
}

function renderTable(rows: string[][]): string {
  // reduce, not Math.max(...): spreading a table of 100k+ rows overflows the call stack.
  const width = rows.reduce((max, row) => Math.max(max, row.length), 0);
  const line = (row: string[]): string => {
    const cells = Array.from({ length: width }, (_, i) => escapeCell(row[i] ?? ''));
    return `| ${cells.join(' | ')} |`;
  };
  const [header = [], ...body] = rows;
  const separator = `| ${Array.from({ length: width }, () => '---').join(' | ')} |`;
  return [line(header), separator, ...body.map(line)].join('\n');
}

/**
 * Renders blocks as markdown. Formats without a usable source text (html, pdf, docx, docling)
 * use this as their `text`, so the recursive chunker still sees headings and tables.
 *
 * @example
 * renderBlocks([{ type: 'heading', level: 2, text: 'Limits' }, { type: 'list', items: ['a'] }]);
 * // '## Limits\n\n- a'
 */
export function renderBlocks(blocks: readonly DocBlock[]): string {
  const parts: string[] = [];
  for (const block of blocks) {
    switch (block.type) {
      case 'heading':
        parts.push(`${'#'.repeat(Math.min(Math.max(block.level, 1), 6))} ${block.text}`);
        break;
      case 'paragraph':
        parts.push(block.text);
        break;
      case 'list':
        if (block.items.length > 0) parts.push(block.items.map((item) => `- ${item}`).join('\n'));
        break;
      case 'table':
        if (block.rows.length > 0) parts.push(renderTable(block.rows));
        break;
      case 'code':
        parts.push(`\`\`\`\n${block.text}\n\`\`\``);
        break;
    }
  }
  return parts.join('\n\n');
}
