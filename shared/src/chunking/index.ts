export { chunkId } from './chunk-id.js';
export type { Chunker, ChunkerDeps } from './chunker.js';
export { chunkDocument, chunkDocuments, createChunker } from './chunker.js';
export { ChunkingValidationError } from './errors.js';
export type { FixedSplitOptions } from './fixed.js';
export { splitFixed } from './fixed.js';
export type { HierarchicalPiece } from './hierarchical.js';
export { splitHierarchical } from './hierarchical.js';
export type { HybridPiece } from './hybrid-chunker.js';
export { hybridSplit } from './hybrid-chunker.js';
export type { ResolvedSemanticOptions } from './limits.js';
export {
  approxTokens,
  CHARS_PER_TOKEN,
  CHUNKING_LIMITS,
  CHUNKING_METHODS,
  METHOD_LIMITS,
  resolveSemanticOptions,
  SEMANTIC_BREAKPOINTS,
  validateChunkingOptions,
} from './limits.js';
export { renderMarkdownTable } from './markdown-table.js';
export type { RecursiveSplitterOptions, TextSpan } from './recursive-splitter.js';
export {
  RECURSIVE_SEPARATORS,
  splitTextRecursive,
  splitTextWithStartIndex,
} from './recursive-splitter.js';
export type { ChunkingCost, Sentence } from './semantic.js';
export {
  breakpointIndices,
  gradient,
  percentile,
  SEMANTIC_CACHE_ENTRIES,
  splitSentences,
} from './semantic.js';
export type {
  AI4RAGChunk,
  ChunkingMethod,
  ChunkingOptions,
  ChunkMetadata,
  SemanticBreakpoint,
} from './types.js';
