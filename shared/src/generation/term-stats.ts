import { analyze } from '../text/analyzer.js';

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
}

/** BM25's smoothed idf, `ln(1 + (N − df + 0.5) / (df + 0.5))`: always positive, even for a term in every text. */
function bm25Idf(documents: number, df: number): number {
  return Math.log(1 + (documents - df + 0.5) / (df + 0.5));
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
  const maxIdf = bm25Idf(documents, 0);
  return Object.freeze({
    documents,
    idf(term: string): number {
      const n = df.get(term);
      return n === undefined ? maxIdf : bm25Idf(documents, n);
    },
  });
}
