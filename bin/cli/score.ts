import { readFile } from 'node:fs/promises';
import { ValidationError } from '../../shared/src/errors.js';
import { bootstrapCi, bootstrapStatisticCi } from '../../shared/src/evaluation/bootstrap.js';
import {
  type EvaluationResult,
  type MetricResult,
  meanOfMetricMeans,
  round4,
  scoreEvaluationData,
  UNITXT_METRICS,
} from '../../shared/src/evaluation/score.js';
import type { Parsed } from './args.js';
import { flag, optInt, str } from './args.js';
import { SCORE_OPTIONS } from './option-specs.js';

/** Parsed by the command; defined beside the other commands' flags so `main` loads this module only to run it. */
export { SCORE_OPTIONS };

/** A record of an experiment's `evaluation_results.json` (ai4rag's shape, spec 5.4), as far as scoring reads it. */
interface EvaluationRecordLike {
  question_id?: string;
  question: string;
  metrics: { name: string; evaluator: string; score: number | null }[];
}

/** Whether the file is an experiment's `evaluation_results.json` (scored records) rather than answers to score. */
function isEvaluationResults(data: readonly unknown[]): data is EvaluationRecordLike[] {
  return data.every(
    (r) =>
      typeof r === 'object' &&
      r !== null &&
      Array.isArray((r as { metrics?: unknown }).metrics) &&
      'answer_contexts' in r,
  );
}

/**
 * The aggregate of an `evaluation_results.json`: each metric's mean and 95% BCa bootstrap CI over the questions'
 * recorded scores (it carries no gold document ids, so context_correctness cannot be recomputed: every metric is
 * taken as the experiment recorded it), overall_score as the experiment computes it (mean of the unitxt metric
 * means, its CI bootstrapped from the questions).
 * @throws {ValidationError} naming the record whose metric is not a number or null.
 */
export function aggregateEvaluationResults(
  records: readonly EvaluationRecordLike[],
  seed = 42,
): EvaluationResult {
  const names: string[] = [];
  const evaluators = new Map<string, string>();
  for (const [i, r] of records.entries()) {
    for (const m of r.metrics) {
      if (typeof m?.name !== 'string' || (m.score !== null && typeof m.score !== 'number')) {
        throw new ValidationError(
          `evaluation_results[${i}].metrics: each metric needs a "name" and a numeric (or null) "score"`,
        );
      }
      if (!names.includes(m.name)) names.push(m.name);
      if (!evaluators.has(m.name)) evaluators.set(m.name, m.evaluator);
    }
  }
  const column = (name: string) =>
    records.map((r) => r.metrics.find((m) => m.name === name)?.score ?? null);
  const metrics: MetricResult[] = names
    .filter((n) => n !== 'overall_score')
    .map((name) => {
      const valid = column(name).filter((v): v is number => v !== null && !Number.isNaN(v));
      const ci = bootstrapCi(valid, { seed });
      return {
        name,
        evaluator: evaluators.get(name) ?? 'unitxt',
        scores: {
          mean: valid.length === 0 ? null : round4(valid.reduce((a, b) => a + b, 0) / valid.length),
          ci_low: ci ? round4(ci.low) : null,
          ci_high: ci ? round4(ci.high) : null,
        },
      } as MetricResult;
    });
  if (names.includes('overall_score')) {
    const unitxt = UNITXT_METRICS.filter((n) => names.includes(n));
    const means = unitxt
      .map((n) => metrics.find((m) => m.name === n)?.scores.mean)
      .filter((v): v is number => typeof v === 'number');
    const ci = bootstrapStatisticCi(records.length, meanOfMetricMeans(unitxt.map(column)), {
      seed,
    });
    const overall: MetricResult = {
      name: 'overall_score',
      evaluator: 'custom',
      scores: {
        mean: means.length === 0 ? null : round4(means.reduce((a, b) => a + b, 0) / means.length),
        ci_low: ci ? round4(ci.low) : null,
        ci_high: ci ? round4(ci.high) : null,
      },
    };
    const at = metrics.findIndex((m) => !(UNITXT_METRICS as readonly string[]).includes(m.name));
    metrics.splice(at === -1 ? metrics.length : at, 0, overall);
  }
  return {
    metrics,
    question_scores: records.map((r, i) => ({
      question_id: r.question_id ?? `q${i}`,
      metrics: r.metrics.map((m) => ({
        name: m.name,
        evaluator: m.evaluator as 'unitxt' | 'custom',
        value: m.score,
      })),
    })),
  };
}

const fmt = (v: number | null | undefined): string => (typeof v === 'number' ? v.toFixed(4) : '–');

/** The result as a table: one row per metric with its mean and 95% CI, then the questions. */
export function renderScoreTable(result: EvaluationResult, source: string): string[] {
  const head = ['metric', 'mean', '95% CI'];
  const rows = result.metrics.map((m) => [
    m.name,
    fmt(m.scores.mean),
    m.scores.ci_low === null || m.scores.ci_high === null
      ? 'n/a'
      : `[${fmt(m.scores.ci_low)}, ${fmt(m.scores.ci_high)}]`,
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  const questions = result.question_scores.length;
  const lines = [
    `${source}: ${questions} question${questions === 1 ? '' : 's'}`,
    '',
    line(head),
    ...rows.map(line),
  ];
  const noCi = result.metrics.some((m) => m.scores.ci_low === null);
  if (noCi) lines.push('', 'n/a: no interval (fewer than 2 scored questions, or all scores equal)');
  // The worst questions by overall_score, so a reader knows where to look.
  const overall = result.question_scores
    .map((q) => ({
      id: q.question_id,
      v: q.metrics.find((m) => m.name === 'overall_score')?.value,
    }))
    .filter((q): q is { id: string; v: number } => typeof q.v === 'number')
    .sort((a, b) => a.v - b.v || a.id.localeCompare(b.id));
  if (overall.length > 1) {
    lines.push(
      '',
      `Lowest overall_score: ${overall
        .slice(0, 5)
        .map((q) => `${q.id} ${fmt(q.v)}`)
        .join(', ')}`,
    );
  }
  lines.push('', 'Per-question scores: --json');
  return lines;
}

/**
 * `ai4rag score --input FILE [--seed N] [--json]`: scores a JSON array of ai4rag `EvaluationData` items offline
 * (answer_correctness, faithfulness, context_correctness, overall_score with bootstrap CIs), or aggregates an
 * experiment's `evaluation_results.json` (its recorded per-question scores), and prints a table, or ai4rag's
 * result shape as one JSON line with `--json`.
 * @throws {ValidationError} when `--input` is missing, unreadable, not JSON, or has invalid items.
 * @example await cmdScore(parse(['--input', 'eval.json'], SCORE_OPTIONS), io)
 */
export async function cmdScore(
  p: Parsed,
  io: { out(line: string): void; err(line: string): void },
): Promise<number> {
  const input = str(p, 'input');
  if (input === undefined || input === '') {
    throw new ValidationError(
      "--input FILE is required (a JSON array of evaluation items, or an experiment's evaluation_results.json)",
    );
  }
  if (p.positionals.length > 0) {
    throw new ValidationError(
      `score takes its file with --input (got "${p.positionals.join(' ')}")`,
    );
  }
  const seed = optInt(p, 'seed');
  let text: string;
  try {
    text = await readFile(input, 'utf8');
  } catch (error) {
    throw new ValidationError(`cannot read --input "${input}": ${(error as Error).message}`, {
      cause: error,
    });
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    throw new ValidationError(`--input "${input}" is not valid JSON: ${(error as Error).message}`, {
      cause: error,
    });
  }
  if (!Array.isArray(data)) {
    throw new ValidationError(
      `--input "${input}" must hold a JSON array of evaluation items (or an experiment's evaluation_results.json)`,
    );
  }
  const recorded = data.length > 0 && isEvaluationResults(data);
  let result: EvaluationResult;
  try {
    result = recorded
      ? aggregateEvaluationResults(data, seed)
      : scoreEvaluationData(data, seed === undefined ? {} : { seed });
  } catch (error) {
    if (error instanceof ValidationError) {
      throw new ValidationError(`--input ${input}: ${error.message}`, { cause: error });
    }
    throw error;
  }
  if (flag(p, 'json')) io.out(JSON.stringify(result));
  else {
    const source = recorded ? `${input} (evaluation_results.json: recorded scores)` : input;
    for (const line of renderScoreTable(result, source)) io.out(line);
  }
  return 0;
}
