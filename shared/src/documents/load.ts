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
import { type ParsedStructure, parseMarkdown } from './markdown.js';
import { renderBlocks } from './render.js';
import { decodeUtf8, normalizeNewlines, parsePlainText } from './text.js';
import type {
  DocumentFormat,
  DocumentLoadFailure,
  LoadedDocument,
  LoadOptions,
  LoadResult,
} from './types.js';

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

function resolveOptions(options: LoadOptions | undefined): Required<LoadOptions> {
  const maxFileBytes = options?.maxFileBytes ?? DEFAULT_MAX_FILE_BYTES;
  const concurrency = options?.concurrency ?? DEFAULT_LOAD_CONCURRENCY;
  if (!Number.isInteger(maxFileBytes) || maxFileBytes < 1) {
    throw new ValidationError(`maxFileBytes must be a positive integer, got ${maxFileBytes}`);
  }
  if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > MAX_LOAD_CONCURRENCY) {
    throw new ValidationError(
      `concurrency must be an integer from 1 to ${MAX_LOAD_CONCURRENCY}, got ${concurrency}`,
    );
  }
  return { maxFileBytes, concurrency };
}

async function parseStructure(
  format: Exclude<DocumentFormat, 'jsonl'>,
  bytes: Uint8Array,
  key: string,
): Promise<{ structure: ParsedStructure; text: string }> {
  switch (format) {
    case 'txt': {
      const text = normalizeNewlines(decodeUtf8(bytes, key));
      return { structure: { blocks: parsePlainText(text) }, text };
    }
    case 'md': {
      const text = normalizeNewlines(decodeUtf8(bytes, key));
      return { structure: parseMarkdown(text), text };
    }
    case 'html': {
      const structure = parseHtml(decodeUtf8(bytes, key));
      return { structure, text: renderBlocks(structure.blocks) };
    }
    case 'docling': {
      const structure = parseDocling(decodeUtf8(bytes, key), key);
      return { structure, text: renderBlocks(structure.blocks) };
    }
    case 'pdf': {
      const structure = await parsePdf(bytes, key);
      return { structure, text: renderBlocks(structure.blocks) };
    }
    case 'docx': {
      const structure = await parseDocx(bytes, key);
      return { structure, text: renderBlocks(structure.blocks) };
    }
  }
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
  const { maxFileBytes } = resolveOptions(options);
  const failure = (reason: DocumentLoadFailure['reason'], message: string): LoadResult => ({
    documents: [],
    failures: [{ key, sourcePath: absPath, reason, message }],
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
  return loadBytes(bytes, key, { sourcePath: absPath, maxFileBytes });
}

/**
 * Parses one document from its bytes (an S3 object, an upload) by the key's extension. Never throws for bad
 * content: the problem is returned as a failure, as {@link loadFile} does.
 * @example const { documents } = await loadBytes(bytes, 'guides/intro.md');
 */
export async function loadBytes(
  bytes: Uint8Array,
  key: string,
  options: { sourcePath?: string; maxFileBytes?: number } = {},
): Promise<LoadResult> {
  const sourcePath = options.sourcePath ?? key;
  const maxFileBytes = options.maxFileBytes ?? DEFAULT_MAX_FILE_BYTES;
  const failure = (reason: DocumentLoadFailure['reason'], message: string): LoadResult => ({
    documents: [],
    failures: [{ key, sourcePath, reason, message }],
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
      const result = parseJsonl(decodeUtf8(bytes, key), key, sourcePath);
      if (result.documents.length === 0 && result.failures.length === 0) {
        return failure('empty', `${key}: no records found`);
      }
      return result;
    }
    const { structure, text } = await parseStructure(format, bytes, key);
    if (!text.trim()) return failure('empty', `${key}: no text found after extraction`);
    const document: LoadedDocument = {
      key,
      title: structure.title,
      text,
      blocks: structure.blocks,
      contentHash: sha256(bytes),
      format,
      sourcePath,
    };
    return { documents: [document], failures: [] };
  } catch (error: unknown) {
    if (error instanceof DocumentParseError) return failure(error.reason, error.message);
    return failure(
      'corrupt',
      `${key}: could not be parsed (${error instanceof Error ? error.message : String(error)})`,
    );
  }
}

interface FileEntry {
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

/**
 * Loads documents from files and folders. Folders are walked recursively in sorted order
 * (hidden entries skipped); each file's key is its path relative to the folder, or its basename
 * when the path is a file. Bad files become `failures`; a key seen twice keeps the first.
 *
 * @throws {ValidationError} when a given path does not exist or an option is out of range.
 * @example
 * const { documents, failures } = await loadDocuments(['examples/docs'], { concurrency: 2 });
 */
export async function loadDocuments(paths: string[], options?: LoadOptions): Promise<LoadResult> {
  const resolved = resolveOptions(options);
  const files: FileEntry[] = [];
  const walkFailures: DocumentLoadFailure[] = [];
  for (const given of paths) {
    const absolute = path.resolve(given);
    const info = await stat(absolute).catch((error: unknown) => {
      throw new ValidationError(`path does not exist or cannot be read: ${given}`, {
        cause: error,
      });
    });
    if (info.isDirectory()) await walkFolder(absolute, '', files, walkFailures);
    else files.push({ absPath: absolute, key: path.basename(absolute) });
  }

  const results: LoadResult[] = new Array(files.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < files.length) {
      const index = next++;
      const file = files[index];
      if (file) results[index] = await loadFile(file.absPath, file.key, resolved);
    }
  };
  await Promise.all(Array.from({ length: Math.min(resolved.concurrency, files.length) }, worker));

  const documents: LoadedDocument[] = [];
  const failures: DocumentLoadFailure[] = [...walkFailures];
  const firstSource = new Map<string, string>();
  for (const result of results) {
    failures.push(...result.failures);
    for (const document of result.documents) {
      const first = firstSource.get(document.key);
      if (first !== undefined) {
        failures.push({
          key: document.key,
          sourcePath: document.sourcePath ?? '',
          reason: 'duplicate_key',
          message: `${document.key}: duplicate document key (already loaded from ${first}); kept the first`,
        });
        continue;
      }
      firstSource.set(document.key, document.sourcePath ?? document.key);
      documents.push(document);
    }
  }
  return { documents, failures };
}
