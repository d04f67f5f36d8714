import { validateMetadataFilter } from '../filter.js';
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

/**
 * One equality term. `document_id` (string values) and `sequence_number` (integer values) use their scalar
 * fields; any other key, or a value of another type, compares the JSON metadata (`chunk_content["key"]`),
 * where Milvus compares typed values (1 ≠ "1"), matching the other backends.
 */
function term(key: string, value: string | number | boolean): string {
  if (key === 'document_id' && typeof value === 'string')
    return `document_id == ${milvusLiteral(value)}`;
  if (key === 'sequence_number' && typeof value === 'number' && Number.isSafeInteger(value)) {
    return `sequence_number == ${milvusLiteral(value)}`;
  }
  return `chunk_content[${milvusLiteral(key)}] == ${milvusLiteral(value)}`;
}

/**
 * Builds the Milvus boolean expression of a metadata equality filter (terms joined with `and`); an empty
 * filter gives `''` (no filter). Keys are validated by {@link validateMetadataFilter}.
 * @throws {VectorStoreConfigError} for a bad key or value, or (with `nonEmpty`) an empty filter.
 * @example metadataFilterExpr({ document_id: 'd1', lang: 'en' })
 * // 'document_id == "d1" and chunk_content["lang"] == "en"'
 */
export function metadataFilterExpr(
  filter: MetadataFilter | undefined,
  options: { nonEmpty?: boolean } = {},
): string {
  const f = validateMetadataFilter(filter ?? {}, options);
  return Object.entries(f)
    .map(([k, v]) => term(k, v))
    .join(' and ');
}

/** Joins expressions with `and`, parenthesized, skipping empty ones. */
export function andExpr(...parts: string[]): string {
  const nonEmpty = parts.filter((p) => p.length > 0);
  if (nonEmpty.length <= 1) return nonEmpty[0] ?? '';
  return nonEmpty.map((p) => `(${p})`).join(' and ');
}
