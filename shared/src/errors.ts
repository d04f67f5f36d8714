/**
 * Base error of the project. Every module's errors extend it so callers can catch broadly
 * (`instanceof Ai4ragError`) or narrowly (a module's own subclass).
 */
export class Ai4ragError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'Ai4ragError';
  }
}

/** Invalid input or configuration supplied by the caller (maps to HTTP 400 at the edge). */
export class ValidationError extends Ai4ragError {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'ValidationError';
  }
}

/** Something the caller asked for does not exist (maps to HTTP 404 at the edge). */
export class NotFoundError extends Ai4ragError {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'NotFoundError';
  }
}

/** Narrows an unknown thrown value to an Error, wrapping non-errors. */
export function toError(value: unknown): Error {
  return value instanceof Error ? value : new Error(String(value));
}
