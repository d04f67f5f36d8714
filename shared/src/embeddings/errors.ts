import { Ai4ragError } from '../errors.js';

/**
 * An embedding call failed for good (non-transient provider error, retries exhausted, malformed response,
 * unusable model). The provider's error, when there is one, is the `cause`.
 */
export class EmbeddingError extends Ai4ragError {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'EmbeddingError';
  }
}
