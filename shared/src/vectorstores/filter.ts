import { VectorStoreConfigError } from './errors.js';
import type { MetadataFilter } from './types.js';

const FILTER_KEY = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

/**
 * Checks a metadata equality filter. Keys are restricted to identifier-like names so every backend can express
 * them safely (Milvus filter expressions included); values must be strings, finite numbers or booleans.
 * @throws {VectorStoreConfigError} on a bad key or value, or (with `nonEmpty`) an empty filter.
 * @example validateMetadataFilter({ document_id: 'doc-1' }, { nonEmpty: true })
 */
export function validateMetadataFilter(
  filter: unknown,
  options: { nonEmpty?: boolean } = {},
): MetadataFilter {
  if (filter === null || typeof filter !== 'object' || Array.isArray(filter)) {
    throw new VectorStoreConfigError('metadata filter must be a plain object of key/value pairs');
  }
  const out: MetadataFilter = {};
  for (const [key, value] of Object.entries(filter)) {
    if (!FILTER_KEY.test(key)) {
      throw new VectorStoreConfigError(
        `metadata filter key ${JSON.stringify(key.slice(0, 64))} is invalid (letters, digits and _ only, not starting with a digit, at most 128 chars)`,
      );
    }
    const ok =
      typeof value === 'string' ||
      typeof value === 'boolean' ||
      (typeof value === 'number' && Number.isFinite(value));
    if (!ok) {
      throw new VectorStoreConfigError(
        `metadata filter value for "${key}" must be a string, a finite number or a boolean`,
      );
    }
    out[key] = value;
  }
  if (options.nonEmpty === true && Object.keys(out).length === 0) {
    throw new VectorStoreConfigError('metadata filter must not be empty');
  }
  return out;
}
