import { Ai4ragError } from '../errors.js';
import type { DocumentLoadFailure } from './types.js';

/**
 * A file's bytes could not be turned into a document. Carries the machine-readable failure reason
 * so the loader can report it per file instead of failing the whole ingest.
 */
export class DocumentParseError extends Ai4ragError {
  readonly reason: DocumentLoadFailure['reason'];

  constructor(reason: DocumentLoadFailure['reason'], message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'DocumentParseError';
    this.reason = reason;
  }
}
