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
  /** The HNSW index. */
  hnswIndex: string;
  /** The keyword index (postings). */
  kw: KeywordIndexNames;
  /** SQL: the chunk row is visible (not part of a write still in flight). */
  visible: string;
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
    hnswIndex: aux('h'),
    kw: keywordIndexNames(key),
    visible: `${table}.version NOT IN (SELECT version FROM ${writesTable} WHERE finished_at IS NULL)`,
  };
}
