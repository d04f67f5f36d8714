import { Ai4ragError, ValidationError } from '../errors.js';
import { batches, mapLimit } from '../util/concurrency.js';
import { withRetry } from '../util/retry.js';

/**
 * Port of a cross-encoder reranker, so retrieval can be refined by any backend (TEI, a hosted API, a test
 * double) without the query path knowing which.
 */
export interface Reranker {
  /** Identifies the scoring model, e.g. for experiment records and caches. */
  readonly modelId: string;
  /** Where the model is served (named in warnings when reranking fails), when it is a remote service. */
  readonly endpoint?: string;
  /** One score per document, aligned with the input order; higher is better. */
  rerank(query: string, documents: readonly string[]): Promise<number[]>;
}

/** Extra facts carried by a {@link RerankError}. */
export interface RerankErrorOptions extends ErrorOptions {
  /** HTTP status of the failed answer, when there was one. */
  status?: number;
  /** Whether another attempt may succeed (429, 5xx, timeout, connection error). */
  retryable?: boolean;
  /** Lowercase response headers (`retry-after` is honoured by the retry loop). */
  headers?: Record<string, string>;
}

/** A reranking call failed or the server answered something unusable. */
export class RerankError extends Ai4ragError {
  readonly status?: number;
  readonly retryable: boolean;
  readonly headers?: Record<string, string>;

  constructor(message: string, options?: RerankErrorOptions) {
    super(message, options);
    this.name = 'RerankError';
    this.retryable = options?.retryable ?? false;
    if (options?.status !== undefined) this.status = options.status;
    if (options?.headers !== undefined) this.headers = options.headers;
  }
}

/** Options of {@link TeiReranker}. Durations are in milliseconds. */
export interface TeiRerankerOptions {
  /** Root of the TEI server, e.g. `http://127.0.0.1:8080` (`/rerank` is appended). */
  baseURL: string;
  /** Reported as {@link Reranker.modelId} (TEI serves one model, so it is not sent). @default 'tei' */
  model?: string;
  /** Sent as `Authorization: Bearer <apiKey>` (TEI's `--api-key`, or a gateway's key) when non-empty. */
  apiKey?: string;
  /** Per-attempt timeout. @default 30000 */
  timeoutMs?: number;
  /** Retries after the first attempt, for 429/5xx/timeouts/connection errors only. @default 3 */
  maxRetries?: number;
  /** Texts per request (TEI's `--max-client-batch-size` defaults to 32..64). @default 64 */
  batchSize?: number;
  /** Injectable for tests (default: the global `fetch`). */
  fetch?: typeof fetch;
  /** Injectable backoff sleep for tests. */
  sleep?: (ms: number) => Promise<void>;
  /** Injectable jitter source for tests, in [0, 1). */
  random?: () => number;
}

/** Requests in flight at once per {@link TeiReranker.rerank} call: enough overlap, gentle on one GPU. */
const BATCH_CONCURRENCY = 2;
const BASE_DELAY_MS = 500;
const MAX_DELAY_MS = 10_000;

function isRetryable(err: unknown): boolean {
  return err instanceof RerankError && err.retryable;
}

function describe(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * Checks TEI's `[{ index, score }, ...]` answer and spreads it back onto input positions, because TEI sorts by
 * score and may leave out a text it failed on (that text then scores `-Infinity`, i.e. last).
 */
function alignScores(body: unknown, count: number): number[] {
  if (!Array.isArray(body)) {
    throw new RerankError(
      `TEI /rerank answered ${body === null ? 'null' : typeof body}, expected an array of { index, score }`,
    );
  }
  const scores = new Array<number>(count).fill(Number.NEGATIVE_INFINITY);
  const seen = new Set<number>();
  body.forEach((entry: unknown, position) => {
    const { index, score } =
      entry !== null && typeof entry === 'object' ? (entry as Record<string, unknown>) : {};
    if (typeof index !== 'number' || !Number.isInteger(index) || index < 0 || index >= count) {
      throw new RerankError(
        `TEI /rerank entry ${position} has index ${JSON.stringify(index)}, expected an integer in 0..${count - 1}`,
      );
    }
    if (typeof score !== 'number' || !Number.isFinite(score)) {
      throw new RerankError(
        `TEI /rerank entry ${position} has score ${JSON.stringify(score)}, expected a finite number`,
      );
    }
    if (seen.has(index)) {
      throw new RerankError(`TEI /rerank answered index ${index} twice`);
    }
    seen.add(index);
    scores[index] = score;
  });
  return scores;
}

/**
 * {@link Reranker} backed by a Hugging Face text-embeddings-inference (TEI) compatible `/rerank` endpoint, so a
 * self-hosted cross-encoder (e.g. bge-reranker) can reorder retrieved passages. Large candidate lists are split
 * into batches of `batchSize` with at most 2 requests in flight; transient failures (429, 5xx, timeouts,
 * connection errors) are retried with jittered exponential backoff, anything else fails at once.
 * @throws {ValidationError} from the constructor for invalid options.
 * @example
 * const reranker = new TeiReranker({ baseURL: 'http://127.0.0.1:8080', model: 'BAAI/bge-reranker-base' });
 * const scores = await reranker.rerank('leave days', passages.map((p) => p.text));
 */
export class TeiReranker implements Reranker {
  readonly modelId: string;
  /** The server root, without a trailing slash. */
  readonly endpoint: string;
  private readonly url: string;
  private readonly headers: Record<string, string>;
  private readonly timeoutMs: number;
  private readonly maxRetries: number;
  private readonly batchSize: number;
  private readonly fetchFn: typeof fetch;
  private readonly sleep: ((ms: number) => Promise<void>) | undefined;
  private readonly random: (() => number) | undefined;

  constructor(options: TeiRerankerOptions) {
    const { baseURL } = options;
    if (typeof baseURL !== 'string' || baseURL.trim() === '') {
      throw new ValidationError('TeiReranker needs a non-empty baseURL');
    }
    const timeoutMs = options.timeoutMs ?? 30_000;
    const maxRetries = options.maxRetries ?? 3;
    const batchSize = options.batchSize ?? 64;
    if (!(Number.isFinite(timeoutMs) && timeoutMs > 0)) {
      throw new ValidationError(`timeoutMs must be a positive number, got ${String(timeoutMs)}`);
    }
    if (!Number.isInteger(maxRetries) || maxRetries < 0) {
      throw new ValidationError(
        `maxRetries must be a non-negative integer, got ${String(maxRetries)}`,
      );
    }
    if (!Number.isInteger(batchSize) || batchSize < 1) {
      throw new ValidationError(`batchSize must be a positive integer, got ${String(batchSize)}`);
    }
    this.endpoint = baseURL.trim().replace(/\/+$/, '');
    this.url = `${this.endpoint}/rerank`;
    this.headers = {
      'content-type': 'application/json',
      accept: 'application/json',
      ...(options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {}),
    };
    this.modelId = options.model ?? 'tei';
    this.timeoutMs = timeoutMs;
    this.maxRetries = maxRetries;
    this.batchSize = batchSize;
    this.fetchFn = options.fetch ?? ((input, init) => fetch(input, init));
    this.sleep = options.sleep;
    this.random = options.random;
  }

  /**
   * Scores every document against `query`; the result is aligned with `documents`. An empty list returns `[]`
   * without a request.
   * @throws {RerankError} when the server fails (after retries for transient errors) or answers malformed data.
   */
  async rerank(query: string, documents: readonly string[]): Promise<number[]> {
    if (documents.length === 0) return [];
    const groups = batches(documents, this.batchSize);
    const scored = await mapLimit(groups, BATCH_CONCURRENCY, (texts) =>
      withRetry(() => this.request(query, texts), {
        maxRetries: this.maxRetries,
        baseDelayMs: BASE_DELAY_MS,
        maxDelayMs: MAX_DELAY_MS,
        isRetryable,
        ...(this.sleep ? { sleep: this.sleep } : {}),
        ...(this.random ? { random: this.random } : {}),
      }),
    );
    return scored.flat();
  }

  private async request(query: string, texts: string[]): Promise<number[]> {
    let response: Response;
    let body: unknown;
    try {
      response = await this.fetchFn(this.url, {
        method: 'POST',
        headers: this.headers,
        body: JSON.stringify({ query, texts, raw_scores: false, truncate: true }),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
      if (!response.ok) {
        const detail = (await response.text()).slice(0, 500);
        const headers: Record<string, string> = {};
        const retryAfter = response.headers.get('retry-after');
        if (retryAfter !== null) headers['retry-after'] = retryAfter;
        const status = response.status;
        throw new RerankError(`TEI /rerank answered HTTP ${status}${detail ? `: ${detail}` : ''}`, {
          // The server's own words, kept apart from our message for logs.
          cause: new Error(`HTTP ${status} ${response.statusText}: ${detail}`),
          status,
          headers,
          retryable: status === 408 || status === 429 || status >= 500,
        });
      }
      const raw = await response.text();
      try {
        body = JSON.parse(raw);
      } catch (error) {
        throw new RerankError(`TEI /rerank answered invalid JSON: ${raw.slice(0, 200)}`, {
          cause: error,
        });
      }
    } catch (error) {
      if (error instanceof RerankError) throw error;
      const timedOut = error instanceof Error && error.name === 'TimeoutError';
      throw new RerankError(
        timedOut
          ? `TEI /rerank timed out after ${this.timeoutMs} ms`
          : `TEI /rerank request failed: ${describe(error)}`,
        { cause: error, retryable: !(error instanceof Error && error.name === 'AbortError') },
      );
    }
    return alignScores(body, texts.length);
  }
}

/** A candidate after {@link rerankChunks}: `score` is now the rerank score. */
export type Reranked<T> = T & {
  /** The rerank score (replaces the retrieval score so downstream code sorts/filters on it). */
  score: number;
  /** The rerank score, explicitly named. */
  rerankScore: number;
  /** The candidate's original `score`, when it had a numeric one. */
  retrievalScore?: number;
};

/**
 * Reorders retrieved candidates by a reranker's scores and keeps the best `k`, because a cross-encoder judges
 * query/passage relevance better than the first-stage vector or keyword score. Ties keep retrieval order. An
 * empty list returns `[]` without calling the reranker.
 * @throws {ValidationError} when `k` is not a non-negative integer.
 * @throws {RerankError} when the reranker fails or returns the wrong number of scores.
 * @example
 * const passages = await retriever.retrieve(question);
 * const top = await rerankChunks(reranker, question, passages, 3);
 */
export async function rerankChunks<T extends { text: string }>(
  reranker: Reranker,
  query: string,
  chunks: T[],
  k: number,
): Promise<Reranked<T>[]> {
  if (!Number.isInteger(k) || k < 0) {
    throw new ValidationError(`k must be a non-negative integer, got ${String(k)}`);
  }
  if (chunks.length === 0 || k === 0) return [];
  const scores = await reranker.rerank(
    query,
    chunks.map((chunk) => chunk.text),
  );
  if (!Array.isArray(scores) || scores.length !== chunks.length) {
    throw new RerankError(
      `reranker ${reranker.modelId} returned ${Array.isArray(scores) ? scores.length : 'no'} scores for ${chunks.length} documents`,
    );
  }
  const order = chunks.map((_, index) => index);
  order.sort((a, b) => {
    const sa = scores[a] as number;
    const sb = scores[b] as number;
    if (sa > sb) return -1;
    if (sa < sb) return 1;
    return a - b;
  });
  return order.slice(0, k).map((index) => {
    const chunk = chunks[index] as T;
    const rerankScore = scores[index] as number;
    const original = (chunk as { score?: unknown }).score;
    const out: Reranked<T> = { ...chunk, score: rerankScore, rerankScore };
    if (typeof original === 'number') out.retrievalScore = original;
    return out;
  });
}

/**
 * How many fused candidates reranking fetches: by default `max(MIN_DEFAULT, FACTOR × k)` capped at `MAX`, so a
 * cross-encoder has room to promote passages the first stage ranked low, while the work per query (one
 * query/passage pair per candidate) stays bounded.
 */
export const RERANK_CANDIDATES = Object.freeze({ MIN_DEFAULT: 20, FACTOR: 4, MAX: 200 });

/**
 * The default number of candidates reranked down to `k`: `min(MAX, max(MIN_DEFAULT, FACTOR × k))`, never
 * below `k`.
 * @example defaultRerankCandidates(3) // 20; defaultRerankCandidates(10) // 40
 */
export function defaultRerankCandidates(k: number): number {
  const { MIN_DEFAULT, FACTOR, MAX } = RERANK_CANDIDATES;
  return Math.max(k, Math.min(MAX, Math.max(MIN_DEFAULT, FACTOR * k)));
}

/**
 * Why `candidates` cannot be reranked down to `k`, or undefined when it can: it must be an integer in
 * `k..MAX` (fewer candidates than passages kept would make reranking a no-op that hides a mistake).
 * @example rerankCandidatesProblem(5, 10) // 'must be an integer in 10..200, got 5'
 */
export function rerankCandidatesProblem(candidates: unknown, k: number): string | undefined {
  const { MAX } = RERANK_CANDIDATES;
  if (typeof candidates === 'number' && Number.isInteger(candidates)) {
    if (candidates >= k && candidates <= MAX) return undefined;
  }
  return k > MAX
    ? `cannot rerank down to k ${k}: at most ${MAX} candidates are reranked`
    : `must be an integer in ${k}..${MAX} (at least k), got ${String(candidates)}`;
}

function rootMessage(error: unknown): string {
  let e: unknown = error;
  // A wrapper's own message only says "failed"; its cause says why.
  while (e instanceof Error && e.cause instanceof Error && e.name === 'RagTemplateError')
    e = e.cause;
  return e instanceof Error ? e.message : String(e);
}

/**
 * The warning returned with results when reranking failed and the first-stage order was kept instead.
 * @example rerankFailureWarning(reranker, error)
 * // 'reranker tei at http://127.0.0.1:8080: TEI /rerank answered HTTP 503: …; results in retrieval order, not reranked'
 */
export function rerankFailureWarning(
  reranker: Pick<Reranker, 'modelId' | 'endpoint'>,
  error: unknown,
): string {
  const where = reranker.endpoint ? ` at ${reranker.endpoint}` : '';
  return `reranker ${reranker.modelId}${where}: ${rootMessage(error)}; results in retrieval order, not reranked`;
}

/** The result of {@link rerankOrKeepOrder}. */
export interface RerankOutcome<T> {
  /** At most `k` candidates: reranked, or in their retrieval order when reranking failed. */
  chunks: (T | Reranked<T>)[];
  /** Set when reranking failed: see {@link rerankFailureWarning}. */
  warning?: string;
}

/**
 * {@link rerankChunks} for serving: a reranker that fails (after its retries) or answers something unusable
 * degrades the results to the first `k` candidates in retrieval order with a warning, because a search that
 * still answers is better than an error while the cross-encoder is down.
 * @throws {ValidationError} when `k` is not a non-negative integer.
 * @example const { chunks, warning } = await rerankOrKeepOrder(reranker, query, candidates, 5);
 */
export async function rerankOrKeepOrder<T extends { text: string }>(
  reranker: Reranker,
  query: string,
  chunks: T[],
  k: number,
): Promise<RerankOutcome<T>> {
  try {
    return { chunks: await rerankChunks(reranker, query, chunks, k) };
  } catch (error) {
    if (error instanceof ValidationError) throw error;
    return { chunks: chunks.slice(0, k), warning: rerankFailureWarning(reranker, error) };
  }
}
