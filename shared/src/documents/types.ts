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
  /**
   * User metadata (a sidecar `<file>.metadata.json`, a jsonl record's `metadata`, S3 `x-amz-meta-*`), stored
   * with every chunk under `metadata.user` and filterable as `user.<key>`.
   */
  metadata?: UserMetadata | undefined;
}

/** User metadata of a document: flat scalar values under validated keys (see `user-metadata.ts`). */
export type UserMetadata = Record<string, string | number | boolean>;

/** A file (or jsonl line) that could not be loaded; the other documents still load. */
export interface DocumentLoadFailure {
  /** Path relative to the ingested folder (or `file.jsonl:LINE`). */
  key: string;
  sourcePath: string;
  /**
   * Short machine-readable reason. `too_large`: over a size bound (file bytes, extracted text, PDF
   * pages, DOCX XML, zip members); `bomb`: a DOCX whose declared or actual inflated size or ratio is
   * absurd or whose zip directory lies, or a PDF whose streams inflate past their bound;
   * `too_deep`: nesting past `maxNestingDepth`.
   */
  reason:
    | 'unsupported_type'
    | 'empty'
    | 'too_large'
    | 'bomb'
    | 'too_deep'
    | 'not_utf8'
    | 'corrupt'
    | 'invalid_record'
    | 'duplicate_key'
    | 'read_error';
  message: string;
}

/**
 * A document that loaded, but only after its text was altered so that it can be stored: NUL
 * characters stripped (`nul_stripped`), unpaired UTF-16 surrogates replaced with U+FFFD
 * (`invalid_unicode_replaced`). The message names the document and the count, e.g.
 * `notes.txt: stripped 3 NUL characters (U+0000), which PostgreSQL cannot store`.
 */
export interface DocumentLoadWarning {
  /** The document key (`file.jsonl:LINE` for a jsonl record), as in {@link DocumentLoadFailure}. */
  key: string;
  sourcePath: string;
  reason: 'nul_stripped' | 'invalid_unicode_replaced';
  message: string;
}

export interface LoadResult {
  documents: LoadedDocument[];
  failures: DocumentLoadFailure[];
  /** Documents that loaded with altered text. Always set by the loaders; optional for older callers. */
  warnings?: DocumentLoadWarning[];
}

/** Options of `loadDocuments` and `loadFile`. Every bound fails the file, never the process. */
export interface LoadOptions {
  /** Files larger than this are reported `too_large` without being read. Default `DEFAULT_MAX_FILE_BYTES` (50 MiB). */
  maxFileBytes?: number;
  /** Files parsed at once, 1..`MAX_LOAD_CONCURRENCY`. Default `DEFAULT_LOAD_CONCURRENCY` (4). */
  concurrency?: number;
  /** Bound on a document's extracted text (string length); `too_large` above. Default `DEFAULT_MAX_TEXT_CHARS` (64 Mi). */
  maxTextChars?: number;
  /** Bound on a PDF's page count; `too_large` above. Default `DEFAULT_MAX_PDF_PAGES` (2000). */
  maxPdfPages?: number;
  /** Bound on the inflated size of a PDF's text-relevant Flate streams; `bomb` above. Default `DEFAULT_MAX_PDF_INFLATED_BYTES` (128 MiB). */
  maxPdfInflatedBytes?: number;
  /** Bound on the uncompressed size a DOCX declares in total; `bomb` above. Default `DEFAULT_MAX_DOCX_INFLATED_BYTES` (64 MiB). */
  maxDocxInflatedBytes?: number;
  /** Bound on the bytes inflated for mammoth (its XML parts); `too_large` above. Default `DEFAULT_MAX_DOCX_XML_BYTES` (16 MiB). */
  maxDocxXmlBytes?: number;
  /** Bound on HTML element and Docling group nesting; `too_deep` above. Default `DEFAULT_MAX_NESTING_DEPTH` (512). */
  maxNestingDepth?: number;
}
