import type { LoadedDocument } from '../documents/types.js';
import type { Embedder } from '../embeddings/types.js';
import { chunkId } from './chunk-id.js';
import { chunksFromSpans, documentIdOf, inStartOrder, userMetadataOf } from './document.js';
import { ChunkingValidationError } from './errors.js';
import { chunkFixed } from './fixed.js';
import { chunkHierarchical } from './hierarchical.js';
import { hybridSplit } from './hybrid-chunker.js';
import { validateChunkingOptions } from './limits.js';
import { splitTextWithStartIndex } from './recursive-splitter.js';
import { type ChunkingCost, createSemanticChunker } from './semantic.js';
import type { AI4RAGChunk, ChunkingOptions } from './types.js';

/** Chunks one document with settings fixed (and validated) up front; see {@link createChunker}. */
export interface Chunker {
  /** The validated settings, frozen. */
  readonly options: Readonly<ChunkingOptions>;
  /** Chunks one document (asynchronous: `semantic` embeds sentence groups; the other methods are pure). */
  chunk(doc: LoadedDocument): Promise<AI4RAGChunk[]>;
  /** Embedding work done so far (`semantic`; all zeros for the other methods). */
  cost(): ChunkingCost;
}

/** What a chunker may need besides its options. */
export interface ChunkerDeps {
  /** Required by `semantic` chunking: embeds the sentence groups. */
  embedder?: Embedder | undefined;
  /** Sentence-group vectors `semantic` caches (default `SEMANTIC_CACHE_ENTRIES`). */
  cacheEntries?: number;
}

function chunkRecursive(doc: LoadedDocument, opts: ChunkingOptions): AI4RAGChunk[] {
  const spans = splitTextWithStartIndex(doc.text, {
    chunkSize: opts.chunkSize,
    chunkOverlap: opts.chunkOverlap,
  });
  // ai4rag numbers chunks in start_index order.
  return chunksFromSpans(doc, inStartOrder(spans));
}

function chunkHybrid(doc: LoadedDocument, opts: ChunkingOptions): AI4RAGChunk[] {
  const documentId = documentIdOf(doc);
  return hybridSplit(doc, opts.chunkSize).map((piece, i) => {
    const sequenceNumber = i + 1;
    const metadata: AI4RAGChunk['metadata'] = {
      document_id: documentId,
      sequence_number: sequenceNumber,
    };
    if (piece.headings.length > 0) metadata.headings = piece.headings.join(' > ');
    Object.assign(metadata, userMetadataOf(doc));
    return { id: chunkId(documentId, sequenceNumber, piece.text), text: piece.text, metadata };
  });
}

function semanticNeedsEmbedder(): ChunkingValidationError {
  return new ChunkingValidationError(
    'Semantic chunking needs an embedder (it embeds sentence groups): use createChunker(options, { embedder }) and await chunk(doc).',
  );
}

/** The synchronous methods; `semantic` is refused (it needs an embedder). */
function chunkValidated(doc: LoadedDocument, opts: ChunkingOptions): AI4RAGChunk[] {
  switch (opts.method) {
    case 'hybrid':
      return chunkHybrid(doc, opts);
    case 'fixed':
      return chunkFixed(doc, opts);
    case 'hierarchical':
      return chunkHierarchical(doc, opts);
    case 'semantic':
      throw semanticNeedsEmbedder();
    default:
      return chunkRecursive(doc, opts);
  }
}

/**
 * Splits one document into ai4rag chunks, synchronously: `recursive` (LangChain recursive splitter over `doc.text`,
 * with `start_index`), `hybrid` (structure-aware over `doc.blocks`, with the heading path), `fixed` (token windows)
 * or `hierarchical` (children carrying their parent). `semantic` needs an embedder: use {@link createChunker}.
 * Chunk ids are deterministic, so re-ingesting unchanged documents upserts the same rows.
 * @throws {ChunkingValidationError} when the options break the constraints, or for `semantic`.
 * @example
 * const chunks = chunkDocument(doc, { method: 'recursive', chunkSize: 512, chunkOverlap: 128 });
 * chunks[0]?.metadata // { document_id: doc.key, sequence_number: 1, start_index: 0 }
 */
export function chunkDocument(doc: LoadedDocument, opts: ChunkingOptions): AI4RAGChunk[] {
  validateChunkingOptions(opts);
  return chunkValidated(doc, opts);
}

/**
 * Chunks many documents with one validation, concatenating their chunks in document order (sequence
 * numbers restart at 1 for each document). Synchronous, so not for `semantic` (see {@link createChunker}).
 * @throws {ChunkingValidationError} when the options break the constraints, or for `semantic`.
 * @example const chunks = chunkDocuments(result.documents, { method: 'hybrid', chunkSize: 1024, chunkOverlap: 0 });
 */
export function chunkDocuments(
  docs: readonly LoadedDocument[],
  opts: ChunkingOptions,
): AI4RAGChunk[] {
  validateChunkingOptions(opts);
  const out: AI4RAGChunk[] = [];
  for (const doc of docs) {
    for (const chunk of chunkValidated(doc, opts)) out.push(chunk);
  }
  return out;
}

const NO_COST: Readonly<ChunkingCost> = Object.freeze({
  groups: 0,
  embedded: 0,
  cacheHits: 0,
  tokens: 0,
  ms: 0,
});

/**
 * Validates the options once and returns a reusable chunker, for pipelines that chunk documents one at a time
 * (streaming ingestion) without re-validating per document. Every method's `chunk` returns a promise; `semantic`
 * needs `deps.embedder` and keeps one sentence-group cache for the chunker's life (its `cost()` says what
 * embedding cost so far).
 * @throws {ChunkingValidationError} when the options break the constraints, or `semantic` has no embedder.
 * @example
 * const chunker = createChunker({ method: 'semantic', chunkSize: 512, chunkOverlap: 0 }, { embedder });
 * for (const doc of docs) await store.upsert(await chunker.chunk(doc));
 */
export function createChunker(opts: ChunkingOptions, deps: ChunkerDeps = {}): Chunker {
  validateChunkingOptions(opts);
  const copy: ChunkingOptions = {
    method: opts.method,
    chunkSize: opts.chunkSize,
    chunkOverlap: opts.chunkOverlap,
  };
  for (const key of [
    'parentChunkSize',
    'breakpoint',
    'breakpointAmount',
    'bufferSize',
    'minChunkSize',
  ] as const) {
    if (opts[key] !== undefined) Object.assign(copy, { [key]: opts[key] });
  }
  const options: Readonly<ChunkingOptions> = Object.freeze(copy);
  if (options.method === 'semantic') {
    if (deps.embedder === undefined) throw semanticNeedsEmbedder();
    const semantic = createSemanticChunker(options, deps.embedder, deps.cacheEntries);
    return { options, chunk: (doc) => semantic.chunk(doc), cost: () => semantic.cost() };
  }
  return {
    options,
    chunk: async (doc) => chunkValidated(doc, options),
    cost: () => ({ ...NO_COST }),
  };
}
