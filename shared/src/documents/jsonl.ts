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
    const line = rawLine.trim();
    if (!line) return;
    const key = `${fileKey}:${index + 1}`;
    const fail = (reason: DocumentLoadFailure['reason'], why: string): void => {
      failures.push({ key, sourcePath, reason, message: `${key}: ${why}` });
    };
    let record: unknown;
    try {
      record = JSON.parse(line);
    } catch (error: unknown) {
      fail(
        'invalid_record',
        `invalid JSON (${error instanceof Error ? error.message : String(error)})`,
      );
      return;
    }
    if (typeof record !== 'object' || record === null || Array.isArray(record)) {
      fail('invalid_record', 'expected a JSON object with "id" and "text"');
      return;
    }
    const { id, title, text, metadata } = record as Record<string, unknown>;
    if ((typeof id !== 'string' || id.trim() === '') && typeof id !== 'number') {
      fail('invalid_record', 'missing a non-empty string "id"');
      return;
    }
    if (typeof text !== 'string') {
      fail('invalid_record', 'missing a string "text"');
      return;
    }
    if (title !== undefined && title !== null && typeof title !== 'string') {
      fail('invalid_record', '"title" must be a string when present');
      return;
    }
    const userMetadata =
      metadata === undefined || metadata === null ? undefined : parseUserMetadata(metadata);
    if (userMetadata?.ok === false) {
      fail('invalid_record', `"metadata": ${userMetadata.message}`);
      return;
    }
    if (hasUnstorable(String(id))) {
      fail('invalid_record', '"id" holds a NUL character or an unpaired surrogate');
      return;
    }
    if (text.length > maxTextChars) {
      fail('too_large', `"text" is ${text.length} characters, over the limit of ${maxTextChars}`);
      return;
    }
    const rawTitle = typeof title === 'string' && title.trim() ? title.trim() : undefined;
    const rawBody = text.replace(/\r\n?/g, '\n');
    const counts = unstorableCounts();
    const cleanTitle =
      rawTitle === undefined ? undefined : cleanText(rawTitle, counts) || undefined;
    const body = cleanText(rawBody, counts);
    if (!body.trim() && !cleanTitle) {
      fail('empty', 'record has no text');
      return;
    }
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
    documents.push(userMetadata?.ok ? withUserMetadata(doc, userMetadata.metadata) : doc);
    for (const warning of unstorableWarnings(key, sourcePath, counts)) warnings.push(warning);
  });
  return { documents, failures, warnings };
}
