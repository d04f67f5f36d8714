/**
 * Token usage and cost. A price table (USD per million tokens, per model) comes from the user's configuration —
 * prices change, so none is built in; local models (`local/…`) cost nothing. Pure.
 */
import * as z from 'zod';
import { CHARS_PER_TOKEN } from './chunking/limits.js';
import { modelName } from './endpoints.js';
import { ValidationError } from './errors.js';

/** Tokens of one call or a sum of calls. */
export interface TokenUsage {
  promptTokens: number;
  completionTokens: number;
}

/** USD per million tokens of one model. */
export interface ModelPrice {
  /** Prompt (input) tokens. */
  input: number;
  /** Completion (output) tokens; embeddings have none. @default 0 */
  output?: number;
}

/** Prices by model id (the bare id, without `@endpoint`). */
export type PriceTable = Readonly<Record<string, ModelPrice>>;

const PriceSchema = z.strictObject({
  input: z.number().finite().min(0),
  output: z.number().finite().min(0).optional(),
});
/** The zod schema of a price table (for inputs that embed one, e.g. an experiment's `prices`). */
export const PriceTableSchema = z.record(z.string().min(1), PriceSchema);

/**
 * Validates a price table (e.g. the parsed `--prices FILE` / `AI4RAG_PRICES_FILE`):
 * `{"gpt-4o-mini": {"input": 0.15, "output": 0.6}, "text-embedding-3-small": {"input": 0.02}}`.
 * @throws {ValidationError} naming the first bad entries and where they came from.
 */
export function parsePriceTable(raw: unknown, source = 'price table'): PriceTable {
  const parsed = PriceTableSchema.safeParse(raw);
  if (!parsed.success) {
    const detail = parsed.error.issues
      .slice(0, 3)
      .map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`)
      .join('; ');
    throw new ValidationError(
      `${source}: expected {"<model>": {"input": USD per 1M prompt tokens, "output": USD per 1M completion tokens}}; ${detail}`,
    );
  }
  return Object.freeze({ ...parsed.data });
}

/** Adds usages. */
export function addUsage(a: TokenUsage, b: TokenUsage): TokenUsage {
  return {
    promptTokens: a.promptTokens + b.promptTokens,
    completionTokens: a.completionTokens + b.completionTokens,
  };
}

export const NO_USAGE: TokenUsage = Object.freeze({ promptTokens: 0, completionTokens: 0 });

/**
 * Cost in USD of `usage` on `model`: 0 for local models, undefined when the table has no price for it (the caller
 * then reports tokens only — never a made-up cost). A `model@endpoint` id is priced as its bare model id.
 * @example costOf({ promptTokens: 2_000_000, completionTokens: 100_000 }, 'gpt-4o-mini', { 'gpt-4o-mini': { input: 0.15, output: 0.6 } }) // 0.36
 */
export function costOf(usage: TokenUsage, model: string, table: PriceTable): number | undefined {
  if (model.startsWith('local/')) return 0;
  const price = table[model] ?? table[modelName(model)];
  if (price === undefined) return undefined;
  const usd =
    (usage.promptTokens * price.input + usage.completionTokens * (price.output ?? 0)) / 1_000_000;
  return Math.round(usd * 1e6) / 1e6;
}

/** Approximate tokens of a text ({@link CHARS_PER_TOKEN} characters a token, the chunkers' measure). */
export function approxTextTokens(text: string): number {
  return Math.ceil(text.length / CHARS_PER_TOKEN);
}
