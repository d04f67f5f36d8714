/** The `fetch` signature the openai SDK accepts as its `fetch` option. */
export type FetchLike = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Rewrites a non-OpenAI error body into OpenAI's `{ "error": { "message", "type", "param", "code" } }` envelope,
 * or returns undefined when the body already has it or carries no message. Handled shapes:
 * - TEI's `/v1/embeddings`: `{ "message", "code", "type" }` (e.g. 413 `batch size 33 > maximum allowed batch
 *   size 32`, or `Input validation error: \`inputs\` must have less than 512 tokens. Given: 600`);
 * - vLLM up to 0.9: `{ "object": "error", "message", "type", "param", "code" }`;
 * - TEI's native routes: `{ "error": "<message>", "error_type" }`;
 * - a FastAPI-style `{ "detail": "<message>" }`.
 *
 * The openai SDK reads only `body.error`, so without this their message is lost (`413 status code (no body)`),
 * and neither the context-length nor the batch-size refusal can be recognised.
 */
export function toOpenAIErrorEnvelope(text: string): string | undefined {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!isObject(body) || isObject(body.error)) return undefined;
  const message =
    typeof body.message === 'string'
      ? body.message
      : typeof body.error === 'string'
        ? body.error
        : typeof body.detail === 'string'
          ? body.detail
          : undefined;
  if (message === undefined) return undefined;
  const type =
    typeof body.type === 'string'
      ? body.type
      : typeof body.error_type === 'string'
        ? body.error_type
        : null;
  return JSON.stringify({
    error: { message, type, param: body.param ?? null, code: body.code ?? null },
  });
}

/**
 * Wraps `fetch` for the openai SDK so that error answers (status ≥ 400) of servers that do not use OpenAI's
 * error envelope keep their message (see {@link toOpenAIErrorEnvelope}). Successful answers, streams included,
 * pass through untouched; headers (`retry-after`) are kept.
 * @example
 * const client = new OpenAI({ baseURL, apiKey, fetch: withOpenAIErrorEnvelope() });
 */
export function withOpenAIErrorEnvelope(
  fetchImpl: FetchLike = (input, init) => globalThis.fetch(input, init),
): FetchLike {
  return async (input, init) => {
    const response = await fetchImpl(input, init);
    if (response.status < 400) return response;
    const text = await response.text();
    const headers = new Headers(response.headers);
    // The body is re-encoded: its old length and encoding no longer apply.
    headers.delete('content-length');
    headers.delete('content-encoding');
    return new Response(toOpenAIErrorEnvelope(text) ?? text, {
      status: response.status,
      statusText: response.statusText,
      headers,
    });
  };
}
