/** Supported input formats. `jsonl` is a corpus file holding many documents. */
export type DocumentFormat = 'txt' | 'md' | 'html' | 'pdf' | 'docx' | 'docling' | 'jsonl';

/**
 * A structural block of a document, used by the structure-aware ("hybrid") chunker.
 * `text` of a heading is its own title; `level` is 1 for the top level.
 */
export type DocBlock =
  | { type: 'heading'; level: number; text: string }
  | { type: 'paragraph'; text: string }
  | { type: 'list'; items: string[] }
  | { type: 'table'; rows: string[][] }
  | { type: 'code'; text: string };

/** A parsed document, ready to chunk. */
export interface LoadedDocument {
  /** The document key: the jsonl `id`, or the path relative to the ingested folder (POSIX separators). */
  key: string;
  title?: string | undefined;
  /** Plain/markdown text of the whole document (blocks rendered as markdown); what the recursive chunker splits. */
  text: string;
  /** Structure of the document, in reading order. */
  blocks: DocBlock[];
  /** SHA-256 hex of the document's source bytes (jsonl: of its line's title + text). */
  contentHash: string;
  format: DocumentFormat;
  /** Absolute path of the file it came from, when it came from a file. */
  sourcePath?: string | undefined;
}

/** A file (or jsonl line) that could not be loaded; the other documents still load. */
export interface DocumentLoadFailure {
  /** Path relative to the ingested folder (or `file.jsonl:LINE`). */
  key: string;
  sourcePath: string;
  /** Short machine-readable reason. */
  reason:
    | 'unsupported_type'
    | 'empty'
    | 'too_large'
    | 'not_utf8'
    | 'corrupt'
    | 'invalid_record'
    | 'duplicate_key'
    | 'read_error';
  message: string;
}

export interface LoadResult {
  documents: LoadedDocument[];
  failures: DocumentLoadFailure[];
}

/** Options of `loadDocuments` and `loadFile`. */
export interface LoadOptions {
  /** Files larger than this are reported `too_large` without being read. Default `DEFAULT_MAX_FILE_BYTES` (50 MiB). */
  maxFileBytes?: number;
  /** Files parsed at once, 1..`MAX_LOAD_CONCURRENCY`. Default `DEFAULT_LOAD_CONCURRENCY` (4). */
  concurrency?: number;
}
