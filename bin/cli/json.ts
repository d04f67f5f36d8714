/**
 * The CLI's JSON output in the API's naming: snake_case keys (`chunks_embedded`, `cost_usd`), and a document's key
 * as `document_key` (the store's `documentId`), so a script reads the same names from `ai4rag … --json`, the API
 * and the artefacts.
 */

/** Subtrees whose keys are data, not names: user metadata, trial configurations (already ai4rag's names). */
const OPAQUE = new Set(['metadata', 'config', 'settings']);

function snakeKey(key: string): string {
  if (key === 'documentId') return 'document_key';
  return key.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toLowerCase();
}

/**
 * A JSON value with its object keys in snake_case, recursively (not inside `metadata`, `config` or `settings`).
 * @example snakeCase({ chunksEmbedded: 3, kept: [{ documentId: 'a.md' }] }) // { chunks_embedded: 3, kept: [{ document_key: 'a.md' }] }
 */
export function snakeCase(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(snakeCase);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value as Record<string, unknown>).map(([k, v]) => [
      snakeKey(k),
      OPAQUE.has(k) ? v : snakeCase(v),
    ]),
  );
}

/** One line of JSON in the API's naming. */
export function jsonLine(value: unknown): string {
  return JSON.stringify(snakeCase(value));
}
