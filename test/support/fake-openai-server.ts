import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { featureHashVector } from '../../shared/src/embeddings/feature-hash.js';

/** One request the fake received, in arrival order (failed ones included). */
export interface RecordedRequest {
  method: string;
  /** Path without the query string, e.g. `/v1/embeddings`. */
  path: string;
  headers: Record<string, string | string[] | undefined>;
  /** Parsed JSON body, or undefined when there was none / it was not JSON. */
  body: unknown;
  /** The HTTP status the fake answered with. */
  status?: number;
}

/**
 * Which real server the fake imitates (response shapes, error bodies, limits). Each is modelled on the server's
 * source:
 * - `openai`: the OpenAI API: honours `encoding_format` (base64 when asked) and `dimensions`; errors
 *   `{ error: { message, type, param, code } }`; a too-long input is a 400 `context_length_exceeded`.
 * - `ollama`: Ollama's `/v1` (openai/openai.go `ToEmbeddingList`) as released before it learnt `encoding_format`
 *   and `dimensions` (and LM Studio, which ignores `encoding_format` too): always float arrays of the model's
 *   own length; `{ object: "list", data: [{ object: "embedding", embedding, index }], model, usage:
 *   { prompt_tokens, total_tokens } }`; long inputs are truncated silently (its default); chat answers carry
 *   `system_fingerprint: "fp_ollama"` and no `logprobs`.
 * - `vllm`: vLLM's OpenAI server (entrypoints/pooling/embed/protocol.py): `id: "embd-…"`, `created`, usage with
 *   `completion_tokens: 0` and `prompt_tokens_details: null`; honours `encoding_format` and `dimensions`; errors
 *   in vLLM ≤ 0.9's top-level shape `{ object: "error", message, type, param, code }`, a too-long input being a
 *   400 "This model's maximum context length is N tokens. However, you requested M tokens in the input for
 *   embedding generation. …"; chat chunks carry `stop_reason`, the last content chunk the `finish_reason`,
 *   `stream_options.continuous_usage_stats` puts usage on every chunk and `include_usage` adds a final
 *   `choices: []` usage chunk.
 * - `tei`: Text Embeddings Inference's `/v1/embeddings` (router/src/http/server.rs `openai_embed`): float or
 *   base64, `model` is the served model whatever was asked, at most 32 inputs (`--max-client-batch-size`)
 *   else 413 `batch size 33 > maximum allowed batch size 32`, a too-long input a 413 "Input validation error:
 *   `inputs` must have less than N tokens. Given: M"; errors `{ message, code, type }` with no `error` envelope
 *   (which the openai SDK cannot read); no chat and no `/v1/models` routes (404, empty body).
 */
export type FakeFlavor = 'openai' | 'ollama' | 'vllm' | 'tei';

/**
 * A corruption of embedding answers from one request on (fault injection for the client's validation).
 * - `short`: the vector is cut to `length` values (default a quarter: what a float array misread as base64
 *   gives);
 * - `nan`: its first value is NaN, which JSON carries as `null` (as TEI's serde and vLLM's orjson write it; a
 *   base64 answer carries a real NaN float32);
 * - `string`: its first value is sent as a string, e.g. `"0.25"`;
 * - `garbage`: the embedding is a string that is not base64 at all;
 * - `drop`: the item is missing from `data` (one vector fewer than inputs).
 */
export interface FakeCorruption {
  kind: 'short' | 'nan' | 'string' | 'garbage' | 'drop';
  /** 1-based ordinal of the first embeddings request corrupted; every later one is too (default 1). */
  fromRequest?: number;
  /** Which input of a request is corrupted (default 0; past the end means the request's last). */
  input?: number;
  /** Vector length for `short`. */
  length?: number;
}

/** Options of {@link startFakeOpenAI}. */
export interface FakeOpenAIOptions {
  /** Server imitated (default `openai`, the behaviour of the fake before flavors existed). */
  flavor?: FakeFlavor;
  /** Vector length when the request has no `dimensions` or the flavor ignores it (default 16). */
  dimension?: number;
  /**
   * Encoding of answered embeddings: as requested (`encoding_format`, float by default), or always float, or
   * always base64 float32 whatever was asked. Default: `float` for `ollama`, `requested` for the others.
   */
  responseEncoding?: 'requested' | 'float' | 'base64';
  /** Most inputs per embeddings request (default 32 for `tei`, unlimited for the others). */
  maxBatchSize?: number;
  /** The model id TEI reports in its answers (default `BAAI/bge-small-en-v1.5`). */
  servedModel?: string;
  /** Corrupts embedding answers (see {@link FakeCorruption}); change it later with `setCorrupt`. */
  corrupt?: FakeCorruption;
  /** Delay before each answer, so concurrent requests overlap (default 0). */
  latencyMs?: number;
  /** Inputs longer than this many tokens (ceil(chars / 4)) are refused as the flavor does (Ollama truncates). */
  maxContextTokens?: number;
  /** Chat answer for the last user message (default: `echo: <message>`). */
  chatResponder?: (lastUserMessage: string, body: Record<string, unknown>) => string;
  /** Model ids listed by `/v1/models`. */
  models?: string[];
  /**
   * Called for every embeddings request before it is answered, with its 1-based ordinal (fault injection: the
   * chaos suite kills the client here, while it waits on the answer).
   */
  onEmbeddingRequest?: (ordinal: number) => void | Promise<void>;
  /** Called once an embeddings answer was written (the client goes on to store the vectors). */
  afterEmbeddingResponse?: (ordinal: number) => void;
}

/** A running fake OpenAI-compatible server (see {@link startFakeOpenAI}). */
export interface FakeOpenAI {
  /** `http://127.0.0.1:PORT/v1`. */
  baseURL: string;
  readonly flavor: FakeFlavor;
  requests: RecordedRequest[];
  /** Embeddings requests received so far (the ordinal of the last one). */
  readonly embeddingRequests: number;
  /** Most requests ever handled at once. */
  readonly maxInFlight: number;
  close(): Promise<void>;
  /** The next `count` requests (any route) answer `status` with the flavor's error body. */
  failNext(status: number, count: number, opts?: { retryAfterSeconds?: number }): void;
  /** Sets (or clears, when undefined) the embeddings context limit. */
  setMaxContextTokens(n?: number): void;
  /** Sets (or clears, when undefined) the corruption of embedding answers. */
  setCorrupt(corruption?: FakeCorruption): void;
}

function errorType(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 429) return 'rate_limit_exceeded';
  if (status >= 500) return 'server_error';
  return 'invalid_request_error';
}

function vllmErrorType(status: number): string {
  if (status === 400) return 'BadRequestError';
  if (status === 401) return 'Unauthorized';
  if (status === 404) return 'NotFoundError';
  if (status === 429) return 'TooManyRequests';
  if (status >= 500) return 'InternalServerError';
  return 'Error';
}

function teiErrorType(status: number): string {
  if (status === 413) return 'validation';
  if (status === 422) return 'tokenizer';
  if (status === 429) return 'overloaded';
  if (status === 503) return 'unhealthy';
  return 'backend';
}

/** An error body as the flavor's server writes it. */
function errorBody(
  flavor: FakeFlavor,
  status: number,
  message: string,
  code: string | null = null,
): string {
  switch (flavor) {
    case 'vllm':
      return JSON.stringify({
        object: 'error',
        message,
        type: vllmErrorType(status),
        param: null,
        code: status,
      });
    case 'tei':
      return JSON.stringify({ message, code: status, type: teiErrorType(status) });
    case 'ollama': {
      const type =
        status === 400 ? 'invalid_request_error' : status === 404 ? 'not_found_error' : 'api_error';
      return JSON.stringify({ error: { message, type, param: null, code: null } });
    }
    default:
      return JSON.stringify({ error: { message, type: errorType(status), param: null, code } });
  }
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    req.on('data', (chunk: Buffer) => parts.push(chunk));
    req.on('end', () => resolve(Buffer.concat(parts).toString('utf8')));
    req.on('error', reject);
  });
}

function messageText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((part) =>
        part && typeof part === 'object' && typeof (part as { text?: unknown }).text === 'string'
          ? (part as { text: string }).text
          : '',
      )
      .join('');
  }
  return '';
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

const toBase64 = (vector: number[]): string =>
  Buffer.from(new Float32Array(vector).buffer).toString('base64');

/**
 * Starts a small OpenAI-compatible HTTP server on 127.0.0.1 (random port) for tests through the real `openai`
 * SDK: `/v1/embeddings` (deterministic feature-hash vectors, float or base64 float32), `/v1/chat/completions`
 * (JSON and SSE streaming, echo answers), `/v1/models`; imitates OpenAI, Ollama, vLLM or TEI
 * ({@link FakeFlavor}); injectable failures, corrupted vectors and a context-length limit.
 * @example
 * const fake = await startFakeOpenAI({ flavor: 'ollama', dimension: 64 });
 * const client = new OpenAI({ baseURL: fake.baseURL, apiKey: 'test', maxRetries: 0 });
 * await fake.close();
 */
export async function startFakeOpenAI(options: FakeOpenAIOptions = {}): Promise<FakeOpenAI> {
  const flavor = options.flavor ?? 'openai';
  const defaultDimension = options.dimension ?? 16;
  const latencyMs = options.latencyMs ?? 0;
  const models = options.models ?? ['fake-embedding', 'fake-chat'];
  const encoding = options.responseEncoding ?? (flavor === 'ollama' ? 'float' : 'requested');
  const maxBatchSize = options.maxBatchSize ?? (flavor === 'tei' ? 32 : undefined);
  const servedModel = options.servedModel ?? 'BAAI/bge-small-en-v1.5';
  const requests: RecordedRequest[] = [];
  let maxContextTokens = options.maxContextTokens;
  let corrupt = options.corrupt;
  let failures: { status: number; remaining: number; retryAfterSeconds?: number } | undefined;
  let inFlight = 0;
  let maxInFlight = 0;
  let embeddingOrdinal = 0;

  const json = (res: ServerResponse, record: RecordedRequest, status: number, body: string) => {
    record.status = status;
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(body);
  };
  const fail = (
    res: ServerResponse,
    record: RecordedRequest,
    status: number,
    message: string,
    code: string | null = null,
  ) => json(res, record, status, errorBody(flavor, status, message, code));

  /** The answered `embedding` of one input, corrupted when asked. */
  const embeddingOf = (vector: number[], base64: boolean, corrupted: boolean): unknown => {
    if (!corrupted || corrupt === undefined) return base64 ? toBase64(vector) : vector;
    switch (corrupt.kind) {
      case 'short': {
        const short = vector.slice(0, corrupt.length ?? Math.max(1, Math.floor(vector.length / 4)));
        return base64 ? toBase64(short) : short;
      }
      case 'nan': {
        const withNaN = [Number.NaN, ...vector.slice(1)];
        return base64 ? toBase64(withNaN) : withNaN; // JSON.stringify writes NaN as null
      }
      case 'string':
        return [String(vector[0]), ...vector.slice(1)];
      case 'garbage':
        return 'not a vector!';
      default:
        return base64 ? toBase64(vector) : vector;
    }
  };

  const embeddings = (
    res: ServerResponse,
    record: RecordedRequest,
    body: Record<string, unknown>,
    ordinal: number,
  ) => {
    const rawInput = body.input;
    const inputs = typeof rawInput === 'string' ? [rawInput] : rawInput;
    if (
      !Array.isArray(inputs) ||
      inputs.length === 0 ||
      inputs.some((x) => typeof x !== 'string')
    ) {
      fail(res, record, 400, "'input' must be a string or a non-empty array of strings");
      return;
    }
    if (maxBatchSize !== undefined && inputs.length > maxBatchSize) {
      const message = `batch size ${inputs.length} > maximum allowed batch size ${maxBatchSize}`;
      fail(res, record, flavor === 'tei' ? 413 : 400, message);
      return;
    }
    const dimension =
      flavor !== 'ollama' && typeof body.dimensions === 'number'
        ? body.dimensions
        : defaultDimension;
    const base64 =
      encoding === 'base64' || (encoding === 'requested' && body.encoding_format === 'base64');
    const corrupted = corrupt !== undefined && ordinal >= (corrupt.fromRequest ?? 1);
    const target = Math.min(corrupt?.input ?? 0, inputs.length - 1);
    let totalTokens = 0;
    const data: Record<string, unknown>[] = [];
    for (const [index, input] of (inputs as string[]).entries()) {
      let text = input;
      const tokens = Math.ceil(text.length / 4);
      if (maxContextTokens !== undefined && tokens > maxContextTokens) {
        if (flavor === 'ollama') {
          text = text.slice(0, maxContextTokens * 4);
        } else if (flavor === 'vllm') {
          fail(
            res,
            record,
            400,
            `This model's maximum context length is ${maxContextTokens} tokens. However, you requested ${tokens} tokens in the input for embedding generation. Please reduce the length of the input.`,
          );
          return;
        } else if (flavor === 'tei') {
          fail(
            res,
            record,
            413,
            `Input validation error: \`inputs\` must have less than ${maxContextTokens} tokens. Given: ${tokens}`,
          );
          return;
        } else {
          const message = `This model's maximum context length is ${maxContextTokens} tokens, however you requested ${tokens} tokens in input ${index}.`;
          fail(res, record, 400, message, 'context_length_exceeded');
          return;
        }
      }
      totalTokens += Math.ceil(text.length / 4);
      if (corrupted && index === target && corrupt?.kind === 'drop') continue;
      const embedding = embeddingOf(
        featureHashVector(text, dimension),
        base64,
        corrupted && index === target,
      );
      data.push(
        flavor === 'vllm'
          ? { index, object: 'embedding', embedding }
          : flavor === 'openai'
            ? { object: 'embedding', index, embedding }
            : { object: 'embedding', embedding, index },
      );
    }
    const usage = { prompt_tokens: totalTokens, total_tokens: totalTokens };
    const answer =
      flavor === 'vllm'
        ? {
            id: `embd-fake-${ordinal}`,
            object: 'list',
            created: 1_700_000_000,
            model: body.model,
            data,
            usage: { ...usage, completion_tokens: 0, prompt_tokens_details: null },
          }
        : {
            object: 'list',
            data,
            model: flavor === 'tei' ? servedModel : body.model,
            usage,
          };
    json(res, record, 200, JSON.stringify(answer));
  };

  const chat = (res: ServerResponse, record: RecordedRequest, body: Record<string, unknown>) => {
    const messages = Array.isArray(body.messages)
      ? (body.messages as Array<Record<string, unknown>>)
      : [];
    const lastUser = [...messages].reverse().find((m) => m.role === 'user');
    const question = messageText(lastUser?.content);
    const answer = options.chatResponder
      ? options.chatResponder(question, body)
      : `echo: ${question}`;
    const model = typeof body.model === 'string' ? body.model : 'fake-chat';
    const id = `chatcmpl-fake-${requests.length}`;
    const created = 1_700_000_000;
    const promptTokens = Math.ceil(
      messages.reduce((n, m) => n + messageText(m.content).length, 0) / 4,
    );
    const completionTokens = Math.ceil(answer.length / 4);
    const usage = {
      prompt_tokens: promptTokens,
      completion_tokens: completionTokens,
      total_tokens: promptTokens + completionTokens,
      ...(flavor === 'vllm' ? { prompt_tokens_details: null } : {}),
    };
    const head = {
      id,
      object: 'chat.completion',
      created,
      model,
      ...(flavor === 'ollama' ? { system_fingerprint: 'fp_ollama' } : {}),
    };
    if (body.stream !== true) {
      const choice =
        flavor === 'ollama'
          ? { index: 0, message: { role: 'assistant', content: answer }, finish_reason: 'stop' }
          : flavor === 'vllm'
            ? {
                index: 0,
                message: {
                  role: 'assistant',
                  content: answer,
                  refusal: null,
                  tool_calls: [],
                  reasoning_content: null,
                },
                logprobs: null,
                finish_reason: 'stop',
                stop_reason: null,
              }
            : {
                index: 0,
                message: { role: 'assistant', content: answer, refusal: null },
                logprobs: null,
                finish_reason: 'stop',
              };
      json(
        res,
        record,
        200,
        JSON.stringify({
          ...head,
          choices: [choice],
          usage,
          ...(flavor === 'vllm' ? { prompt_logprobs: null } : {}),
        }),
      );
      return;
    }
    record.status = 200;
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const streamOptions = body.stream_options as
      | { include_usage?: boolean; continuous_usage_stats?: boolean }
      | undefined;
    const continuous = flavor === 'vllm' && streamOptions?.continuous_usage_stats === true;
    const chunkHead = { ...head, object: 'chat.completion.chunk' };
    const chunk = (delta: Record<string, unknown>, finish: string | null) => {
      const choice =
        flavor === 'ollama'
          ? { index: 0, delta: { role: 'assistant', ...delta }, finish_reason: finish }
          : flavor === 'vllm'
            ? { index: 0, delta, logprobs: null, finish_reason: finish, stop_reason: null }
            : { index: 0, delta, logprobs: null, finish_reason: finish };
      return `data: ${JSON.stringify({
        ...chunkHead,
        choices: [choice],
        ...(continuous ? { usage } : {}),
      })}\n\n`;
    };
    const pieces = answer.match(/\S+\s*|\s+/g) ?? [];
    if (flavor === 'vllm') {
      // vLLM: a role chunk, then the content; the last content chunk carries the finish reason.
      res.write(chunk({ role: 'assistant', content: '' }, null));
      if (pieces.length === 0) res.write(chunk({ content: '' }, 'stop'));
      pieces.forEach((piece, i) => {
        res.write(chunk({ content: piece }, i === pieces.length - 1 ? 'stop' : null));
      });
    } else {
      if (flavor === 'openai') res.write(chunk({ role: 'assistant', content: '' }, null));
      for (const piece of pieces) res.write(chunk({ content: piece }, null));
      res.write(chunk(flavor === 'ollama' ? { content: '' } : {}, 'stop'));
    }
    if (streamOptions?.include_usage) {
      res.write(`data: ${JSON.stringify({ ...chunkHead, choices: [], usage })}\n\n`);
    }
    res.end('data: [DONE]\n\n');
  };

  const server = createServer((req, res) => {
    const record: RecordedRequest = {
      method: req.method ?? 'GET',
      path: (req.url ?? '/').split('?')[0] ?? '/',
      headers: req.headers,
      body: undefined,
    };
    requests.push(record);
    inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    res.on('close', () => {
      inFlight--;
    });
    void (async () => {
      const raw = await readBody(req);
      if (raw.length > 0) {
        try {
          record.body = JSON.parse(raw);
        } catch {
          record.body = undefined;
        }
      }
      if (latencyMs > 0) await sleep(latencyMs);
      const isEmbedding = record.method === 'POST' && record.path === '/v1/embeddings';
      const ordinal = isEmbedding ? ++embeddingOrdinal : 0;
      if (isEmbedding) await options.onEmbeddingRequest?.(ordinal);
      if (failures && failures.remaining > 0) {
        failures.remaining--;
        const { status, retryAfterSeconds } = failures;
        record.status = status;
        res.writeHead(status, {
          'content-type': 'application/json',
          ...(retryAfterSeconds === undefined ? {} : { 'retry-after': String(retryAfterSeconds) }),
        });
        res.end(errorBody(flavor, status, `injected failure ${status}`));
        return;
      }
      const body = (record.body ?? {}) as Record<string, unknown>;
      if (isEmbedding) {
        embeddings(res, record, body, ordinal);
        options.afterEmbeddingResponse?.(ordinal);
      } else if (flavor === 'tei') {
        // TEI serves no chat and no model list: axum's bare 404.
        record.status = 404;
        res.writeHead(404);
        res.end();
      } else if (record.method === 'POST' && record.path === '/v1/chat/completions')
        chat(res, record, body);
      else if (record.method === 'GET' && record.path === '/v1/models') {
        json(
          res,
          record,
          200,
          JSON.stringify({
            object: 'list',
            data: models.map((id) => ({
              id,
              object: 'model',
              created: 1_700_000_000,
              owned_by: 'fake',
            })),
          }),
        );
      } else {
        fail(res, record, 404, `Unknown route ${record.method} ${record.path}`, 'not_found');
      }
    })().catch((err: unknown) => {
      if (!res.headersSent) fail(res, record, 500, String(err));
      else res.destroy();
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;

  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    flavor,
    requests,
    get embeddingRequests() {
      return embeddingOrdinal;
    },
    get maxInFlight() {
      return maxInFlight;
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((err) => (err ? reject(err) : resolve()));
      }),
    failNext(status, count, opts = {}) {
      failures = {
        status,
        remaining: count,
        ...(opts.retryAfterSeconds === undefined
          ? {}
          : { retryAfterSeconds: opts.retryAfterSeconds }),
      };
    },
    setMaxContextTokens(n) {
      maxContextTokens = n;
    },
    setCorrupt(corruption) {
      corrupt = corruption;
    },
  };
}
