import { Ai4ragError, ValidationError } from '../errors.js';
import type { DocumentRecord } from './types.js';

/**
 * A vector-store operation failed (SQL error, incompatible collection, closed store). Foreign errors are kept in
 * `cause`; the message never carries SQL text or bound values.
 */
export class VectorStoreError extends Ai4ragError {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'VectorStoreError';
  }
}

/** A collection name that fails the `ai4rag` isolation guard or cannot be a safe identifier. */
export class CollectionNameError extends ValidationError {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'CollectionNameError';
  }
}

/** Bad vector-store configuration (connection settings, store options, metadata filters). */
export class VectorStoreConfigError extends ValidationError {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'VectorStoreConfigError';
  }
}

/** A PGlite data directory is held by another live process (PGlite has no cross-process lock of its own). */
export class DataDirInUseError extends VectorStoreError {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'DataDirInUseError';
  }
}

/**
 * A staged write has ended (finished, aborted, or swept after its lease lapsed): it can no longer be written to or
 * begun again. A redelivered message of a finished write is expected to meet this and do nothing.
 */
export class WriteEndedError extends VectorStoreError {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'WriteEndedError';
  }
}

/**
 * Rejects a document record a store could not write back faithfully (both stores check the same rules).
 * @throws {VectorStoreError} for an empty id, a non-integer chunk count or an updatedAt that is not a timestamp.
 */
export function checkDocumentRecord(record: DocumentRecord): void {
  if (typeof record.documentId !== 'string' || record.documentId.length === 0) {
    throw new VectorStoreError('documentId must be a non-empty string');
  }
  if (!Number.isInteger(record.chunkCount) || Number.isNaN(Date.parse(record.updatedAt))) {
    throw new VectorStoreError(
      `document ${record.documentId}: chunkCount must be an integer and updatedAt an ISO timestamp`,
    );
  }
}
