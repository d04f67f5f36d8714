/**
 * `ai4rag serve`: the Query API on one machine. Each HTTP request becomes an API Gateway REST proxy event for the
 * SAME handlers the cloud runs, built on the local runtime (files, in-process queues, PGlite).
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import { parsePricesEnv, parseServingPattern } from '../../functions/_shared/env.js';
import { errorResponse, errorResult, jsonResponse } from '../../functions/_shared/http.js';
import { bindLocalQueues, localContext, s3Notification } from '../../functions/_shared/local.js';
import {
  createLocalRuntime,
  type LocalRuntime,
  type Runtime,
} from '../../functions/_shared/runtime.js';
import { createDocumentsHandler } from '../../functions/documents/handler.js';
import { createGenerateHandler, streamAnswer } from '../../functions/generate/handler.js';
import { createSearchHandler } from '../../functions/search/handler.js';
import { DEFAULT_DATA_DIR, ENV } from '../../shared/src/config.js';
import { ValidationError } from '../../shared/src/errors.js';
import { readStatus } from '../../shared/src/ingest/knowledge-base.js';
import { STORE_KINDS, type StoreKind } from '../../shared/src/runtime/open-store.js';
import { ensureDataDir, int, oneOf, parse, str } from './args.js';
import { poolFor, usePool, workersOption } from './cpu-runtime.js';
import { SERVE_OPTIONS } from './option-specs.js';
import { cliPrices } from './prices.js';
import { serveRerankEnv } from './rerank.js';
import { createGate, yieldingClient } from './serve-gate.js';
import { type AccessLogSink, fileSink, logAccess } from './serve-log.js';
import { createWebApi, isWebPath, PATTERN_HEADER, sendWebFile, WEB_DIST_DIR } from './serve-web.js';

/** Parsed by the command; defined beside the other commands' flags so `main` loads this module only to run it. */
export { SERVE_OPTIONS };

/**
 * The environment overrides that serve a promoted pattern: its retrieval and generation settings
 * (`AI4RAG_SERVING_PATTERN`) over its own index (`vector_store_binding.collection_name`, e.g. the index an
 * experiment built) unless a collection is given.
 * @throws {ValidationError} when the file cannot be read or is not a pattern.
 */
export function patternEnv(file: string, collection?: string): Record<string, string> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new ValidationError(`cannot read --pattern "${file}": ${(error as Error).message}`, {
      cause: error,
    });
  }
  parseServingPattern(text);
  const binding = (
    JSON.parse(text) as { settings?: { vector_store_binding?: { collection_name?: unknown } } }
  ).settings?.vector_store_binding?.collection_name;
  const target = collection ?? (typeof binding === 'string' ? binding : undefined);
  return {
    AI4RAG_SERVING_PATTERN: text,
    ...(target !== undefined && { AI4RAG_COLLECTION: target }),
  };
}

/** Largest request body: API calls are small; uploads may carry a document. */
const MAX_BODY_BYTES = 50 * 1024 * 1024;

type ApiHandler = (
  event: APIGatewayProxyEvent,
  context: ReturnType<typeof localContext>,
) => Promise<unknown>;

interface Route {
  method: string;
  resource: string;
  handler: 'search' | 'generate' | 'documents' | 'stream';
}

const ROUTES: readonly Route[] = [
  { method: 'POST', resource: '/search', handler: 'search' },
  { method: 'POST', resource: '/generate', handler: 'generate' },
  { method: 'POST', resource: '/chat', handler: 'generate' },
  { method: 'POST', resource: '/stream', handler: 'stream' },
  { method: 'GET', resource: '/documents', handler: 'documents' },
  { method: 'GET', resource: '/documents/{id}', handler: 'documents' },
  { method: 'DELETE', resource: '/documents/{id}', handler: 'documents' },
  { method: 'POST', resource: '/uploads', handler: 'documents' },
  { method: 'GET', resource: '/stats', handler: 'documents' },
  { method: 'GET', resource: '/health', handler: 'documents' },
];

/** API requests `serve` runs at once (the rest queue in arrival order; see serve-gate.ts). */
export const DEFAULT_CONCURRENCY = 4;

/** Options of {@link startServer}. */
export interface ServeOptions {
  /** API requests run at once; the others wait in arrival order. @default DEFAULT_CONCURRENCY */
  concurrency?: number;
  /**
   * Folders an experiment started from the web app may read documents from (`documents_dir` inside one of them).
   * @default the working directory and `documentsDir`
   */
  documentRoots?: readonly string[];
  dataDir: string;
  documentsDir?: string;
  /** @default '127.0.0.1' */
  host?: string;
  /** 0 picks a free port. @default 8787 */
  port?: number;
  token: string;
  /** The runtime's environment; its AI4RAG_PRICES prices the answers (`cost_usd`). */
  env?: Readonly<Record<string, string | undefined>>;
  /** Vector store in memory (tests). */
  inMemory?: boolean;
  /** Where the collections live (`PGVECTOR_*` / `MILVUS_*` in `env` for a server). @default 'pglite' */
  store?: StoreKind;
  /** Receives one access-log line per request (`serve --log`); none when absent. */
  accessLog?: AccessLogSink;
  /** Folder of the built web app. @default web/dist of the package */
  webDir?: string;
  /**
   * Worker threads computing the local embeddings and the local model's answers (0: on the main thread).
   * @default os.availableParallelism()
   */
  workers?: number;
}

/** Work a stopping server waits for. */
export interface PendingWork {
  /** Requests being answered (an upload's whole ingestion runs inside its request). */
  requests: number;
  /** Experiments started from the web app and running in this process. */
  experiments: number;
}

/** Options of {@link RunningServer.close}. */
export interface CloseOptions {
  /**
   * How long to wait for the requests in flight and the running experiments before closing the store under them.
   * @default 30_000
   */
  timeoutMs?: number;
  /** Stops waiting when it settles (a second Ctrl+C). */
  force?: Promise<unknown>;
  /** Called once, before waiting, when there is work to wait for. */
  onWait?: (pending: PendingWork) => void;
}

/** A running server. */
export interface RunningServer {
  url: string;
  server: Server;
  runtime: LocalRuntime;
  /** Work in flight now. */
  pending(): PendingWork;
  /**
   * Stops taking connections, waits (within `timeoutMs`) for the requests in flight and the running experiments,
   * then closes the store and the pool. A request parsed after it began (pipelined on a busy connection) gets a
   * 503, or is cut when the connections close.
   * Resolves with what was still running when the wait ended (zeros after a complete drain).
   */
  close(options?: CloseOptions): Promise<PendingWork>;
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolvePromise, reject) => {
    const parts: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        reject(new ValidationError(`request body over ${MAX_BODY_BYTES} bytes`));
        req.destroy();
        return;
      }
      parts.push(chunk);
    });
    req.on('end', () => resolvePromise(Buffer.concat(parts)));
    req.on('error', reject);
  });
}

function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

function match(
  method: string,
  path: string,
): { route: Route; pathParameters: Record<string, string> | null } | undefined {
  for (const route of ROUTES) {
    if (route.method !== method) continue;
    if (route.resource === path) return { route, pathParameters: null };
    if (route.resource === '/documents/{id}' && path.startsWith('/documents/')) {
      const id = path.slice('/documents/'.length);
      if (id !== '') return { route, pathParameters: { id } };
    }
  }
  return undefined;
}

/** Converts a node request into an API Gateway REST proxy event. */
export function toProxyEvent(
  req: IncomingMessage,
  url: URL,
  resource: string,
  pathParameters: Record<string, string> | null,
  body: Buffer,
): APIGatewayProxyEvent {
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers)) {
    if (v !== undefined) headers[k.toLowerCase()] = Array.isArray(v) ? v.join(',') : v;
  }
  const query: Record<string, string> = {};
  for (const [k, v] of url.searchParams) query[k] = v;
  const method = req.method ?? 'GET';
  return {
    resource,
    path: url.pathname,
    httpMethod: method,
    headers,
    multiValueHeaders: {},
    queryStringParameters: Object.keys(query).length > 0 ? query : null,
    multiValueQueryStringParameters: null,
    pathParameters,
    stageVariables: null,
    body: body.length > 0 ? body.toString('utf8') : null,
    isBase64Encoded: false,
    requestContext: {
      accountId: '000000000000',
      apiId: 'local',
      authorizer: null,
      protocol: 'HTTP/1.1',
      httpMethod: method,
      identity: { sourceIp: req.socket.remoteAddress ?? '127.0.0.1' } as never,
      path: url.pathname,
      stage: 'local',
      requestId: localContext('serve').awsRequestId,
      requestTimeEpoch: Date.now(),
      resourceId: 'local',
      resourcePath: resource,
    },
  };
}

function send(res: ServerResponse, result: APIGatewayProxyResult): void {
  res.writeHead(result.statusCode, {
    'content-type': 'application/json; charset=utf-8',
    ...(result.headers as Record<string, string> | undefined),
  });
  res.end(result.body);
}

/**
 * Starts the local Query API. Every route but /health needs `Authorization: Bearer <token>`; uploads go to the
 * URL POST /uploads returns (signed with the token, short-lived) and are indexed before the PUT answers.
 * @example const { url, close } = await startServer({ dataDir: '.ai4rag', port: 0, token: 't' });
 */
export async function startServer(options: ServeOptions): Promise<RunningServer> {
  const dataDir = await ensureDataDir(options.dataDir);
  const runtime = createLocalRuntime({
    dataDir,
    ...(options.documentsDir && { documentsDir: resolve(options.documentsDir) }),
    ...(options.env && { env: options.env }),
    ...(options.inMemory && { inMemory: true }),
    ...(options.store !== undefined && { store: options.store }),
    wrapSqlClient: yieldingClient,
  });
  // Before anything takes the runtime's models: the queues, the handlers and the web app all get the pooled ones.
  const pool = poolFor(options.workers, { keepWarm: true });
  if (pool !== undefined) usePool(runtime, pool);
  await bindLocalQueues(runtime);
  const prices = parsePricesEnv(options.env ?? {});
  type Handlers = Record<Exclude<Route['handler'], 'stream'>, ApiHandler>;
  const handlersOf = (rt: Runtime): Handlers => ({
    search: createSearchHandler(rt) as unknown as ApiHandler,
    generate: createGenerateHandler(rt, prices && { prices }) as unknown as ApiHandler,
    documents: createDocumentsHandler(rt) as unknown as ApiHandler,
  });
  const handlers = handlersOf(runtime);
  const gate = createGate(options.concurrency ?? DEFAULT_CONCURRENCY);
  const web = createWebApi({
    runtime,
    env: options.env ?? {},
    store: storeLabel(options.store ?? 'pglite', options.env ?? {}),
    documentRoots: options.documentRoots ?? [
      process.cwd(),
      ...(options.documentsDir !== undefined ? [resolve(options.documentsDir)] : []),
    ],
  });
  const webDir = options.webDir ?? WEB_DIST_DIR;
  // Query routes answered with an experiment's pattern (the web app's "serve this pattern"), per pattern.
  const patternHandlers = new Map<string, Handlers>();
  const authorized = (req: IncomingMessage, res: ServerResponse): boolean => {
    const auth = req.headers.authorization ?? '';
    const given = auth.startsWith('Bearer ') ? auth.slice('Bearer '.length) : '';
    if (sameSecret(given, options.token)) return true;
    send(res, {
      statusCode: 401,
      headers: { 'www-authenticate': 'Bearer' },
      body: JSON.stringify({
        error: { code: 'unauthorized', message: 'missing or wrong bearer token' },
      }),
    });
    return false;
  };
  let baseUrl = '';
  const sign = (key: string, expires: number): string =>
    createHmac('sha256', options.token).update(`${key}\n${expires}`).digest('base64url');
  runtime.presignUpload = async (key, _contentType, expiresIn) => {
    const expires = Math.floor(Date.now() / 1000) + expiresIn;
    return `${baseUrl}/uploads/${encodeURIComponent(key)}?expires=${expires}&signature=${sign(key, expires)}`;
  };

  const handleUpload = async (url: URL, req: IncomingMessage, res: ServerResponse) => {
    let key: string;
    try {
      key = decodeURIComponent(url.pathname.slice('/uploads/'.length));
    } catch {
      return send(res, errorResult(new ValidationError('invalid upload key')));
    }
    const expires = Number(url.searchParams.get('expires'));
    const signature = url.searchParams.get('signature') ?? '';
    if (
      !Number.isInteger(expires) ||
      expires < Date.now() / 1000 ||
      !sameSecret(signature, sign(key, expires))
    ) {
      return send(
        res,
        jsonResponse(403, {
          error: { code: 'forbidden', message: 'invalid or expired upload URL' },
        }),
      );
    }
    const body = await readBody(req);
    await runtime.documents.put(key, body);
    await runtime.queue('ingest').send([s3Notification('ObjectCreated:Put', 'local', key)]);
    // The local queues ran the whole flow: report what it did to this document (a bad file is a 422 naming the
    // reason, the previous version staying served).
    const status = await readStatus(runtime.objectStore, runtime.config.collection, key);
    if (status?.status === 'failed') {
      return send(
        res,
        jsonResponse(422, {
          key,
          ingested: false,
          status: 'failed',
          error: {
            code: 'unprocessable_document',
            message: status.error ?? 'the document failed to index',
          },
        }),
      );
    }
    return send(
      res,
      jsonResponse(200, {
        key,
        ingested: status?.status === 'indexed' || status === undefined,
        status: status?.status ?? 'indexed',
        ...(status?.chunkCount !== undefined && { chunks: status.chunkCount }),
      }),
    );
  };

  // Requests being answered, awaited by close; once it began, new requests get a 503.
  const inflight = new Set<Promise<void>>();
  let stopping = false;
  const server = createServer((req, res) => {
    if (options.accessLog !== undefined) logAccess(req, res, options.accessLog);
    if (stopping) {
      res.shouldKeepAlive = false;
      return send(
        res,
        jsonResponse(503, {
          error: { code: 'unavailable', message: 'the server is stopping' },
        }),
      );
    }
    const handled = (async () => {
      const url = new URL(req.url ?? '/', 'http://localhost');
      const method = req.method ?? 'GET';
      try {
        if (method === 'PUT' && url.pathname.startsWith('/uploads/')) {
          return await handleUpload(url, req, res);
        }
        if ((method === 'GET' || method === 'HEAD') && isWebPath(url.pathname)) {
          return await sendWebFile(res, webDir, url.pathname, method === 'HEAD');
        }
        if (
          url.pathname === '/config' ||
          url.pathname === '/collections' ||
          url.pathname === '/experiments' ||
          url.pathname.startsWith('/experiments/')
        ) {
          if (!authorized(req, res)) return;
          const result = await web.handle(method, url.pathname, await readBody(req));
          if (result !== undefined) return send(res, result);
        }
        const found = match(method, url.pathname);
        if (!found) {
          // A known path with another method: 405 with Allow, as the deployed API answers.
          const allowed = ROUTES.filter((r) => match(r.method, url.pathname)?.route === r).map(
            (r) => r.method,
          );
          if (allowed.length > 0) {
            const allow = [...new Set(allowed)].join(', ');
            return send(
              res,
              method === 'OPTIONS'
                ? { statusCode: 204, headers: { allow }, body: '' }
                : errorResponse(
                    405,
                    'method_not_allowed',
                    `${method} is not allowed on ${url.pathname} (allowed: ${allow})`,
                    { allow },
                  ),
            );
          }
          return send(
            res,
            jsonResponse(404, {
              error: { code: 'not_found', message: `no route ${method} ${url.pathname}` },
            }),
          );
        }
        if (found.route.resource !== '/health' && !authorized(req, res)) return;
        const body = await readBody(req);
        // Liveness answers at once; everything else takes its turn (see serve-gate.ts).
        if (found.route.resource === '/health') {
          return send(
            res,
            (await handlers.documents(
              toProxyEvent(req, url, found.route.resource, found.pathParameters, body),
              localContext('documents'),
            )) as APIGatewayProxyResult,
          );
        }
        await gate.run(async () => {
          // The documents routes always serve the knowledge base; the query routes may answer with a pattern.
          const header = req.headers[PATTERN_HEADER];
          const chosen =
            found.route.handler === 'documents'
              ? { runtime }
              : await web.runtimeFor(Array.isArray(header) ? header[0] : header);
          if (found.route.handler === 'stream') {
            await streamAnswer(
              chosen.runtime,
              { body: body.toString('utf8'), isBase64Encoded: false },
              { write: (chunk) => res.write(chunk), end: () => res.end() },
              (statusCode, contentType) => {
                res.writeHead(statusCode, {
                  'content-type': contentType,
                  'cache-control': 'no-cache',
                });
                return { write: (chunk) => res.write(chunk), end: () => res.end() };
              },
              prices && { prices },
            );
            return;
          }
          const event = toProxyEvent(req, url, found.route.resource, found.pathParameters, body);
          let routeHandlers = handlers;
          if (chosen.key !== undefined) {
            routeHandlers = patternHandlers.get(chosen.key) ?? handlersOf(chosen.runtime);
            patternHandlers.set(chosen.key, routeHandlers);
          }
          const result = (await routeHandlers[found.route.handler](
            event,
            localContext(found.route.handler),
          )) as APIGatewayProxyResult;
          send(res, result);
        });
      } catch (error) {
        if (!res.headersSent) send(res, errorResult(error));
        else res.end();
      }
    })();
    inflight.add(handled);
    void handled.finally(() => inflight.delete(handled));
  });
  try {
    // Threads loading their modules share the cores with the first requests: started before the port opens.
    await pool?.warm();
    await new Promise<void>((resolveListen, reject) => {
      server.once('error', reject);
      server.listen(options.port ?? 8787, options.host ?? '127.0.0.1', () => resolveListen());
    });
  } catch (error) {
    await runtime.close();
    await pool?.close();
    throw error;
  }
  const address = server.address() as AddressInfo;
  baseUrl = `http://${options.host ?? '127.0.0.1'}:${address.port}`;
  const pending = (): PendingWork => ({
    requests: inflight.size,
    experiments: web.running().length,
  });
  let closing: Promise<PendingWork> | undefined;
  const close = async (closeOptions: CloseOptions): Promise<PendingWork> => {
    stopping = true;
    const listening = new Promise<void>((r) => server.close(() => r()));
    server.closeIdleConnections();
    const deadline = Date.now() + (closeOptions.timeoutMs ?? 30_000);
    let forced = false;
    void closeOptions.force?.then(
      () => {
        forced = true;
      },
      () => {
        forced = true;
      },
    );
    let told = false;
    // Requests may still arrive on open keep-alive connections until they close: wait until nothing is left.
    for (;;) {
      const work = [...inflight, ...web.running()];
      if (work.length === 0 || forced || Date.now() >= deadline) break;
      if (!told) {
        told = true;
        closeOptions.onWait?.(pending());
      }
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.allSettled(work),
        new Promise((r) => {
          timer = setTimeout(r, Math.max(0, deadline - Date.now()));
        }),
        ...(closeOptions.force ? [closeOptions.force.catch(() => undefined)] : []),
      ]);
      clearTimeout(timer);
    }
    const left = pending();
    server.closeAllConnections();
    await listening;
    await runtime.close();
    await pool?.close();
    return left;
  };
  return {
    url: baseUrl,
    server,
    runtime,
    pending,
    close(closeOptions = {}) {
      closing ??= close(closeOptions);
      return closing;
    },
  };
}

function describeWork(work: PendingWork): string {
  const parts: string[] = [];
  if (work.requests > 0) parts.push(`${work.requests} request${work.requests === 1 ? '' : 's'}`);
  if (work.experiments > 0) {
    parts.push(`${work.experiments} experiment${work.experiments === 1 ? '' : 's'}`);
  }
  return parts.join(' and ');
}

/** Where the served collections live, for the banner (no secrets). */
function storeLabel(store: StoreKind, env: Readonly<Record<string, string | undefined>>): string {
  if (store === 'pgvector') {
    return `pgvector at ${env.PGVECTOR_HOST ?? 'localhost'}:${env.PGVECTOR_PORT ?? '5432'}/${env.PGVECTOR_DB ?? 'postgres'}`;
  }
  if (store === 'milvus') return `milvus at ${env.MILVUS_URI ?? '(MILVUS_URI unset)'}`;
  return 'pglite (embedded)';
}

/**
 * `ai4rag serve [--port N] [--host 127.0.0.1] [--data-dir D] [--token T] [--pattern FILE] [--collection C]
 * [--rerank MODEL] [--rerank-url URL] [--rerank-candidates N] [--prices FILE]`: runs until SIGINT/SIGTERM. The price
 * table (`--prices`, else AI4RAG_PRICES_FILE, else AI4RAG_PRICES) reaches the handlers as AI4RAG_PRICES.
 * Returns the exit code (0 after a clean shutdown, 2 for a usage error).
 * @example process.exitCode = await runServe(['--port', '8787']);
 */
export async function runServe(
  argv: string[],
  io: { out: (line: string) => void; err: (line: string) => void } = {
    out: (line) => process.stdout.write(`${line}\n`),
    err: (line) => process.stderr.write(`${line}\n`),
  },
): Promise<number> {
  let p: ReturnType<typeof parse>;
  let port: number;
  let concurrency: number;
  let workers: number | undefined;
  let stopTimeout = 30;
  let overrides: Record<string, string> = {};
  let store: StoreKind;
  try {
    p = parse(argv, SERVE_OPTIONS);
    port = int(p, 'port', 8787);
    if (port < 0 || port > 65535)
      throw new ValidationError(`--port must be in 0..65535, got ${port}`);
    concurrency = int(p, 'concurrency', DEFAULT_CONCURRENCY);
    if (concurrency < 1 || concurrency > 256) {
      throw new ValidationError(`--concurrency must be in 1..256, got ${concurrency}`);
    }
    workers = workersOption(str(p, 'workers'));
    const timeout = str(p, 'stop-timeout');
    stopTimeout = timeout === undefined ? 30 : Number(timeout);
    if (timeout === undefined ? false : !/^\d+$/.test(timeout) || stopTimeout > 3600) {
      throw new ValidationError(
        `--stop-timeout must be a whole number of seconds from 0 to 3600, got "${timeout}"`,
      );
    }
    const pattern = str(p, 'pattern');
    const collection = str(p, 'collection');
    if (pattern !== undefined) overrides = patternEnv(pattern, collection);
    else if (collection !== undefined) overrides = { AI4RAG_COLLECTION: collection };
    overrides = { ...overrides, ...serveRerankEnv(p) };
    const prices = await cliPrices(p);
    if (prices !== undefined) overrides.AI4RAG_PRICES = JSON.stringify(prices);
    // --store, else AI4RAG_STORE (as the other commands): a server store is served, not the embedded one.
    const fromEnv = ENV.AI4RAG_STORE?.trim();
    if (fromEnv && str(p, 'store') === undefined && !STORE_KINDS.includes(fromEnv as StoreKind)) {
      throw new ValidationError(
        `AI4RAG_STORE must be one of ${STORE_KINDS.join(', ')}; got "${fromEnv}"`,
      );
    }
    if (p.values.log === true && str(p, 'log-file') !== undefined) {
      throw new ValidationError('give --log (stderr) or --log-file FILE, not both');
    }
    store = oneOf<StoreKind>(
      p,
      'store',
      STORE_KINDS,
      (fromEnv as StoreKind | undefined) || 'pglite',
    );
  } catch (error) {
    io.err(`ai4rag serve: ${(error as Error).message}`);
    return 2;
  }
  const host = str(p, 'host') ?? '127.0.0.1';
  const given = str(p, 'token') ?? ENV.AI4RAG_API_TOKEN;
  const token = given && given !== '' ? given : randomBytes(24).toString('base64url');
  const documentsDir = str(p, 'documents-dir');
  const logFile = str(p, 'log-file');
  const accessLog: AccessLogSink | undefined =
    logFile !== undefined ? fileSink(resolve(logFile)) : p.values.log === true ? io.err : undefined;
  const running = await startServer({
    ...(accessLog !== undefined && { accessLog }),
    dataDir: str(p, 'data-dir') ?? DEFAULT_DATA_DIR,
    host,
    port,
    token,
    concurrency,
    ...(workers !== undefined && { workers }),
    env: { ...ENV, ...overrides },
    ...(documentsDir && { documentsDir }),
    store,
  });
  io.out(
    `ai4rag API on ${running.url} (collection ${running.runtime.config.collection}, store ${storeLabel(store, ENV)})`,
  );
  if (!given) io.out(`token (generated): ${token}`);
  // The token in the fragment: the browser keeps it and never sends it to the server in a URL.
  io.out(`Web app: ${running.url}/#token=${encodeURIComponent(token)}`);
  io.out('Routes (Authorization: Bearer <token>, except /health):');
  for (const r of ROUTES) io.out(`  ${r.method.padEnd(6)} ${r.resource}`);
  io.out('  PUT    <url returned by POST /uploads>  (signed, no bearer)');
  io.out(
    '  GET    /config, /collections, /experiments[/{id}[/patterns/{name}[/evaluation]]]  (web app)',
  );
  io.out('  POST   /experiments  (web app: starts an experiment in this process)');
  io.out('Press Ctrl+C to stop.');
  // The first SIGINT/SIGTERM drains (within --stop-timeout); a second one stops at once.
  let forceStop: () => void = () => {};
  const force = new Promise<void>((r) => {
    forceStop = r;
  });
  await new Promise<void>((resolveStop) => {
    const stop = () => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      const again = () => {
        process.off('SIGINT', again);
        process.off('SIGTERM', again);
        io.err('stopping now');
        forceStop();
      };
      process.on('SIGINT', again);
      process.on('SIGTERM', again);
      resolveStop();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
  const left = await running.close({
    timeoutMs: stopTimeout * 1000,
    force,
    onWait: (work) =>
      io.err(
        `stopping: waiting up to ${stopTimeout} s for ${describeWork(work)} (Ctrl+C again to stop now)`,
      ),
  });
  if (left.requests + left.experiments > 0) {
    io.err(`stopped before ${describeWork(left)} finished`);
    if (left.requests > 0) {
      io.err('  an upload among them keeps its previous version served: upload it again');
    }
    if (left.experiments > 0) {
      io.err('  an experiment resumes with: ai4rag experiment --experiment-id <id> (same inputs)');
    }
    io.out('stopped');
    // What was cut short may still hold the event loop (a model request awaiting its answer): leave once the
    // output is written.
    setTimeout(() => process.exit(1), 1000).unref();
    return 1;
  }
  io.out('stopped');
  return 0;
}
