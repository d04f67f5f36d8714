import OpenAI, { APIUserAbortError } from 'openai';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { ValidationError } from '../errors.js';
import { describeApiError, isTransientOpenAIError } from '../util/openai-errors.js';
import type { OpenAIConnectionOptions } from '../util/openai-options.js';
import { positiveInteger } from '../util/options.js';
import { withRetry } from '../util/retry.js';
import { GenerationError } from './errors.js';
import type { ChatMessage, ChatOptions, ChatResult, ChatUsage, FoundationModel } from './types.js';

/** Options of {@link OpenAIFoundationModel}. */
export interface OpenAIFoundationModelOptions extends OpenAIConnectionOptions {
  /** Default `max_completion_tokens` (ai4rag default 1024). */
  maxCompletionTokens?: number;
  /** Default temperature, 0..2 (ai4rag default 0.1). */
  temperature?: number;
}

function checkTemperature(value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isFinite(value) || value < 0 || value > 2) {
    throw new ValidationError(`temperature must be a number in [0, 2], got ${String(value)}`);
  }
  return value;
}

function toChatUsage(usage: OpenAI.CompletionUsage): ChatUsage {
  return {
    promptTokens: usage.prompt_tokens,
    completionTokens: usage.completion_tokens,
    totalTokens: usage.total_tokens,
  };
}

const defaultSleep = (ms: number): Promise<void> =>
  new Promise((resolve) => setTimeout(resolve, ms));

/** `sleep(ms)`, cut short by `signal` (rejecting with its reason). */
function abortableSleep(
  sleep: (ms: number) => Promise<void>,
  ms: number,
  signal: AbortSignal,
): Promise<void> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<void>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    sleep(ms).then(
      () => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

/**
 * A foundation model behind any OpenAI-compatible chat-completions endpoint, like ai4rag's `OpenAIFoundationModel`.
 * The SDK's own retries are off: transient failures (429, 408, 5xx, connection errors, timeouts) are retried here
 * with jittered backoff and `retry-after` hints, client errors (400, 401, ...) fail at once.
 * @example
 * const model = new OpenAIFoundationModel({ baseURL: 'http://localhost:8000/v1', apiKey: 'k', model: 'llama' });
 * const { content } = await model.chat(buildMessages(DEFAULT_TEMPLATES, question, chunks));
 */
export class OpenAIFoundationModel implements FoundationModel {
  readonly modelId: string;
  readonly #client: OpenAI;
  readonly #maxCompletionTokens: number;
  readonly #temperature: number;
  readonly #retry: {
    maxRetries: number;
    baseDelayMs: number;
    maxDelayMs: number;
    sleep?: (ms: number) => Promise<void>;
    random?: () => number;
  };

  /** @throws {ValidationError} for an empty model id or out-of-range options. */
  constructor(options: OpenAIFoundationModelOptions) {
    if (typeof options.model !== 'string' || options.model.trim() === '') {
      throw new ValidationError('model must be a non-empty string');
    }
    this.modelId = options.model;
    this.#maxCompletionTokens = positiveInteger(
      options.maxCompletionTokens,
      'maxCompletionTokens',
      1024,
    );
    this.#temperature = checkTemperature(options.temperature, 0.1);
    const maxRetries = options.maxRetries ?? 5;
    if (!Number.isInteger(maxRetries) || maxRetries < 0) {
      throw new ValidationError(
        `maxRetries must be a non-negative integer, got ${String(maxRetries)}`,
      );
    }
    this.#retry = {
      maxRetries,
      baseDelayMs: options.baseDelayMs ?? 500,
      maxDelayMs: options.maxDelayMs ?? 20_000,
      ...(options.sleep ? { sleep: options.sleep } : {}),
      ...(options.random ? { random: options.random } : {}),
    };
    this.#client =
      options.client ??
      new OpenAI({
        baseURL: options.baseURL,
        apiKey: options.apiKey,
        maxRetries: 0,
        timeout: positiveInteger(options.timeoutMs, 'timeoutMs', 120_000),
      });
  }

  #params(messages: ChatMessage[], options: ChatOptions) {
    return {
      model: this.modelId,
      messages: messages.map((m) => ({
        role: m.role,
        content: m.content,
      })) as ChatCompletionMessageParam[],
      max_completion_tokens: positiveInteger(
        options.maxCompletionTokens,
        'maxCompletionTokens',
        this.#maxCompletionTokens,
      ),
      temperature: checkTemperature(options.temperature, this.#temperature),
    };
  }

  #retrying<T>(fn: () => Promise<T>, signal: AbortSignal | undefined): Promise<T> {
    const sleep = this.#retry.sleep ?? defaultSleep;
    return withRetry(
      () => {
        signal?.throwIfAborted();
        return fn();
      },
      {
        ...this.#retry,
        isRetryable: isTransientOpenAIError,
        // A caller's deadline (its signal) also ends a backoff wait: a retry that cannot fit is never waited for.
        ...(signal && { sleep: (ms: number) => abortableSleep(sleep, ms, signal) }),
      },
    );
  }

  #wrap(err: unknown, signal: AbortSignal | undefined): unknown {
    if (signal?.aborted || err instanceof APIUserAbortError) return err;
    if (err instanceof ValidationError) return err;
    return new GenerationError(
      `Foundation model "${this.modelId}" failed (${describeApiError(err)})`,
      {
        cause: err,
      },
    );
  }

  /**
   * Sends one chat completion (`max_completion_tokens`, `temperature`).
   * @throws {ValidationError} for bad per-call options; {@link GenerationError} on a non-transient provider error,
   * exhausted retries or an empty answer; the abort error when `signal` fires.
   */
  async chat(messages: ChatMessage[], options: ChatOptions = {}): Promise<ChatResult> {
    const params = this.#params(messages, options);
    const signal = options.signal;
    let response: OpenAI.Chat.Completions.ChatCompletion;
    try {
      response = await this.#retrying(
        () =>
          this.#client.chat.completions.create(
            { ...params, stream: false },
            signal ? { signal } : {},
          ),
        signal,
      );
    } catch (err) {
      throw this.#wrap(err, signal);
    }
    const content = response?.choices?.[0]?.message?.content;
    if (typeof content !== 'string') {
      throw new GenerationError(`Foundation model "${this.modelId}" returned no message content`);
    }
    const usage = response.usage;
    return { content, ...(usage && { usage: toChatUsage(usage) }) };
  }

  /**
   * Streams one chat completion (`stream: true`), yielding the non-empty content deltas. Opening the stream is
   * retried like {@link chat}; a failure after the first delta is not (the partial answer cannot be replayed).
   * Asks for the tokens with `stream_options: { include_usage: true }` (the final chunk, `choices: []`, carries
   * them; with vLLM's `continuous_usage_stats` every chunk does and the last one counts) and hands them to
   * `options.onUsage` after the last delta; a server that sends none leaves it uncalled.
   * @throws {ValidationError} for bad per-call options; {@link GenerationError} on a provider error; the abort error
   * when `signal` fires.
   */
  async *chatStream(messages: ChatMessage[], options: ChatOptions = {}): AsyncIterable<string> {
    const params = this.#params(messages, options);
    const signal = options.signal;
    try {
      const stream = await this.#retrying(
        () =>
          this.#client.chat.completions.create(
            { ...params, stream: true, stream_options: { include_usage: true } },
            signal ? { signal } : {},
          ),
        signal,
      );
      let usage: OpenAI.CompletionUsage | undefined;
      for await (const chunk of stream) {
        if (chunk.usage) usage = chunk.usage;
        const delta = chunk.choices?.[0]?.delta?.content;
        if (typeof delta === 'string' && delta.length > 0) yield delta;
      }
      if (usage) options.onUsage?.(toChatUsage(usage));
    } catch (err) {
      throw this.#wrap(err, signal);
    }
  }
}
