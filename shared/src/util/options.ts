import { ValidationError } from '../errors.js';

/**
 * An optional positive-integer option, or its fallback.
 * @throws {ValidationError} naming the option when the value is not a positive integer
 */
export function positiveInteger(value: number | undefined, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 1) {
    throw new ValidationError(`${name} must be a positive integer, got ${String(value)}`);
  }
  return value;
}
