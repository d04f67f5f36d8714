export { chunkId } from './chunk-id.js';
export type { Chunker } from './chunker.js';
export { chunkDocument, chunkDocuments, createChunker } from './chunker.js';
export { ChunkingValidationError } from './errors.js';
export type { HybridPiece } from './hybrid-chunker.js';
export { hybridSplit } from './hybrid-chunker.js';
export {
  approxTokens,
  CHARS_PER_TOKEN,
  CHUNKING_LIMITS,
  CHUNKING_METHODS,
  validateChunkingOptions,
} from './limits.js';
export { renderMarkdownTable } from './markdown-table.js';
export type { RecursiveSplitterOptions, TextSpan } from './recursive-splitter.js';
export {
  RECURSIVE_SEPARATORS,
  splitTextRecursive,
  splitTextWithStartIndex,
} from './recursive-splitter.js';
export type { AI4RAGChunk, ChunkingMethod, ChunkingOptions, ChunkMetadata } from './types.js';
