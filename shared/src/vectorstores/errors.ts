import { Ai4ragError, ValidationError } from '../errors.js';
import { type DocumentRecord, MAX_LIST_PAGE } from './types.js';

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

/**
 * A collection was embedded with another model than the store was opened with. Readers open it again with
 * `registeredModel` (the collection registry's record) instead of failing every query.
 */
export class EmbeddingModelMismatchError extends VectorStoreError {
  readonly collection: string;
  /** The embedding model the collection's vectors come from. */
  readonly registeredModel: string;
  /** The model of the embedder the store was opened with. */
  readonly requestedModel: string;
  constructor(collection: string, registeredModel: string, requestedModel: string) {
    super(`collection ${collection} was embedded with ${registeredModel}, not ${requestedModel}`);
    this.name = 'EmbeddingModelMismatchError';
    this.collection = collection;
    this.registeredModel = registeredModel;
    this.requestedModel = requestedModel;
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

/**
 * Validates a {@link ListDocumentsOptions.limit} (both stores check the same rule).
 * @throws {VectorStoreError} for a limit that is not an integer in 1..{@link MAX_LIST_PAGE}.
 */
export function checkListLimit(limit: number | undefined): void {
  if (limit === undefined) return;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIST_PAGE) {
    throw new VectorStoreError(
      `listDocuments limit must be an integer from 1 to ${MAX_LIST_PAGE}, got ${String(limit)}`,
    );
  }
}
