import type { ParsedStructure } from './markdown.js';
import type { DocBlock, DocumentLoadWarning } from './types.js';

/** Characters removed or replaced so far, for the load warning. */
export interface UnstorableCounts {
  /** U+0000 characters stripped: PostgreSQL `text` cannot hold them (SQLSTATE 22021). */
  nul: number;
  /** Unpaired UTF-16 surrogates replaced with U+FFFD: they have no UTF-8 encoding. */
  surrogates: number;
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
const ANY_SURROGATE = /[\uD800-\uDFFF]/;

/** A fresh zeroed counter. */
export function unstorableCounts(): UnstorableCounts {
  return { nul: 0, surrogates: 0 };
}

/** True when `text` holds a NUL or an unpaired surrogate, i.e. PostgreSQL would reject it. */
export function hasUnstorable(text: string): boolean {
  if (text.includes('\0')) return true;
  if (!ANY_SURROGATE.test(text)) return false;
  LONE_SURROGATE.lastIndex = 0;
  return LONE_SURROGATE.test(text);
}

/**
 * Strips NUL characters and replaces unpaired surrogates with U+FFFD, counting both into `counts`
 * when given. Strings without either are returned as they are (two cheap scans).
 *
 * @example cleanText('a\u0000b', counts); // 'ab', counts.nul === 1
 */
export function cleanText(text: string, counts?: UnstorableCounts): string {
  let out = text;
  if (out.includes('\0')) {
    const before = out.length;
    out = out.replaceAll('\0', '');
    if (counts) counts.nul += before - out.length;
  }
  if (ANY_SURROGATE.test(out)) {
    out = out.replace(LONE_SURROGATE, () => {
      if (counts) counts.surrogates++;
      return '\uFFFD';
    });
  }
  return out;
}

function cleanBlock(block: DocBlock, counts: UnstorableCounts | undefined): DocBlock {
  switch (block.type) {
    case 'heading':
    case 'paragraph':
    case 'code':
      return { ...block, text: cleanText(block.text, counts) };
    case 'list':
      return { ...block, items: block.items.map((item) => cleanText(item, counts)) };
    case 'table':
      return {
        ...block,
        rows: block.rows.map((row) => row.map((cell) => cleanText(cell, counts))),
      };
  }
}

/** {@link cleanText} over a structure's title and every block; counts only the blocks. */
export function cleanStructure(
  structure: ParsedStructure,
  counts?: UnstorableCounts,
): ParsedStructure {
  const title = structure.title === undefined ? undefined : cleanText(structure.title);
  return { title, blocks: structure.blocks.map((block) => cleanBlock(block, counts)) };
}

/** The load warnings for what {@link cleanText} counted in one document (none when it was clean). */
export function unstorableWarnings(
  key: string,
  sourcePath: string,
  counts: UnstorableCounts,
): DocumentLoadWarning[] {
  const warnings: DocumentLoadWarning[] = [];
  const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;
  if (counts.nul > 0) {
    warnings.push({
      key,
      sourcePath,
      reason: 'nul_stripped',
      message: `${key}: stripped ${plural(counts.nul, 'NUL character')} (U+0000), which PostgreSQL cannot store`,
    });
  }
  if (counts.surrogates > 0) {
    warnings.push({
      key,
      sourcePath,
      reason: 'invalid_unicode_replaced',
      message: `${key}: replaced ${plural(counts.surrogates, 'unpaired UTF-16 surrogate')} with U+FFFD (they have no UTF-8 encoding)`,
    });
  }
  return warnings;
}
