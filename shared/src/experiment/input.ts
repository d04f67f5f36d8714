/**
 * The input of an experiment: the Step Functions execution input, and what `ai4rag experiment` builds from its
 * flags. Validated once by the prepare step; everything after it reads the normalized copy in the ledger.
 */
import * as z from 'zod';
import { ValidationError } from '../errors.js';
import { PriceTableSchema } from '../pricing.js';

/** Experiment ids name folders and S3 prefixes: letters, digits, `-` and `_`. */
export const EXPERIMENT_ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$/;

const modelId = z.string().trim().min(1).max(200);

/** The execution input, with ai4rag's defaults. */
export const ExperimentInputSchema = z.strictObject({
  /** Re-running with the same id resumes from the recorded trials. Default: generated. */
  experimentId: z.string().regex(EXPERIMENT_ID, 'letters, digits, - and _ only (≤ 63)').optional(),
  /** Documents: every supported file under this prefix of the documents store. */
  documentsPrefix: z.string().max(1024).default(''),
  /**
   * Benchmark JSON (ai4rag schema) in the artifacts store, under `experiments/` (the only prefix the experiment
   * functions may read), e.g. `experiments/<id>/input/benchmark.json`.
   */
  benchmarkKey: z
    .string()
    .min(1)
    .max(1024)
    .refine((k) => k.startsWith('experiments/') && !k.split('/').includes('..'), {
      message:
        "must be a key under 'experiments/' in the artifacts bucket (e.g. experiments/<id>/input/benchmark.json)",
    }),
  /**
   * Search-space overrides, `{ "chunk_size": [512, 1024], … }`, replacing the defaults by name. Models are chosen
   * with `foundationModels` / `embeddingModels`, not here.
   */
  searchSpace: z
    .record(z.string(), z.array(z.unknown()))
    .refine((o) => !('foundation_model' in o || 'embedding_model' in o), {
      message: 'choose models with foundationModels / embeddingModels, not in searchSpace',
    })
    .optional(),
  foundationModels: z.array(modelId).min(1).optional(),
  embeddingModels: z.array(modelId).min(1).optional(),
  optimizer: z.string().min(1).optional(),
  /** Trials to run, failures included (ai4rag's max_evals; the pipeline default is 8). */
  maxEvals: z.number().int().min(1).max(1000).default(8),
  seed: z
    .number()
    .int()
    .min(0)
    .max(2 ** 31 - 1)
    .default(64),
  /** Warm-start size of the surrogate optimizers. */
  nRandomNodes: z.number().int().min(1).max(100).default(4),
  /** Keep at most this many valid combinations (seeded sample). */
  maxCombinations: z.number().int().min(1).optional(),
  /** Trials evaluated in parallel per round. */
  trialConcurrency: z.number().int().min(1).max(10).default(2),
  /** Benchmark questions answered in parallel within a trial (ai4rag's inference_max_threads). */
  questionConcurrency: z.number().int().min(1).max(64).default(10),
  /** Use at most this many benchmark questions (seeded sample, 42 as ai4rag's pipeline); 0 = all. */
  benchmarkSampleSize: z.number().int().min(0).default(0),
  optimizationMetric: z
    .enum([
      'overall_score',
      'answer_correctness',
      'faithfulness',
      'context_correctness',
      'answer_relevance',
    ])
    .default('overall_score'),
  /**
   * USD per million tokens per model id (`{"gpt-4o-mini": {"input": 0.15, "output": 0.6}}`): the trials' and the
   * experiment's `cost_usd`. Without it, tokens only. A resume may replace it; costs are computed at finalize.
   */
  prices: PriceTableSchema.optional(),
  /**
   * Ask every answer for inline citation markers (`[n]`) and report `citation_precision` per trial (outside
   * overall_score). Off when absent, so prompts, payloads and cache keys stay ai4rag's.
   */
  citations: z.boolean().optional(),
  /** A chat model that judges answer_relevance (ai4rag's LLM-as-a-judge); off when absent. */
  judgeModel: z.string().trim().min(1).max(200).optional(),
  /** Earlier results `{<param>: value, …, score}` (warm start; they use no budget). */
  knownObservations: z.array(z.record(z.string(), z.unknown())).default([]),
  skipPreSelection: z.boolean().default(false),
  /** Foundation and embedding models kept by pre-selection. */
  nPreSelectFoundationModels: z.number().int().min(1).default(3),
  nPreSelectEmbeddingModels: z.number().int().min(1).default(2),
});

/** A validated experiment input. */
export type ExperimentInput = z.output<typeof ExperimentInputSchema>;

/**
 * Validates an execution input.
 * @throws {ValidationError} listing every problem with its path.
 * @example parseExperimentInput({ benchmarkKey: 'benchmarks/hr.json', maxEvals: 8 })
 */
export function parseExperimentInput(input: unknown): ExperimentInput {
  const parsed = ExperimentInputSchema.safeParse(input);
  if (!parsed.success) {
    const problems = parsed.error.issues
      .map((i) => `${i.path.length > 0 ? i.path.join('.') : '(input)'}: ${i.message}`)
      .join('; ');
    throw new ValidationError(`Invalid experiment input: ${problems}`);
  }
  if (
    parsed.data.optimizationMetric === 'answer_relevance' &&
    parsed.data.judgeModel === undefined
  ) {
    throw new ValidationError(
      "Invalid experiment input: optimizationMetric 'answer_relevance' requires a 'judge' evaluator (set judgeModel).",
    );
  }
  return parsed.data;
}
