/** Escapes a cell for a markdown pipe table: pipes escaped, line breaks folded into spaces. */
function renderCell(cell: string): string {
  return cell
    .replace(/\r?\n|\r/g, ' ')
    .replace(/\|/g, '\\|')
    .trim();
}

/** Renders one table row as a markdown pipe-table line, padded to `width` cells. */
export function renderTableRow(row: readonly string[], width: number): string {
  const cells: string[] = [];
  for (let i = 0; i < width; i += 1) cells.push(renderCell(row[i] ?? ''));
  return `| ${cells.join(' | ')} |`;
}

/**
 * The header lines of a markdown pipe table (header row and `---` delimiter row). The first row of a
 * `DocBlock` table is its header, as in docling's markdown export.
 */
export function renderTableHeader(header: readonly string[], width: number): string {
  const delimiter = `| ${Array.from({ length: width }, () => '---').join(' | ')} |`;
  return `${renderTableRow(header, width)}\n${delimiter}`;
}

/** Number of columns of a table: its widest row. */
export function tableWidth(rows: readonly (readonly string[])[]): number {
  let width = 0;
  for (const row of rows) width = Math.max(width, row.length);
  return width;
}

/**
 * Renders rows as a markdown pipe table (the first row is the header), so hybrid chunks read like the
 * markdown the recursive chunker sees. Returns '' for a table without rows or columns.
 * @example renderMarkdownTable([['a', 'b'], ['1', '2']]) // '| a | b |\n| --- | --- |\n| 1 | 2 |'
 */
export function renderMarkdownTable(rows: readonly (readonly string[])[]): string {
  const width = tableWidth(rows);
  const [header, ...body] = rows;
  if (header === undefined || width === 0) return '';
  return [renderTableHeader(header, width), ...body.map((r) => renderTableRow(r, width))].join(
    '\n',
  );
}
