import { Ai4ragError, ValidationError } from '../errors.js';

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
