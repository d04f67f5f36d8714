import { ChunkingValidationError } from './errors.js';
import type { ChunkingMethod, ChunkingOptions } from './types.js';

/**
 * Characters per approximate token. ai4rag (0.9+) replaced tiktoken with `CharApproxTokenizer`, which counts
 * `ceil(chars / 4)`; chunk sizes and overlaps are expressed in these tokens.
 */
export const CHARS_PER_TOKEN = 4;

/**
 * Bounds of ai4rag's `ChunkingConstraints` (sizes and overlaps in approximate tokens). Shared by validation and
 * by the optimizer's search-space checks so both reject the same grid points.
 */
export const CHUNKING_LIMITS = Object.freeze({
  MIN_CHUNK_SIZE: 128,
  MAX_CHUNK_SIZE: 2048,
  MIN_CHUNK_OVERLAP: 0,
  MAX_CHUNK_OVERLAP: 256,
});

/** The chunking methods ai4rag supports (`ChunkingConstraints.METHODS`). */
export const CHUNKING_METHODS: readonly ChunkingMethod[] = Object.freeze(['recursive', 'hybrid']);

/**
 * Approximate token count, `ceil(text.length / 4)`, as ai4rag's `CharApproxTokenizer`. Used as the length
 * function of every splitter so chunk budgets match ai4rag's without a real tokenizer.
 * @example approxTokens('hello') // 2
 */
export function approxTokens(text: string): number {
  return Math.ceil(text.length / CHARS_PER_TOKEN);
}

function describe(value: unknown): string {
  return typeof value === 'string' ? `'${value}'` : String(value);
}

function isIntegerIn(value: unknown, min: number, max: number): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max;
}

/**
 * Checks chunking options against ai4rag's constraints and rules 1–2 of its search space, so a bad grid point
 * fails before any document is read: size an integer in 128..2048, overlap an integer in 0..256,
 * size > 2 × overlap, hybrid only with overlap 0, method one of `recursive` / `hybrid`.
 * Recursive chunking with overlap 0 is accepted (ai4rag's rule 1 only filters it out of the default grid).
 * @throws {ChunkingValidationError} naming the bad value and the allowed range.
 * @example validateChunkingOptions({ method: 'recursive', chunkSize: 512, chunkOverlap: 128 });
 */
export function validateChunkingOptions(opts: ChunkingOptions): void {
  if (typeof opts !== 'object' || opts === null) {
    throw new ChunkingValidationError(`Chunking options must be an object, got ${describe(opts)}.`);
  }
  const { method, chunkSize, chunkOverlap } = opts;
  if (!CHUNKING_METHODS.includes(method)) {
    throw new ChunkingValidationError(
      `Unknown chunking method ${describe(method)}; allowed: ${CHUNKING_METHODS.map((m) => `'${m}'`).join(', ')}.`,
    );
  }
  const { MIN_CHUNK_SIZE, MAX_CHUNK_SIZE, MIN_CHUNK_OVERLAP, MAX_CHUNK_OVERLAP } = CHUNKING_LIMITS;
  if (!isIntegerIn(chunkSize, MIN_CHUNK_SIZE, MAX_CHUNK_SIZE)) {
    throw new ChunkingValidationError(
      `chunkSize ${describe(chunkSize)} is invalid; it must be an integer in ${MIN_CHUNK_SIZE}..${MAX_CHUNK_SIZE} (tokens).`,
    );
  }
  if (!isIntegerIn(chunkOverlap, MIN_CHUNK_OVERLAP, MAX_CHUNK_OVERLAP)) {
    throw new ChunkingValidationError(
      `chunkOverlap ${describe(chunkOverlap)} is invalid; it must be an integer in ${MIN_CHUNK_OVERLAP}..${MAX_CHUNK_OVERLAP} (tokens).`,
    );
  }
  if (chunkSize <= 2 * chunkOverlap) {
    throw new ChunkingValidationError(
      `chunkSize ${chunkSize} must be greater than 2 × chunkOverlap (${2 * chunkOverlap}); lower the overlap to at most ${Math.ceil(chunkSize / 2) - 1}.`,
    );
  }
  if (method === 'hybrid' && chunkOverlap !== 0) {
    throw new ChunkingValidationError(
      `Hybrid chunking does not support overlap: chunkOverlap must be 0, got ${chunkOverlap}.`,
    );
  }
}
