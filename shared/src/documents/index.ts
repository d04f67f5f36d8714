export {
  type DocxParseOptions,
  type ParsedPdf,
  type PdfParseOptions,
  parseDocx,
  parsePdf,
} from './binary.js';
export { type DoclingParseOptions, parseDocling } from './docling.js';
export { DocumentParseError } from './errors.js';
export { type HtmlParseOptions, parseHtml } from './html.js';
export { type JsonlParseOptions, parseJsonl } from './jsonl.js';
export { buildKeyIndex, documentKeyVariants, matchDocumentKey } from './keys.js';
export {
  DEFAULT_MAX_DOCX_INFLATED_BYTES,
  DEFAULT_MAX_DOCX_XML_BYTES,
  DEFAULT_MAX_NESTING_DEPTH,
  DEFAULT_MAX_PDF_INFLATED_BYTES,
  DEFAULT_MAX_PDF_PAGES,
  DEFAULT_MAX_TEXT_CHARS,
  DOCX_RATIO_MIN_BYTES,
  MAX_DOCX_COMPRESSION_RATIO,
  MAX_DOCX_ENTRIES,
} from './limits.js';
export {
  DEFAULT_LOAD_CONCURRENCY,
  DEFAULT_MAX_FILE_BYTES,
  detectFormat,
  type LoadBytesOptions,
  loadBytes,
  loadDocuments,
  loadFile,
  MAX_LOAD_CONCURRENCY,
} from './load.js';
export { type ParsedStructure, parseMarkdown } from './markdown.js';
export { type PdfTextItem, pdfLayoutToBlocks } from './pdf-layout.js';
export { checkPdfStreams } from './pdf-streams.js';
export { collapseWhitespace, renderBlocks } from './render.js';
export { cleanText, hasUnstorable, type UnstorableCounts } from './sanitize.js';
export { type DocumentStream, streamDocuments } from './stream.js';
export { decodeUtf8, normalizeNewlines, parsePlainText } from './text.js';
export type * from './types.js';
export {
  isMetadataSidecar,
  METADATA_SIDECAR_SUFFIX,
  parseUserMetadata,
  USER_METADATA_LIMITS,
  withUserMetadata,
} from './user-metadata.js';
export {
  BoundedZipReader,
  readZipDirectory,
  type ZipDirectoryLimits,
  type ZipMember,
} from './zip.js';
