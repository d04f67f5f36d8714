import { ChunkingValidationError } from './errors.js';
import type { ChunkingMethod, ChunkingOptions, SemanticBreakpoint } from './types.js';

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

/**
 * The chunking methods: ai4rag's (`ChunkingConstraints.METHODS`: `recursive`, `hybrid`) and ours (`fixed`,
 * `semantic`, `hierarchical`; issue 15).
 */
export const CHUNKING_METHODS: readonly ChunkingMethod[] = Object.freeze([
  'recursive',
  'hybrid',
  'fixed',
  'semantic',
  'hierarchical',
]);

/** How `semantic` chunking may pick its breakpoints. */
export const SEMANTIC_BREAKPOINTS: readonly SemanticBreakpoint[] = Object.freeze([
  'percentile',
  'standard_deviation',
  'gradient',
]);

/**
 * Bounds and defaults of the method-specific parameters (sizes in approximate tokens). `parentChunkSize` must also
 * exceed `chunkSize`; `minChunkSize` must be at most half of `chunkSize` (so a small chunk fits beside a neighbour).
 */
export const METHOD_LIMITS = Object.freeze({
  MAX_PARENT_CHUNK_SIZE: 8192,
  MAX_BUFFER_SIZE: 10,
  DEFAULT_BUFFER_SIZE: 1,
  /** The largest number of standard deviations `standard_deviation` accepts. */
  MAX_STD_AMOUNT: 10,
  DEFAULT_BREAKPOINT: 'percentile' as SemanticBreakpoint,
  /** Default breakpoint amount per breakpoint type (LangChain's `SemanticChunker` defaults). */
  DEFAULT_AMOUNT: Object.freeze({
    percentile: 95,
    standard_deviation: 3,
    gradient: 95,
  }) as Readonly<Record<SemanticBreakpoint, number>>,
  /** Default `minChunkSize` = `floor(chunkSize / MIN_CHUNK_DIVISOR)` (64 for a 512 maximum). */
  MIN_CHUNK_DIVISOR: 8,
});

/** The parameters each method takes besides `method`, `chunkSize` and `chunkOverlap`. */
const METHOD_PARAMETERS: Readonly<Record<ChunkingMethod, readonly string[]>> = Object.freeze({
  recursive: [],
  hybrid: [],
  fixed: [],
  semantic: ['breakpoint', 'breakpointAmount', 'bufferSize', 'minChunkSize'],
  hierarchical: ['parentChunkSize'],
});
const ALL_METHOD_PARAMETERS = [
  'parentChunkSize',
  'breakpoint',
  'breakpointAmount',
  'bufferSize',
  'minChunkSize',
] as const;

/** The `semantic` settings with their defaults applied (see {@link METHOD_LIMITS}). */
export interface ResolvedSemanticOptions {
  chunkSize: number;
  breakpoint: SemanticBreakpoint;
  breakpointAmount: number;
  bufferSize: number;
  minChunkSize: number;
}

/**
 * The `semantic` parameters with defaults filled in: breakpoint `percentile`, amount 95 (`percentile`, `gradient`)
 * or 3 (`standard_deviation`), buffer 1, minimum `floor(chunkSize / 8)`.
 * @example resolveSemanticOptions({ method: 'semantic', chunkSize: 512, chunkOverlap: 0 }).minChunkSize // 64
 */
export function resolveSemanticOptions(opts: ChunkingOptions): ResolvedSemanticOptions {
  const breakpoint = opts.breakpoint ?? METHOD_LIMITS.DEFAULT_BREAKPOINT;
  return {
    chunkSize: opts.chunkSize,
    breakpoint,
    breakpointAmount: opts.breakpointAmount ?? METHOD_LIMITS.DEFAULT_AMOUNT[breakpoint],
    bufferSize: opts.bufferSize ?? METHOD_LIMITS.DEFAULT_BUFFER_SIZE,
    minChunkSize: opts.minChunkSize ?? Math.floor(opts.chunkSize / METHOD_LIMITS.MIN_CHUNK_DIVISOR),
  };
}

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
 * fails before any document is read: method one of {@link CHUNKING_METHODS}, size an integer in 128..2048, overlap
 * an integer in 0..256, size > 2 × overlap, overlap 0 for `hybrid` and `semantic`. Method parameters:
 * - `hierarchical` needs `parentChunkSize`, an integer in chunkSize+1..8192;
 * - `semantic`: `breakpoint` one of {@link SEMANTIC_BREAKPOINTS}; `breakpointAmount` a number in 0..100 for
 *   `percentile` / `gradient`, 0..10 for `standard_deviation`; `bufferSize` an integer in 0..10; `minChunkSize` an
 *   integer in 0..floor(chunkSize / 2);
 * - a parameter given for a method that does not use it is an error naming it.
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
  if (method === 'semantic' && chunkOverlap !== 0) {
    throw new ChunkingValidationError(
      `Semantic chunking does not support overlap: chunkOverlap must be 0, got ${chunkOverlap}.`,
    );
  }
  const record = opts as unknown as Record<string, unknown>;
  const unused = ALL_METHOD_PARAMETERS.filter(
    (name) => record[name] !== undefined && !METHOD_PARAMETERS[method].includes(name),
  );
  if (unused.length > 0) {
    throw new ChunkingValidationError(
      `${unused.map((n) => `${n} ${describe(record[n])}`).join(', ')} ${unused.length > 1 ? 'do' : 'does'} not apply to ${method} chunking; ${
        method === 'hierarchical' || method === 'semantic'
          ? `it takes ${METHOD_PARAMETERS[method].join(', ')}`
          : 'it takes only chunkSize and chunkOverlap'
      }.`,
    );
  }
  if (method === 'hierarchical') validateHierarchical(opts);
  if (method === 'semantic') validateSemantic(opts);
}

function validateHierarchical(opts: ChunkingOptions): void {
  const { parentChunkSize, chunkSize } = opts;
  const max = METHOD_LIMITS.MAX_PARENT_CHUNK_SIZE;
  if (parentChunkSize === undefined) {
    throw new ChunkingValidationError(
      `Hierarchical chunking needs parentChunkSize, an integer in ${chunkSize + 1}..${max} (tokens; greater than chunkSize ${chunkSize}).`,
    );
  }
  if (!isIntegerIn(parentChunkSize, chunkSize + 1, max)) {
    throw new ChunkingValidationError(
      `parentChunkSize ${describe(parentChunkSize)} is invalid; it must be an integer in ${chunkSize + 1}..${max} (tokens; greater than chunkSize ${chunkSize}).`,
    );
  }
}

function validateSemantic(opts: ChunkingOptions): void {
  const { breakpoint, breakpointAmount, bufferSize, minChunkSize, chunkSize } = opts;
  if (breakpoint !== undefined && !SEMANTIC_BREAKPOINTS.includes(breakpoint)) {
    throw new ChunkingValidationError(
      `breakpoint ${describe(breakpoint)} is invalid; allowed: ${SEMANTIC_BREAKPOINTS.map((b) => `'${b}'`).join(', ')}.`,
    );
  }
  if (breakpointAmount !== undefined) {
    const type = breakpoint ?? METHOD_LIMITS.DEFAULT_BREAKPOINT;
    const max = type === 'standard_deviation' ? METHOD_LIMITS.MAX_STD_AMOUNT : 100;
    if (
      typeof breakpointAmount !== 'number' ||
      !Number.isFinite(breakpointAmount) ||
      breakpointAmount < 0 ||
      breakpointAmount > max
    ) {
      throw new ChunkingValidationError(
        `breakpointAmount ${describe(breakpointAmount)} is invalid; for breakpoint '${type}' it must be a number in 0..${max}${
          type === 'standard_deviation' ? ' (standard deviations)' : ' (a percentile)'
        }.`,
      );
    }
  }
  if (bufferSize !== undefined && !isIntegerIn(bufferSize, 0, METHOD_LIMITS.MAX_BUFFER_SIZE)) {
    throw new ChunkingValidationError(
      `bufferSize ${describe(bufferSize)} is invalid; it must be an integer in 0..${METHOD_LIMITS.MAX_BUFFER_SIZE} (sentences on each side).`,
    );
  }
  const maxMin = Math.floor(chunkSize / 2);
  if (minChunkSize !== undefined && !isIntegerIn(minChunkSize, 0, maxMin)) {
    throw new ChunkingValidationError(
      `minChunkSize ${describe(minChunkSize)} is invalid; it must be an integer in 0..${maxMin} (tokens; at most half of chunkSize ${chunkSize}).`,
    );
  }
}
