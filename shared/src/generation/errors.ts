import { Ai4ragError, ValidationError } from '../errors.js';

/**
 * A foundation model failed to produce an answer (provider error, exhausted retries, malformed response). Kept
 * apart from {@link PromptTemplateError} so callers can tell a caller mistake from a provider failure.
 */
export class GenerationError extends Ai4ragError {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'GenerationError';
  }
}

/**
 * A prompt template breaks the placeholder rules of ai4rag (spec §2.3); raised before any model call so a bad
 * template never costs a request. The message names the template and the problem.
 */
export class PromptTemplateError extends ValidationError {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'PromptTemplateError';
  }
}
