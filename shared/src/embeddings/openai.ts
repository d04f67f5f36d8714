import OpenAI, { APIError } from 'openai';
import { ValidationError } from '../errors.js';
import { batches, mapLimit } from '../util/concurrency.js';
import { describeApiError, isTransientOpenAIError } from '../util/openai-errors.js';
import type { OpenAIConnectionOptions } from '../util/openai-options.js';
import { positiveInteger } from '../util/options.js';
import { withRetry } from '../util/retry.js';
import { withOpenAIErrorEnvelope } from './error-envelope.js';
import { EmbeddingError } from './errors.js';
import { type EmbeddingPrefixes, prefixedModelId, resolvePrefixes } from './prefixes.js';
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
  /** Inputs per request, 1..1024 (default 1024); lowered by itself when the server refuses a batch as too big. */
  maxBatchSize?: number;
  /** Requests in flight per `embedDocuments` call (default 4). */
  concurrency?: number;
  /**
   * Instruction prefixes for queries (`embedQuery`) and documents (`embedDocuments`). When absent, those of a
   * known model family apply ({@link KNOWN_EMBEDDING_PREFIXES}: E5, BGE English, Nomic, mxbai); `{}` turns them
   * off. Non-empty prefixes become part of {@link OpenAIEmbedder.modelId}.
   */
  prefixes?: EmbeddingPrefixes;
}

interface ResolvedSettings {
  model: string;
  /** API root, named in every error. */
  endpoint: string;
  prefixes: Readonly<Required<EmbeddingPrefixes>>;
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

/** Context-length refusals as OpenAI, vLLM, Ollama and TEI (`must have less than 512 tokens`) word them. */
const CONTEXT_ERROR =
  /context length|context window|maximum (input )?length|too many tokens|input is too long|too long|exceeds? the (max|limit)|max(imum)?_?tokens|must have less than \d+ tokens/i;

/** TEI's refusal of a batch over `--max-client-batch-size` (default 32). */
const BATCH_LIMIT = /maximum allowed batch size (\d+)/i;

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/**
 * True when a provider rejected the input as longer than the model's window (OpenAI, vLLM, TEI and Ollama word
 * it differently; all answer 400, 413 or 422 with such a message).
 */
export function isContextLengthError(err: unknown): boolean {
  if (!(err instanceof APIError)) return false;
  if (err.status !== 400 && err.status !== 413 && err.status !== 422) return false;
  return CONTEXT_ERROR.test(err.message);
}

/**
 * How many inputs per request a server accepts after refusing a batch of `size` as too big, or undefined when
 * the refusal is about something else. TEI answers 413 `batch size 33 > maximum allowed batch size 32` (the
 * limit it names is used); any other 413 that is not a context-length refusal (a request-body limit) halves the
 * batch.
 * @example acceptedBatchSize(teiRefusalOf33, 33) // 32
 */
export function acceptedBatchSize(err: unknown, size: number): number | undefined {
  if (!(err instanceof APIError) || (err.status !== 413 && err.status !== 422)) return undefined;
  const named = BATCH_LIMIT.exec(err.message);
  if (named) {
    const limit = Number(named[1]);
    return limit >= 1 && limit < size ? limit : undefined;
  }
  if (err.status === 413 && size > 1 && !isContextLengthError(err)) return Math.ceil(size / 2);
  return undefined;
}

/**
 * Decodes what `encoding_format: "base64"` returns: standard base64 of little-endian float32 values. Undefined
 * when `text` is not that (not base64, empty, or a byte count that is not a multiple of 4).
 * @example decodeBase64Float32(Buffer.from(new Float32Array([0.5, -1]).buffer).toString('base64')) // [0.5, -1]
 */
export function decodeBase64Float32(text: string): number[] | undefined {
  if (text.length === 0 || text.length % 4 !== 0 || !BASE64.test(text)) return undefined;
  const bytes = Buffer.from(text, 'base64');
  if (bytes.length === 0 || bytes.length % 4 !== 0) return undefined;
  const values = new Array<number>(bytes.length / 4);
  for (let i = 0; i < values.length; i++) values[i] = bytes.readFloatLE(i * 4);
  return values;
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

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

/** A value as it appears in an error message: numbers as they are, anything else as JSON cut to 40 characters. */
function show(value: unknown): string {
  const cut = (s: string): string => (s.length > 40 ? `${s.slice(0, 40)}…` : s);
  if (typeof value === 'string') return JSON.stringify(cut(value));
  if (typeof value === 'number' || value === undefined) return String(value);
  return cut(JSON.stringify(value) ?? typeof value);
}

function checkPrefixes(prefixes: unknown): void {
  if (prefixes === undefined) return;
  const p = prefixes as Record<string, unknown> | null;
  if (
    typeof p !== 'object' ||
    p === null ||
    (p.query !== undefined && typeof p.query !== 'string') ||
    (p.document !== undefined && typeof p.document !== 'string')
  ) {
    throw new ValidationError('prefixes must be { query?: string; document?: string }');
  }
}

/**
 * An embedder for any OpenAI-compatible `/embeddings` endpoint (OpenAI, Azure-style proxies, vLLM, TEI, Ollama,
 * LM Studio, LiteLLM), through the official `openai` SDK. It always asks for `encoding_format: "float"` (left
 * alone, the SDK asks for base64 and decodes whatever comes back as base64, which silently turns the float
 * arrays of servers that ignore the field, such as older Ollama and LM Studio, into vectors a quarter as long),
 * still accepts a base64 float32 string from a server that sends one anyway, and validates every response:
 * one vector per input, each of the expected dimension, every value a finite number. It batches (≤ 1024 inputs,
 * fewer when the server says so, as TEI does beyond 32), runs a bounded number of requests in parallel,
 * truncates inputs longer than the model's window, retries transient failures with backoff and jitter (the SDK's
 * own retries are off), and applies the model's query/document instruction prefixes. Unknown dimension and
 * context length are detected on creation, as ai4rag does.
 * @example
 * const embedder = await OpenAIEmbedder.create({
 *   baseURL: 'https://api.openai.com/v1', apiKey, model: 'text-embedding-3-small',
 * });
 * const vectors = await embedder.embedDocuments(chunks.map((c) => c.text));
 */
export class OpenAIEmbedder implements Embedder {
  /** The model name, followed by the instruction prefixes when any apply (see {@link prefixedModelId}). */
  readonly modelId: string;
  /** The model name sent with each request. */
  readonly model: string;
  /** The API root requests go to (named in errors). */
  readonly baseURL: string;
  /** The instruction prefixes applied (`''` for none). */
  readonly prefixes: Readonly<Required<EmbeddingPrefixes>>;
  readonly dimension: number;
  readonly contextLength: number;
  readonly #client: OpenAI;
  readonly #settings: ResolvedSettings;
  /** Inputs per request: `maxBatchSize`, lowered once the server refuses a batch as too big. */
  #batchSize: number;

  private constructor(
    client: OpenAI,
    settings: ResolvedSettings,
    dimension: number,
    contextLength: number,
  ) {
    this.#client = client;
    this.#settings = settings;
    this.#batchSize = settings.maxBatchSize;
    this.model = settings.model;
    this.baseURL = settings.endpoint;
    this.prefixes = settings.prefixes;
    this.modelId = prefixedModelId(settings.model, settings.prefixes);
    this.dimension = dimension;
    this.contextLength = contextLength;
  }

  /**
   * Builds a ready embedder: validates the options, then detects the dimension (one call) and the context
   * length (a binary search of about 8 calls) when they are not given.
   * @throws {ValidationError} for invalid options.
   * @throws {EmbeddingError} when the model cannot be reached or used, or its context is below 700 tokens.
   */
  static async create(options: OpenAIEmbedderOptions): Promise<OpenAIEmbedder> {
    if (typeof options.model !== 'string' || options.model.trim() === '') {
      throw new ValidationError('model must be a non-empty model id');
    }
    checkPrefixes(options.prefixes);
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
    const dimension =
      options.dimension === undefined
        ? undefined
        : positiveInteger(options.dimension, 'dimension', 0);
    if (options.sendDimensions && dimension === undefined) {
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
        // TEI and older vLLM put their error message where the SDK does not look.
        fetch: withOpenAIErrorEnvelope(),
      });
    }
    const settings: ResolvedSettings = {
      model: options.model,
      endpoint:
        typeof client.baseURL === 'string' && client.baseURL !== ''
          ? client.baseURL
          : options.baseURL || 'an injected client',
      prefixes: resolvePrefixes(options.model, options.prefixes),
      sendDimensions: options.sendDimensions ?? false,
      maxBatchSize,
      concurrency: positiveInteger(options.concurrency, 'concurrency', 4),
      maxRetries,
      baseDelayMs: options.baseDelayMs ?? 500,
      maxDelayMs: options.maxDelayMs ?? 20_000,
      sleep: options.sleep,
      random: options.random,
    };

    // Detection calls go through the same request path with a provisional instance.
    const probe = new OpenAIEmbedder(client, settings, dimension ?? 0, contextLength ?? PROBE_HIGH);
    const detectedDimension = dimension ?? (await probe.#detectDimension());
    const detectedContext = contextLength ?? (await probe.#detectContextLength());
    if (detectedContext < MIN_CONTEXT_LENGTH) {
      throw new EmbeddingError(
        `${probe.#label}: context length ${detectedContext} is below the minimum ${MIN_CONTEXT_LENGTH} tokens`,
      );
    }
    return new OpenAIEmbedder(client, settings, detectedDimension, detectedContext);
  }

  /**
   * Embeds document texts (each with the document prefix) in input order: batches of ≤ maxBatchSize, at most
   * `concurrency` requests in flight.
   * @throws {EmbeddingError} on a non-transient provider error, exhausted retries or a malformed response.
   */
  async embedDocuments(texts: string[]): Promise<number[][]> {
    if (!Array.isArray(texts) || texts.some((t) => typeof t !== 'string')) {
      throw new ValidationError('embedDocuments expects an array of strings');
    }
    return this.#embed(texts, this.prefixes.document);
  }

  /**
   * Embeds one query (with the query prefix) as a one-text batch.
   * @throws {EmbeddingError} as {@link OpenAIEmbedder.embedDocuments}.
   */
  async embedQuery(text: string): Promise<number[]> {
    if (typeof text !== 'string') throw new ValidationError('embedQuery expects a string');
    const [vector] = await this.#embed([text], this.prefixes.query);
    if (vector === undefined) throw this.#error('returned no vector');
    return vector;
  }

  async #embed(texts: string[], prefix: string): Promise<number[][]> {
    if (texts.length === 0) return [];
    const inputs = prefix === '' ? texts : texts.map((t) => prefix + t);
    const size = this.#batchSize;
    const results = await mapLimit(batches(inputs, size), this.#settings.concurrency, (group, i) =>
      this.#embedBatch(group, i * size),
    );
    return results.flat();
  }

  /** `Embedding model "<model>" at <baseURL>`: how every error of this embedder begins. */
  get #label(): string {
    return `Embedding model "${this.model}" at ${this.baseURL}`;
  }

  /** An EmbeddingError naming the model and the endpoint: `Embedding model "m" at <url> <text>`. */
  #error(text: string): EmbeddingError {
    return new EmbeddingError(`${this.#label} ${text}`);
  }

  /**
   * One request with retries on transient errors; the raw provider error escapes. `offset` is the position of
   * `input[0]` in the caller's texts (for messages); `expected` the vector length every answer must have
   * (undefined while detecting it: then all vectors of the answer must agree).
   */
  async #request(
    input: string[],
    offset: number,
    expected: number | undefined,
  ): Promise<number[][]> {
    const s = this.#settings;
    const response: unknown = await withRetry(
      () =>
        this.#client.embeddings.create({
          model: s.model,
          input,
          // Explicit, so the SDK neither asks for base64 nor decodes the answer as base64.
          encoding_format: 'float',
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
    const data =
      isRecord(response) && Array.isArray(response.data) ? (response.data as unknown[]) : undefined;
    if (data === undefined || data.length !== input.length) {
      throw this.#error(`returned ${data?.length ?? 'no'} vectors for ${input.length} inputs`);
    }
    // Servers that omit `index` (or send items without it) are taken in order.
    const ordered = new Array<unknown>(input.length);
    const seen = new Array<boolean>(input.length).fill(false);
    data.forEach((item, position) => {
      const index = isRecord(item) && typeof item.index === 'number' ? item.index : position;
      if (!Number.isInteger(index) || index < 0 || index >= input.length || seen[index]) {
        throw this.#error(`returned a missing, duplicate or out-of-range index ${index}`);
      }
      seen[index] = true;
      ordered[index] = isRecord(item) ? item.embedding : undefined;
    });
    let want = expected;
    return ordered.map((embedding, i) => {
      const vector = this.#vector(embedding, offset + i, want);
      want ??= vector.length;
      return vector;
    });
  }

  /** Validates one answered embedding: a finite-number array (or base64 float32) of the expected length. */
  #vector(embedding: unknown, input: number, expected: number | undefined): number[] {
    let vector: unknown[] | undefined;
    if (Array.isArray(embedding)) vector = embedding;
    else if (typeof embedding === 'string') vector = decodeBase64Float32(embedding);
    if (vector === undefined) {
      throw this.#error(
        `returned an embedding for input ${input} that is neither an array of numbers nor base64 float32 (${show(embedding)})`,
      );
    }
    if (vector.length === 0) throw this.#error(`returned an empty vector for input ${input}`);
    if (expected !== undefined && vector.length !== expected) {
      throw this.#error(
        `returned a vector of length ${vector.length} for input ${input}, expected ${expected}`,
      );
    }
    const bad = vector.findIndex((x) => typeof x !== 'number' || !Number.isFinite(x));
    if (bad >= 0) {
      throw this.#error(
        `returned a non-numeric or non-finite value ${show(vector[bad])} at position ${bad} of the vector for input ${input}`,
      );
    }
    return vector as number[];
  }

  /**
   * One batch: truncation to the context, one retry at 90 % after a context-length refusal, and a split when
   * the server refuses the batch size (which then holds for the rest of this embedder's life).
   */
  async #embedBatch(texts: string[], offset: number): Promise<number[][]> {
    const size = this.#batchSize;
    if (texts.length > size) {
      const vectors: number[][] = [];
      for (let i = 0; i < texts.length; i += size) {
        vectors.push(...(await this.#embedBatch(texts.slice(i, i + size), offset + i)));
      }
      return vectors;
    }
    const truncate = (ratio: number): string[] => {
      const maxChars = Math.floor(this.contextLength * ratio) * CHARS_PER_TOKEN;
      return texts.map((t) => truncateChars(t, maxChars));
    };
    const first = texts.map((t) =>
      approxTokens(t) > this.contextLength
        ? truncateChars(t, Math.floor(this.contextLength * FIRST_TRUNCATION) * CHARS_PER_TOKEN)
        : t,
    );
    try {
      try {
        return await this.#request(first, offset, this.dimension);
      } catch (err) {
        if (!isContextLengthError(err)) throw err;
        return await this.#request(truncate(SECOND_TRUNCATION), offset, this.dimension);
      }
    } catch (err) {
      if (err instanceof EmbeddingError) throw err;
      const accepted = acceptedBatchSize(err, texts.length);
      if (accepted !== undefined) {
        this.#batchSize = Math.min(this.#batchSize, accepted);
        return this.#embedBatch(texts, offset);
      }
      throw new EmbeddingError(`${this.#label}: request failed (${describeApiError(err)})`, {
        cause: err,
      });
    }
  }

  async #detectDimension(): Promise<number> {
    try {
      const [vector] = await this.#request(['test'], 0, undefined);
      return vector?.length ?? 0;
    } catch (err) {
      if (err instanceof EmbeddingError) throw err;
      throw new EmbeddingError(
        `${this.#label}: dimension detection failed (${describeApiError(err)})`,
        { cause: err },
      );
    }
  }

  /** ai4rag's probe: binary search over `"word ".repeat(n)`; the last accepted n is the context length. */
  async #detectContextLength(): Promise<number> {
    let lo = PROBE_LOW;
    let hi = PROBE_HIGH;
    while (hi - lo >= PROBE_STEP) {
      const mid = Math.floor((lo + hi) / 2);
      try {
        await this.#request(['word '.repeat(mid)], 0, undefined);
        lo = mid;
      } catch (err) {
        if (!isContextLengthError(err)) {
          if (err instanceof EmbeddingError) throw err;
          throw new EmbeddingError(
            `${this.#label}: context length detection failed (${describeApiError(err)})`,
            { cause: err },
          );
        }
        hi = mid;
      }
    }
    return lo;
  }
}
