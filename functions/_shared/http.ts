/**
 * Middy wiring shared by the HTTP (API Gateway REST proxy) and SQS handlers: JSON bodies, one error mapping,
 * Powertools instrumentation, and partial batch failure for queues.
 */
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import { captureLambdaHandler } from '@aws-lambda-powertools/tracer/middleware';
import middy, { type MiddlewareObj } from '@middy/core';
import httpJsonBodyParser from '@middy/http-json-body-parser';
import sqsPartialBatchFailure from '@middy/sqs-partial-batch-failure';
import type {
  APIGatewayProxyEvent,
  APIGatewayProxyResult,
  Context,
  SQSBatchResponse,
  SQSEvent,
  SQSRecord,
} from 'aws-lambda';
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
 * Maps an error to the API's error response: ValidationError → 400, NotFoundError → 404, middy's exposed HTTP
 * errors (`createError`, e.g. 415 for a body that is not JSON) → their status, anything else → 500 without
 * internals (logged with its cause).
 */
export function errorResult(error: unknown, log?: (error: unknown) => void): ApiResult {
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

/** JSON body parsing for methods that carry a body; GET and DELETE pass through untouched. */
function jsonBody(): MiddlewareObj<ApiEvent, ApiResult> {
  const parser = httpJsonBodyParser() as unknown as MiddlewareObj<ApiEvent, ApiResult>;
  return {
    before: async (request) => {
      if (!METHODS_WITH_BODY.has(request.event.httpMethod)) return;
      await parser.before?.(request);
    },
  };
}

function errorMapping(): MiddlewareObj<ApiEvent, ApiResult> {
  return {
    onError: async (request) => {
      request.response = errorResult(request.error, (error) =>
        powertools().logger.error('unhandled error', { error: error as Error }),
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
): middy.MiddyfiedHandler<ApiEvent, ApiResult> {
  const handler = middy<ApiEvent, ApiResult>();
  instrument(handler, name);
  return handler.use(jsonBody()).use(errorMapping()).handler(fn);
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
