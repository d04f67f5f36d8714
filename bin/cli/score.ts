import { readFile } from 'node:fs/promises';
import { ValidationError } from '../../shared/src/errors.js';
import { scoreEvaluationData } from '../../shared/src/evaluation/score.js';
import type { OptionSpec, Parsed } from './args.js';
import { optInt, str } from './args.js';

/** Options of `ai4rag score` (merged with the global options by `parse`). */
export const SCORE_OPTIONS: OptionSpec = {
  input: { type: 'string' },
  seed: { type: 'string' },
};

/**
 * `ai4rag score --input FILE [--seed N]`: scores a JSON array of ai4rag `EvaluationData` items offline
 * (answer_correctness, faithfulness, context_correctness, overall_score with bootstrap CIs) and prints
 * ai4rag's result shape as one JSON line, with or without `--json`, so it pipes into other tools.
 * @throws {ValidationError} when `--input` is missing, unreadable, not JSON, or has invalid items.
 * @example await cmdScore(parse(['--input', 'eval.json'], SCORE_OPTIONS), io)
 */
export async function cmdScore(
  p: Parsed,
  io: { out(line: string): void; err(line: string): void },
): Promise<number> {
  const input = str(p, 'input');
  if (input === undefined || input === '') {
    throw new ValidationError('--input FILE is required (a JSON array of evaluation items)');
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
    throw new ValidationError(`--input "${input}" must hold a JSON array of evaluation items`);
  }
  const result = scoreEvaluationData(data, seed === undefined ? {} : { seed });
  io.out(JSON.stringify(result));
  return 0;
}
