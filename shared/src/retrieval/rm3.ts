import { ValidationError } from '../errors.js';
import type { TermStats } from '../generation/term-stats.js';
import { analyzeWithWords } from '../text/analyzer.js';
import { bm25Idf } from '../vectorstores/pgvector/bm25.js';

/**
 * RM3 pseudo-relevance feedback (Lavrenko & Croft's relevance model, interpolated with the query as in Anserini's
 * `Rm3Reranker`). Pure and synchronous: the caller supplies the feedback documents and, optionally, the corpus
 * term statistics.
 */

/** Anserini's RM3 defaults. */
export const RM3_DEFAULTS = Object.freeze({
  fbDocs: 10,
  fbTerms: 10,
  originalQueryWeight: 0.5,
  /** Terms in more than this fraction of the corpus are dropped from the feedback documents (Anserini: 0.1). */
  maxDocFrequencyRatio: 0.1,
});

/**
 * Occurrences of the heaviest term in {@link rm3QueryText}: weights are quantised to integers relative to it, so
 * a keyword index that counts query term frequency (BM25's query side) weighs each term within 1/(2 × this) of
 * the heaviest weight of its RM3 weight.
 */
export const RM3_QUERY_RESOLUTION = 20;

/** Options of {@link rm3Expand}. */
export interface Rm3Options {
  /** Feedback documents used (the first ones of the list). @default RM3_DEFAULTS.fbDocs */
  fbDocs?: number;
  /** Terms kept per feedback document and in the relevance model. @default RM3_DEFAULTS.fbTerms */
  fbTerms?: number;
  /** λ: weight of the original query in the interpolation. @default RM3_DEFAULTS.originalQueryWeight */
  originalQueryWeight?: number;
}

/** A feedback document: its text and its first-pass retrieval score (higher is better). */
export interface FeedbackDocument {
  text: string;
  score: number;
}

/** One term of the expanded query. */
export interface WeightedTerm {
  /** The analyzed term (as `analyze` produces it). */
  term: string;
  weight: number;
  /** A word that analyzes to `term`: the most frequent such word in the query and feedback texts. */
  word: string;
}

function checkInt(name: string, v: number, min: number): void {
  if (!Number.isInteger(v) || v < min) {
    throw new ValidationError(`rm3 ${name} must be an integer ≥ ${min}, got ${String(v)}`);
  }
}

/** Validates RM3 options and fills in the defaults. */
export function rm3Options(o: Rm3Options = {}): Required<Rm3Options> {
  const fbDocs = o.fbDocs ?? RM3_DEFAULTS.fbDocs;
  const fbTerms = o.fbTerms ?? RM3_DEFAULTS.fbTerms;
  const originalQueryWeight = o.originalQueryWeight ?? RM3_DEFAULTS.originalQueryWeight;
  checkInt('fbDocs', fbDocs, 1);
  checkInt('fbTerms', fbTerms, 1);
  if (
    typeof originalQueryWeight !== 'number' ||
    !Number.isFinite(originalQueryWeight) ||
    originalQueryWeight < 0 ||
    originalQueryWeight > 1
  ) {
    throw new ValidationError(
      `rm3 originalQueryWeight must be in [0, 1], got ${String(originalQueryWeight)}`,
    );
  }
  return { fbDocs, fbTerms, originalQueryWeight };
}

/** Best first by weight, ties by term (Anserini's order on ties is a hash order; ours is deterministic). */
function byWeight(a: [string, number], b: [string, number]): number {
  return b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0);
}

function prune(v: Map<string, number>, size: number): Map<string, number> {
  return new Map([...v.entries()].sort(byWeight).slice(0, size));
}

function l1(v: ReadonlyMap<string, number>): number {
  let s = 0;
  for (const x of v.values()) s += Math.abs(x);
  return s;
}

/**
 * Expands a query by RM3, exactly as Anserini's `Rm3Reranker` (defaults fbDocs 10, fbTerms 10,
 * originalQueryWeight 0.5):
 * 1. the query vector is the analyzed query's term frequencies, scaled to unit L1 norm;
 * 2. each of the first `fbDocs` feedback documents becomes a term-frequency vector over its analyzed terms,
 *    without terms shorter than 2 characters and, when `stats` is given, without terms found in more than
 *    {@link RM3_DEFAULTS}.maxDocFrequencyRatio of the corpus; each vector is pruned to its `fbTerms` most frequent
 *    terms;
 * 3. the relevance model is rm(t) = Σ_d tf_d(t) / |d|₁ × score_d, pruned to `fbTerms` terms and scaled to unit L1;
 * 4. the expanded query is λ·q(t) + (1 − λ)·rm(t) over the union of terms, heaviest first (ties by term).
 * Analysis is the BM25 analyzer's (`analyze`). Anserini also drops non-`[a-z0-9]` terms; our analyzer folds
 * diacritics instead, so Unicode terms are kept.
 * @param stats corpus statistics for the document-frequency filter (skipped without them).
 * @throws {ValidationError} for invalid options.
 * @example
 * rm3Expand('cat', [{ text: 'cat dog', score: 1 }], { originalQueryWeight: 0.5 })
 * // [{ term: 'cat', weight: 0.75, word: 'cat' }, { term: 'dog', weight: 0.25, word: 'dog' }]
 */
export function rm3Expand(
  query: string,
  feedback: readonly FeedbackDocument[],
  options: Rm3Options = {},
  stats?: TermStats,
): WeightedTerm[] {
  const o = rm3Options(options);
  const wordCounts = new Map<string, Map<string, number>>();
  const countWord = (word: string, term: string): void => {
    const m = wordCounts.get(term) ?? new Map<string, number>();
    m.set(word, (m.get(word) ?? 0) + 1);
    wordCounts.set(term, m);
  };

  const qv = new Map<string, number>();
  for (const [word, term] of analyzeWithWords(query)) {
    qv.set(term, (qv.get(term) ?? 0) + 1);
    countWord(word, term);
  }
  const qNorm = l1(qv);

  // A term in more than the ratio of documents has idf below this (idf decreases with df).
  const minIdf =
    stats === undefined || stats.documents === 0
      ? undefined
      : bm25Idf(stats.documents, RM3_DEFAULTS.maxDocFrequencyRatio * stats.documents);
  const docs: { v: Map<string, number>; norm: number; score: number }[] = [];
  for (const doc of feedback.slice(0, o.fbDocs)) {
    const tf = new Map<string, number>();
    for (const [word, term] of analyzeWithWords(doc.text)) {
      countWord(word, term);
      if (term.length < 2) continue;
      if (minIdf !== undefined && (stats as TermStats).idf(term) < minIdf) continue;
      tf.set(term, (tf.get(term) ?? 0) + 1);
    }
    const v = prune(tf, o.fbTerms);
    docs.push({ v, norm: l1(v), score: doc.score });
  }

  const rm = new Map<string, number>();
  for (const d of docs) {
    // Anserini skips zero-length feedback documents (norm ≤ 0.001) to avoid dividing by zero.
    if (d.norm <= 0.001) continue;
    for (const [term, f] of d.v) rm.set(term, (rm.get(term) ?? 0) + (f / d.norm) * d.score);
  }
  const rmPruned = prune(rm, o.fbTerms);
  const rmNorm = l1(rmPruned);

  const lambda = o.originalQueryWeight;
  const out = new Map<string, number>();
  for (const t of new Set([...qv.keys(), ...rmPruned.keys()])) {
    const q = qNorm > 0 ? (qv.get(t) ?? 0) / qNorm : 0;
    const r = rmNorm > 0 ? (rmPruned.get(t) ?? 0) / rmNorm : 0;
    out.set(t, lambda * q + (1 - lambda) * r);
  }
  return [...out.entries()]
    .filter(([, w]) => w > 0)
    .sort(byWeight)
    .map(([term, weight]) => ({ term, weight, word: surfaceWord(wordCounts.get(term)) ?? term }));
}

function surfaceWord(counts: ReadonlyMap<string, number> | undefined): string | undefined {
  if (counts === undefined) return undefined;
  return [...counts.entries()].sort(byWeight)[0]?.[0];
}

/**
 * The expanded query as keyword-query text: each term's surface word repeated round(R × weight / max weight)
 * times (at least once; R = {@link RM3_QUERY_RESOLUTION}). BM25's query side multiplies a term's idf by its
 * query frequency, so this runs the weighted query through any keyword index that takes text, and `analyze` of
 * the text gives back exactly the expansion's terms.
 * @example rm3QueryText([{ term: 'cat', weight: 0.75, word: 'cats' }, { term: 'dog', weight: 0.25, word: 'dog' }])
 * // 'cats' × 20 then 'dog' × 7, space-separated
 */
export function rm3QueryText(
  terms: readonly WeightedTerm[],
  resolution = RM3_QUERY_RESOLUTION,
): string {
  const max = terms.reduce((m, t) => Math.max(m, t.weight), 0);
  if (max <= 0) return '';
  const parts: string[] = [];
  for (const t of terms) {
    const n = Math.max(1, Math.round((resolution * t.weight) / max));
    for (let i = 0; i < n; i++) parts.push(t.word);
  }
  return parts.join(' ');
}
