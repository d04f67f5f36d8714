import type { LoadedDocument } from '../documents/types.js';

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
