import { createHash } from 'node:crypto';
import type { Dirent } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { ValidationError } from '../errors.js';
import { parseDocx, parsePdf } from './binary.js';
import { parseDocling } from './docling.js';
import { DocumentParseError } from './errors.js';
import { parseHtml } from './html.js';
import { parseJsonl } from './jsonl.js';
import {
  DEFAULT_MAX_DOCX_INFLATED_BYTES,
  DEFAULT_MAX_DOCX_XML_BYTES,
  DEFAULT_MAX_NESTING_DEPTH,
  DEFAULT_MAX_PDF_INFLATED_BYTES,
  DEFAULT_MAX_PDF_PAGES,
  DEFAULT_MAX_TEXT_CHARS,
} from './limits.js';
import { type ParsedStructure, parseMarkdown } from './markdown.js';
import { renderBlocks } from './render.js';
import { cleanStructure, cleanText, unstorableCounts, unstorableWarnings } from './sanitize.js';
import { decodeUtf8, normalizeNewlines, parsePlainText } from './text.js';
import type {
  DocBlock,
  DocumentFormat,
  DocumentLoadFailure,
  DocumentLoadWarning,
  LoadedDocument,
  LoadOptions,
  LoadResult,
  UserMetadata,
} from './types.js';
import {
  isMetadataSidecar,
  METADATA_SIDECAR_SUFFIX,
  parseUserMetadata,
  USER_METADATA_LIMITS,
  withUserMetadata,
} from './user-metadata.js';

/** Default per-file size limit: larger files are reported `too_large` without being read. */
export const DEFAULT_MAX_FILE_BYTES = 50 * 1024 * 1024;
/** Default number of files parsed at once. */
export const DEFAULT_LOAD_CONCURRENCY = 4;
/** Upper bound on `concurrency`: parsing is CPU- and memory-bound, more workers only add memory. */
export const MAX_LOAD_CONCURRENCY = 32;

const FORMATS: Readonly<Record<string, DocumentFormat>> = {
  '.txt': 'txt',
  '.md': 'md',
  '.markdown': 'md',
  '.html': 'html',
  '.htm': 'html',
  '.pdf': 'pdf',
  '.docx': 'docx',
  '.json': 'docling',
  '.jsonl': 'jsonl',
};

/** The format a file is parsed as, from its extension (case-insensitive); undefined if unsupported. */
export function detectFormat(filePath: string): DocumentFormat | undefined {
  return FORMATS[path.extname(filePath).toLowerCase()];
}

function sha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** `LoadOptions` with every default filled in. */
type ResolvedLoadOptions = Required<LoadOptions>;

function resolveOptions(options: LoadOptions | undefined): ResolvedLoadOptions {
  const resolved: ResolvedLoadOptions = {
    maxFileBytes: options?.maxFileBytes ?? DEFAULT_MAX_FILE_BYTES,
    concurrency: options?.concurrency ?? DEFAULT_LOAD_CONCURRENCY,
    maxTextChars: options?.maxTextChars ?? DEFAULT_MAX_TEXT_CHARS,
    maxPdfPages: options?.maxPdfPages ?? DEFAULT_MAX_PDF_PAGES,
    maxPdfInflatedBytes: options?.maxPdfInflatedBytes ?? DEFAULT_MAX_PDF_INFLATED_BYTES,
    maxDocxInflatedBytes: options?.maxDocxInflatedBytes ?? DEFAULT_MAX_DOCX_INFLATED_BYTES,
    maxDocxXmlBytes: options?.maxDocxXmlBytes ?? DEFAULT_MAX_DOCX_XML_BYTES,
    maxNestingDepth: options?.maxNestingDepth ?? DEFAULT_MAX_NESTING_DEPTH,
  };
  for (const [name, value] of Object.entries(resolved)) {
    if (!Number.isInteger(value) || value < 1) {
      throw new ValidationError(`${name} must be a positive integer, got ${value}`);
    }
  }
  if (resolved.concurrency > MAX_LOAD_CONCURRENCY) {
    throw new ValidationError(
      `concurrency must be an integer from 1 to ${MAX_LOAD_CONCURRENCY}, got ${resolved.concurrency}`,
    );
  }
  return resolved;
}

/** A parsed file: its structure, plus its source text for the formats that keep it verbatim. */
interface Parsed {
  structure: ParsedStructure;
  sourceText?: string;
}

async function parseStructure(
  format: Exclude<DocumentFormat, 'jsonl'>,
  bytes: Uint8Array,
  key: string,
  options: ResolvedLoadOptions,
): Promise<Parsed> {
  const maxDepth = options.maxNestingDepth;
  switch (format) {
    case 'txt': {
      const sourceText = normalizeNewlines(decodeUtf8(bytes, key));
      return { structure: { blocks: parsePlainText(sourceText) }, sourceText };
    }
    case 'md': {
      const sourceText = normalizeNewlines(decodeUtf8(bytes, key));
      return { structure: parseMarkdown(sourceText), sourceText };
    }
    case 'html':
      return { structure: parseHtml(decodeUtf8(bytes, key), { label: key, maxDepth }) };
    case 'docling':
      return { structure: parseDocling(decodeUtf8(bytes, key), key, { maxDepth }) };
    case 'pdf':
      return {
        structure: await parsePdf(bytes, key, {
          maxPages: options.maxPdfPages,
          maxTextChars: options.maxTextChars,
          maxInflatedBytes: options.maxPdfInflatedBytes,
        }),
      };
    case 'docx':
      return {
        structure: await parseDocx(bytes, key, {
          maxInflatedBytes: options.maxDocxInflatedBytes,
          maxXmlBytes: options.maxDocxXmlBytes,
          maxDepth,
        }),
      };
  }
}

/**
 * Characters of text in the blocks, without markup: a lower bound on what `renderBlocks` returns,
 * checked before rendering so that a huge extraction is refused before it is joined into one string.
 */
function blockChars(blocks: readonly DocBlock[]): number {
  let chars = 0;
  for (const block of blocks) {
    if (block.type === 'list') for (const item of block.items) chars += item.length;
    else if (block.type === 'table') {
      for (const row of block.rows) for (const cell of row) chars += cell.length;
    } else chars += block.text.length;
  }
  return chars;
}

function tooLong(key: string, chars: string, limit: number): DocumentParseError {
  return new DocumentParseError(
    'too_large',
    `${key}: extracted text is ${chars} characters, over the limit of ${limit}; refused`,
  );
}

/**
 * Maps what a parser can still throw past our bounds to a per-file failure: a stack overflow
 * (`too_deep`) or a string/buffer beyond V8's limits (`too_large`); anything else is `corrupt`.
 */
function failureOf(key: string, error: unknown): DocumentParseError {
  if (error instanceof DocumentParseError) return error;
  const message = error instanceof Error ? error.message : String(error);
  if (error instanceof RangeError && /call stack/i.test(message)) {
    return new DocumentParseError('too_deep', `${key}: nested too deeply to parse (${message})`, {
      cause: error,
    });
  }
  if (
    error instanceof RangeError &&
    /string length|string longer|allocation failed/i.test(message)
  ) {
    return new DocumentParseError('too_large', `${key}: too large to parse (${message})`, {
      cause: error,
    });
  }
  return new DocumentParseError('corrupt', `${key}: could not be parsed (${message})`, {
    cause: error,
  });
}

/**
 * Loads one file as one document (or, for `.jsonl`, as many). Never throws for a bad file: the
 * problem is returned as a failure so one broken upload cannot stop an ingest.
 *
 * @param absPath absolute path of the file
 * @param key the document key (path relative to the ingested folder, POSIX separators)
 * @example
 * const { documents, failures } = await loadFile('/data/docs/guide/intro.md', 'guide/intro.md');
 */
export async function loadFile(
  absPath: string,
  key: string,
  options?: LoadOptions,
): Promise<LoadResult> {
  const resolved = resolveOptions(options);
  const { maxFileBytes } = resolved;
  const failure = (reason: DocumentLoadFailure['reason'], message: string): LoadResult => ({
    documents: [],
    failures: [{ key, sourcePath: absPath, reason, message }],
    warnings: [],
  });
  const format = detectFormat(absPath);
  if (!format) {
    const ext = path.extname(absPath) || '(none)';
    return failure(
      'unsupported_type',
      `${key}: unsupported file type "${ext}" (supported: ${Object.keys(FORMATS).join(', ')})`,
    );
  }
  let bytes: Uint8Array;
  try {
    const info = await stat(absPath);
    if (info.size > maxFileBytes) {
      return failure(
        'too_large',
        `${key}: file is ${info.size} bytes, over the limit of ${maxFileBytes} bytes`,
      );
    }
    if (info.size === 0) return failure('empty', `${key}: file is empty (0 bytes)`);
    bytes = await readFile(absPath);
  } catch (error: unknown) {
    return failure(
      'read_error',
      `${key}: could not be read (${error instanceof Error ? error.message : String(error)})`,
    );
  }
  return loadBytes(bytes, key, { ...resolved, sourcePath: absPath });
}

/** Options of {@link loadBytes}: the bounds of `LoadOptions` (`concurrency` is unused) and the path to report. */
export interface LoadBytesOptions extends LoadOptions {
  /** Reported as the documents' and failures' `sourcePath`. Default: the key. */
  sourcePath?: string;
}

/**
 * Parses one document from its bytes (an S3 object, an upload) by the key's extension. Never throws for bad
 * content: the problem is returned as a failure, as {@link loadFile} does. Hostile input fails within the
 * bounds of `options` (see `LoadOptions`); NUL characters and unpaired surrogates are removed from the
 * text with a `warnings` entry, while `contentHash` stays the hash of the bytes given.
 *
 * @throws {ValidationError} when an option is out of range.
 * @example const { documents, warnings } = await loadBytes(bytes, 'guides/intro.md');
 */
export async function loadBytes(
  bytes: Uint8Array,
  key: string,
  options: LoadBytesOptions = {},
): Promise<LoadResult> {
  const resolved = resolveOptions(options);
  const { maxFileBytes, maxTextChars } = resolved;
  const sourcePath = options.sourcePath ?? key;
  const failure = (reason: DocumentLoadFailure['reason'], message: string): LoadResult => ({
    documents: [],
    failures: [{ key, sourcePath, reason, message }],
    warnings: [],
  });
  const format = detectFormat(key);
  if (!format) {
    const ext = path.extname(key) || '(none)';
    return failure(
      'unsupported_type',
      `${key}: unsupported file type "${ext}" (supported: ${Object.keys(FORMATS).join(', ')})`,
    );
  }
  if (bytes.byteLength > maxFileBytes) {
    return failure(
      'too_large',
      `${key}: file is ${bytes.byteLength} bytes, over the limit of ${maxFileBytes} bytes`,
    );
  }
  if (bytes.byteLength === 0) return failure('empty', `${key}: file is empty (0 bytes)`);
  try {
    if (format === 'jsonl') {
      const result = parseJsonl(decodeUtf8(bytes, key), key, sourcePath, { maxTextChars });
      if (result.documents.length === 0 && result.failures.length === 0) {
        return failure('empty', `${key}: no records found`);
      }
      return result;
    }
    const { structure, sourceText } = await parseStructure(format, bytes, key, resolved);
    // Count what is stripped where the text comes from: the source, or the blocks it is rendered from.
    const counts = unstorableCounts();
    const clean = cleanStructure(structure, sourceText === undefined ? counts : undefined);
    let text: string;
    if (sourceText === undefined) {
      const chars = blockChars(clean.blocks);
      if (chars > maxTextChars) throw tooLong(key, `at least ${chars}`, maxTextChars);
      text = renderBlocks(clean.blocks);
    } else {
      text = cleanText(sourceText, counts);
    }
    if (text.length > maxTextChars) throw tooLong(key, String(text.length), maxTextChars);
    if (!text.trim()) return failure('empty', `${key}: no text found after extraction`);
    const document: LoadedDocument = {
      key,
      title: clean.title,
      text,
      blocks: clean.blocks,
      contentHash: sha256(bytes),
      format,
      sourcePath,
    };
    return {
      documents: [document],
      failures: [],
      warnings: unstorableWarnings(key, sourcePath, counts),
    };
  } catch (error: unknown) {
    const parseError = failureOf(key, error);
    return failure(parseError.reason, parseError.message);
  }
}

/** A file to load: its absolute path and its document key. */
export interface FileEntry {
  absPath: string;
  key: string;
}

async function walkFolder(
  root: string,
  relative: string,
  out: FileEntry[],
  failures: DocumentLoadFailure[],
): Promise<void> {
  const folder = path.join(root, relative);
  let entries: Dirent[];
  try {
    entries = await readdir(folder, { withFileTypes: true });
  } catch (error: unknown) {
    if (!relative) throw new ValidationError(`folder cannot be read: ${folder}`, { cause: error });
    failures.push({
      key: relative,
      sourcePath: folder,
      reason: 'read_error',
      message: `${relative}: folder could not be read (${error instanceof Error ? error.message : String(error)})`,
    });
    return;
  }
  const visible = entries.filter((entry) => !entry.name.startsWith('.'));
  // Code-unit order, not locale order: keys and ingest order must not depend on the machine.
  visible.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const entry of visible) {
    const rel = relative ? `${relative}/${entry.name}` : entry.name;
    const abs = path.join(root, rel);
    if (entry.isDirectory()) {
      await walkFolder(root, rel, out, failures);
    } else if (entry.isFile()) {
      out.push({ absPath: abs, key: rel });
    } else if (entry.isSymbolicLink()) {
      // Linked files are followed; linked folders are not, so a link cycle cannot hang the walk.
      const target = await stat(abs).catch(() => undefined);
      if (target?.isFile()) out.push({ absPath: abs, key: rel });
    }
  }
}

/** Reads and checks a sidecar metadata file (≤ {@link USER_METADATA_LIMITS}.sidecarBytes of JSON). */
export async function readSidecar(
  absPath: string,
): Promise<{ ok: true; metadata: UserMetadata } | { ok: false; message: string }> {
  try {
    const info = await stat(absPath);
    if (info.size > USER_METADATA_LIMITS.sidecarBytes) {
      return { ok: false, message: `over ${USER_METADATA_LIMITS.sidecarBytes} bytes` };
    }
    return parseUserMetadata(JSON.parse(await readFile(absPath, 'utf8')));
  } catch (error: unknown) {
    return { ok: false, message: error instanceof Error ? error.message : String(error) };
  }
}

/** {@link loadFile}, then the file's sidecar metadata attached to each of its documents. */
export async function loadWithSidecar(
  file: FileEntry,
  sidecars: ReadonlySet<string>,
  options: LoadOptions,
): Promise<LoadResult> {
  const result = await loadFile(file.absPath, file.key, options);
  const sidecar = `${file.absPath}${METADATA_SIDECAR_SUFFIX}`;
  if (!sidecars.has(sidecar) || result.documents.length === 0) return result;
  const meta = await readSidecar(sidecar);
  if (!meta.ok) {
    // A document without the metadata it was given would be found by the wrong filters: fail it.
    return {
      documents: [],
      failures: [
        ...result.failures,
        {
          key: file.key,
          sourcePath: sidecar,
          reason: 'invalid_record',
          message: `${file.key}: metadata sidecar ${path.basename(sidecar)} is invalid (${meta.message})`,
        },
      ],
      warnings: result.warnings ?? [],
    };
  }
  return { ...result, documents: result.documents.map((d) => withUserMetadata(d, meta.metadata)) };
}

/**
 * Whether `doc` is the first document with its key (`firstSource`: key → where it was loaded from, updated); a
 * later one becomes a `duplicate_key` failure: the first is kept.
 */
export function firstKeyWins(
  doc: LoadedDocument,
  firstSource: Map<string, string>,
  failures: DocumentLoadFailure[],
): boolean {
  const first = firstSource.get(doc.key);
  if (first !== undefined) {
    failures.push({
      key: doc.key,
      sourcePath: doc.sourcePath ?? '',
      reason: 'duplicate_key',
      message: `${doc.key}: duplicate document key (already loaded from ${first}); kept the first`,
    });
    return false;
  }
  firstSource.set(doc.key, doc.sourcePath ?? doc.key);
  return true;
}

/**
 * The files {@link loadDocuments} loads from `paths`, in order (folders walked sorted, hidden entries skipped), the
 * sidecar metadata files among them (set apart, never documents), and the folders that could not be read.
 * @throws {ValidationError} when a given path does not exist.
 */
export async function listDocumentFiles(paths: readonly string[]): Promise<{
  files: FileEntry[];
  sidecars: Set<string>;
  failures: DocumentLoadFailure[];
}> {
  const files: FileEntry[] = [];
  const failures: DocumentLoadFailure[] = [];
  for (const given of paths) {
    const absolute = path.resolve(given);
    const info = await stat(absolute).catch((error: unknown) => {
      throw new ValidationError(`path does not exist or cannot be read: ${given}`, {
        cause: error,
      });
    });
    if (info.isDirectory()) await walkFolder(absolute, '', files, failures);
    else {
      files.push({ absPath: absolute, key: path.basename(absolute) });
      const sidecar = `${absolute}${METADATA_SIDECAR_SUFFIX}`;
      if ((await stat(sidecar).catch(() => undefined))?.isFile()) {
        files.push({ absPath: sidecar, key: path.basename(sidecar) });
      }
    }
  }
  // Sidecars (`<file>.metadata.json`) are metadata of their file, never documents themselves.
  const sidecars = new Set(files.filter((f) => isMetadataSidecar(f.absPath)).map((f) => f.absPath));
  return { files: files.filter((f) => !sidecars.has(f.absPath)), sidecars, failures };
}

/**
 * Loads documents from files and folders. Folders are walked recursively in sorted order
 * (hidden entries skipped); each file's key is its path relative to the folder, or its basename
 * when the path is a file. Bad files become `failures`; a key seen twice keeps the first. A sidecar
 * `<file>.metadata.json` next to a file is its user metadata (attached to its documents, never loaded as one;
 * an invalid sidecar fails its file).
 *
 * @throws {ValidationError} when a given path does not exist or an option is out of range.
 * @example
 * const { documents, failures } = await loadDocuments(['examples/docs'], { concurrency: 2 });
 */
export async function loadDocuments(paths: string[], options?: LoadOptions): Promise<LoadResult> {
  const resolved = resolveOptions(options);
  const { files, sidecars, failures: walkFailures } = await listDocumentFiles(paths);
  const results: LoadResult[] = new Array(files.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < files.length) {
      const index = next++;
      const file = files[index];
      if (file) results[index] = await loadWithSidecar(file, sidecars, resolved);
    }
  };
  await Promise.all(Array.from({ length: Math.min(resolved.concurrency, files.length) }, worker));

  const documents: LoadedDocument[] = [];
  const failures: DocumentLoadFailure[] = [...walkFailures];
  const warnings: DocumentLoadWarning[] = [];
  const firstSource = new Map<string, string>();
  for (const result of results) {
    // Loops, not push(...spread): a jsonl file can yield more failures than a call takes arguments.
    for (const failure of result.failures) failures.push(failure);
    for (const warning of result.warnings ?? []) warnings.push(warning);
    for (const document of result.documents) {
      if (firstKeyWins(document, firstSource, failures)) documents.push(document);
    }
  }
  return { documents, failures, warnings };
}
