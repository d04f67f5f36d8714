/**
 * Document-level retrieval metrics. A question's ranked list of chunks becomes a ranked list of distinct
 * documents (a document's rank is that of its best chunk); gains are binary.
 */

/** Metrics of one question or the mean over questions. */
export interface RetrievalMetrics {
  'recall@1': number;
  'recall@5': number;
  'recall@10': number;
  'mrr@10': number;
  'ndcg@10': number;
}

/** Distinct document ids in first-seen order. */
export function distinctDocuments(rankedDocumentIds: readonly string[]): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const id of rankedDocumentIds) {
    if (!seen.has(id)) {
      seen.add(id);
      out.push(id);
    }
  }
  return out;
}

/** Share of the gold documents found among the first `k` distinct documents. 0 when there is no gold document. */
export function recallAt(ranked: readonly string[], gold: ReadonlySet<string>, k: number): number {
  if (gold.size === 0) return 0;
  let hits = 0;
  for (const id of ranked.slice(0, k)) if (gold.has(id)) hits += 1;
  return hits / gold.size;
}

/** Reciprocal rank of the first gold document within the first `k`, else 0. */
export function mrrAt(ranked: readonly string[], gold: ReadonlySet<string>, k: number): number {
  const limit = Math.min(k, ranked.length);
  for (let i = 0; i < limit; i += 1) if (gold.has(ranked[i] as string)) return 1 / (i + 1);
  return 0;
}

/** Binary-gain nDCG@k: DCG = Σ 1/log2(rank+1) over gold documents in the first k; ideal over min(|gold|, k). */
export function ndcgAt(ranked: readonly string[], gold: ReadonlySet<string>, k: number): number {
  if (gold.size === 0) return 0;
  let dcg = 0;
  const limit = Math.min(k, ranked.length);
  for (let i = 0; i < limit; i += 1) if (gold.has(ranked[i] as string)) dcg += 1 / Math.log2(i + 2);
  let idcg = 0;
  for (let i = 0; i < Math.min(gold.size, k); i += 1) idcg += 1 / Math.log2(i + 2);
  return dcg / idcg;
}

/**
 * Metrics of one question.
 * @param rankedDocumentIds the document id of each retrieved chunk, best first (duplicates allowed)
 * @param goldDocumentIds the question's relevant documents
 * @example questionMetrics(['a', 'a', 'b'], ['b'])['mrr@10'] // 0.5
 */
export function questionMetrics(
  rankedDocumentIds: readonly string[],
  goldDocumentIds: readonly string[],
): RetrievalMetrics {
  const ranked = distinctDocuments(rankedDocumentIds);
  const gold = new Set(goldDocumentIds);
  return {
    'recall@1': recallAt(ranked, gold, 1),
    'recall@5': recallAt(ranked, gold, 5),
    'recall@10': recallAt(ranked, gold, 10),
    'mrr@10': mrrAt(ranked, gold, 10),
    'ndcg@10': ndcgAt(ranked, gold, 10),
  };
}

/** Mean of each metric over questions (all zeros for an empty list). */
export function meanMetrics(perQuestion: readonly RetrievalMetrics[]): RetrievalMetrics {
  const sum: RetrievalMetrics = {
    'recall@1': 0,
    'recall@5': 0,
    'recall@10': 0,
    'mrr@10': 0,
    'ndcg@10': 0,
  };
  for (const m of perQuestion) {
    for (const key of Object.keys(sum) as (keyof RetrievalMetrics)[]) sum[key] += m[key];
  }
  const n = perQuestion.length;
  if (n === 0) return sum;
  for (const key of Object.keys(sum) as (keyof RetrievalMetrics)[]) sum[key] /= n;
  return sum;
}
