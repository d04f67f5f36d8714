import OpenAI, { APIError } from 'openai';
import { ValidationError } from '../errors.js';
import { batches, mapLimit } from '../util/concurrency.js';
import { describeApiError } from '../util/openai-errors.js';
import type { OpenAIConnectionOptions } from '../util/openai-options.js';
import { positiveInteger } from '../util/options.js';
import { isTransientOpenAIError, withRetry } from '../util/retry.js';
import { EmbeddingError } from './errors.js';
import type { Embedder } from './types.js';

/** Hard cap of inputs per embeddings request (OpenAI's documented limit is 2048; ai4rag uses 1024). */
export const OPENAI_MAX_BATCH_SIZE = 1024;

/** Models with a smaller window cannot hold useful chunks (ai4rag 0.7 rejects them too). */
export const MIN_CONTEXT_LENGTH = 700;

/** Approximate characters per token, used for truncation and context probing (no tokenizer needed). */
export const CHARS_PER_TOKEN = 4;

/** Options of {@link OpenAIEmbedder.create}. */
export interface OpenAIEmbedderOptions extends OpenAIConnectionOptions {
  /** Known vector length; auto-detected (embedding of "test") when absent. */
  dimension?: number;
  /** When true, `dimension` is also sent as the request's `dimensions` (for models that can shorten vectors). */
  sendDimensions?: boolean;
  /** Known context window in tokens; probed by binary search when absent. */
  contextLength?: number;
  /** Inputs per request, 1..1024 (default 1024). */
  maxBatchSize?: number;
  /** Requests in flight per `embedDocuments` call (default 4). */
  concurrency?: number;
}

interface ResolvedSettings {
  model: string;
  sendDimensions: boolean;
  maxBatchSize: number;
  concurrency: number;
  maxRetries: number;
  baseDelayMs: number;
  maxDelayMs: number;
  sleep: ((ms: number) => Promise<void>) | undefined;
  random: (() => number) | undefined;
}

/** Bounds of the context-length probe (tokens) and its stopping width. */
const PROBE_LOW = 64;
const PROBE_HIGH = 8192;
const PROBE_STEP = 64;

/** Truncation margins: first pass, then the one retry after a context-length rejection. */
const FIRST_TRUNCATION = 0.95;
const SECOND_TRUNCATION = 0.9;

const CONTEXT_ERROR =
  /context length|context window|maximum (input )?length|too many tokens|input is too long|too long|exceeds? the (max|limit)|max(imum)?_?tokens/i;

/**
 * True when a provider rejected the input as longer than the model's window (OpenAI, vLLM, TEI and Ollama word
 * it differently; all answer 400, 413 or 422 with such a message).
 */
export function isContextLengthError(err: unknown): boolean {
  if (!(err instanceof APIError)) return false;
  if (err.status !== 400 && err.status !== 413 && err.status !== 422) return false;
  return CONTEXT_ERROR.test(err.message);
}

/** Cuts `text` to at most `maxChars` UTF-16 units without splitting a surrogate pair. */
function truncateChars(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  let end = maxChars;
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end--;
  return text.slice(0, end);
}

/** Approximate token count (4 chars per token). */
export function approxTokens(text: string): number {
  return Math.ceil(text.length / CHARS_PER_TOKEN);
}

/**
 * An embedder for any OpenAI-compatible `/embeddings` endpoint (OpenAI, Azure-style proxies, vLLM, TEI, Ollama,
 * LiteLLM), through the official `openai` SDK. It batches (≤ 1024 inputs), runs a bounded number of requests in
 * parallel, truncates inputs longer than the model's window, retries transient failures with backoff and jitter
 * (the SDK's own retries are off), and validates every response. Unknown dimension and context length are
 * detected on creation, as ai4rag does.
 * @example
 * const embedder = await OpenAIEmbedder.create({
 *   baseURL: 'https://api.openai.com/v1', apiKey, model: 'text-embedding-3-small',
 * });
 * const vectors = await embedder.embedDocuments(chunks.map((c) => c.text));
 */
export class OpenAIEmbedder implements Embedder {
  readonly modelId: string;
  readonly dimension: number;
  readonly contextLength: number;
  readonly #client: OpenAI;
  readonly #settings: ResolvedSettings;

  private constructor(
    client: OpenAI,
    settings: ResolvedSettings,
    dimension: number,
    contextLength: number,
  ) {
    this.#client = client;
    this.#settings = settings;
    this.modelId = settings.model;
    this.dimension = dimension;
    this.contextLength = contextLength;
  }

  /**
   * Builds a ready embedder: validates the options, then detects the dimension (one call) and the context
   * length (a binary search of about 7 calls) when they are not given.
   * @throws {ValidationError} for invalid options.
   * @throws {EmbeddingError} when the model cannot be reached or used, or its context is below 700 tokens.
   */
  static async create(options: OpenAIEmbedderOptions): Promise<OpenAIEmbedder> {
    if (typeof options.model !== 'string' || options.model.trim() === '') {
      throw new ValidationError('model must be a non-empty model id');
    }
    const maxBatchSize = positiveInteger(
      options.maxBatchSize,
      'maxBatchSize',
      OPENAI_MAX_BATCH_SIZE,
    );
    if (maxBatchSize > OPENAI_MAX_BATCH_SIZE) {
      throw new ValidationError(
        `maxBatchSize must be at most ${OPENAI_MAX_BATCH_SIZE}, got ${maxBatchSize}`,
      );
    }
    const maxRetries = options.maxRetries ?? 5;
    if (!Number.isInteger(maxRetries) || maxRetries < 0) {
      throw new ValidationError(
        `maxRetries must be a non-negative integer, got ${String(maxRetries)}`,
      );
    }
    const settings: ResolvedSettings = {
      model: options.model,
      sendDimensions: options.sendDimensions ?? false,
      maxBatchSize,
      concurrency: positiveInteger(options.concurrency, 'concurrency', 4),
      maxRetries,
      baseDelayMs: options.baseDelayMs ?? 500,
      maxDelayMs: options.maxDelayMs ?? 20_000,
      sleep: options.sleep,
      random: options.random,
    };
    const dimension =
      options.dimension === undefined
        ? undefined
        : positiveInteger(options.dimension, 'dimension', 0);
    if (settings.sendDimensions && dimension === undefined) {
      throw new ValidationError('sendDimensions needs an explicit dimension');
    }
    const contextLength =
      options.contextLength === undefined
        ? undefined
        : positiveInteger(options.contextLength, 'contextLength', 0);
    let client = options.client;
    if (client === undefined) {
      if (!options.baseURL || !options.apiKey) {
        throw new ValidationError('baseURL and apiKey are required when no client is given');
      }
      client = new OpenAI({
        baseURL: options.baseURL,
        apiKey: options.apiKey,
        maxRetries: 0,
        timeout: positiveInteger(options.timeoutMs, 'timeoutMs', 60_000),
      });
    }

    // Detection calls go through the same request path with a provisional instance.
    const probe = new OpenAIEmbedder(client, settings, dimension ?? 0, contextLength ?? PROBE_HIGH);
    const detectedDimension = dimension ?? (await probe.#detectDimension());
    const detectedContext = contextLength ?? (await probe.#detectContextLength());
    if (detectedContext < MIN_CONTEXT_LENGTH) {
      throw new EmbeddingError(
        `Embedding model "${settings.model}": context length ${detectedContext} is below the minimum ${MIN_CONTEXT_LENGTH} tokens`,
      );
    }
    return new OpenAIEmbedder(client, settings, detectedDimension, detectedContext);
  }

  /**
   * Embeds texts in input order: batches of ≤ maxBatchSize, at most `concurrency` requests in flight.
   * @throws {EmbeddingError} on a non-transient provider error, exhausted retries or a malformed response.
   */
  async embedDocuments(texts: string[]): Promise<number[][]> {
    if (!Array.isArray(texts) || texts.some((t) => typeof t !== 'string')) {
      throw new ValidationError('embedDocuments expects an array of strings');
    }
    if (texts.length === 0) return [];
    const groups = batches(texts, this.#settings.maxBatchSize);
    const results = await mapLimit(groups, this.#settings.concurrency, (group) =>
      this.#embedBatch(group),
    );
    return results.flat();
  }

  /**
   * Embeds one query (a one-text batch).
   * @throws {EmbeddingError} as {@link OpenAIEmbedder.embedDocuments}.
   */
  async embedQuery(text: string): Promise<number[]> {
    const [vector] = await this.embedDocuments([text]);
    if (vector === undefined) {
      throw new EmbeddingError(`Embedding model "${this.modelId}" returned no vector`);
    }
    return vector;
  }

  /** One request with retries on transient errors; the raw provider error escapes. */
  async #request(input: string[]): Promise<number[][]> {
    const s = this.#settings;
    const response = await withRetry(
      () =>
        this.#client.embeddings.create({
          model: s.model,
          input,
          ...(s.sendDimensions ? { dimensions: this.dimension } : {}),
        }),
      {
        maxRetries: s.maxRetries,
        baseDelayMs: s.baseDelayMs,
        maxDelayMs: s.maxDelayMs,
        isRetryable: isTransientOpenAIError,
        ...(s.sleep ? { sleep: s.sleep } : {}),
        ...(s.random ? { random: s.random } : {}),
      },
    );
    const data = Array.isArray(response?.data) ? response.data : undefined;
    if (data === undefined || data.length !== input.length) {
      throw new EmbeddingError(
        `Embedding model "${s.model}" returned ${data?.length ?? 'no'} vectors for ${input.length} inputs`,
      );
    }
    const ordered = new Array<number[] | undefined>(input.length);
    data.forEach((item, position) => {
      const index = typeof item.index === 'number' ? item.index : position;
      if (!Number.isInteger(index) || index < 0 || index >= input.length || ordered[index]) {
        throw new EmbeddingError(
          `Embedding model "${s.model}" returned a missing, duplicate or out-of-range index ${index}`,
        );
      }
      ordered[index] = item.embedding;
    });
    // Array.from visits holes too (map would skip them), so a missing index fails below.
    return Array.from(ordered, (vector, i) => {
      if (
        !Array.isArray(vector) ||
        vector.some((x) => typeof x !== 'number' || !Number.isFinite(x))
      ) {
        throw new EmbeddingError(
          `Embedding model "${s.model}" returned an invalid vector for input ${i}`,
        );
      }
      return vector;
    });
  }

  async #embedBatch(texts: string[]): Promise<number[][]> {
    const truncate = (ratio: number): string[] => {
      const maxChars = Math.floor(this.contextLength * ratio) * CHARS_PER_TOKEN;
      return texts.map((t) => truncateChars(t, maxChars));
    };
    const first = texts.map((t) =>
      approxTokens(t) > this.contextLength
        ? truncateChars(t, Math.floor(this.contextLength * FIRST_TRUNCATION) * CHARS_PER_TOKEN)
        : t,
    );
    let vectors: number[][];
    try {
      try {
        vectors = await this.#request(first);
      } catch (err) {
        if (!isContextLengthError(err)) throw err;
        vectors = await this.#request(truncate(SECOND_TRUNCATION));
      }
    } catch (err) {
      if (err instanceof EmbeddingError) throw err;
      throw new EmbeddingError(
        `Embedding request to model "${this.modelId}" failed (${describeApiError(err)})`,
        { cause: err },
      );
    }
    for (const [i, vector] of vectors.entries()) {
      if (vector.length !== this.dimension) {
        throw new EmbeddingError(
          `Embedding model "${this.modelId}" returned a vector of length ${vector.length} for input ${i}, expected ${this.dimension}`,
        );
      }
    }
    return vectors;
  }

  async #detectDimension(): Promise<number> {
    let vectors: number[][];
    try {
      vectors = await this.#request(['test']);
    } catch (err) {
      if (err instanceof EmbeddingError) throw err;
      throw new EmbeddingError(
        `Embedding model "${this.modelId}": dimension detection failed (${describeApiError(err)})`,
        { cause: err },
      );
    }
    const length = vectors[0]?.length ?? 0;
    if (length < 1) {
      throw new EmbeddingError(`Embedding model "${this.modelId}" returned an empty vector`);
    }
    return length;
  }

  /** ai4rag's probe: binary search over `"word ".repeat(n)`; the last accepted n is the context length. */
  async #detectContextLength(): Promise<number> {
    let lo = PROBE_LOW;
    let hi = PROBE_HIGH;
    while (hi - lo >= PROBE_STEP) {
      const mid = Math.floor((lo + hi) / 2);
      try {
        await this.#request(['word '.repeat(mid)]);
        lo = mid;
      } catch (err) {
        if (!isContextLengthError(err)) {
          if (err instanceof EmbeddingError) throw err;
          throw new EmbeddingError(
            `Embedding model "${this.modelId}": context length detection failed (${describeApiError(err)})`,
            { cause: err },
          );
        }
        hi = mid;
      }
    }
    return lo;
  }
}
