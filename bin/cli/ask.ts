import type { RagAnswer } from '../../shared/src/generation/rag-template.js';
import type { FoundationModel } from '../../shared/src/generation/types.js';
import type { QueryTransformReport } from '../../shared/src/retrieval/query-transform.js';
import type { OptionSpec } from './args.js';
import { cliChatModel } from './models.js';
import { PRICES_OPTIONS } from './prices.js';
import { RERANK_OPTIONS } from './rerank.js';

/** Flags of `ai4rag ask` beyond the collection and retrieval ones (reranking and prices included). */
export const ASK_OPTIONS: OptionSpec = {
  k: { type: 'string' },
  model: { type: 'string' },
  ...RERANK_OPTIONS,
  ...PRICES_OPTIONS,
};

/**
 * The foundation model for a model id: the local extractive model (default, no network) or an OpenAI-compatible
 * chat model at the `chat` endpoint (AI4RAG_CHAT_BASE_URL, else OPENAI_BASE_URL; or `model@name`).
 * @throws ValidationError when a remote model is asked for without a configured endpoint
 */
export function createFoundationModel(modelId: string | undefined): FoundationModel {
  return cliChatModel(modelId);
}

/** The tokens line of an answer: the model's usage and, when priced, its cost in USD. */
export function usageLine(answer: RagAnswer, costUsd: number | undefined): string {
  const u = answer.usage;
  if (u === undefined) return 'tokens: not reported by the model';
  const cost = costUsd === undefined ? '' : `, cost $${costUsd}`;
  return `tokens: prompt ${u.promptTokens}, completion ${u.completionTokens}${cost}`;
}

/** The query-transform line of an answer: the transform, its time and, for the chat transforms, its tokens. */
export function queryTransformLine(r: QueryTransformReport): string {
  const tokens = r.usage
    ? `, tokens prompt ${r.usage.promptTokens}, completion ${r.usage.completionTokens}`
    : '';
  return `query transform: ${r.kind} ${r.ms.toFixed(1)} ms${tokens}`;
}

/** Human-readable rendering of an answer with its sources, timing and tokens (and cost when priced). */
export function renderAnswer(answer: RagAnswer, costUsd?: number): string[] {
  const lines = [answer.answer, '', 'Sources:'];
  answer.referenceDocuments.forEach((d, i) => {
    lines.push(
      `  [${i + 1}] ${d.documentId} #${d.sequenceNumber}  score ${d.score?.toFixed(4) ?? '-'}`,
    );
  });
  const t = answer.timing;
  // The timing stays the last line, as before the tokens were reported.
  lines.push(
    '',
    usageLine(answer, costUsd),
    ...(answer.queryTransform ? [queryTransformLine(answer.queryTransform)] : []),
    `retrieve ${t.retrieveMs.toFixed(1)} ms, rerank ${t.rerankMs.toFixed(1)} ms, generate ${t.generateMs.toFixed(1)} ms, total ${t.totalMs.toFixed(1)} ms`,
  );
  return lines;
}
