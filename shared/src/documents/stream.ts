/**
 * Documents as a stream: what {@link loadDocuments} loads, yielded one at a time, with `.jsonl` corpus files read
 * line by line instead of whole — so a corpus of any size is ingested in bounded memory, and never refused for its
 * file size (each record keeps its own bound, `maxTextChars`).
 */
import { createReadStream } from 'node:fs';
import { parseJsonlLine } from './jsonl.js';
import { DEFAULT_MAX_TEXT_CHARS } from './limits.js';
import {
  detectFormat,
  firstKeyWins,
  listDocumentFiles,
  loadWithSidecar,
  readSidecar,
} from './load.js';
import type {
  DocumentLoadFailure,
  DocumentLoadWarning,
  LoadedDocument,
  LoadOptions,
} from './types.js';
import { METADATA_SIDECAR_SUFFIX, withUserMetadata } from './user-metadata.js';

/** A single-use stream of documents, and what went wrong so far. */
export interface DocumentStream {
  /** The documents, in {@link loadDocuments}' order; iterate once. */
  documents: AsyncIterable<LoadedDocument>;
  /** Load failures, appended as they are found: complete once `documents` is exhausted. */
  failures: DocumentLoadFailure[];
  /** Load warnings, appended likewise. */
  warnings: DocumentLoadWarning[];
}

/** A line of a file: its text, or why it has none (over the length bound, not UTF-8). */
interface Line {
  number: number;
  text?: string;
  problem?: 'too_long' | 'not_utf8';
}

/**
 * The lines of a file, read in 1 MiB blocks; a line longer than `maxLineBytes` is reported (and skipped to its
 * end) without being held, so memory stays within about `maxLineBytes` + one block whatever the file holds.
 */
async function* readLines(absPath: string, maxLineBytes: number): AsyncGenerator<Line> {
  const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });
  let parts: Buffer[] = [];
  let size = 0;
  let overflow = false;
  let number = 0;
  const end = (): Line => {
    number += 1;
    if (overflow) return { number, problem: 'too_long' };
    try {
      return { number, text: decoder.decode(Buffer.concat(parts, size)) };
    } catch {
      return { number, problem: 'not_utf8' };
    }
  };
  for await (const block of createReadStream(absPath, { highWaterMark: 1024 * 1024 })) {
    let buf = block as Buffer;
    for (let nl = buf.indexOf(0x0a); nl !== -1; nl = buf.indexOf(0x0a)) {
      if (!overflow) {
        parts.push(buf.subarray(0, nl));
        size += nl;
        if (size > maxLineBytes) overflow = true;
      }
      yield end();
      parts = [];
      size = 0;
      overflow = false;
      buf = buf.subarray(nl + 1);
    }
    if (!overflow && buf.length > 0) {
      parts.push(buf);
      size += buf.length;
      if (size > maxLineBytes) {
        overflow = true;
        parts = [];
      }
    }
  }
  if (size > 0 || overflow) yield end();
}

/**
 * Streams the documents of `paths` (files and folders, as {@link loadDocuments} takes them). Each `.jsonl` file is
 * read line by line (its sidecar metadata, if any, applied to every record); other files are loaded one at a time
 * within `maxFileBytes`. A key seen twice keeps the first (`duplicate_key`), as in `loadDocuments`.
 * @throws {ValidationError} when a given path does not exist (before anything is yielded).
 */
export async function streamDocuments(
  paths: readonly string[],
  options: LoadOptions = {},
): Promise<DocumentStream> {
  const { files, sidecars, failures } = await listDocumentFiles(paths);
  const warnings: DocumentLoadWarning[] = [];
  const maxTextChars = options.maxTextChars ?? DEFAULT_MAX_TEXT_CHARS;
  // A record's text is at most maxTextChars characters: 4 bytes each in UTF-8 (JSON escapes aside), plus room.
  const maxLineBytes = maxTextChars * 4 + 1024 * 1024;
  const firstSource = new Map<string, string>();
  const accept = (doc: LoadedDocument): boolean => firstKeyWins(doc, firstSource, failures);

  async function* jsonl(file: { absPath: string; key: string }): AsyncGenerator<LoadedDocument> {
    const sidecar = `${file.absPath}${METADATA_SIDECAR_SUFFIX}`;
    let meta: Awaited<ReturnType<typeof readSidecar>> | undefined;
    if (sidecars.has(sidecar)) {
      meta = await readSidecar(sidecar);
      if (!meta.ok) {
        failures.push({
          key: file.key,
          sourcePath: sidecar,
          reason: 'invalid_record',
          message: `${file.key}: metadata sidecar is invalid (${meta.message})`,
        });
        return;
      }
    }
    let records = 0;
    try {
      for await (const line of readLines(file.absPath, maxLineBytes)) {
        const key = `${file.key}:${line.number}`;
        if (line.problem !== undefined) {
          records += 1;
          failures.push({
            key,
            sourcePath: file.absPath,
            reason: line.problem === 'too_long' ? 'too_large' : 'not_utf8',
            message:
              line.problem === 'too_long'
                ? `${key}: line over ${maxLineBytes} bytes`
                : `${key}: not valid UTF-8 text`,
          });
          continue;
        }
        const text = line.number === 1 ? (line.text ?? '').replace(/^\uFEFF/, '') : line.text;
        const parsed = parseJsonlLine(
          text ?? '',
          line.number,
          file.key,
          file.absPath,
          maxTextChars,
        );
        for (const w of parsed.warnings) warnings.push(w);
        if (parsed.failure) {
          records += 1;
          failures.push(parsed.failure);
        }
        if (parsed.document) {
          records += 1;
          const doc = meta?.ok ? withUserMetadata(parsed.document, meta.metadata) : parsed.document;
          if (accept(doc)) yield doc;
        }
      }
    } catch (error: unknown) {
      failures.push({
        key: file.key,
        sourcePath: file.absPath,
        reason: 'read_error',
        message: `${file.key}: could not be read (${error instanceof Error ? error.message : String(error)})`,
      });
      return;
    }
    if (records === 0) {
      failures.push({
        key: file.key,
        sourcePath: file.absPath,
        reason: 'empty',
        message: `${file.key}: no records found`,
      });
    }
  }

  async function* all(): AsyncGenerator<LoadedDocument> {
    for (const file of files) {
      if (detectFormat(file.absPath) === 'jsonl') {
        yield* jsonl(file);
        continue;
      }
      const result = await loadWithSidecar(file, sidecars, options);
      for (const f of result.failures) failures.push(f);
      for (const w of result.warnings ?? []) warnings.push(w);
      for (const doc of result.documents) if (accept(doc)) yield doc;
    }
  }

  return { documents: all(), failures, warnings };
}
