/**
 * The only module that reads `process.env`. It parses the environment once, at load time, into a frozen object;
 * everything else receives configuration as arguments.
 */
const env = process.env;

/** Raw environment snapshot for the modules whose parsers take an env record (e.g. `pgVectorConfigFromEnv`). */
export const ENV: Readonly<Record<string, string | undefined>> = Object.freeze({ ...env });

/** OpenAI-compatible endpoint settings, if configured. */
export const OPENAI_CONNECTION: Readonly<{ baseURL: string; apiKey: string }> | undefined =
  env.OPENAI_BASE_URL
    ? Object.freeze({ baseURL: env.OPENAI_BASE_URL, apiKey: env.OPENAI_API_KEY ?? '' })
    : undefined;

/** Default local data directory of the CLI (`--data-dir` overrides it). */
export const DEFAULT_DATA_DIR = env.AI4RAG_DATA_DIR ?? '.ai4rag';

/** The price table file of the CLI (AI4RAG_PRICES_FILE; `--prices FILE` overrides it), if set. */
export const PRICES_FILE: string | undefined = env.AI4RAG_PRICES_FILE?.trim() || undefined;
