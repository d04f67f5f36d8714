import { APIConnectionError, APIError, APIUserAbortError } from 'openai';

/**
 * One line describing a failed OpenAI-compatible call, for wrapping errors: the HTTP status (or "no response")
 * and the provider's message.
 */
export function describeApiError(err: unknown): string {
  if (err instanceof APIError) {
    const status = err.status === undefined ? 'no response' : `status ${err.status}`;
    return `${status}: ${err.message}`;
  }
  return err instanceof Error ? err.message : String(err);
}

/**
 * True for failures that may succeed on a later attempt: rate limiting (429), request timeout (408), server
 * errors (status >= 500), and connection errors or timeouts. False for client errors (400, 401, 403, 404, 422,
 * ...), a caller's abort, and anything that is not an openai `APIError`: retrying those only wastes time.
 * @example isTransientOpenAIError(new RateLimitError(429, undefined, 'slow down', new Headers())) // true
 */
export function isTransientOpenAIError(err: unknown): boolean {
  if (!(err instanceof APIError)) return false;
  if (err instanceof APIUserAbortError) return false;
  if (err instanceof APIConnectionError) return true;
  const status = err.status;
  if (typeof status !== 'number') return false;
  return status === 408 || status === 429 || status >= 500;
}
