import { analyze } from '../text/analyzer.js';
import { bm25Idf } from '../vectorstores/pgvector/bm25.js';

/**
 * Corpus-level term rarity, so the local extractive model can tell an informative question term ("Mongolia",
 * "Colosseum") from a common one ("capital", "policy") — something the handful of retrieved passages cannot tell.
 */
export interface TermStats {
  /**
   * Smoothed BM25-style inverse document frequency of an analyzed term (as produced by `analyze`); a term never
   * seen gets the maximum, since an unseen word is as specific as a word can be.
   */
  idf(term: string): number;
  /** Number of texts the statistics were built from. */
  readonly documents: number;
  /**
   * In how many of the texts an analyzed term occurs (0 for none), when the statistics come from counts: what a
   * worker thread needs to rebuild the same `idf` (`termStatsFromCounts`).
   */
  documentFrequency?(term: string): number;
}

/**
 * Counts in how many texts each analyzed term occurs (once per text) and answers idf look-ups from the counts.
 * Build it once over the indexed chunks (or documents) and share it; it is immutable and look-ups are O(1).
 * Runs in one pass, so any iterable (a generator over a large corpus) works.
 * @example
 * const stats = buildTermStats(chunks.map((c) => c.text));
 * stats.idf('mongolia') > stats.idf('capit') // rare (or unseen) terms weigh more
 */
export function buildTermStats(texts: Iterable<string>): TermStats {
  const df = new Map<string, number>();
  let documents = 0;
  for (const text of texts) {
    documents += 1;
    for (const term of new Set(analyze(text))) df.set(term, (df.get(term) ?? 0) + 1);
  }
  return termStatsFromCounts(documents, (term) => df.get(term) ?? 0);
}

/**
 * Term statistics from document frequencies kept elsewhere (the pgvector store's BM25 table): `documentFrequency`
 * answers how many of the `documents` texts hold an analyzed term (0 when none; such a term gets the maximum idf).
 * @example termStatsFromCounts(10, (t) => (t === 'lock' ? 9 : 0)).idf('lock') // ≈ 0.1
 */
export function termStatsFromCounts(
  documents: number,
  documentFrequency: (term: string) => number,
): TermStats {
  const maxIdf = bm25Idf(documents, 0);
  return Object.freeze({
    documents,
    documentFrequency,
    idf(term: string): number {
      const n = documentFrequency(term);
      return n > 0 ? bm25Idf(documents, n) : maxIdf;
    },
  });
}
