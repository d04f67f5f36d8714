import { createHash } from 'node:crypto';
import { isValidMetadataKey } from '../vectorstores/filter.js';
import type { LoadedDocument, UserMetadata } from './types.js';

/** Suffix of a sidecar metadata file: `report.pdf` → `report.pdf.metadata.json` (as Bedrock Knowledge Bases). */
export const METADATA_SIDECAR_SUFFIX = '.metadata.json';
/** Bounds of one document's user metadata. */
export const USER_METADATA_LIMITS = { keys: 64, string: 1024, sidecarBytes: 64 * 1024 } as const;

/** Whether a file name is a sidecar (never indexed as a document itself). */
export function isMetadataSidecar(name: string): boolean {
  return (
    name.toLowerCase().endsWith(METADATA_SIDECAR_SUFFIX) &&
    name.length > METADATA_SIDECAR_SUFFIX.length
  );
}

/**
 * Checks user metadata: an object of at most {@link USER_METADATA_LIMITS}.keys keys (letters, digits, `_`, not
 * starting with a digit, ≤ 64 chars; never `__proto__`/`constructor`/`prototype`), each a string, a finite
 * number or a boolean. A Bedrock sidecar's `{"metadataAttributes": {...}}` wrapper is accepted too (plain
 * values only). Returns the problem as a message, or the metadata.
 * @example parseUserMetadata({ metadataAttributes: { year: 2024 } }) // { ok: true, metadata: { year: 2024 } }
 */
export function parseUserMetadata(
  value: unknown,
): { ok: true; metadata: UserMetadata } | { ok: false; message: string } {
  const plain = (v: unknown): v is Record<string, unknown> =>
    v !== null && typeof v === 'object' && !Array.isArray(v);
  if (!plain(value)) return { ok: false, message: 'metadata must be a JSON object' };
  const keys = Object.keys(value);
  const body =
    keys.length === 1 && keys[0] === 'metadataAttributes' ? value.metadataAttributes : value;
  if (!plain(body)) return { ok: false, message: 'metadataAttributes must be a JSON object' };
  const entries = Object.entries(body);
  if (entries.length > USER_METADATA_LIMITS.keys) {
    return { ok: false, message: `more than ${USER_METADATA_LIMITS.keys} metadata keys` };
  }
  const metadata: UserMetadata = {};
  for (const [k, v] of entries) {
    if (!isValidMetadataKey(k)) {
      return {
        ok: false,
        message: `metadata key ${JSON.stringify(k.slice(0, 64))} is invalid (letters, digits and _, not starting with a digit, at most 64 chars)`,
      };
    }
    const ok =
      (typeof v === 'string' && v.length <= USER_METADATA_LIMITS.string) ||
      typeof v === 'boolean' ||
      (typeof v === 'number' && Number.isFinite(v));
    if (!ok) {
      return {
        ok: false,
        message: `metadata value of "${k}" must be a string (≤ ${USER_METADATA_LIMITS.string} chars), a finite number or a boolean`,
      };
    }
    Object.defineProperty(metadata, k, { value: v, enumerable: true, writable: true });
  }
  return { ok: true, metadata };
}

/**
 * The document with user metadata attached; keys the document already has (a jsonl record's own `metadata`)
 * win over `metadata` (its file's sidecar). Keys are sorted, and the content hash is re-derived over the
 * previous hash and the metadata, so changing only a sidecar re-ingests the document; empty metadata leaves
 * the document unchanged.
 */
export function withUserMetadata(doc: LoadedDocument, metadata: UserMetadata): LoadedDocument {
  if (Object.keys(metadata).length === 0) return doc;
  const merged: UserMetadata = { ...metadata, ...(doc.metadata ?? {}) };
  const sorted: UserMetadata = Object.fromEntries(
    Object.keys(merged)
      .sort()
      .map((k) => [k, merged[k] as string | number | boolean]),
  );
  const contentHash = createHash('sha256')
    .update(`${doc.contentHash}\n${JSON.stringify(sorted)}`, 'utf8')
    .digest('hex');
  return { ...doc, metadata: sorted, contentHash };
}
