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

/** Options of {@link startFakeOpenAI}. */
export interface FakeOpenAIOptions {
  /** Vector length when the request has no `dimensions` (default 16). */
  dimension?: number;
  /** Delay before each answer, so concurrent requests overlap (default 0). */
  latencyMs?: number;
  /** Inputs longer than this many tokens (ceil(chars / 4)) get a context-length 400. */
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
  requests: RecordedRequest[];
  /** Most requests ever handled at once. */
  readonly maxInFlight: number;
  close(): Promise<void>;
  /** The next `count` requests (any route) answer `status` with an OpenAI-style error body. */
  failNext(status: number, count: number, opts?: { retryAfterSeconds?: number }): void;
  /** Sets (or clears, when undefined) the embeddings context limit. */
  setMaxContextTokens(n?: number): void;
}

function errorBody(message: string, type: string, code: string | null): string {
  return JSON.stringify({ error: { message, type, param: null, code } });
}

function errorType(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 429) return 'rate_limit_exceeded';
  if (status >= 500) return 'server_error';
  return 'invalid_request_error';
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

/**
 * Starts a small OpenAI-compatible HTTP server on 127.0.0.1 (random port) for tests through the real `openai`
 * SDK: `/v1/embeddings` (deterministic feature-hash vectors, float or base64 float32), `/v1/chat/completions`
 * (JSON and SSE streaming, echo answers), `/v1/models`; injectable failures and a context-length limit.
 * @example
 * const fake = await startFakeOpenAI();
 * const client = new OpenAI({ baseURL: fake.baseURL, apiKey: 'test', maxRetries: 0 });
 * await fake.close();
 */
export async function startFakeOpenAI(options: FakeOpenAIOptions = {}): Promise<FakeOpenAI> {
  const defaultDimension = options.dimension ?? 16;
  const latencyMs = options.latencyMs ?? 0;
  const models = options.models ?? ['fake-embedding', 'fake-chat'];
  const requests: RecordedRequest[] = [];
  let maxContextTokens = options.maxContextTokens;
  let failures: { status: number; remaining: number; retryAfterSeconds?: number } | undefined;
  let inFlight = 0;
  let maxInFlight = 0;
  let embeddingOrdinal = 0;

  const json = (res: ServerResponse, record: RecordedRequest, status: number, body: string) => {
    record.status = status;
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(body);
  };

  const embeddings = (
    res: ServerResponse,
    record: RecordedRequest,
    body: Record<string, unknown>,
  ) => {
    const rawInput = body.input;
    const inputs = typeof rawInput === 'string' ? [rawInput] : rawInput;
    if (
      !Array.isArray(inputs) ||
      inputs.length === 0 ||
      inputs.some((x) => typeof x !== 'string')
    ) {
      json(
        res,
        record,
        400,
        errorBody(
          "'input' must be a string or a non-empty array of strings",
          'invalid_request_error',
          null,
        ),
      );
      return;
    }
    const dimension = typeof body.dimensions === 'number' ? body.dimensions : defaultDimension;
    const base64 = body.encoding_format === 'base64';
    let totalTokens = 0;
    const data: unknown[] = [];
    for (const [index, text] of (inputs as string[]).entries()) {
      const tokens = Math.ceil(text.length / 4);
      totalTokens += tokens;
      if (maxContextTokens !== undefined && tokens > maxContextTokens) {
        const message = `This model's maximum context length is ${maxContextTokens} tokens, however you requested ${tokens} tokens in input ${index}.`;
        json(
          res,
          record,
          400,
          errorBody(message, 'invalid_request_error', 'context_length_exceeded'),
        );
        return;
      }
      const vector = featureHashVector(text, dimension);
      const embedding = base64
        ? Buffer.from(new Float32Array(vector).buffer).toString('base64')
        : vector;
      data.push({ object: 'embedding', index, embedding });
    }
    json(
      res,
      record,
      200,
      JSON.stringify({
        object: 'list',
        data,
        model: body.model,
        usage: { prompt_tokens: totalTokens, total_tokens: totalTokens },
      }),
    );
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
    };
    if (body.stream !== true) {
      json(
        res,
        record,
        200,
        JSON.stringify({
          id,
          object: 'chat.completion',
          created,
          model,
          choices: [
            {
              index: 0,
              message: { role: 'assistant', content: answer, refusal: null },
              logprobs: null,
              finish_reason: 'stop',
            },
          ],
          usage,
        }),
      );
      return;
    }
    record.status = 200;
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const chunk = (delta: Record<string, unknown>, finish: string | null, extra = {}) =>
      `data: ${JSON.stringify({
        id,
        object: 'chat.completion.chunk',
        created,
        model,
        choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
        ...extra,
      })}\n\n`;
    res.write(chunk({ role: 'assistant', content: '' }, null));
    for (const piece of answer.match(/\S+\s*|\s+/g) ?? [])
      res.write(chunk({ content: piece }, null));
    res.write(chunk({}, 'stop'));
    const streamOptions = body.stream_options as { include_usage?: boolean } | undefined;
    if (streamOptions?.include_usage) {
      res.write(
        `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices: [], usage })}\n\n`,
      );
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
        res.end(errorBody(`injected failure ${status}`, errorType(status), null));
        return;
      }
      const body = (record.body ?? {}) as Record<string, unknown>;
      if (isEmbedding) {
        embeddings(res, record, body);
        options.afterEmbeddingResponse?.(ordinal);
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
        json(
          res,
          record,
          404,
          errorBody(
            `Unknown route ${record.method} ${record.path}`,
            'invalid_request_error',
            'not_found',
          ),
        );
      }
    })().catch((err: unknown) => {
      if (!res.headersSent) json(res, record, 500, errorBody(String(err), 'server_error', null));
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
    requests,
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
  };
}
