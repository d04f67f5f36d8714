/**
 * `ai4rag chat`: a multi-turn conversation on stdin/stdout, each turn answered by the generate handler's POST /chat
 * route (the same handler `ai4rag serve` and the deployed API run) with the whole conversation so far; and
 * `ai4rag ask --pattern FILE`, answered by its POST /generate route with the pattern served as `serve --pattern`
 * serves it ({@link patternEnv}).
 */
import { createInterface } from 'node:readline';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import { localContext } from '../../functions/_shared/local.js';
import { createLocalRuntime, type LocalRuntime } from '../../functions/_shared/runtime.js';
import { createGenerateHandler } from '../../functions/generate/handler.js';
import type { ChatResponse, GenerateResponse } from '../../shared/src/api/schemas.js';
import { DEFAULT_DATA_DIR, ENV } from '../../shared/src/config.js';
import { Ai4ragError, ValidationError } from '../../shared/src/errors.js';
import { STORE_KINDS, type StoreKind } from '../../shared/src/runtime/open-store.js';
import { ensureDataDir, filterFlag, flag, int, oneOf, type Parsed, str } from './args.js';
import { CHAT_OPTIONS } from './option-specs.js';
import { cliPrices } from './prices.js';
import { patternEnv } from './serve.js';

/** Parsed by the command; defined beside the other commands' flags so `main` loads this module only to run it. */
export { CHAT_OPTIONS };

type Io = {
  out(line: string): void;
  err(line: string): void;
  /** Standard input (chat reads its turns from it); process.stdin when absent. */
  input?: NodeJS.ReadableStream;
};

/** The flags `ask` takes with `--pattern` (the pattern sets the rest). */
export const PATTERN_ASK_FLAGS: readonly string[] = [
  'collection',
  'k',
  'search-mode',
  'ranker-strategy',
  'ranker-k',
  'ranker-alpha',
  'filter',
  'prices',
  'pattern',
];

/** The request fields of the retrieval flags, as the API names them. */
function retrievalFields(p: Parsed): Record<string, unknown> {
  const k = str(p, 'k') === undefined ? undefined : int(p, 'k', 5);
  if (k !== undefined && (k < 1 || k > 100)) {
    throw new ValidationError(`--k must be an integer in 1..100, got ${k}`);
  }
  const mode = str(p, 'search-mode');
  const filter = filterFlag(p, 'filter');
  const rankerK = str(p, 'ranker-k') === undefined ? undefined : int(p, 'ranker-k', 0);
  const alpha = str(p, 'ranker-alpha');
  return {
    ...(k !== undefined && { k }),
    ...(mode !== undefined && {
      search_mode: oneOf(p, 'search-mode', ['vector', 'hybrid'], 'hybrid'),
    }),
    ...(str(p, 'ranker-strategy') !== undefined && {
      ranker_strategy: oneOf(p, 'ranker-strategy', ['rrf', 'weighted', 'normalized'], 'rrf'),
    }),
    ...(rankerK !== undefined && { ranker_k: rankerK }),
    ...(alpha !== undefined && { ranker_alpha: Number(alpha) }),
    ...(filter !== undefined && { filter }),
  };
}

/** A local runtime and the generate handler over it, configured from the flags. */
async function handlerFor(p: Parsed): Promise<{
  runtime: LocalRuntime;
  call: (route: '/chat' | '/generate', body: unknown) => Promise<APIGatewayProxyResult>;
}> {
  const store = oneOf<StoreKind>(p, 'store', STORE_KINDS, 'pglite');
  const collection = str(p, 'collection');
  const pattern = str(p, 'pattern');
  const model = str(p, 'model');
  const embedding = str(p, 'embedding');
  const env: Record<string, string | undefined> = {
    ...ENV,
    ...(collection !== undefined && { AI4RAG_COLLECTION: collection }),
    ...(model !== undefined && { AI4RAG_FOUNDATION_MODEL: model }),
    ...(embedding !== undefined && { AI4RAG_EMBEDDING_MODEL: embedding }),
    ...(pattern !== undefined && patternEnv(pattern, collection)),
  };
  const prices = await cliPrices(p);
  const dataDir = await ensureDataDir(str(p, 'data-dir') ?? DEFAULT_DATA_DIR);
  let runtime: LocalRuntime;
  try {
    runtime = createLocalRuntime({ dataDir, env, store });
  } catch (error) {
    // The runtime checks its environment: a bad collection name or model is a usage error of the flags.
    if (error instanceof ValidationError) {
      throw new ValidationError(
        error.message
          .replace(/^AI4RAG_COLLECTION /, '--collection ')
          .replace(/AI4RAG_FOUNDATION_MODEL/, '--model'),
        { cause: error },
      );
    }
    throw error;
  }
  const handler = createGenerateHandler(runtime, prices && { prices });
  const call = async (route: '/chat' | '/generate', body: unknown) => {
    const event = {
      resource: route,
      path: route,
      httpMethod: 'POST',
      headers: { 'content-type': 'application/json' },
      multiValueHeaders: {},
      queryStringParameters: null,
      multiValueQueryStringParameters: null,
      pathParameters: null,
      stageVariables: null,
      body: JSON.stringify(body),
      isBase64Encoded: false,
      requestContext: { resourcePath: route, httpMethod: 'POST', stage: 'local' },
    } as unknown as APIGatewayProxyEvent;
    return (await handler(event, localContext('generate'))) as APIGatewayProxyResult;
  };
  return { runtime, call };
}

/** The error of a non-200 answer, as the API reported it. */
function failure(result: APIGatewayProxyResult): Ai4ragError {
  let message = `HTTP ${result.statusCode}`;
  try {
    const body = JSON.parse(result.body) as { error?: { message?: string } };
    if (body.error?.message !== undefined) message = body.error.message;
  } catch {
    // not JSON: the status says it
  }
  return result.statusCode === 400 || result.statusCode === 422
    ? new ValidationError(message)
    : new Ai4ragError(message);
}

/** An API answer for a person: the text, its sources, tokens (and cost) and per-step timing. */
export function renderApiAnswer(a: GenerateResponse): string[] {
  const lines = [a.answer, '', 'Sources:'];
  a.reference_documents.forEach((d, i) => {
    lines.push(
      `  [${i + 1}] ${d.document_key} #${d.sequence_number}  score ${d.score?.toFixed(4) ?? '-'}`,
    );
  });
  const u = a.usage;
  const cost = a.cost_usd === undefined ? '' : `, cost $${a.cost_usd}`;
  const t = a.timing;
  lines.push(
    '',
    u === undefined
      ? 'tokens: not reported by the model'
      : `tokens: prompt ${u.prompt_tokens}, completion ${u.completion_tokens}${cost}`,
    `retrieve ${t.retrieve_ms.toFixed(1)} ms, rerank ${t.rerank_ms.toFixed(1)} ms, generate ${t.generate_ms.toFixed(1)} ms, total ${t.total_ms.toFixed(1)} ms`,
  );
  return lines;
}

/**
 * `ai4rag ask <question> --pattern FILE`: the question answered through POST /generate with the pattern served.
 * @throws {ValidationError} for a flag the pattern sets, or a bad pattern file.
 */
export async function cmdAskPattern(p: Parsed, question: string, io: Io): Promise<number> {
  for (const [name, value] of Object.entries(p.values)) {
    if (value === undefined || ['store', 'data-dir', 'json', 'help'].includes(name)) continue;
    if (!PATTERN_ASK_FLAGS.includes(name)) {
      throw new ValidationError(
        `--${name} cannot be combined with --pattern (the pattern sets the retrieval and the model; --collection, --k, --search-mode, --ranker-*, --filter and --prices may adjust it)`,
      );
    }
  }
  const body = { question, ...retrievalFields(p) };
  const { runtime, call } = await handlerFor(p);
  try {
    const result = await call('/generate', body);
    if (result.statusCode !== 200) throw failure(result);
    const answer = JSON.parse(result.body) as GenerateResponse;
    for (const w of answer.warnings ?? []) io.err(`warning: ${w}`);
    if (flag(p, 'json')) io.out(JSON.stringify(answer));
    else for (const line of renderApiAnswer(answer)) io.out(line);
    return 0;
  } finally {
    await runtime.close();
  }
}

/**
 * `ai4rag chat`: reads user turns from stdin, one per line, until `/exit` or the end of input; `/reset` starts a
 * new conversation. Works on a terminal (a `you>` prompt on stderr) and on a pipe. A turn the API refuses is
 * reported and dropped from the history; the exit code is then 1.
 * @throws {ValidationError} for bad flags (before anything is read).
 */
export async function cmdChat(p: Parsed, io: Io): Promise<number> {
  if (p.positionals.length > 0) {
    throw new ValidationError(
      `chat reads its questions from stdin, one per line (got "${p.positionals.join(' ')}"; use ask for one question)`,
    );
  }
  const fields = retrievalFields(p);
  const json = flag(p, 'json');
  const input = io.input ?? process.stdin;
  const interactive = (input as { isTTY?: boolean }).isTTY === true;
  const { runtime, call } = await handlerFor(p);
  let messages: { role: 'system' | 'user' | 'assistant'; content: string }[] = [];
  let failed = 0;
  const rl = createInterface({ input, terminal: false });
  const prompt = () => {
    if (interactive) process.stderr.write('you> ');
  };
  if (interactive)
    io.err('ai4rag chat: one question per line; /reset forgets the conversation, /exit quits');
  try {
    prompt();
    for await (const raw of rl) {
      const line = raw.trim();
      if (line === '') {
        prompt();
        continue;
      }
      if (line === '/exit' || line === '/quit') break;
      if (line === '/reset') {
        messages = [];
        if (!json) io.out('(conversation reset)');
        prompt();
        continue;
      }
      const turn = [...messages, { role: 'user' as const, content: line }];
      const result = await call('/chat', { messages: turn, ...fields });
      if (result.statusCode !== 200) {
        failed++;
        io.err(`error: ${failure(result).message}`);
        prompt();
        continue;
      }
      const answer = JSON.parse(result.body) as ChatResponse;
      messages = answer.conversation;
      for (const w of answer.warnings ?? []) io.err(`warning: ${w}`);
      if (json) io.out(JSON.stringify(answer));
      else {
        for (const l of renderApiAnswer(answer)) io.out(l);
        io.out('');
      }
      prompt();
    }
  } finally {
    rl.close();
    await runtime.close();
  }
  return failed > 0 ? 1 : 0;
}
