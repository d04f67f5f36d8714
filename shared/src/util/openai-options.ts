import type OpenAI from 'openai';

/**
 * Connection and retry options shared by the OpenAI-compatible clients (embedder and chat model); each adds its
 * own model options and documents its own defaults.
 */
export interface OpenAIConnectionOptions {
  /** OpenAI-compatible API root, e.g. `https://api.openai.com/v1` or a vLLM / Ollama `/v1` URL. */
  baseURL: string;
  apiKey: string;
  /** Model id sent verbatim (also the client's `modelId`). */
  model: string;
  /** Retries of a transient failure (429, 408, 5xx, connection, timeout) per request (default 5). */
  maxRetries?: number;
  /** Per-request timeout in ms (embedder default 60,000; chat model 120,000). */
  timeoutMs?: number;
  /** Backoff base and cap (defaults 500 ms and 20,000 ms). */
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** A ready client; when given it wins over baseURL / apiKey / timeoutMs (give it `maxRetries: 0`). */
  client?: OpenAI;
  /** Test hooks for the backoff. */
  sleep?: (ms: number) => Promise<void>;
  random?: () => number;
}
