/**
 * Models pre-selection (ai4rag MPS, spec §3.4): when too many models are offered, every foundation ×
 * embedding pair is scored on a few questions with a fixed pattern, and the models of the best pairs
 * are kept. This module holds the pure parts: the trigger, the question sample and the ranking.
 */
import { Ai4ragError, ValidationError } from '../errors.js';
import { limitCombinations } from './search-space.js';

/** Nothing usable came out of pre-selection (ai4rag's `PreSelectorError`); aborts the experiment. */
export class PreSelectionError extends Ai4ragError {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'PreSelectionError';
  }
}

/** The MPS score of one model pair (aggregate mean of overall_score); null when the pair failed. */
export interface PairScore {
  foundationModel: string;
  embeddingModel: string;
  score: number | null;
}

/** Models kept by {@link selectModels}, best first. */
export interface ModelSelection {
  foundationModels: string[];
  embeddingModels: string[];
}

/** ai4rag's `n_mps_foundation_models` / `n_mps_embedding_models`. */
export const PRESELECTION_LIMITS = Object.freeze({ foundation: 3, embedding: 2 });

/** ai4rag samples this many benchmark questions, with this seed, for MPS. */
export const PRESELECTION_SAMPLE = Object.freeze({ questions: 5, seed: 17 });

function checkCount(n: number, label: string): void {
  if (!Number.isInteger(n) || n < 1) {
    throw new ValidationError(`${label} must be an integer ≥ 1, got ${String(n)}.`);
  }
}

/**
 * Ranks models by the best pair containing them (a max over partners, not an average, as ai4rag):
 * pairs sorted by score descending (null = −∞, ties keep input order), then walked collecting
 * first-seen models until each list is full. Failed pairs still contribute models after all scored
 * ones, so a model whose every pair failed is kept only if there is room.
 * @throws {PreSelectionError} when no pair has a score.
 * @throws {ValidationError} for counts that are not positive integers.
 * @example
 * selectModels([
 *   { foundationModel: 'a', embeddingModel: 'x', score: 0.9 },
 *   { foundationModel: 'b', embeddingModel: 'y', score: 0.5 },
 * ], 1, 1); // { foundationModels: ['a'], embeddingModels: ['x'] }
 */
export function selectModels(
  pairs: readonly PairScore[],
  nFoundation: number = PRESELECTION_LIMITS.foundation,
  nEmbedding: number = PRESELECTION_LIMITS.embedding,
): ModelSelection {
  checkCount(nFoundation, 'nFoundation');
  checkCount(nEmbedding, 'nEmbedding');
  const scored = (s: number | null) =>
    typeof s === 'number' && Number.isFinite(s) ? s : Number.NEGATIVE_INFINITY;
  if (!pairs.some((p) => scored(p.score) !== Number.NEGATIVE_INFINITY)) {
    throw new PreSelectionError(
      'Models pre-selection failed: no foundation/embedding model pair produced a score.',
    );
  }
  const ordered = pairs
    .map((p, i) => ({ p, i, s: scored(p.score) }))
    .sort((a, b) => (b.s === a.s ? a.i - b.i : b.s > a.s ? 1 : -1));
  const fms: string[] = [];
  const ems: string[] = [];
  for (const { p } of ordered) {
    if (fms.length < nFoundation && !fms.includes(p.foundationModel)) fms.push(p.foundationModel);
    if (ems.length < nEmbedding && !ems.includes(p.embeddingModel)) ems.push(p.embeddingModel);
  }
  return { foundationModels: fms, embeddingModels: ems };
}

/**
 * Whether pre-selection must run: more foundation models or more embedding models than the limits.
 * @example needsPreSelection(4, 1) // true
 */
export function needsPreSelection(
  nFoundation: number,
  nEmbedding: number,
  limits: { foundation: number; embedding: number } = PRESELECTION_LIMITS,
): boolean {
  return nFoundation > limits.foundation || nEmbedding > limits.embedding;
}

/**
 * The MPS question sample: `n` questions picked uniformly without replacement by a mulberry32(seed)
 * partial Fisher–Yates, returned in their original order; the whole set (a copy) when it has ≤ n.
 * Deterministic for a seed. (ai4rag uses pandas `.sample`; the picks differ, the contract is the same.)
 * @throws {ValidationError} when `n` is not a positive integer or `seed` not an integer.
 * @example sampleQuestions(questions) // 5 questions, the same 5 on every run
 */
export function sampleQuestions<T>(
  questions: readonly T[],
  n: number = PRESELECTION_SAMPLE.questions,
  seed: number = PRESELECTION_SAMPLE.seed,
): T[] {
  checkCount(n, 'n');
  if (!Number.isInteger(seed)) throw new ValidationError(`seed must be an integer, got ${seed}.`);
  return limitCombinations(questions, n, seed);
}
