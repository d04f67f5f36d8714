import type { LoadedDocument } from '../documents/types.js';
import { chunkId } from './chunk-id.js';
import { hybridSplit } from './hybrid-chunker.js';
import { validateChunkingOptions } from './limits.js';
import { splitTextWithStartIndex } from './recursive-splitter.js';
import type { AI4RAGChunk, ChunkingOptions } from './types.js';

/** Chunks one document with settings fixed (and validated) up front; see {@link createChunker}. */
export interface Chunker {
  /** The validated settings, frozen. */
  readonly options: Readonly<ChunkingOptions>;
  /** Chunks one document; pure and synchronous. */
  chunk(doc: LoadedDocument): AI4RAGChunk[];
}

/** ai4rag's document id: the document name, else the first 16 hex of its content hash. */
function documentIdOf(doc: LoadedDocument): string {
  return doc.key !== '' ? doc.key : doc.contentHash.slice(0, 16);
}

function chunkRecursive(doc: LoadedDocument, opts: ChunkingOptions): AI4RAGChunk[] {
  const documentId = documentIdOf(doc);
  const spans = splitTextWithStartIndex(doc.text, {
    chunkSize: opts.chunkSize,
    chunkOverlap: opts.chunkOverlap,
  });
  // ai4rag numbers chunks in start_index order (a stable sort keeps split order on ties).
  const ordered = spans
    .map((span, position) => ({ span, position }))
    .sort((a, b) => a.span.startIndex - b.span.startIndex || a.position - b.position);
  return ordered.map(({ span }, i) => {
    const sequenceNumber = i + 1;
    return {
      id: chunkId(documentId, sequenceNumber, span.text),
      text: span.text,
      metadata: {
        document_id: documentId,
        sequence_number: sequenceNumber,
        start_index: span.startIndex,
        ...userMetadataOf(doc),
      },
    };
  });
}

/** The document's user metadata as a chunk metadata entry (`user`), or nothing. */
function userMetadataOf(doc: LoadedDocument): { user?: Record<string, string | number | boolean> } {
  return doc.metadata !== undefined && Object.keys(doc.metadata).length > 0
    ? { user: { ...doc.metadata } }
    : {};
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

function chunkValidated(doc: LoadedDocument, opts: ChunkingOptions): AI4RAGChunk[] {
  return opts.method === 'hybrid' ? chunkHybrid(doc, opts) : chunkRecursive(doc, opts);
}

/**
 * Splits one document into ai4rag chunks: `recursive` (LangChain recursive splitter over `doc.text`, with
 * `start_index`) or `hybrid` (structure-aware over `doc.blocks`, with the heading path). Chunk ids are
 * deterministic, so re-ingesting unchanged documents upserts the same rows.
 * @throws {ChunkingValidationError} when the options break ai4rag's constraints.
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
 * numbers restart at 1 for each document).
 * @throws {ChunkingValidationError} when the options break ai4rag's constraints.
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

/**
 * Validates the options once and returns a reusable chunker, for pipelines that chunk documents one at
 * a time (streaming ingestion) without re-validating per document.
 * @throws {ChunkingValidationError} when the options break ai4rag's constraints.
 * @example
 * const chunker = createChunker({ method: 'recursive', chunkSize: 1024, chunkOverlap: 128 });
 * for (const doc of docs) await store.upsert(chunker.chunk(doc));
 */
export function createChunker(opts: ChunkingOptions): Chunker {
  validateChunkingOptions(opts);
  const options: Readonly<ChunkingOptions> = Object.freeze({
    method: opts.method,
    chunkSize: opts.chunkSize,
    chunkOverlap: opts.chunkOverlap,
  });
  return { options, chunk: (doc) => chunkValidated(doc, options) };
}
