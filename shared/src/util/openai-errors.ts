import { APIError } from 'openai';

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
