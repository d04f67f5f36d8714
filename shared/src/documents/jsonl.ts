import { createHash } from 'node:crypto';
import { DEFAULT_MAX_TEXT_CHARS } from './limits.js';
import { cleanText, hasUnstorable, unstorableCounts, unstorableWarnings } from './sanitize.js';
import { parsePlainText } from './text.js';
import type {
  DocBlock,
  DocumentLoadFailure,
  DocumentLoadWarning,
  LoadedDocument,
  LoadResult,
} from './types.js';
import { parseUserMetadata, withUserMetadata } from './user-metadata.js';

function sha256(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/** Options of {@link parseJsonl}. */
export interface JsonlParseOptions {
  /** Bound on one record's text; `too_large` above. Default `DEFAULT_MAX_TEXT_CHARS`. */
  maxTextChars?: number;
}

/**
 * Splits a corpus file (one `{"id","title","text"}` object per line, with an optional `"metadata"` object of
 * user metadata, see `user-metadata.ts`) into documents. A bad line
 * becomes an `invalid_record` failure keyed `file.jsonl:LINE`; the other lines still load.
 * The content hash covers `title + "\n" + text` (title empty when absent), so a re-ingest skips
 * unchanged records even when other lines of the file changed. NUL characters and unpaired
 * surrogates (JSON `\u0000`, `\ud800` escapes) are stripped/replaced with a warning per record;
 * the hash is of the record as written. An `id` holding either is an `invalid_record`.
 */
export function parseJsonl(
  source: string,
  fileKey: string,
  sourcePath: string,
  options: JsonlParseOptions = {},
): LoadResult {
  const maxTextChars = options.maxTextChars ?? DEFAULT_MAX_TEXT_CHARS;
  const documents: LoadedDocument[] = [];
  const failures: DocumentLoadFailure[] = [];
  const warnings: DocumentLoadWarning[] = [];
  const lines = source.replace(/^\uFEFF/, '').split('\n');
  lines.forEach((rawLine, index) => {
    const parsed = parseJsonlLine(rawLine, index + 1, fileKey, sourcePath, maxTextChars);
    if (parsed.document) documents.push(parsed.document);
    if (parsed.failure) failures.push(parsed.failure);
    for (const warning of parsed.warnings) warnings.push(warning);
  });
  return { documents, failures, warnings };
}

/** One line of a corpus file, parsed: its document, or its failure, and its warnings (nothing for a blank line). */
export interface JsonlLine {
  document?: LoadedDocument;
  failure?: DocumentLoadFailure;
  warnings: DocumentLoadWarning[];
}

/** Parses line `lineNumber` (1-based) of a corpus file, by the rules of {@link parseJsonl}. */
export function parseJsonlLine(
  rawLine: string,
  lineNumber: number,
  fileKey: string,
  sourcePath: string,
  maxTextChars: number = DEFAULT_MAX_TEXT_CHARS,
): JsonlLine {
  const line = rawLine.trim();
  if (!line) return { warnings: [] };
  const key = `${fileKey}:${lineNumber}`;
  const fail = (reason: DocumentLoadFailure['reason'], why: string): JsonlLine => ({
    failure: { key, sourcePath, reason, message: `${key}: ${why}` },
    warnings: [],
  });
  let record: unknown;
  try {
    record = JSON.parse(line);
  } catch (error: unknown) {
    return fail(
      'invalid_record',
      `invalid JSON (${error instanceof Error ? error.message : String(error)})`,
    );
  }
  if (typeof record !== 'object' || record === null || Array.isArray(record)) {
    return fail('invalid_record', 'expected a JSON object with "id" and "text"');
  }
  const { id, title, text, metadata } = record as Record<string, unknown>;
  if ((typeof id !== 'string' || id.trim() === '') && typeof id !== 'number') {
    return fail('invalid_record', 'missing a non-empty string "id"');
  }
  if (typeof text !== 'string') return fail('invalid_record', 'missing a string "text"');
  if (title !== undefined && title !== null && typeof title !== 'string') {
    return fail('invalid_record', '"title" must be a string when present');
  }
  const userMetadata =
    metadata === undefined || metadata === null ? undefined : parseUserMetadata(metadata);
  if (userMetadata?.ok === false) {
    return fail('invalid_record', `"metadata": ${userMetadata.message}`);
  }
  if (hasUnstorable(String(id))) {
    return fail('invalid_record', '"id" holds a NUL character or an unpaired surrogate');
  }
  if (text.length > maxTextChars) {
    return fail(
      'too_large',
      `"text" is ${text.length} characters, over the limit of ${maxTextChars}`,
    );
  }
  const rawTitle = typeof title === 'string' && title.trim() ? title.trim() : undefined;
  const rawBody = text.replace(/\r\n?/g, '\n');
  const counts = unstorableCounts();
  const cleanTitle = rawTitle === undefined ? undefined : cleanText(rawTitle, counts) || undefined;
  const body = cleanText(rawBody, counts);
  if (!body.trim() && !cleanTitle) return fail('empty', 'record has no text');
  const blocks: DocBlock[] = [
    ...(cleanTitle ? [{ type: 'heading', level: 1, text: cleanTitle } as const] : []),
    ...parsePlainText(body),
  ];
  const doc: LoadedDocument = {
    key: String(id),
    title: cleanTitle,
    text: cleanTitle ? `${cleanTitle}\n\n${body}` : body,
    blocks,
    contentHash: sha256(`${rawTitle ?? ''}\n${rawBody}`),
    format: 'jsonl',
    sourcePath,
  };
  return {
    document: userMetadata?.ok ? withUserMetadata(doc, userMetadata.metadata) : doc,
    warnings: unstorableWarnings(key, sourcePath, counts),
  };
}
