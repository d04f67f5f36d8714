import type { LoadedDocument } from '../documents/types.js';
import { chunkId } from './chunk-id.js';
import type { TextSpan } from './recursive-splitter.js';
import type { AI4RAGChunk } from './types.js';

/** ai4rag's document id: the document name, else the first 16 hex of its content hash. */
export function documentIdOf(doc: LoadedDocument): string {
  return doc.key !== '' ? doc.key : doc.contentHash.slice(0, 16);
}

/** The document's user metadata as a chunk metadata entry (`user`), or nothing. */
export function userMetadataOf(doc: LoadedDocument): {
  user?: Record<string, string | number | boolean>;
} {
  return doc.metadata !== undefined && Object.keys(doc.metadata).length > 0
    ? { user: { ...doc.metadata } }
    : {};
}

/** Spans in `start_index` order (a stable sort keeps split order on ties), as ai4rag numbers recursive chunks. */
export function inStartOrder(spans: readonly TextSpan[]): TextSpan[] {
  return spans
    .map((span, position) => ({ span, position }))
    .sort((a, b) => a.span.startIndex - b.span.startIndex || a.position - b.position)
    .map(({ span }) => span);
}

/**
 * The chunks of a document cut into `spans` (offsets in `doc.text`), numbered 1-based in the given order, each
 * with its `start_index` and the document's user metadata.
 */
export function chunksFromSpans(doc: LoadedDocument, spans: readonly TextSpan[]): AI4RAGChunk[] {
  const documentId = documentIdOf(doc);
  return spans.map((span, i) => {
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
