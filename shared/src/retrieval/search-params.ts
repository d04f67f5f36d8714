import { ValidationError } from '../errors.js';
import { type FilterNode, parseMetadataFilter } from '../vectorstores/filter.js';
import type { RankerStrategy, SearchMode, SearchParams } from '../vectorstores/types.js';

/** Search parameters that break ai4rag's `validate_search_params` rules (search-space rules 5–7). */
export class SearchParamsError extends ValidationError {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'SearchParamsError';
  }
}

/** Search parameters after validation, with every default filled in. */
export interface ValidatedSearchParams {
  k: number;
  includeScores: boolean;
  searchMode: SearchMode;
  /** `''` for vector search. */
  rankerStrategy: RankerStrategy;
  /** RRF k (1..100) for rrf, else the sentinel 0. */
  rankerK: number;
  /** Dense weight in [0, 1) for weighted, else the sentinel 1. */
  rankerAlpha: number;
  /** The parsed filter; absent when none was given (or it was `{}`). */
  filter?: FilterNode;
}

/** Default RRF constant when a hybrid rrf search gives none (ai4rag's default grid value). */
export const DEFAULT_RANKER_K = 60;
/** Default dense weight when a hybrid weighted search gives none (ai4rag's default grid value). */
export const DEFAULT_RANKER_ALPHA = 0.5;
/** Upper bound on `k`: a guard against accidental full scans, far above RetrievalConstraints' 10. */
export const MAX_SEARCH_K = 10_000;

const STRATEGIES: readonly RankerStrategy[] = ['rrf', 'weighted', 'normalized'];

/**
 * Validates search parameters as ai4rag does, before any backend is touched, and fills in defaults.
 * - `k`: integer in 1..{@link MAX_SEARCH_K}.
 * - vector (default): strategy `''`/undefined, rankerK 0/undefined, rankerAlpha 1/undefined (ai4rag sentinels).
 * - hybrid: strategy required, one of rrf | weighted | normalized;
 *   rrf ⇒ rankerK integer 1..100 (missing → {@link DEFAULT_RANKER_K}), alpha must stay the sentinel;
 *   weighted ⇒ 0 ≤ rankerAlpha < 1 (missing → {@link DEFAULT_RANKER_ALPHA}), rankerK must stay the sentinel;
 *   normalized ⇒ both sentinels.
 * @throws {SearchParamsError} naming the offending parameter.
 * @example validateSearchParams({ k: 5, searchMode: 'hybrid', rankerStrategy: 'rrf' })
 * // { k: 5, includeScores: false, searchMode: 'hybrid', rankerStrategy: 'rrf', rankerK: 60, rankerAlpha: 1 }
 */
export function validateSearchParams(p: SearchParams): ValidatedSearchParams {
  if (p === null || typeof p !== 'object')
    throw new SearchParamsError('search params must be an object');
  const { k, includeScores, searchMode = 'vector', rankerStrategy, rankerK, rankerAlpha } = p;
  if (typeof k !== 'number' || !Number.isInteger(k) || k < 1 || k > MAX_SEARCH_K) {
    throw new SearchParamsError(`k must be an integer in 1..${MAX_SEARCH_K}, got ${String(k)}`);
  }
  if (includeScores !== undefined && typeof includeScores !== 'boolean') {
    throw new SearchParamsError('includeScores must be a boolean');
  }
  let filter: FilterNode | undefined;
  if (p.filter !== undefined) {
    try {
      filter = parseMetadataFilter(p.filter);
    } catch (error: unknown) {
      throw new SearchParamsError(`invalid filter: ${(error as Error).message}`, { cause: error });
    }
  }
  const base = { k, includeScores: includeScores ?? false, ...(filter ? { filter } : {}) };

  if (searchMode === 'vector') {
    if (rankerStrategy !== undefined && rankerStrategy !== '') {
      throw new SearchParamsError(
        `rankerStrategy must be '' for vector search, got '${String(rankerStrategy)}'`,
      );
    }
    if (rankerK !== undefined && rankerK !== 0) {
      throw new SearchParamsError(`rankerK must be 0 for vector search, got ${String(rankerK)}`);
    }
    if (rankerAlpha !== undefined && rankerAlpha !== 1) {
      throw new SearchParamsError(
        `rankerAlpha must be 1 for vector search, got ${String(rankerAlpha)}`,
      );
    }
    return { ...base, searchMode, rankerStrategy: '', rankerK: 0, rankerAlpha: 1 };
  }
  if (searchMode !== 'hybrid') {
    throw new SearchParamsError(
      `searchMode must be 'vector' or 'hybrid', got '${String(searchMode)}'`,
    );
  }
  if (rankerStrategy === undefined || !STRATEGIES.includes(rankerStrategy)) {
    throw new SearchParamsError(
      `rankerStrategy must be one of rrf, weighted, normalized for hybrid search, got '${String(rankerStrategy ?? '')}'`,
    );
  }
  const kIsSentinel = rankerK === undefined || rankerK === 0;
  const alphaIsSentinel = rankerAlpha === undefined || rankerAlpha === 1;
  if (rankerStrategy === 'rrf') {
    if (!alphaIsSentinel) {
      throw new SearchParamsError(
        `rankerAlpha is only allowed with the weighted strategy (got ${String(rankerAlpha)} with rrf)`,
      );
    }
    if (rankerK === 0) {
      throw new SearchParamsError('rankerK must be an integer in 1..100 for rrf, got 0');
    }
    const kk = rankerK ?? DEFAULT_RANKER_K;
    if (typeof kk !== 'number' || !Number.isInteger(kk) || kk < 1 || kk > 100) {
      throw new SearchParamsError(
        `rankerK must be an integer in 1..100 for rrf, got ${String(kk)}`,
      );
    }
    return { ...base, searchMode, rankerStrategy, rankerK: kk, rankerAlpha: 1 };
  }
  if (!kIsSentinel) {
    throw new SearchParamsError(
      `rankerK is only allowed with the rrf strategy (got ${String(rankerK)} with ${rankerStrategy})`,
    );
  }
  if (rankerStrategy === 'weighted') {
    if (rankerAlpha === 1) {
      throw new SearchParamsError('rankerAlpha must be in [0, 1) for weighted, got 1');
    }
    const a = rankerAlpha ?? DEFAULT_RANKER_ALPHA;
    if (typeof a !== 'number' || !Number.isFinite(a) || a < 0 || a >= 1) {
      throw new SearchParamsError(`rankerAlpha must be in [0, 1) for weighted, got ${String(a)}`);
    }
    return { ...base, searchMode, rankerStrategy, rankerK: 0, rankerAlpha: a };
  }
  if (!alphaIsSentinel) {
    throw new SearchParamsError(
      `rankerAlpha is only allowed with the weighted strategy (got ${String(rankerAlpha)} with normalized)`,
    );
  }
  return { ...base, searchMode, rankerStrategy, rankerK: 0, rankerAlpha: 1 };
}
