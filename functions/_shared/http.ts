/**
 * Middy wiring shared by the HTTP (API Gateway REST proxy) and SQS handlers: JSON bodies, one error mapping,
 * Powertools instrumentation, and partial batch failure for queues.
 */
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import { captureLambdaHandler } from '@aws-lambda-powertools/tracer/middleware';
import middy, { type MiddlewareObj } from '@middy/core';
import sqsPartialBatchFailure from '@middy/sqs-partial-batch-failure';
import type {
  APIGatewayProxyEvent,
  APIGatewayProxyResult,
  Context,
  SQSBatchResponse,
  SQSEvent,
  SQSRecord,
} from 'aws-lambda';
import { allowedMethods } from '../../shared/src/api/schemas.js';
import { ENV } from '../../shared/src/config.js';
import { NotFoundError, ValidationError } from '../../shared/src/errors.js';
import { inLambda, powertools } from './powertools.js';

/** An API Gateway REST proxy event whose JSON body (if any) the body parser has already parsed. */
export type ApiEvent = Omit<APIGatewayProxyEvent, 'body'> & { body: unknown };
/** An API Gateway REST proxy result. */
export type ApiResult = APIGatewayProxyResult;

/** A JSON response. */
export function jsonResponse(statusCode: number, body: unknown): ApiResult {
  return {
    statusCode,
    headers: { 'content-type': 'application/json; charset=utf-8' },
    body: JSON.stringify(body),
  };
}

/** The API's error body: `{ error: { code, message } }` (handlers and gateway responses alike). */
export function errorResponse(
  statusCode: number,
  code: string,
  message: string,
  headers: Record<string, string> = {},
): ApiResult {
  const result = jsonResponse(statusCode, { error: { code, message } });
  return { ...result, headers: { ...result.headers, ...headers } };
}

const CODES: Readonly<Record<number, string>> = {
  400: 'bad_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  422: 'unprocessable_entity',
};

/**
 * An error whose status, code and message the API returns as they are, 5xx included (unlike unknown errors,
 * which become a generic 500): a request out of time (504), a model the deployment cannot build (503).
 */
export class HttpError extends Error {
  readonly statusCode: number;
  readonly code: string;
  readonly headers: Readonly<Record<string, string>>;
  constructor(
    statusCode: number,
    code: string,
    message: string,
    options?: ErrorOptions & { headers?: Record<string, string> },
  ) {
    super(message, options);
    this.name = 'HttpError';
    this.statusCode = statusCode;
    this.code = code;
    this.headers = options?.headers ?? {};
  }

  toJSON(): { error: { code: string; message: string } } {
    return { error: { code: this.code, message: this.message } };
  }
}

/** The request ran out of its time budget (API Gateway cuts the connection at 29 s): HTTP 504 `timeout`. */
export class DeadlineExceededError extends HttpError {
  constructor(message: string, options?: ErrorOptions) {
    super(504, 'timeout', message, options);
    this.name = 'DeadlineExceededError';
  }
}

/**
 * Maps an error to the API's error response: ValidationError → 400, NotFoundError → 404, {@link HttpError} →
 * its own status and code (504 `timeout`, 405 with `Allow`, ...), middy's exposed HTTP errors → their status,
 * anything else → 500 without internals (logged with its cause).
 */
export function errorResult(error: unknown, log?: (error: unknown) => void): ApiResult {
  if (error instanceof HttpError) {
    return errorResponse(error.statusCode, error.code, error.message, { ...error.headers });
  }
  if (error instanceof NotFoundError) {
    return jsonResponse(404, { error: { code: 'not_found', message: error.message } });
  }
  if (error instanceof ValidationError) {
    return jsonResponse(400, { error: { code: 'validation_error', message: error.message } });
  }
  const e = error as { statusCode?: unknown; expose?: unknown; message?: unknown };
  if (typeof e?.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) {
    return jsonResponse(e.statusCode, {
      error: {
        code: CODES[e.statusCode] ?? 'client_error',
        message: typeof e.message === 'string' ? e.message : 'Client error',
      },
    });
  }
  log?.(error);
  return jsonResponse(500, { error: { code: 'internal_error', message: 'Internal server error' } });
}

const METHODS_WITH_BODY = new Set(['POST', 'PUT', 'PATCH']);
/** `application/json` and its `+json` variants, with or without parameters. */
const JSON_MEDIA_TYPE = /^application\/([a-z0-9.!#$&^_-]+\+)?json\s*(;.*)?$/i;

function headerOf(event: ApiEvent, name: string): string | undefined {
  const headers = event.headers ?? {};
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() === name && typeof value === 'string') return value;
  }
  return undefined;
}

/**
 * Parses a JSON request body. A declared content type other than JSON is 415 `unsupported_media_type`; a missing
 * one is read as JSON (curl without `-H`); an empty or malformed body is 400 `invalid_json` — the same status the
 * deployed API Gateway answers for a body that fails its request model.
 * @throws {HttpError} 415 or 400 as above.
 */
export function parseJsonBody(
  event: Pick<ApiEvent, 'headers' | 'body' | 'isBase64Encoded'>,
): unknown {
  const contentType = headerOf(event as ApiEvent, 'content-type')?.trim();
  if (contentType !== undefined && contentType !== '' && !JSON_MEDIA_TYPE.test(contentType)) {
    throw new HttpError(
      415,
      'unsupported_media_type',
      `request body must be JSON: send Content-Type: application/json (got ${JSON.stringify(contentType)})`,
    );
  }
  const raw = event.body;
  if (typeof raw !== 'string') {
    if (raw === null || raw === undefined) {
      throw new HttpError(400, 'invalid_json', 'request body is empty: a JSON object is required');
    }
    return raw;
  }
  const text = event.isBase64Encoded ? Buffer.from(raw, 'base64').toString('utf8') : raw;
  if (text.trim() === '') {
    throw new HttpError(400, 'invalid_json', 'request body is empty: a JSON object is required');
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new HttpError(400, 'invalid_json', `request body is not valid JSON (${reason})`, {
      cause: error,
    });
  }
}

/** The gateway's catch-all resources: no route, so a 404 whatever the body. */
const CATCH_ALL = new Set(['/', '/{proxy+}']);

/** JSON body parsing for methods that carry a body; GET and DELETE pass through untouched. */
function jsonBody(): MiddlewareObj<ApiEvent, ApiResult> {
  return {
    before: async (request) => {
      if (!METHODS_WITH_BODY.has(request.event.httpMethod)) return;
      if (CATCH_ALL.has(request.event.resource)) return;
      request.event.body = parseJsonBody(request.event);
    },
  };
}

/**
 * 405 for a method a known route does not serve, with `Allow` (the gateway routes every method of a resource
 * here, so that a wrong method is not API Gateway's 403 "Missing Authentication Token"); OPTIONS answers 204
 * with `Allow` when no CORS preflight took it first.
 */
function methodCheck(): MiddlewareObj<ApiEvent, ApiResult> {
  return {
    before: async (request) => {
      const { httpMethod, resource, path } = request.event;
      const allowed = allowedMethods(resource ?? path);
      if (allowed === undefined || allowed.includes(httpMethod)) return;
      const allow = allowed.join(', ');
      if (httpMethod === 'OPTIONS') {
        return { statusCode: 204, headers: { allow: allow }, body: '' };
      }
      throw new HttpError(
        405,
        'method_not_allowed',
        `${httpMethod} is not allowed on ${resource ?? path} (allowed: ${allow})`,
        { headers: { allow } },
      );
    },
  };
}

/** Origins allowed to call the API from a browser (AI4RAG_CORS_ORIGINS, comma-separated; none by default). */
export function corsOrigins(env: Readonly<Record<string, string | undefined>> = ENV): string[] {
  return (env.AI4RAG_CORS_ORIGINS ?? '')
    .split(',')
    .map((o) => o.trim())
    .filter((o) => o !== '');
}

/**
 * The CORS headers of a response to a request from `origin`: none when CORS is off or the origin is not allowed;
 * `*` when every origin is; else the request's origin echoed, with `Vary: Origin`.
 */
export function corsHeaders(
  origins: readonly string[],
  origin: string | undefined,
): Record<string, string> {
  if (origins.length === 0) return {};
  if (origins.includes('*')) return { 'access-control-allow-origin': '*' };
  if (origin === undefined || !origins.includes(origin)) return { vary: 'Origin' };
  return { 'access-control-allow-origin': origin, vary: 'Origin' };
}

function cors(origins: readonly string[]): MiddlewareObj<ApiEvent, ApiResult> {
  const after = async (request: middy.Request<ApiEvent, ApiResult>): Promise<void> => {
    const extra = corsHeaders(origins, headerOf(request.event, 'origin'));
    if (request.response && Object.keys(extra).length > 0) {
      request.response = {
        ...request.response,
        headers: { ...request.response.headers, ...extra },
      };
    }
  };
  return { after, onError: after };
}

function errorMapping(): MiddlewareObj<ApiEvent, ApiResult> {
  return {
    onError: async (request) => {
      const { error } = request;
      // Exposed 5xx (504 timeout, 503 model unavailable) are the operator's business too.
      if (error instanceof HttpError && error.statusCode >= 500) {
        powertools().logger.warn('request failed', { error, statusCode: error.statusCode });
      }
      request.response = errorResult(error, (unhandled) =>
        powertools().logger.error('unhandled error', { error: unhandled as Error }),
      );
    },
  };
}

/** Attaches the Powertools middlewares (logger context always; tracing and metrics only inside Lambda). */
export function instrument<E, R>(handler: middy.MiddyfiedHandler<E, R>, name: string): void {
  const { logger, metrics, tracer } = powertools();
  handler.use(injectLambdaContext(logger, { resetKeys: true }) as MiddlewareObj<E, R>);
  if (inLambda()) {
    handler.use(captureLambdaHandler(tracer) as MiddlewareObj<E, R>);
    handler.use(logMetrics(metrics, { captureColdStartMetric: true }) as MiddlewareObj<E, R>);
  }
  logger.appendKeys({ function: name });
}

/**
 * Wraps an API route function with the shared middleware: Powertools context, JSON body parsing, error mapping.
 * @example export const handler = httpHandler('search', async (event) => jsonResponse(200, await search(event)));
 */
export function httpHandler(
  name: string,
  fn: (event: ApiEvent, context: Context) => Promise<ApiResult>,
  options: HttpHandlerOptions = {},
): middy.MiddyfiedHandler<ApiEvent, ApiResult> {
  const handler = middy<ApiEvent, ApiResult>();
  instrument(handler, name);
  // Middy runs `after`/`onError` in reverse order: CORS headers go on the mapped error responses too.
  return handler
    .use(cors(options.corsOrigins ?? corsOrigins()))
    .use(errorMapping())
    .use(methodCheck())
    .use(jsonBody())
    .handler(fn);
}

/** Options of {@link httpHandler}. */
export interface HttpHandlerOptions {
  /** Origins allowed by CORS. @default AI4RAG_CORS_ORIGINS (none) */
  corsOrigins?: readonly string[];
}

/** API Gateway's integration timeout of a REST API (the hard default; raising it needs a quota increase). */
export const GATEWAY_TIMEOUT_MS = 29_000;
/** Time kept back from a budget to build the response and hand it to the gateway before it gives up. */
export const RESPONSE_MARGIN_MS = 1_000;

/** Options of {@link requestBudgetMs}. */
export interface BudgetOptions {
  /** The gateway's limit. @default {@link GATEWAY_TIMEOUT_MS} */
  gatewayTimeoutMs?: number;
  /** @default {@link RESPONSE_MARGIN_MS} */
  marginMs?: number;
  /** @default Date.now */
  now?: () => number;
}

/**
 * Milliseconds a request may still spend: the smaller of the Lambda's remaining time and the gateway's limit
 * minus the time since the gateway received the request (`requestContext.requestTimeEpoch`; ignored when clocks
 * disagree, i.e. outside 0..limit), less a margin to answer.
 * @example const ms = requestBudgetMs(event, context); // 27_000 at the start of a fresh request
 */
export function requestBudgetMs(
  event: Pick<ApiEvent, 'requestContext'>,
  context: Pick<Context, 'getRemainingTimeInMillis'> | undefined,
  options: BudgetOptions = {},
): number {
  const limit = options.gatewayTimeoutMs ?? GATEWAY_TIMEOUT_MS;
  const now = (options.now ?? Date.now)();
  const started = event.requestContext?.requestTimeEpoch;
  const elapsed = typeof started === 'number' ? now - started : 0;
  const gatewayLeft = elapsed >= 0 && elapsed <= limit ? limit - elapsed : limit;
  const lambdaLeft = context?.getRemainingTimeInMillis?.() ?? Number.POSITIVE_INFINITY;
  return Math.min(gatewayLeft, lambdaLeft) - (options.marginMs ?? RESPONSE_MARGIN_MS);
}

/**
 * Runs `work` within `budgetMs`: its signal aborts at the deadline, and the promise rejects with a
 * {@link DeadlineExceededError} then, even if `work` is stuck somewhere that ignores the signal.
 * @throws {DeadlineExceededError} when the budget runs out (at once when it is not positive).
 */
export async function withDeadline<T>(
  budgetMs: number,
  what: string,
  work: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const seconds = (Math.max(0, budgetMs) / 1000).toFixed(1);
  const error = () =>
    new DeadlineExceededError(
      `${what} did not finish within its time budget (${seconds} s, inside API Gateway's ${GATEWAY_TIMEOUT_MS / 1000} s limit); try a smaller k or no reranking${what === 'search' ? '' : ', or the streaming endpoint'}`,
    );
  if (!(budgetMs > 0)) throw error();
  const controller = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const e = error();
      controller.abort(e);
      reject(e);
    }, budgetMs);
  });
  try {
    return await Promise.race([work(controller.signal), expired]);
  } catch (e) {
    if (controller.signal.aborted) throw controller.signal.reason;
    throw e;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Wraps a per-record SQS consumer: records are processed one after the other (bounded work and memory per
 * invocation) and each failure fails only its own record (`batchItemFailures`).
 * @example export const handler = sqsHandler('chunk', async (record) => chunkOne(JSON.parse(record.body)));
 */
export function sqsHandler(
  name: string,
  fn: (record: SQSRecord, context: Context) => Promise<void>,
): middy.MiddyfiedHandler<SQSEvent, SQSBatchResponse> {
  const handler = middy<SQSEvent, SQSBatchResponse>();
  instrument(handler, name);
  const { logger } = powertools();
  return handler
    .use(
      sqsPartialBatchFailure({
        logger: (reason: unknown, record: SQSRecord) =>
          logger.error('record failed', { messageId: record.messageId, error: reason as Error }),
      }) as MiddlewareObj<SQSEvent, SQSBatchResponse>,
    )
    .handler(async (event, context) => {
      const settled: PromiseSettledResult<void>[] = [];
      for (const record of event.Records ?? []) {
        try {
          await fn(record, context);
          settled.push({ status: 'fulfilled', value: undefined });
        } catch (reason) {
          settled.push({ status: 'rejected', reason });
        }
      }
      // The partial-batch middleware turns the settled results into `{ batchItemFailures }`.
      return settled as unknown as SQSBatchResponse;
    });
}

/** A path parameter, URL-decoded (document keys contain `/`, sent as `%2F`). */
export function pathParameter(event: ApiEvent, name: string): string {
  const raw = event.pathParameters?.[name];
  if (raw === undefined || raw === null || raw === '') {
    throw new ValidationError(`missing path parameter "${name}"`);
  }
  try {
    return decodeURIComponent(raw);
  } catch (error) {
    throw new ValidationError(`path parameter "${name}" is not valid URL encoding`, {
      cause: error,
    });
  }
}

/** An S3 event-notification key as a plain key (`+` is a space, the rest is URL-encoded). */
export function decodeS3Key(key: string): string {
  return decodeURIComponent(key.replace(/\+/g, ' '));
}
