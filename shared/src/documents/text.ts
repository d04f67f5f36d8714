import { DocumentParseError } from './errors.js';
import { collapseWhitespace } from './render.js';
import type { DocBlock } from './types.js';

/**
 * Decodes UTF-8 strictly: a latin-1 or binary file must be reported, not silently turned into
 * replacement characters that would then be embedded and searched.
 *
 * @throws {DocumentParseError} `not_utf8` when the bytes are not valid UTF-8.
 */
export function decodeUtf8(bytes: Uint8Array, label: string): string {
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch (error: unknown) {
    throw new DocumentParseError('not_utf8', `${label}: not valid UTF-8 text`, {
      cause: error,
    });
  }
}

/**
 * Normalises source text so chunk offsets are stable across platforms: BOM stripped, CRLF (and
 * lone CR) turned into LF.
 */
export function normalizeNewlines(text: string): string {
  return text.replace(/^\uFEFF/, '').replace(/\r\n?/g, '\n');
}

/** Splits plain text into paragraph blocks on blank lines; plain text has no headings. */
export function parsePlainText(source: string): DocBlock[] {
  return normalizeNewlines(source)
    .split(/\n[ \t]*\n/)
    .map(collapseWhitespace)
    .filter((text) => text.length > 0)
    .map((text) => ({ type: 'paragraph', text }));
}
