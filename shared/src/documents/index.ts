export { type ParsedPdf, parseDocx, parsePdf } from './binary.js';
export { parseDocling } from './docling.js';
export { DocumentParseError } from './errors.js';
export { parseHtml } from './html.js';
export { parseJsonl } from './jsonl.js';
export { buildKeyIndex, documentKeyVariants, matchDocumentKey } from './keys.js';
export {
  DEFAULT_LOAD_CONCURRENCY,
  DEFAULT_MAX_FILE_BYTES,
  detectFormat,
  loadDocuments,
  loadFile,
  MAX_LOAD_CONCURRENCY,
} from './load.js';
export { type ParsedStructure, parseMarkdown } from './markdown.js';
export { type PdfTextItem, pdfLayoutToBlocks } from './pdf-layout.js';
export { collapseWhitespace, renderBlocks } from './render.js';
export { decodeUtf8, normalizeNewlines, parsePlainText } from './text.js';
export type * from './types.js';
