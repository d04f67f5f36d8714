/**
 * ai4rag's LLM-as-a-judge metric `answer_relevance` (spec 4.5): a chat model rates each answer 1–5 against the
 * question, the rating is normalized to (s − 1) / 4, unusable replies count as missing, and the CI is a percentile
 * bootstrap (1000 resamples, seed 42).
 */
import { ValidationError } from '../errors.js';
import type { FoundationModel } from '../generation/types.js';
import { mapLimit } from '../util/concurrency.js';
import { bootstrapCi } from './bootstrap.js';
import { type MetricScores, round4 } from './score.js';

/** ai4rag's guideline of the metric, verbatim. */
export const ANSWER_RELEVANCE_GUIDELINE =
  "Evaluate whether the response directly and helpfully addresses the user's question. Consider relevance, helpfulness, accuracy, and whether the answer stays on topic.";

/** Most tokens a judge reply may take (it is a short JSON object). */
export const JUDGE_MAX_COMPLETION_TOKENS = 256;

/** The judge prompt: an impartial judge, the question and the response only (no contexts, no references). */
export function judgePrompt(question: string, answer: string): string {
  return [
    'You are an impartial judge. Rate the response below against the task.',
    '',
    `## Task\n${ANSWER_RELEVANCE_GUIDELINE}`,
    '',
    `## Context\nQuestion: ${question}`,
    '',
    `## Response to evaluate\n${answer}`,
    '',
    '## Rubric',
    '1: completely fails to address the question',
    '2: mostly fails: barely relevant or unhelpful',
    '3: partially addresses the question',
    '4: mostly meets the task with minor gaps',
    '5: fully meets the task: relevant, helpful, accurate and on topic',
    '',
    'Reply with JSON only: {"score": <integer 1-5>, "rationale": "<one sentence>"}',
  ].join('\n');
}

/**
 * Reads the 1–5 score from a judge reply, leniently (ai4rag ≥ 0.10.2 repairs JSON): a JSON object, one inside code
 * fences or prose, single-quoted keys, or a bare `score: 4`. Scores outside 1..5 or non-integers give null.
 * @example parseJudgeScore("```json\n{'score': 4, 'rationale': 'ok'}\n```") // 4
 */
export function parseJudgeScore(reply: string): number | null {
  const text = reply.replace(/```(?:json)?/gi, ' ');
  const candidates: string[] = [];
  const object = text.match(/\{[\s\S]*\}/);
  if (object) candidates.push(object[0], object[0].replace(/'/g, '"'));
  for (const candidate of candidates) {
    try {
      const parsed = JSON.parse(candidate) as { score?: unknown };
      return validScore(parsed.score);
    } catch {
      // try the next repair
    }
  }
  const loose = text.match(/["']?score["']?\s*[:=]\s*["']?(-?\d+(?:\.\d+)?)/i);
  if (loose) return validScore(Number(loose[1]));
  const bare = text.trim().match(/^(\d)(?:\s*\/\s*5)?\.?$/);
  return bare ? validScore(Number(bare[1])) : null;
}

function validScore(value: unknown): number | null {
  const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
  return typeof n === 'number' && Number.isInteger(n) && n >= 1 && n <= 5 ? n : null;
}

/** One judged question. */
export interface JudgeItem {
  question: string;
  answer: string;
}

/** Tokens of the judge's calls. */
export interface JudgeUsage {
  /** Calls that answered (failed calls spent nothing that is known). */
  calls: number;
  promptTokens: number;
  completionTokens: number;
  /** Answered calls whose tokens the model did not report (not in the counts). */
  unreportedCalls: number;
}

/** Result of {@link judgeAnswerRelevance}. */
export interface JudgeResult {
  /** Per question: (s − 1) / 4, or null when the judge failed or replied out of range. */
  values: (number | null)[];
  scores: MetricScores;
  /** The judge's tokens, as the model reported them. */
  usage: JudgeUsage;
}

/**
 * Judges every answer (bounded concurrency; ai4rag judges one at a time). A failed call is a null row, never an
 * exception: one flaky judge call must not fail the trial.
 * @throws {ValidationError} for a bad concurrency.
 * @example const { scores } = await judgeAnswerRelevance(model, [{ question, answer }]);
 */
export async function judgeAnswerRelevance(
  model: FoundationModel,
  items: readonly JudgeItem[],
  options: { concurrency?: number; seed?: number } = {},
): Promise<JudgeResult> {
  const concurrency = options.concurrency ?? 4;
  if (!Number.isInteger(concurrency) || concurrency < 1) {
    throw new ValidationError(`concurrency must be a positive integer, got ${concurrency}`);
  }
  const usage: JudgeUsage = { calls: 0, promptTokens: 0, completionTokens: 0, unreportedCalls: 0 };
  const values = await mapLimit(items, concurrency, async (item) => {
    try {
      const reply = await model.chat(
        [{ role: 'user', content: judgePrompt(item.question, item.answer) }],
        {
          temperature: 0,
          maxCompletionTokens: JUDGE_MAX_COMPLETION_TOKENS,
        },
      );
      usage.calls += 1;
      const { promptTokens, completionTokens } = reply.usage ?? {};
      if (Number.isFinite(promptTokens) && Number.isFinite(completionTokens)) {
        usage.promptTokens += promptTokens as number;
        usage.completionTokens += completionTokens as number;
      } else usage.unreportedCalls += 1;
      const score = parseJudgeScore(reply.content);
      return score === null ? null : (score - 1) / 4;
    } catch {
      return null;
    }
  });
  const valid = values.filter((v): v is number => v !== null);
  if (valid.length === 0) {
    return { values, scores: { mean: null, ci_low: null, ci_high: null }, usage };
  }
  const mean = valid.reduce((a, b) => a + b, 0) / valid.length;
  const ci =
    valid.length >= 2
      ? bootstrapCi(valid, { method: 'percentile', seed: options.seed ?? 42 })
      : undefined;
  return {
    values,
    scores: {
      mean: round4(mean),
      ci_low: round4(ci?.low ?? null),
      ci_high: round4(ci?.high ?? null),
    },
    usage,
  };
}
