/**
 * Quoted names of a pgvector collection's tables and indexes, and the SQL predicate of its visible rows: one place
 * that derives every object name from the collection's key (lower-cased, validated by `quoteIdent`).
 */
import { auxiliaryName, quoteIdent } from '../naming.js';
import { type KeywordIndexNames, keywordIndexNames } from './keyword-index.js';

/** A collection's object names (all quoted) and its visibility predicate. */
export interface CollectionTables {
  /** The collection's key: its name, lower-cased. */
  key: string;
  /** Chunk rows. */
  table: string;
  /** BM25 document frequencies. */
  dfTable: string;
  /** Statistics changes not yet folded (append-only). */
  dfLog: string;
  /** Document records. */
  docTable: string;
  /** Staged writes. */
  writesTable: string;
  /** The (document_id, sequence_number) index. */
  sequenceIndex: string;
  /** B-tree on the chunk table's `version`: a write's rows found without a scan (commit, sweep, lease check). */
  versionIndex: string;
  /** The full-table HNSW index of collections built before index segments (see `ann-index.ts`). */
  hnswIndex: string;
  /** Unquoted prefix of the HNSW segment indexes' names (`<prefix><lo>_<hi>`, bounds in base 36). */
  hnswSegmentPrefix: string;
  /** The keyword index (postings). */
  kw: KeywordIndexNames;
  /** SQL: the chunk row is visible (not part of a write still in flight). */
  visible: string;
}

/**
 * The segment indexes' name prefix: the collection's first 24 characters, its name hash and `_h`, which leaves room
 * for two base-36 row ids of 13 characters within PostgreSQL's 63-byte identifiers.
 */
function hnswSegmentPrefix(key: string): string {
  const hash = auxiliaryName(key, 'h').slice(-10, -2);
  return `${key.toLowerCase().slice(0, 24)}_${hash}_h`;
}

/** The names of collection `key` (lower-case). */
export function collectionTables(key: string): CollectionTables {
  const table = quoteIdent(key);
  const aux = (suffix: string) => quoteIdent(auxiliaryName(key, suffix));
  const writesTable = aux('w');
  return {
    key,
    table,
    dfTable: aux('t'),
    dfLog: aux('l'),
    docTable: aux('d'),
    writesTable,
    sequenceIndex: aux('s'),
    versionIndex: aux('v'),
    hnswIndex: aux('h'),
    hnswSegmentPrefix: hnswSegmentPrefix(key),
    kw: keywordIndexNames(key),
    visible: `${table}.version NOT IN (SELECT version FROM ${writesTable} WHERE finished_at IS NULL)`,
  };
}
