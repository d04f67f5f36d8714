import { buildKeyIndex, resolveDocumentKey, unmatchedKeyMessage } from '../documents/keys.js';
import { ValidationError } from '../errors.js';
import type { Retriever } from '../retrieval/retriever.js';
import type { BenchmarkQuestion } from './benchmark.js';
import { meanMetrics, questionMetrics, type RetrievalMetrics } from './retrieval-metrics.js';

export interface RetrievalEvaluation {
  /** Questions scored (those with at least one gold document). */
  questions: number;
  /** Questions skipped because they have no gold document (e.g. unanswerable ones). */
  skipped: number;
  metrics: RetrievalMetrics;
  perQuestion: { questionId: string; metrics: RetrievalMetrics; retrieved: string[] }[];
}

/**
 * Scores a retriever on benchmark questions at document level. Gold keys are matched to the stored document
 * keys with or without their file extension.
 * @param retriever configured to return enough chunks (e.g. 100) to rank ten distinct documents
 * @throws ValidationError when a gold key matches no document (a benchmark that does not fit the corpus)
 */
export async function evaluateRetrieval(
  retriever: Pick<Retriever, 'retrieve'>,
  questions: readonly BenchmarkQuestion[],
  documentKeys: readonly string[],
  onProgress?: (done: number, total: number) => void,
): Promise<RetrievalEvaluation> {
  const index = buildKeyIndex(documentKeys);
  const resolved = questions.map((q) => {
    const gold = q.documentKeys.map((key) => {
      const r = resolveDocumentKey(key, index, documentKeys);
      if (r.match === undefined) {
        throw new ValidationError(`${q.questionId}: ${unmatchedKeyMessage(key, r)}`);
      }
      return r.match;
    });
    return { q, gold };
  });
  const scored = resolved.filter((r) => r.gold.length > 0);
  const perQuestion: RetrievalEvaluation['perQuestion'] = [];
  for (const [i, { q, gold }] of scored.entries()) {
    const hits = await retriever.retrieve(q.question);
    const retrieved = hits.map((h) => h.metadata.document_id);
    perQuestion.push({
      questionId: q.questionId,
      metrics: questionMetrics(retrieved, gold),
      retrieved,
    });
    onProgress?.(i + 1, scored.length);
  }
  return {
    questions: scored.length,
    skipped: questions.length - scored.length,
    metrics: meanMetrics(perQuestion.map((p) => p.metrics)),
    perQuestion,
  };
}
