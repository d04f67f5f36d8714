import { createHash } from 'node:crypto';
import { CollectionNameError } from './errors.js';

/** Every collection name starts with this prefix: ai4rag's guard against touching foreign tables. */
export const COLLECTION_PREFIX = 'ai4rag';
/** PostgreSQL's (and our) identifier length limit. */
export const MAX_IDENTIFIER_LENGTH = 63;

const ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';

function pad(n: number): string {
  return String(n).padStart(2, '0');
}

/**
 * Resolves a collection name once, as ai4rag does: no name → `ai4rag_<YYYYMMDDHHMMSS UTC>_<8 random [a-z0-9]>`;
 * a supplied name must start with `ai4rag` (the isolation guard), then is sanitized to `[A-Za-z0-9_]` (other ASCII
 * characters become `_`, as ai4rag's mapping). Case is kept; SQL backends lower-case through {@link quoteIdent}.
 * A name that mapping would make collide or cut is refused instead of stored somewhere surprising: non-ASCII
 * characters (`ai4rag_日本` and `ai4rag_中国` would both be `ai4rag___`), or more than 63 characters.
 * @throws {CollectionNameError} when a supplied name does not start with `ai4rag`, holds non-ASCII characters or
 * is longer than 63 characters; the message shows the sanitized name.
 * @example resolveCollectionName('ai4rag-trial.1') // 'ai4rag_trial_1'
 */
export function resolveCollectionName(
  name?: string,
  now: Date = new Date(),
  random: () => number = Math.random,
): string {
  if (name === undefined) {
    const ts =
      `${now.getUTCFullYear()}${pad(now.getUTCMonth() + 1)}${pad(now.getUTCDate())}` +
      `${pad(now.getUTCHours())}${pad(now.getUTCMinutes())}${pad(now.getUTCSeconds())}`;
    let suffix = '';
    for (let i = 0; i < 8; i++) {
      suffix += ALPHABET[Math.min(ALPHABET.length - 1, Math.floor(random() * ALPHABET.length))];
    }
    return `${COLLECTION_PREFIX}_${ts}_${suffix}`;
  }
  if (typeof name !== 'string' || !name.startsWith(COLLECTION_PREFIX)) {
    throw new CollectionNameError(
      `collection name must start with '${COLLECTION_PREFIX}', got ${JSON.stringify(String(name).slice(0, 80))}`,
    );
  }
  const sanitized = sanitizeCollectionName(name);
  const problem = collectionNameProblem(name);
  if (problem !== undefined) throw new CollectionNameError(problem);
  return sanitized;
}

/** ai4rag's mapping of a name to `[A-Za-z0-9_]`: every other character becomes `_`. */
export function sanitizeCollectionName(name: string): string {
  return name.replace(/[^A-Za-z0-9_]/g, '_');
}

/**
 * Why a collection name (starting with `ai4rag`) cannot be used as given, or undefined when it can: names with
 * non-ASCII characters would share their sanitized form with other names, and names over 63 characters would be
 * cut. The text shows the sanitized name and, for a name an earlier version stored under a hashed name, that name.
 * @example collectionNameProblem('ai4rag_日本') // 'collection name "ai4rag_日本" would be stored as "ai4rag___", …'
 */
export function collectionNameProblem(name: string): string | undefined {
  const sanitized = sanitizeCollectionName(name);
  const shown = JSON.stringify(name.length > 80 ? `${name.slice(0, 77)}…` : name);
  if ([...name].some((c) => (c.codePointAt(0) ?? 0) > 0x7f)) {
    return (
      `collection name ${shown} would be stored as "${sanitized.slice(0, MAX_IDENTIFIER_LENGTH)}", which every name differing only in ` +
      `its non-ASCII characters shares; use ASCII letters, digits and _ (a collection an earlier version made ` +
      `under this name is "${legacyHashedName(name, sanitized)}")`
    );
  }
  if (sanitized.length > MAX_IDENTIFIER_LENGTH) {
    return (
      `collection name ${shown} is ${sanitized.length} characters; at most ${MAX_IDENTIFIER_LENGTH} are kept, so it ` +
      `would be cut to "${sanitized.slice(0, MAX_IDENTIFIER_LENGTH)}" (a collection an earlier version made under ` +
      `this name is "${legacyHashedName(name, sanitized)}")`
    );
  }
  return undefined;
}

/** Where earlier versions stored a non-ASCII or over-long name: cut to 54 characters + `_` + 8 hex of its SHA-1. */
function legacyHashedName(name: string, sanitized: string): string {
  const hash = createHash('sha1').update(name, 'utf8').digest('hex').slice(0, 8);
  return `${sanitized.slice(0, MAX_IDENTIFIER_LENGTH - hash.length - 1)}_${hash}`;
}

const IDENT = /^[a-z0-9_]{1,63}$/;

/**
 * The single gate for SQL identifiers: lower-cases, checks `^[a-z0-9_]{1,63}$` and double-quotes. Anything that
 * reaches SQL as an identifier goes through here, so no caller-supplied text is ever spliced unchecked.
 * @throws {CollectionNameError} when the normalized name does not match.
 * @example quoteIdent('ai4rag_Docs') // '"ai4rag_docs"'
 */
export function quoteIdent(name: string): string {
  const normalized = typeof name === 'string' ? name.toLowerCase() : '';
  if (!IDENT.test(normalized)) {
    throw new CollectionNameError(
      `identifier ${JSON.stringify(String(name).slice(0, 80))} is not a safe SQL identifier ([a-z0-9_], 1..63 chars)`,
    );
  }
  return `"${normalized}"`;
}

/**
 * Name of an auxiliary object of a collection (`<first 50 chars>_<8 hex of sha1(name)>_<suffix>`), always ≤ 63
 * characters and unique per collection even when two long names share their first 50 characters.
 * @throws {CollectionNameError} on a suffix that is not 1–2 of `[a-z0-9]`.
 * @example auxiliaryName('ai4rag_docs', 't') // 'ai4rag_docs_<8 hex>_t'
 */
export function auxiliaryName(collection: string, suffix: string): string {
  if (!/^[a-z0-9]{1,2}$/.test(suffix))
    throw new CollectionNameError(`bad auxiliary suffix '${suffix}'`);
  const lower = collection.toLowerCase();
  const hash = createHash('sha1').update(lower).digest('hex').slice(0, 8);
  return `${lower.slice(0, 50)}_${hash}_${suffix}`;
}
