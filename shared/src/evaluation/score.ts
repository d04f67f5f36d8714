/**
 * ai4rag's default evaluation (answer_correctness, faithfulness, context_correctness via unitxt, plus the
 * custom overall_score) over a list of `EvaluationData`, in ai4rag's `EvaluationMetricsResult` shape.
 */
import * as z from 'zod';
import { ValidationError } from '../errors.js';
import { citationPrecision, stripCitations } from '../generation/citations.js';
import { bootstrapCi, bootstrapStatisticCi } from './bootstrap.js';
import { answerCorrectness, contextCorrectness, faithfulness } from './unitxt.js';

/** One question's evaluation input, ai4rag's `EvaluationData` with its snake_case field names. */
export const EvaluationItemSchema = z.strictObject({
  question: z.string().optional(),
  answer: z.string(),
  contexts: z.array(z.string()),
  context_ids: z.array(z.string()),
  ground_truths: z.array(z.string()),
  ground_truths_context_ids: z.array(z.string()),
  question_id: z.string().min(1).optional(),
});

/** A validated evaluation item. */
export type EvaluationItem = z.output<typeof EvaluationItemSchema>;

/** Metric names of the default ai4rag set, in output order. */
export const UNITXT_METRICS = [
  'answer_correctness',
  'faithfulness',
  'context_correctness',
] as const;

/** Aggregate of one metric; `null` where ai4rag reports None (no valid value, CI skipped). */
export interface MetricScores {
  mean: number | null;
  ci_low: number | null;
  ci_high: number | null;
}

/** One aggregate metric entry. */
export interface MetricResult {
  name: string;
  evaluator: 'unitxt' | 'custom';
  scores: MetricScores;
}

/** One per-question metric value; `null` when the metric does not apply to that question. */
export interface QuestionMetricValue {
  name: string;
  evaluator: 'unitxt' | 'custom';
  value: number | null;
}

/** ai4rag's `EvaluationMetricsResult` (without the `description` field). */
export interface EvaluationResult {
  metrics: MetricResult[];
  question_scores: { question_id: string; metrics: QuestionMetricValue[] }[];
}

/** Options of {@link scoreEvaluationData}. */
export interface ScoreOptions {
  /** Bootstrap seed (unitxt: 42). */
  seed?: number;
}

/**
 * Rounds to 4 decimals like Python's `round(v, 4)` used by ai4rag: nearest by the exact binary value, exact
 * ties (e.g. 1/32 = 0.03125) to even; `null` and NaN become `null`.
 */
export function round4(v: number | null): number | null {
  if (v === null || Number.isNaN(v)) return null;
  // The only doubles exactly halfway at 4 decimals are odd multiples of 1/32 (20000 = 2^5 · 625).
  const j = v * 32;
  if (Number.isInteger(j) && Math.abs(j % 2) === 1) {
    const floor = Math.floor(v * 1e4);
    return (floor % 2 === 0 ? floor : floor + 1) / 1e4;
  }
  // toFixed rounds the exact binary value, like Python's round (no ties left here).
  return Number(v.toFixed(4));
}

function meanOf(values: readonly (number | null)[]): number | null {
  const valid = values.filter((v): v is number => v !== null && !Number.isNaN(v));
  return valid.length === 0 ? null : valid.reduce((s, v) => s + v, 0) / valid.length;
}

function aggregate(values: readonly (number | null)[], seed: number): MetricScores {
  const valid = values.filter((v): v is number => v !== null && !Number.isNaN(v));
  const ci = bootstrapCi(valid, { seed });
  return {
    mean: round4(meanOf(valid)),
    ci_low: ci ? round4(ci.low) : null,
    ci_high: ci ? round4(ci.high) : null,
  };
}

/**
 * overall_score's statistic as a function of question weights: the mean, over metrics defined on at least one
 * weighted question, of that metric's weighted mean over the questions where it is defined (null/NaN values
 * are not defined). With all weights 1 it is ai4rag's mean of the metric means before rounding; in a bootstrap
 * replicate each metric is averaged over the resampled questions where it applies (answer_correctness only
 * over answerable ones, faithfulness over all), exactly as the point estimate is.
 */
export function meanOfMetricMeans(
  columns: readonly (readonly (number | null)[])[],
): (weights: Readonly<Float64Array>) => number {
  const defined = columns.map((col) =>
    col.flatMap((v, i) => (v === null || Number.isNaN(v) ? [] : [[i, v] as const])),
  );
  return (weights) => {
    let sum = 0;
    let count = 0;
    for (const col of defined) {
      let s = 0;
      let w = 0;
      for (const [i, v] of col) {
        const wi = weights[i] as number;
        s += wi * v;
        w += wi;
      }
      if (w > 0) {
        sum += s / w;
        count++;
      }
    }
    return count === 0 ? Number.NaN : sum / count;
  };
}

/**
 * Validates raw input (e.g. a parsed JSON file) into evaluation items.
 * @throws {ValidationError} naming the item index and field of the first problems, or duplicate ids.
 */
export function parseEvaluationData(input: unknown): EvaluationItem[] {
  if (!Array.isArray(input) || input.length === 0) {
    throw new ValidationError('evaluation data must be a non-empty JSON array of items');
  }
  const items = input.map((raw, index) => {
    const parsed = EvaluationItemSchema.safeParse(raw);
    if (!parsed.success) {
      const detail = parsed.error.issues
        .map((i) => `${i.path.join('.') || '(item)'}: ${i.message}`)
        .join('; ');
      throw new ValidationError(`evaluation item ${index}: ${detail}`, { cause: parsed.error });
    }
    return parsed.data;
  });
  const seen = new Set<string>();
  items.forEach((item, index) => {
    const id = item.question_id ?? `q${index}`;
    if (seen.has(id))
      throw new ValidationError(`evaluation item ${index}: duplicate question_id "${id}"`);
    seen.add(id);
  });
  return items;
}

/**
 * Scores questions like ai4rag's unitxt evaluator plus `overall_score`. Per question: answer_correctness
 * (null without ground truths), faithfulness (0 without contexts), context_correctness (null without gold
 * ids), overall_score = mean of that question's non-null values; all rounded to 4 decimals. Aggregates:
 * NaN/null-aware means of the unrounded values and seeded BCa bootstrap CIs (null when skipped: fewer than
 * 2 values or all identical). Deviation from ai4rag, on purpose: the overall_score CI is not the average of
 * the other metrics' CI bounds (which is not a CI) but a bootstrap of its own statistic, the mean of the
 * metric means ({@link meanOfMetricMeans}), resampling questions; its mean stays ai4rag's mean of the other
 * metrics' (rounded) means, so it lies inside its CI up to that rounding (< 1e-4). When answers carry inline citation
 * markers (`[n]` = `contexts[n - 1]`), the markers are removed before the unitxt metrics and `citation_precision`
 * (`citationPrecision`, null for an answer that cites nothing) is reported after overall_score, outside it.
 * @throws {ValidationError} on invalid items (see {@link parseEvaluationData}).
 * @example scoreEvaluationData([{ answer: 'Paris', contexts: ['Paris'], context_ids: ['d'],
 *   ground_truths: ['Paris'], ground_truths_context_ids: ['d'] }])
 */
export function scoreEvaluationData(
  items: readonly unknown[],
  options: ScoreOptions = {},
): EvaluationResult {
  const seed = options.seed ?? 42;
  const data = parseEvaluationData(items);
  // Inline citation markers ([1]) are not answer text: unitxt scores the answer without them.
  const cited = data.map((item) => citationPrecision(item.answer, item.contexts));
  const answers = data.map((item, i) =>
    cited[i] === null ? item.answer : stripCitations(item.answer),
  );
  const perQuestion = data.map((item, i) => ({
    answer_correctness:
      item.ground_truths.length === 0
        ? null
        : answerCorrectness(answers[i] as string, item.ground_truths),
    faithfulness:
      item.contexts.length === 0 ? 0 : faithfulness(answers[i] as string, item.contexts),
    context_correctness:
      item.ground_truths_context_ids.length === 0
        ? null
        : contextCorrectness(item.context_ids, item.ground_truths_context_ids),
  }));

  const metrics: MetricResult[] = UNITXT_METRICS.map((name) => ({
    name,
    evaluator: 'unitxt',
    scores: aggregate(
      perQuestion.map((q) => q[name]),
      seed,
    ),
  }));
  const overallPerQuestion = perQuestion.map((q) =>
    round4(meanOf(UNITXT_METRICS.map((name) => round4(q[name])))),
  );
  const overallCi = bootstrapStatisticCi(
    perQuestion.length,
    meanOfMetricMeans(UNITXT_METRICS.map((name) => perQuestion.map((q) => q[name]))),
    { seed },
  );
  metrics.push({
    name: 'overall_score',
    evaluator: 'custom',
    scores: {
      mean: round4(meanOf(metrics.map((m) => m.scores.mean))),
      ci_low: overallCi ? round4(overallCi.low) : null,
      ci_high: overallCi ? round4(overallCi.high) : null,
    },
  });
  // citation_precision is reported when some answer cites, and is not part of overall_score.
  const withCitations = cited.some((v) => v !== null);
  if (withCitations) {
    metrics.push({
      name: 'citation_precision',
      evaluator: 'custom',
      scores: aggregate(cited, seed),
    });
  }

  return {
    metrics,
    question_scores: data.map((item, index) => {
      const q = perQuestion[index] as (typeof perQuestion)[number];
      return {
        question_id: item.question_id ?? `q${index}`,
        metrics: [
          ...UNITXT_METRICS.map((name) => ({
            name,
            evaluator: 'unitxt' as const,
            value: round4(q[name]),
          })),
          {
            name: 'overall_score',
            evaluator: 'custom' as const,
            value: overallPerQuestion[index] ?? null,
          },
          ...(withCitations
            ? [
                {
                  name: 'citation_precision',
                  evaluator: 'custom' as const,
                  value: round4(cited[index] ?? null),
                },
              ]
            : []),
        ],
      };
    }),
  };
}
