/**
 * The options of `PgVectorStore.create`: their interface, their defaults, and their validation (done before any
 * I/O: a bad option is refused with a `VectorStoreConfigError` naming it and the value given).
 */
import type { Embedder } from '../../embeddings/types.js';
import { VectorStoreConfigError } from '../errors.js';
import { resolveCollectionName } from '../naming.js';
import type { SqlClient } from '../sql-client.js';
import type { DistanceMetric } from '../types.js';
import { DEFAULT_BM25_B, DEFAULT_BM25_K1 } from './bm25.js';
import {
  DEFAULT_KEYWORD_DEPTH,
  FOLD_MIN_POSTINGS,
  FRESH_POSTINGS_FROM_ROW,
  PACK_MAX_POSTINGS,
  PACK_MIN_DF,
  SWAP_MIN_BYTES,
} from './keyword-index.js';
import { OPERATOR } from './search.js';
import { type Bm25Settings, checkNumber, type KeywordIndexSettings } from './store-context.js';

/** Largest `vector` dimension pgvector stores. */
export const MAX_VECTOR_DIMENSION = 16000;

/** Options of {@link PgVectorStore.create}. */
export interface PgVectorStoreOptions {
  client: SqlClient;
  embedder: Embedder;
  /** Resolved with `resolveCollectionName` (must start with `ai4rag`; generated when absent). */
  collectionName?: string;
  /** @default 'cosine' */
  distance?: DistanceMetric;
  /**
   * Rows from which `buildIndex` (called at the end of an ingestion, or by `ai4rag index`) builds the HNSW index;
   * searches below it, or before the index exists, scan exactly. Searches never build it. @default 20000
   */
  annMinRows?: number;
  /** Candidates taken from each side of a hybrid search (at least k). @default 100 */
  hybridCandidates?: number;
  /**
   * Smallest `hnsw.ef_search` of an index search (it is at least 2·k, at most 1000). Measured with
   * `npm run bench -- --hnsw` (SciFact dev, local embedder, vector only, two runs): nDCG@10 0.4328 / 0.4328 at 40
   * (pgvector's default), 0.4418 / 0.4474 at 100, and 0.4518 / 0.4518 at 200, as with the exact scan (the same
   * top 10 for every question); a probe at 20k chunks takes 1.8–2.4 ms at 40, 3.5–6.3 ms at 200 and 16–17 ms
   * exactly.
   * @default 200
   */
  efSearch?: number;
  /**
   * Postings read per query term by a keyword search (see `keyword-index.ts`); 0 scans every chunk's BM25 weights
   * exactly instead (the reference the index is measured against). @default 1000
   */
  keywordDepth?: number;
  /**
   * Whether a keyword search reads a long postings list's head from its pack (see `keywordIndex.packMinDf`) rather
   * than from the b-tree; false only to compare the two. @default true
   */
  packedReads?: boolean;
  /**
   * Where writers put new postings, and when an index build folds them (`keyword-index.ts`): once the collection's
   * row ids pass `freshFromRow` a writer adds them to the fresh postings table, and a build moves them into the
   * folded one when it holds at least `foldMin`. When the fresh table holds at least `swapMinBytes` and more than
   * the folded one (a bulk load without builds), the build trades the two tables' names first and moves the
   * smaller one's postings. A build of a collection past `freshFromRow` also packs the head of each folded list of
   * more than `packMinDf` postings into one value (`keywordPackBuild`), which a keyword search reads instead of
   * the b-tree, the longest lists first, `packMaxPostings` postings in all.
   * @default { freshFromRow: 100000, foldMin: 2000000, swapMinBytes: 67108864, packMinDf: 2000, packMaxPostings: 40000000 }
   */
  keywordIndex?: {
    freshFromRow?: number;
    foldMin?: number;
    swapMinBytes?: number;
    packMinDf?: number;
    packMaxPostings?: number;
  };
  /**
   * BM25 parameters. `reweightTolerance`: relative drift of the average document length tolerated before all
   * document weights are recomputed (default 0.1; 0 recomputes on any change).
   */
  bm25?: { k1?: number; b?: number; reweightTolerance?: number };
  logger?: (message: string) => void;
  /** `close()` also closes the client. @default false */
  ownsClient?: boolean;
  /**
   * Create the collection when it does not exist, and bring an older schema up to date (under an advisory lock
   * with a lock timeout). Readers (search, listing) pass false: a mistyped name is reported instead of silently
   * creating an empty collection, and opening runs no DDL at all (only catalogue reads); a collection whose
   * schema is out of date is refused with a message saying how to migrate it. @default true
   */
  createIfMissing?: boolean;
}

/** Default floor of `hnsw.ef_search` (see {@link PgVectorStoreOptions.efSearch}). */
export const DEFAULT_EF_SEARCH = 200;

/** The options with their defaults applied. */
export interface ResolvedOptions {
  /** The collection's name, resolved. */
  name: string;
  distance: DistanceMetric;
  annMinRows: number;
  hybridCandidates: number;
  efSearch: number;
  keywordDepth: number;
  packedReads: boolean;
  keywordIndex: KeywordIndexSettings;
  bm25: Bm25Settings;
  logger: (message: string) => void;
  createIfMissing: boolean;
  ownsClient: boolean;
}

/**
 * Validates `options` and applies their defaults.
 * @throws {CollectionNameError} for a name failing the `ai4rag` guard.
 * @throws {VectorStoreConfigError} for a bad option.
 */
/** The keyword index's settings when not given (`keyword-index.ts`). */
const KEYWORD_INDEX_DEFAULTS: Readonly<KeywordIndexSettings> = {
  freshFromRow: FRESH_POSTINGS_FROM_ROW,
  foldMin: FOLD_MIN_POSTINGS,
  swapMinBytes: SWAP_MIN_BYTES,
  packMinDf: PACK_MIN_DF,
  packMaxPostings: PACK_MAX_POSTINGS,
};

export function resolveOptions(options: PgVectorStoreOptions): ResolvedOptions {
  const name = resolveCollectionName(options.collectionName);
  const distance = options.distance ?? 'cosine';
  if (!(distance in OPERATOR)) {
    throw new VectorStoreConfigError(`unknown distance metric '${String(distance)}'`);
  }
  checkNumber('embedder.dimension', options.embedder.dimension, 1, MAX_VECTOR_DIMENSION, true);
  checkNumber('annMinRows', options.annMinRows ?? 0, 0, Number.MAX_SAFE_INTEGER, true);
  checkNumber('hybridCandidates', options.hybridCandidates ?? 100, 1, 10_000, true);
  checkNumber('efSearch', options.efSearch ?? DEFAULT_EF_SEARCH, 1, 1000, true);
  checkNumber('keywordDepth', options.keywordDepth ?? DEFAULT_KEYWORD_DEPTH, 0, 1_000_000, true);
  const keywordIndex = { ...KEYWORD_INDEX_DEFAULTS };
  for (const key of Object.keys(keywordIndex) as (keyof KeywordIndexSettings)[]) {
    keywordIndex[key] = options.keywordIndex?.[key] ?? KEYWORD_INDEX_DEFAULTS[key];
    // foldMin 0 would fold (nothing) at every build.
    checkNumber(
      `keywordIndex.${key}`,
      keywordIndex[key],
      key === 'foldMin' ? 1 : 0,
      Number.MAX_SAFE_INTEGER,
      true,
    );
  }
  if (options.packedReads !== undefined && typeof options.packedReads !== 'boolean') {
    throw new VectorStoreConfigError(
      `packedReads must be true or false, got ${JSON.stringify(options.packedReads)}`,
    );
  }
  checkNumber('bm25.k1', options.bm25?.k1 ?? DEFAULT_BM25_K1, 0, 100, false);
  checkNumber('bm25.b', options.bm25?.b ?? DEFAULT_BM25_B, 0, 1, false);
  checkNumber('bm25.reweightTolerance', options.bm25?.reweightTolerance ?? 0.1, 0, 10, false);
  return {
    name,
    distance,
    annMinRows: options.annMinRows ?? 20_000,
    hybridCandidates: options.hybridCandidates ?? 100,
    efSearch: options.efSearch ?? DEFAULT_EF_SEARCH,
    keywordDepth: options.keywordDepth ?? DEFAULT_KEYWORD_DEPTH,
    packedReads: options.packedReads ?? true,
    keywordIndex,
    bm25: {
      k1: options.bm25?.k1 ?? DEFAULT_BM25_K1,
      b: options.bm25?.b ?? DEFAULT_BM25_B,
      reweightTolerance: options.bm25?.reweightTolerance ?? 0.1,
    },
    logger: options.logger ?? (() => {}),
    createIfMissing: options.createIfMissing ?? true,
    ownsClient: options.ownsClient ?? false,
  };
}
