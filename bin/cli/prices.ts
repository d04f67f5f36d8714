/**
 * The CLI's price table: `--prices FILE`, else the file AI4RAG_PRICES_FILE names, else AI4RAG_PRICES (JSON), as the
 * Lambdas read it. USD per million tokens per model id (see `shared/src/pricing.ts`).
 */
import { readFile } from 'node:fs/promises';
import { parsePricesEnv } from '../../functions/_shared/env.js';
import { ENV, PRICES_FILE } from '../../shared/src/config.js';
import { ValidationError } from '../../shared/src/errors.js';
import { type PriceTable, parsePriceTable } from '../../shared/src/pricing.js';
import { type OptionSpec, type Parsed, str } from './args.js';

/** The `--prices FILE` flag of ask, serve and experiment. */
export const PRICES_OPTIONS: OptionSpec = { prices: { type: 'string' } };

/** Help text of `--prices`. */
export const PRICES_HELP = `Prices (ask, serve, experiment):
  --prices FILE            JSON price table, USD per million tokens per model id:
                           {"gpt-4o-mini": {"input": 0.15, "output": 0.6}, "text-embedding-3-small": {"input": 0.02}}
                           (default: the file AI4RAG_PRICES_FILE names, else AI4RAG_PRICES as JSON); costs are
                           reported only for priced models (local/… cost 0), tokens always`;

/**
 * Reads and validates a price table file.
 * @throws {ValidationError} naming the file when it cannot be read, is not JSON or not a price table.
 */
export async function readPriceFile(file: string, what = '--prices'): Promise<PriceTable> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new ValidationError(`cannot read ${what} "${file}": ${(error as Error).message}`, {
      cause: error,
    });
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new ValidationError(`${what} "${file}" is not valid JSON: ${(error as Error).message}`, {
      cause: error,
    });
  }
  return parsePriceTable(raw, `${what} "${file}"`);
}

/**
 * The price table of a command: `--prices FILE`, else AI4RAG_PRICES_FILE, else AI4RAG_PRICES; undefined when
 * none is set.
 * @throws {ValidationError} for an unreadable or invalid table (a usage error, exit 2).
 */
export async function cliPrices(
  p: Parsed,
  env: { file?: string | undefined; json?: Readonly<Record<string, string | undefined>> } = {
    file: PRICES_FILE,
    json: ENV,
  },
): Promise<PriceTable | undefined> {
  const flagged = str(p, 'prices');
  if (flagged !== undefined) return readPriceFile(flagged);
  if (env.file !== undefined) return readPriceFile(env.file, 'AI4RAG_PRICES_FILE');
  return env.json === undefined ? undefined : parsePricesEnv(env.json);
}
