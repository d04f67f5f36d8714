import { createHash } from 'node:crypto';
import { ChunkingValidationError } from './errors.js';

const MAX_UINT32 = 0xffff_ffff;

/**
 * Deterministic chunk id, identical to ai4rag's `AI4RAGChunk.chunk_id`: SHA-256 hex over the document id
 * (UTF-8), the sequence number as a 4-byte unsigned big-endian integer, then the text (UTF-8). Re-ingesting
 * the same document with the same settings yields the same ids, so upserts deduplicate.
 * @throws {ChunkingValidationError} when the sequence number is not an integer in 0..2^32-1.
 * @example chunkId('doc.md', 1, 'Hello') // 64 hex characters
 */
export function chunkId(documentId: string, sequenceNumber: number, text: string): string {
  if (!Number.isInteger(sequenceNumber) || sequenceNumber < 0 || sequenceNumber > MAX_UINT32) {
    throw new ChunkingValidationError(
      `sequenceNumber ${sequenceNumber} is invalid; it must be an integer in 0..${MAX_UINT32}.`,
    );
  }
  const seq = Buffer.alloc(4);
  seq.writeUInt32BE(sequenceNumber, 0);
  return createHash('sha256')
    .update(Buffer.from(documentId, 'utf8'))
    .update(seq)
    .update(Buffer.from(text, 'utf8'))
    .digest('hex');
}
