import {
  type FilterNode,
  type FilterPath,
  type FilterValue,
  parseMetadataFilter,
} from '../filter.js';
import type { MetadataFilter } from '../types.js';

/**
 * The one way a value reaches a Milvus boolean expression. Strings are double-quoted with `\` and `"` escaped
 * (and control characters written as escapes), numbers and booleans are written literally, so no
 * caller-supplied text can change the expression's structure.
 * @throws {TypeError} for a non-finite number or another type.
 * @example milvusLiteral('say "hi"') // '"say \\"hi\\""'
 */
export function milvusLiteral(value: string | number | boolean): string {
  if (typeof value === 'string') {
    const body = value
      .replace(/\\/g, '\\\\')
      .replace(/"/g, '\\"')
      .replace(/\n/g, '\\n')
      .replace(/\r/g, '\\r')
      .replace(/\t/g, '\\t');
    return `"${body}"`;
  }
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  throw new TypeError('a Milvus literal must be a string, a finite number or a boolean');
}

/** `[lit, lit, ...]` for `in` / `not in`. */
export function milvusList(values: readonly (string | number | boolean)[]): string {
  return `[${values.map(milvusLiteral).join(', ')}]`;
}

/** A `like` pattern matching strings that start with `prefix` (`\\`, `%` and `_` escaped with `\\`). */
export function milvusPrefixPattern(prefix: string): string {
  return `${prefix.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/**
 * The Milvus operand of a filter path. `document_id` (all values strings) and `sequence_number` (all values
 * integers) use their scalar fields; anything else compares the JSON metadata (`chunk_content["key"]`, user
 * metadata `chunk_content["user"]["key"]`), where Milvus compares typed values (1 ≠ "1"), as the other stores.
 */
function operand(path: FilterPath, values: readonly FilterValue[]): string {
  if (
    path.length === 1 &&
    path[0] === 'document_id' &&
    values.every((v) => typeof v === 'string')
  ) {
    return 'document_id';
  }
  if (
    path.length === 1 &&
    path[0] === 'sequence_number' &&
    values.every((v) => typeof v === 'number' && Number.isSafeInteger(v))
  ) {
    return 'sequence_number';
  }
  return `chunk_content${path.map((p) => `[${milvusLiteral(p)}]`).join('')}`;
}

/** Compiles a parsed filter to a Milvus boolean expression (values through {@link milvusLiteral}). */
export function filterNodeExpr(node: FilterNode): string {
  switch (node.op) {
    case 'and':
    case 'or':
      return node.children.map((c) => `(${filterNodeExpr(c)})`).join(` ${node.op} `);
    case 'not':
      return `not (${filterNodeExpr(node.child)})`;
    case 'eq':
      return `${operand(node.path, [node.value])} == ${milvusLiteral(node.value)}`;
    // `ne` / `nin` as the negation of `==` / `in`, so chunks without the field match (as on pgvector).
    case 'ne':
      return `not (${operand(node.path, [node.value])} == ${milvusLiteral(node.value)})`;
    case 'in':
      return `${operand(node.path, node.values)} in ${milvusList(node.values)}`;
    case 'nin':
      return `not (${operand(node.path, node.values)} in ${milvusList(node.values)})`;
    case 'startsWith':
      return `${operand(node.path, [node.value])} like ${milvusLiteral(milvusPrefixPattern(node.value))}`;
    default: {
      const sym = { gt: '>', gte: '>=', lt: '<', lte: '<=' }[node.op];
      return `${operand(node.path, [node.value])} ${sym} ${milvusLiteral(node.value)}`;
    }
  }
}

/**
 * Builds the Milvus boolean expression of a metadata filter; an empty filter gives `''` (no filter).
 * @throws {MetadataFilterError} for a malformed filter, or (with `nonEmpty`) an empty one.
 * @example metadataFilterExpr({ document_id: 'd1', 'user.lang': 'en' })
 * // '(document_id == "d1") and (chunk_content["user"]["lang"] == "en")'
 */
export function metadataFilterExpr(
  filter: MetadataFilter | undefined,
  options: { nonEmpty?: boolean } = {},
): string {
  const node = parseMetadataFilter(filter ?? {}, options);
  return node === undefined ? '' : filterNodeExpr(node);
}

/** Joins expressions with `and`, parenthesized, skipping empty ones. */
export function andExpr(...parts: string[]): string {
  const nonEmpty = parts.filter((p) => p.length > 0);
  if (nonEmpty.length <= 1) return nonEmpty[0] ?? '';
  return nonEmpty.map((p) => `(${p})`).join(' and ');
}
