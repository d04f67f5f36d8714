/**
 * POST /generate (answer + sources + timing) and POST /chat (conversation, last user turn enriched); and, through
 * a Lambda Function URL in RESPONSE_STREAM mode, `streamHandler` answering as server-sent events.
 */
import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import {
  ChatRequest,
  type ChatResponse,
  GenerateRequest,
  parseWith,
} from '../../shared/src/api/schemas.js';
import { ENV } from '../../shared/src/config.js';
import { NotFoundError } from '../../shared/src/errors.js';
import { parsePricesEnv } from '../_shared/env.js';
import {
  type BudgetOptions,
  errorResult,
  httpHandler,
  jsonResponse,
  parseJsonBody,
  requestBudgetMs,
  withDeadline,
} from '../_shared/http.js';
import {
  type AnswerHandlerOptions,
  lazyPrices,
  ragFor,
  toGenerateResponse,
} from '../_shared/query.js';
import { lazyRuntime, type Runtime } from '../_shared/runtime.js';
import { writeSse } from '../_shared/sse.js';

/** The Lambda's price table: AI4RAG_PRICES, read on the first request (the runtime validated it at creation). */
const ENV_PRICES = () => parsePricesEnv(ENV);

/**
 * Builds the generate/chat handler; the route is told by the request path. `deps` replaces parts of the runtime;
 * `options.prices` prices the answers (`cost_usd`).
 * @example export const handler = createGenerateHandler(undefined, { prices: table });
 */
export function createGenerateHandler(
  deps?: Partial<Runtime>,
  options: GenerateHandlerOptions = {},
) {
  const runtime = lazyRuntime(deps);
  const prices = lazyPrices(options.prices);
  return httpHandler('generate', async (event, context) => {
    const route = event.resource ?? event.path;
    // Retrieval, reranking and the model share what is left of API Gateway's 29 s (and of the Lambda's own
    // time); the model call is aborted at the deadline and a clear 504 answered before the gateway cuts.
    const budget = requestBudgetMs(event, context, options.budget);
    if (route === '/chat' || event.path?.endsWith('/chat')) {
      const { messages, citations, ...retrieval } = parseWith(
        ChatRequest,
        event.body,
        'request body',
      );
      return withDeadline(budget, 'chat', async (signal) => {
        const { rag, modelId } = await ragFor(runtime(), retrieval);
        const answer = await rag.chat(messages, { signal, ...(citations && { citations }) });
        const body: ChatResponse = {
          ...toGenerateResponse(answer, modelId, prices()),
          conversation: answer.conversation,
        };
        return jsonResponse(200, body);
      });
    }
    if (route === '/generate' || event.path?.endsWith('/generate')) {
      const { question, citations, ...retrieval } = parseWith(
        GenerateRequest,
        event.body,
        'request body',
      );
      return withDeadline(budget, 'generate', async (signal) => {
        const { rag, modelId } = await ragFor(runtime(), retrieval);
        const answer = await rag.generate(question, { signal, ...(citations && { citations }) });
        return jsonResponse(200, toGenerateResponse(answer, modelId, prices()));
      });
    }
    throw new NotFoundError(`no route ${event.httpMethod} ${event.path}`);
  });
}

/** Options of {@link createGenerateHandler}. */
export interface GenerateHandlerOptions extends AnswerHandlerOptions {
  /** The time budget's limits (tests shrink them). @default API Gateway's 29 s, 1 s margin */
  budget?: BudgetOptions;
}

/** Lambda entry point of /generate and /chat. */
export const handler = createGenerateHandler(undefined, { prices: ENV_PRICES });

/** The writable side of a Lambda response stream (the subset used here). */
export interface ResponseStreamLike {
  write(chunk: string): unknown;
  end(): void;
  setContentType?(type: string): void;
}

/**
 * The streaming answer, transport-free: parses the Function URL request, then writes SSE frames (or one JSON
 * error body before any frame, with its status in `onStatus`); `options.prices` prices the `done` event.
 */
export async function streamAnswer(
  rt: Runtime,
  event: Pick<APIGatewayProxyEventV2, 'body' | 'isBase64Encoded'>,
  stream: ResponseStreamLike,
  onStatus: (statusCode: number, contentType: string) => ResponseStreamLike = () => stream,
  options: AnswerHandlerOptions = {},
): Promise<void> {
  let out = stream;
  try {
    // The same 400 invalid_json as the API routes (the Function URL checks no content type).
    const raw = parseJsonBody({
      headers: {},
      body: event.body ?? null,
      isBase64Encoded: event.isBase64Encoded,
    });
    const { question, citations, ...retrieval } = parseWith(GenerateRequest, raw, 'request body');
    const { rag, modelId } = await ragFor(rt, retrieval);
    out = onStatus(200, 'text/event-stream');
    const prices = lazyPrices(options.prices)();
    const events = rag.generateStream(question, citations ? { citations } : {});
    await writeSse(events, (chunk) => void out.write(chunk), {
      model: modelId,
      ...(prices && { prices }),
    });
  } catch (error) {
    const result = errorResult(error);
    out = onStatus(result.statusCode, 'application/json');
    out.write(result.body);
  } finally {
    out.end();
  }
}

/** The subset of the Lambda runtime's `awslambda` global used for response streaming. */
interface AwsLambdaGlobal {
  streamifyResponse: (
    fn: (
      event: APIGatewayProxyEventV2,
      stream: ResponseStreamLike,
      context: Context,
    ) => Promise<void>,
  ) => unknown;
  HttpResponseStream: {
    from: (
      stream: ResponseStreamLike,
      meta: { statusCode: number; headers: Record<string, string> },
    ) => ResponseStreamLike;
  };
}

function lambdaGlobal(): AwsLambdaGlobal | undefined {
  const g = (globalThis as unknown as { awslambda?: Partial<AwsLambdaGlobal> }).awslambda;
  return typeof g?.streamifyResponse === 'function' && g.HttpResponseStream
    ? (g as AwsLambdaGlobal)
    : undefined;
}

/**
 * Creates the response-streaming entry point, or undefined outside the Lambda runtime (where the global
 * `awslambda` has no `streamifyResponse`).
 */
export function createStreamHandler(
  deps?: Partial<Runtime>,
  options: AnswerHandlerOptions = {},
): unknown {
  const lambda = lambdaGlobal();
  if (!lambda) return undefined;
  const runtime = lazyRuntime(deps);
  const prices = lazyPrices(options.prices);
  return lambda.streamifyResponse(async (event, stream) =>
    streamAnswer(
      runtime(),
      event,
      stream,
      (statusCode, contentType) =>
        lambda.HttpResponseStream.from(stream, {
          statusCode,
          headers: { 'content-type': contentType, 'cache-control': 'no-cache' },
        }),
      { prices },
    ),
  );
}

/** Lambda entry point of the Function URL (RESPONSE_STREAM); undefined outside Lambda. */
export const streamHandler = createStreamHandler(undefined, { prices: ENV_PRICES });
