/**
 * What the modules of a `PgVectorStore` are given instead of the store: its client and object names, its settings,
 * and its two wrappers (`run`: foreign errors become a `VectorStoreError` naming the operation; `exclusive`: the
 * store's writes one at a time). Also the small checks they share (SQLSTATE of an error, numeric options).
 */
import { Ai4ragError } from '../../errors.js';
import { VectorStoreConfigError, VectorStoreError } from '../errors.js';
import type { SqlClient } from '../sql-client.js';
import type { DistanceMetric } from '../types.js';
import type { CollectionTables } from './names.js';

/** BM25 parameters of a store (see `PgVectorStoreOptions.bm25`). */
export interface Bm25Settings {
  k1: number;
  b: number;
  /** Relative avgdl drift tolerated before every document is re-weighted. */
  reweightTolerance: number;
}

/** Where writers put new postings and when a build folds them (`keyword-index.ts`, {@link keywordIndexFold}). */
export interface KeywordIndexSettings {
  /** Writers add postings to the fresh table once the collection's row ids pass this. */
  freshFromRow: number;
  /** An index build folds the fresh postings into the folded table once it holds this many. */
  foldMin: number;
  /**
   * A fold first trades the two tables' names when the fresh one holds at least this many bytes and more than the
   * folded one (`keywordIndexSwap`).
   */
  swapMinBytes: number;
  /** A build packs the folded lists of terms with more postings than this (`keywordPackBuild`). */
  packMinDf: number;
  /** Postings one pack build takes in all, the longest lists first. */
  packMaxPostings: number;
}

/** A store's context: fixed once the collection is open. */
export interface StoreContext {
  client: SqlClient;
  /** The collection's object names (`t.key`: its registry key). */
  t: CollectionTables;
  /** The collection's name as given (for messages). */
  collectionName: string;
  dimension: number;
  distance: DistanceMetric;
  bm25: Bm25Settings;
  keywordIndex: KeywordIndexSettings;
  logger: (message: string) => void;
  /** Bulk writes use the client's binary COPY. */
  useCopy: boolean;
  /** Opened without write privileges: keyword search reads the statistics log instead of folding it. */
  readOnly: boolean;
  /** The server is PGlite (one connection: no concurrent index builds, no parallel statements). */
  pglite: boolean;
  /** Wraps foreign errors; the message names the operation, never SQL text or values. */
  run<T>(operation: string, fn: () => Promise<T>): Promise<T>;
  /** Serializes the store's writes (statistics are read-modify-write). */
  exclusive<T>(fn: () => Promise<T>): Promise<T>;
  /**
   * What this store last saw of the collection, to do a write's client-side work before its transaction: only a
   * hint, checked inside the transaction (a batch prepared with another avgdl is weighed again there).
   */
  hints: { avgdl?: number };
}

/** The SQLSTATE of a driver error, if it carries one. */
export function sqlState(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** Runs `fn`, turning a foreign error into a {@link VectorStoreError} naming the operation and collection. */
export async function runOperation<T>(
  collectionName: string,
  operation: string,
  fn: () => Promise<T>,
): Promise<T> {
  try {
    return await fn();
  } catch (error: unknown) {
    if (error instanceof Ai4ragError) throw error;
    const code = sqlState(error);
    throw new VectorStoreError(
      `${operation} failed on collection ${collectionName}${code ? ` (SQLSTATE ${code})` : ''}`,
      { cause: error },
    );
  }
}

/** Returns `v` when it is a finite number (an integer when `integer`) in [min, max]; else throws. */
export function checkNumber(
  name: string,
  v: number,
  min: number,
  max: number,
  integer: boolean,
): number {
  if (
    typeof v !== 'number' ||
    !Number.isFinite(v) ||
    v < min ||
    v > max ||
    (integer && !Number.isInteger(v))
  ) {
    throw new VectorStoreConfigError(
      `${name} must be ${integer ? 'an integer' : 'a number'} in [${min}, ${max}], got ${String(v)}`,
    );
  }
  return v;
}
