import { ValidationError } from '../errors.js';

/**
 * Invalid chunking configuration (size, overlap or method). A `ValidationError`, so the edge maps it to
 * HTTP 400; a separate class so optimizer code can tell a bad chunking grid point from other input errors.
 */
export class ChunkingValidationError extends ValidationError {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'ChunkingValidationError';
  }
}
