/**
 * The web app of `ai4rag serve`: its static assets (built by `scripts/build-web.ts` into `web/dist`, served with a
 * strict Content-Security-Policy), the JSON routes only the local server has (collections, experiments, the
 * served configuration), experiments started from the page and run in this process through the same local state
 * machine as `ai4rag experiment`, and the per-request choice of an experiment's pattern to answer with.
 */
import { existsSync, realpathSync, statSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import type { ServerResponse } from 'node:http';
import { basename, dirname, extname, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { APIGatewayProxyResult } from 'aws-lambda';
import * as z from 'zod';
import { type EnvRecord, parseFunctionEnv } from '../../functions/_shared/env.js';
import { errorResponse, jsonResponse } from '../../functions/_shared/http.js';
import {
  embedderFactory,
  endpointKeys,
  modelFactory,
  type Runtime,
  runtimeConfig,
} from '../../functions/_shared/runtime-common.js';
import { parseWith } from '../../shared/src/api/schemas.js';
import { parseEndpoints } from '../../shared/src/endpoints.js';
import { NotFoundError, ValidationError } from '../../shared/src/errors.js';
import {
  checkExperimentId,
  type ExperimentSummary,
  listCollections,
  listExperiments,
  readExperiment,
  readPattern,
  readPatternEvaluation,
} from '../../shared/src/experiment/catalog.js';
import { EXPERIMENT_ID, parseExperimentInput } from '../../shared/src/experiment/input.js';
import { experimentPrefix, ledgerKeys } from '../../shared/src/experiment/ledger.js';
import { FsObjectStore, putJson } from '../../shared/src/ports/object-store.js';
import { runLocalExperiment } from './local-state-machine.js';

/** Where `scripts/build-web.ts` writes the app. */
export const WEB_DIST_DIR = fileURLToPath(new URL('../../web/dist/', import.meta.url));

/**
 * The page's Content-Security-Policy: scripts, styles and requests to this origin only (no inline script, no
 * CDN, no other host); images also as data: URIs (the favicon).
 */
export const WEB_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
};

/** Whether a GET path is the page or one of its assets (served without the token: they hold no data). */
export function isWebPath(pathname: string): boolean {
  return pathname === '/' || pathname === '/index.html' || pathname.startsWith('/assets/');
}

/**
 * The file of a web path inside `root`, or undefined when the path climbs out of it (`..`, encoded or not,
 * backslashes, NUL) or names no asset.
 */
export function webFile(root: string, pathname: string): string | undefined {
  if (pathname === '/' || pathname === '/index.html') return join(root, 'index.html');
  let rel: string;
  try {
    rel = decodeURIComponent(pathname.slice('/assets/'.length));
  } catch {
    return undefined;
  }
  if (rel === '' || rel.includes('\\') || rel.includes('\0')) return undefined;
  if (rel.split('/').some((part) => part === '..' || part === '.' || part === '')) return undefined;
  const base = resolve(root, 'assets');
  const file = resolve(base, rel);
  return file.startsWith(base + sep) ? file : undefined;
}

/** Writes the page or an asset (404 for anything else, 503 when the app was not built). */
export async function sendWebFile(
  res: ServerResponse,
  root: string,
  pathname: string,
  head: boolean,
): Promise<void> {
  const security = {
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'cross-origin-opener-policy': 'same-origin',
  };
  const file = webFile(root, pathname);
  const info = file === undefined ? undefined : await stat(file).catch(() => undefined);
  if (file === undefined || !info?.isFile()) {
    const built = existsSync(join(root, 'index.html'));
    res.writeHead(built ? 404 : 503, { 'content-type': 'text/plain; charset=utf-8', ...security });
    res.end(
      built
        ? `no asset ${pathname}\n`
        : `the web app is not built (${root} is missing): run npm run build:web\n`,
    );
    return;
  }
  const body = await readFile(file);
  res.writeHead(200, {
    'content-type': CONTENT_TYPES[extname(file)] ?? 'application/octet-stream',
    'content-length': String(body.length),
    'cache-control': 'no-cache',
    'content-security-policy': WEB_CSP,
    ...security,
  });
  res.end(head ? undefined : body);
}

/** Header of a query request that answers with an experiment's pattern: `<experiment id>/<pattern name>`. */
export const PATTERN_HEADER = 'x-ai4rag-pattern';

/**
 * A runtime answering with a pattern: the pattern's retrieval and generation settings and models over its own
 * index, sharing everything else (stores and their connection, object stores, queues) with `base`.
 */
export function patternRuntime(base: Runtime, env: EnvRecord, patternText: string): Runtime {
  const binding = (
    JSON.parse(patternText) as {
      settings?: { vector_store_binding?: { collection_name?: string } };
    }
  ).settings?.vector_store_binding?.collection_name;
  const fenv = parseFunctionEnv({
    ...env,
    AI4RAG_STORE: base.config.store,
    AI4RAG_SERVING_PATTERN: patternText,
    ...(binding !== undefined && { AI4RAG_COLLECTION: binding }),
  });
  const config = runtimeConfig(fenv);
  const keyOf = endpointKeys(env, async () => fenv.openaiApiKey);
  const endpoints = parseEndpoints(env);
  return {
    ...base,
    config,
    embedder: embedderFactory(config, endpoints, keyOf, env),
    model: modelFactory(fenv, endpoints, keyOf),
    // The base runtime owns the stores and their connection.
    close: async () => undefined,
  };
}

/** POST /experiments body. */
const StartExperimentRequest = z.strictObject({
  experiment_id: z.string().regex(EXPERIMENT_ID, 'letters, digits, - and _ only (≤ 63)').optional(),
  documents_dir: z.string().trim().min(1).max(4096).optional().meta({
    description: "a folder on the server's machine; default the served knowledge base's documents",
  }),
  benchmark: z.array(z.record(z.string(), z.unknown())).min(1).max(10_000),
  search_space: z.record(z.string(), z.array(z.unknown())).optional(),
  max_evals: z.number().int().min(1).max(1000).optional(),
  optimizer: z.string().min(1).max(40).optional(),
  foundation_models: z.array(z.string().min(1).max(200)).min(1).optional(),
  embedding_models: z.array(z.string().min(1).max(200)).min(1).optional(),
});

/** An experiment this process runs or ran. */
interface RunRecord {
  experiment_id: string;
  status: 'running' | 'failed' | 'finished';
  started_at: string;
  /** The state machine state last entered. */
  state?: string;
  error?: string;
  promise: Promise<void>;
}

/** Options of {@link createWebApi}. */
export interface WebApiOptions {
  runtime: Runtime;
  env: EnvRecord;
  /** Where the collections live, for the page (no secrets). */
  store: string;
  /**
   * Folders an experiment's `documents_dir` may name (itself or below, after symbolic links are resolved): the
   * token lets a caller read documents into an index, not any file of the machine. @default [process.cwd()]
   */
  documentRoots?: readonly string[];
}

/** The web routes: JSON answers, and which runtime answers a query request. */
export interface WebApi {
  /** Answers a web route, or undefined when the path is none of them. */
  handle(
    method: string,
    pathname: string,
    body: Buffer,
  ): Promise<APIGatewayProxyResult | undefined>;
  /** The runtime of a query request: the served one, or the pattern the header names. */
  runtimeFor(patternHeader: string | undefined): Promise<{ runtime: Runtime; key?: string }>;
  /** Experiments running in this process (awaited by close). */
  running(): Promise<void>[];
}

function jsonBody(body: Buffer): unknown {
  if (body.length === 0) return undefined;
  try {
    return JSON.parse(body.toString('utf8'));
  } catch (error) {
    throw new ValidationError(`request body is not valid JSON: ${(error as Error).message}`);
  }
}

function timestampId(): string {
  const t = new Date().toISOString().replace(/[-:]/g, '').replace(/\..*$/, '').replace('T', '-');
  return `exp-${t.toLowerCase()}`;
}

/** The web routes over a served runtime. */
export function createWebApi(options: WebApiOptions): WebApi {
  const { runtime, env } = options;
  const store = runtime.objectStore;
  const runs = new Map<string, RunRecord>();
  const roots = (options.documentRoots ?? [process.cwd()]).map((r) =>
    existsSync(r) ? realpathSync(resolve(r)) : resolve(r),
  );
  const patternRuntimes = new Map<string, Runtime>();

  const withRun = (s: ExperimentSummary) => {
    const run = runs.get(s.experiment_id);
    return run === undefined
      ? s
      : {
          ...s,
          run: {
            status: run.status,
            started_at: run.started_at,
            ...(run.state !== undefined && { state: run.state }),
            ...(run.error !== undefined && { error: run.error }),
          },
        };
  };

  async function servedChunks(): Promise<number> {
    try {
      const embedder = await runtime.embedder();
      const vs = await runtime.openStore(runtime.config.collection, embedder);
      return (await vs.stats()).chunks;
    } catch (error) {
      if (error instanceof NotFoundError) return 0;
      throw error;
    }
  }

  async function config(): Promise<unknown> {
    const experiments = await listExperiments(store);
    const latest = experiments.find((s) => s.status === 'finished' && s.best !== undefined);
    let suggestion: unknown;
    if (latest?.best !== undefined) {
      const pattern = await readPattern(store, latest.experiment_id, latest.best.pattern_name);
      suggestion = {
        experiment_id: latest.experiment_id,
        pattern_name: latest.best.pattern_name,
        score: latest.best.score,
        metric: latest.optimization_metric,
        collection: pattern.settings.vector_store_binding.collection_name,
      };
    }
    const served = runtime.config.servingPattern;
    return {
      collection: runtime.config.collection,
      store: options.store,
      chunks: await servedChunks(),
      embedding_model: runtime.config.embeddingModel,
      ...(served !== undefined && { serving_pattern: true }),
      rerank_available: runtime.config.rerank !== undefined,
      ...(suggestion !== undefined && { suggestion }),
    };
  }

  function start(raw: unknown): APIGatewayProxyResult {
    const body = parseWith(StartExperimentRequest, raw, 'request body');
    const id = body.experiment_id ?? timestampId();
    if ([...runs.values()].some((r) => r.status === 'running')) {
      return errorResponse(409, 'conflict', 'an experiment is already running in this server');
    }
    let documents = runtime.documents;
    let documentsPrefix = '';
    if (body.documents_dir !== undefined) {
      const path = resolve(body.documents_dir);
      const info = statSync(path, { throwIfNoEntry: false });
      if (info === undefined) {
        throw new ValidationError(`documents_dir "${body.documents_dir}" does not exist`);
      }
      const real = realpathSync(path);
      const inside = roots.some((root) => real === root || real.startsWith(`${root}${sep}`));
      if (!inside) {
        throw new ValidationError(
          `documents_dir "${body.documents_dir}" is outside the folders this server reads documents from (${roots.join(', ')})`,
        );
      }
      // A folder, or one file (as `ai4rag experiment --docs`).
      documents = new FsObjectStore(info.isDirectory() ? path : dirname(path));
      if (!info.isDirectory()) documentsPrefix = basename(path);
    }
    const input = {
      experimentId: id,
      documentsPrefix,
      benchmarkKey: `${experimentPrefix(id)}input/benchmark.json`,
      ...(body.max_evals !== undefined && { maxEvals: body.max_evals }),
      ...(body.optimizer !== undefined && { optimizer: body.optimizer }),
      ...(body.search_space !== undefined && { searchSpace: body.search_space }),
      ...(body.foundation_models !== undefined && { foundationModels: body.foundation_models }),
      ...(body.embedding_models !== undefined && { embeddingModels: body.embedding_models }),
    };
    // The input's own checks before anything runs (the prepare step checks the rest: names, documents).
    parseExperimentInput(input);
    const record: RunRecord = {
      experiment_id: id,
      status: 'running',
      started_at: new Date().toISOString(),
      promise: Promise.resolve(),
    };
    runs.set(id, record);
    record.promise = (async () => {
      try {
        if (await store.exists(ledgerKeys(experimentPrefix(id)).state)) {
          throw new ValidationError(`experiment "${id}" already exists`);
        }
        await putJson(store, input.benchmarkKey, body.benchmark);
        await runLocalExperiment({
          runtime: { ...runtime, documents },
          input,
          onState: (name) => {
            record.state = name;
          },
        });
        record.status = 'finished';
      } catch (error) {
        record.status = 'failed';
        record.error = (error as Error).message;
      }
    })();
    return jsonResponse(202, { experiment_id: id, status: 'running' });
  }

  /** A run of this process before (or without: its prepare step failed) a ledger. */
  const unrecorded = (run: RunRecord) => ({
    experiment_id: run.experiment_id,
    created_at: run.started_at,
    status: 'incomplete' as const,
    trials: { done: 0, failed: 0, running: 0, cached: 0 },
    collections: [],
    run: {
      status: run.status,
      started_at: run.started_at,
      ...(run.state !== undefined && { state: run.state }),
      ...(run.error !== undefined && { error: run.error }),
    },
  });

  async function list(): Promise<unknown[]> {
    const listed = await listExperiments(store);
    const known = new Set(listed.map((s) => s.experiment_id));
    const pending = [...runs.values()].filter((r) => !known.has(r.experiment_id));
    return [...pending.reverse().map(unrecorded), ...listed.map(withRun)];
  }

  async function experiment(id: string): Promise<APIGatewayProxyResult> {
    checkExperimentId(id);
    const run = runs.get(id);
    try {
      return jsonResponse(200, withRun(await readExperiment(store, id)));
    } catch (error) {
      if (!(error instanceof NotFoundError) || run === undefined) throw error;
      return jsonResponse(200, { ...unrecorded(run), trials_list: [], events: [] });
    }
  }

  return {
    running: () => [...runs.values()].filter((r) => r.status === 'running').map((r) => r.promise),
    async runtimeFor(header) {
      if (header === undefined || header === '') return { runtime };
      const [id, name, ...extra] = header.split('/');
      if (id === undefined || name === undefined || extra.length > 0) {
        throw new ValidationError(
          `${PATTERN_HEADER} must be <experiment id>/<pattern name>, got "${header}"`,
        );
      }
      const key = `${id}/${name}`;
      let rt = patternRuntimes.get(key);
      if (rt === undefined) {
        const pattern = await readPattern(store, id, name);
        rt = patternRuntime(runtime, env, JSON.stringify(pattern));
        patternRuntimes.set(key, rt);
      }
      return { runtime: rt, key };
    },
    async handle(method, pathname, body) {
      let parts: string[];
      try {
        parts = pathname.split('/').slice(1).map(decodeURIComponent);
      } catch {
        throw new ValidationError(`invalid path ${pathname}`);
      }
      if (pathname === '/config' && method === 'GET') return jsonResponse(200, await config());
      if (pathname === '/collections' && method === 'GET') {
        return jsonResponse(200, {
          collections: await listCollections(store, runtime.config.collection),
        });
      }
      if (parts[0] !== 'experiments') return undefined;
      if (parts.length === 1) {
        if (method === 'GET') {
          return jsonResponse(200, {
            experiments: await list(),
          });
        }
        if (method === 'POST') return start(jsonBody(body));
        return errorResponse(
          405,
          'method_not_allowed',
          `${method} is not allowed on /experiments`,
          {
            allow: 'GET, POST',
          },
        );
      }
      if (method !== 'GET') {
        return errorResponse(405, 'method_not_allowed', `${method} is not allowed on ${pathname}`, {
          allow: 'GET',
        });
      }
      const id = parts[1] as string;
      if (parts.length === 2) return experiment(id);
      if (parts[2] === 'patterns' && parts.length === 4) {
        return jsonResponse(200, await readPattern(store, id, parts[3] as string));
      }
      if (parts[2] === 'patterns' && parts[4] === 'evaluation' && parts.length === 5) {
        // The page shows answers and scores; the retrieved passages stay in the artefact.
        const records = await readPatternEvaluation(store, id, parts[3] as string);
        return jsonResponse(200, {
          records: records.map(({ answer_contexts, ...r }) => ({
            ...r,
            context_documents: answer_contexts.map((c) => c.document_key),
          })),
        });
      }
      return jsonResponse(404, {
        error: { code: 'not_found', message: `no route ${method} ${pathname}` },
      });
    },
  };
}
