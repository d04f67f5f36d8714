import type { LoadedDocument } from '../documents/types.js';
import { chunkId } from './chunk-id.js';
import { documentIdOf, inStartOrder, userMetadataOf } from './document.js';
import { splitTextWithStartIndex, type TextSpan } from './recursive-splitter.js';
import type { AI4RAGChunk, ChunkingOptions } from './types.js';

/** A parent chunk and the children cut from it (offsets in the document text). */
export interface HierarchicalPiece {
  parent: TextSpan;
  children: TextSpan[];
}

/**
 * Parent–child split of `text`: parents are the recursive splitter's chunks at `parentChunkSize` with overlap 0;
 * each parent is split again by the recursive splitter at `chunkSize` / `chunkOverlap`. Child offsets are offsets in
 * `text` (the parent's offset plus the child's offset in the parent).
 * @example splitHierarchical(text, { chunkSize: 128, chunkOverlap: 0, parentChunkSize: 512 })
 */
export function splitHierarchical(
  text: string,
  options: { chunkSize: number; chunkOverlap: number; parentChunkSize: number },
): HierarchicalPiece[] {
  const parents = inStartOrder(
    splitTextWithStartIndex(text, { chunkSize: options.parentChunkSize, chunkOverlap: 0 }),
  );
  return parents.map((parent) => ({
    parent,
    children: inStartOrder(
      splitTextWithStartIndex(parent.text, {
        chunkSize: options.chunkSize,
        chunkOverlap: options.chunkOverlap,
      }),
    ).map((child) => ({ text: child.text, startIndex: parent.startIndex + child.startIndex })),
  }));
}

/**
 * `hierarchical` chunking of one (validated) document: only the children are returned, numbered 1-based across
 * the document, each carrying its parent (`parent_id` = `chunkId(document_id, parent_sequence_number,
 * parent_text)`, `parent_sequence_number`, `parent_start_index`, `parent_text`).
 */
export function chunkHierarchical(doc: LoadedDocument, opts: ChunkingOptions): AI4RAGChunk[] {
  const documentId = documentIdOf(doc);
  const parentChunkSize = opts.parentChunkSize ?? 0;
  const out: AI4RAGChunk[] = [];
  splitHierarchical(doc.text, {
    chunkSize: opts.chunkSize,
    chunkOverlap: opts.chunkOverlap,
    parentChunkSize,
  }).forEach(({ parent, children }, p) => {
    const parentSequenceNumber = p + 1;
    const parentId = chunkId(documentId, parentSequenceNumber, parent.text);
    for (const child of children) {
      const sequenceNumber = out.length + 1;
      out.push({
        id: chunkId(documentId, sequenceNumber, child.text),
        text: child.text,
        metadata: {
          document_id: documentId,
          sequence_number: sequenceNumber,
          start_index: child.startIndex,
          parent_id: parentId,
          parent_sequence_number: parentSequenceNumber,
          parent_start_index: parent.startIndex,
          parent_text: parent.text,
          ...userMetadataOf(doc),
        },
      });
    }
  });
  return out;
}
