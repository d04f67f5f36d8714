/**
 * BM25 as sparse vectors: documents carry their per-term BM25 weights, a query carries idf × query tf, and the
 * inner product of the two is exactly the Okapi BM25 score. Pure helpers shared by the pgvector store.
 */

/** Dimension of the BM25 `sparsevec` column (pgvector's maximum); term ids are in 1..BM25_DIM − 1. */
export const BM25_DIM = 1_000_000_000;
/**
 * Default BM25 term-saturation parameter: Lucene/Elasticsearch's 1.2. With our stemming analyzer it measured
 * better than Anserini's 0.9/0.4 on all three reference datasets (README, "Retrieval quality").
 */
export const DEFAULT_BM25_K1 = 1.2;
/** Default BM25 length-normalization parameter (Lucene/Elasticsearch's 0.75). */
export const DEFAULT_BM25_B = 0.75;

const encoder = new TextEncoder();

/**
 * 32-bit FNV-1a over the UTF-8 bytes of a string, as an unsigned integer.
 * @example fnv1a32('a') // 3826002220
 */
export function fnv1a32(text: string): number {
  let h = 0x811c9dc5;
  for (const byte of encoder.encode(text)) {
    h ^= byte;
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/**
 * Sparse-vector index of an analyzed term: FNV-1a mod (BM25_DIM − 1) + 1 (sparsevec indices are 1-based).
 * Distinct terms may collide (probability ~ n²/2e9); a collision merges their statistics.
 */
export function termId(term: string): number {
  return (fnv1a32(term) % (BM25_DIM - 1)) + 1;
}

/** Term ids of recently seen terms (bounded; cleared when full). */
const TERM_IDS = new Map<string, number>();
const TERM_IDS_MAX = 200_000;

/** Term frequencies by term id of an analyzed token list. */
export function termFrequencies(tokens: readonly string[]): Map<number, number> {
  const tf = new Map<number, number>();
  for (const t of tokens) {
    let id = TERM_IDS.get(t);
    if (id === undefined) {
      id = termId(t);
      if (TERM_IDS.size >= TERM_IDS_MAX) TERM_IDS.clear();
      TERM_IDS.set(t, id);
    }
    tf.set(id, (tf.get(id) ?? 0) + 1);
  }
  return tf;
}

/**
 * BM25 inverse document frequency (Lucene's non-negative form): ln(1 + (N − df + 0.5) / (df + 0.5)).
 * @example bm25Idf(10, 1) // ln(1 + 9.5 / 1.5) = 1.9924
 */
export function bm25Idf(n: number, df: number): number {
  return Math.log(1 + (n - df + 0.5) / (df + 0.5));
}

/**
 * Document-side BM25 weights: tf·(k1 + 1) / (tf + k1·(1 − b + b·dl/avgdl)), with dl the document's token count.
 */
export function bm25DocWeights(
  tf: ReadonlyMap<number, number>,
  dl: number,
  avgdl: number,
  k1: number,
  b: number,
): Map<number, number> {
  const norm = k1 * (1 - b + (b * dl) / avgdl);
  const out = new Map<number, number>();
  for (const [id, f] of tf) out.set(id, (f * (k1 + 1)) / (f + norm));
  return out;
}

/**
 * pgvector `sparsevec` text literal (`{i:v,...}/BM25_DIM`), indices ascending, zero and non-finite values dropped.
 * @example sparseLiteral(new Map([[5, 0.5], [2, 1]])) // '{2:1,5:0.5}/1000000000'
 */
export function sparseLiteral(weights: ReadonlyMap<number, number>): string {
  const parts = [...weights.entries()]
    .filter(([, v]) => v !== 0 && Number.isFinite(v))
    .sort((a, b) => a[0] - b[0])
    .map(([i, v]) => `${i}:${v}`);
  return `{${parts.join(',')}}/${BM25_DIM}`;
}
