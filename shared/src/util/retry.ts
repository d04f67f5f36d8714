import { ValidationError } from '../errors.js';

/** Options of {@link withRetry}. Delays are in milliseconds. */
export interface RetryOptions {
  /** Retries after the first attempt (0 = a single attempt). */
  maxRetries: number;
  /** Backoff base: the cap of the jittered delay before retry k (0-based) is `baseDelayMs * 2 ** k`. */
  baseDelayMs: number;
  /** Upper bound of the exponential cap. */
  maxDelayMs: number;
  /** Decides whether an error is worth another attempt; anything else is rethrown at once. */
  isRetryable: (err: unknown) => boolean;
  /** Upper bound applied to a server's `retry-after` hint (default 60,000 ms). */
  maxRetryAfterMs?: number;
  /** Injectable for tests (default: a real timer). */
  sleep?: (ms: number) => Promise<void>;
  /** Injectable for tests (default: `Math.random`), must return a value in [0, 1). */
  random?: () => number;
  /** Called before each sleep, e.g. to log. */
  onRetry?: (info: RetryInfo) => void;
}

/** What {@link RetryOptions.onRetry} is told before a retry. */
export interface RetryInfo {
  /** The retry about to happen, 1-based. */
  attempt: number;
  /** The delay about to be slept. */
  delayMs: number;
  /** Whether the delay came from a `retry-after` hint. */
  fromRetryAfter: boolean;
  /** The error that caused the retry. */
  error: unknown;
}

const defaultSleep = (ms: number): Promise<void> =>
  new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Runs `fn` and retries it on retryable errors with exponential backoff and full jitter
 * (`delay = random() * min(maxDelayMs, baseDelayMs * 2 ** retryIndex)`), which spreads out clients that failed
 * together. A `retry-after` / `retry-after-ms` hint carried by the error (openai `APIError.headers`) replaces the
 * jittered delay. The last error is rethrown unchanged when retries are exhausted or the error is not retryable.
 * @throws whatever `fn` threw last; {@link ValidationError} for invalid options.
 * @example
 * const res = await withRetry(() => client.embeddings.create(req), {
 *   maxRetries: 5, baseDelayMs: 500, maxDelayMs: 20_000, isRetryable: isTransientOpenAIError, // openai-errors.ts
 * });
 */
export async function withRetry<T>(
  fn: (attempt: number) => Promise<T>,
  options: RetryOptions,
): Promise<T> {
  const { maxRetries, baseDelayMs, maxDelayMs, isRetryable } = options;
  if (!Number.isInteger(maxRetries) || maxRetries < 0) {
    throw new ValidationError(
      `maxRetries must be a non-negative integer, got ${String(maxRetries)}`,
    );
  }
  if (!(baseDelayMs >= 0) || !(maxDelayMs >= 0)) {
    throw new ValidationError('baseDelayMs and maxDelayMs must be non-negative numbers');
  }
  const sleep = options.sleep ?? defaultSleep;
  const random = options.random ?? Math.random;
  const maxRetryAfterMs = options.maxRetryAfterMs ?? 60_000;
  for (let attempt = 0; ; attempt++) {
    try {
      return await fn(attempt);
    } catch (error) {
      if (attempt >= maxRetries || !isRetryable(error)) throw error;
      const hint = retryAfterMs(error);
      const delayMs =
        hint === undefined
          ? random() * Math.min(maxDelayMs, baseDelayMs * 2 ** attempt)
          : Math.min(hint, maxRetryAfterMs);
      options.onRetry?.({
        attempt: attempt + 1,
        delayMs,
        fromRetryAfter: hint !== undefined,
        error,
      });
      await sleep(delayMs);
    }
  }
}

function headerValue(headers: unknown, name: string): string | undefined {
  if (headers === null || typeof headers !== 'object') return undefined;
  if (typeof (headers as Headers).get === 'function') {
    return (headers as Headers).get(name) ?? undefined;
  }
  const value = (headers as Record<string, unknown>)[name];
  return typeof value === 'string' ? value : undefined;
}

/**
 * Reads a server's retry hint from an error's `headers` (a `Headers` object as in openai's `APIError`, or a
 * plain lowercase record): `retry-after-ms`, else `retry-after` in seconds or as an HTTP date. Returns undefined
 * when there is no usable, non-negative hint.
 * @example retryAfterMs({ headers: { 'retry-after': '2' } }) // 2000
 */
export function retryAfterMs(err: unknown, now: number = Date.now()): number | undefined {
  if (err === null || typeof err !== 'object') return undefined;
  const headers = (err as { headers?: unknown }).headers;
  const ms = headerValue(headers, 'retry-after-ms');
  if (ms !== undefined && ms.trim() !== '') {
    const value = Number(ms);
    if (Number.isFinite(value) && value >= 0) return value;
  }
  const after = headerValue(headers, 'retry-after');
  if (after === undefined || after.trim() === '') return undefined;
  const seconds = Number(after);
  if (Number.isFinite(seconds)) return seconds >= 0 ? seconds * 1000 : undefined;
  const date = Date.parse(after);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}
