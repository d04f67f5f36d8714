/**
 * The reranking flags of `search`, `ask`, `serve` and `experiment`: `--rerank MODEL`, `--rerank-url URL`,
 * `--rerank-candidates N`, validated here so every command names the flag and value it rejects.
 */
import { ENV } from '../../shared/src/config.js';
import { parseEndpoints, resolveModel } from '../../shared/src/endpoints.js';
import { ValidationError } from '../../shared/src/errors.js';
import {
  defaultRerankCandidates,
  RERANK_CANDIDATES,
  rerankCandidatesProblem,
  TeiReranker,
} from '../../shared/src/retrieval/rerank.js';
import { type OptionSpec, optInt, type Parsed, str } from './args.js';

/** The reranking flags. */
export const RERANK_OPTIONS: OptionSpec = {
  rerank: { type: 'string' },
  'rerank-url': { type: 'string' },
  'rerank-candidates': { type: 'string' },
};

/** Help text of the reranking flags (shared by the commands that take them). */
export const RERANK_HELP = `Reranking options (search, ask, serve, experiment):
  --rerank MODEL           rerank the fused candidates with a TEI-compatible cross-encoder (POST /rerank), keep k;
                           MODEL@name uses the endpoint AI4RAG_ENDPOINT_<NAME>_BASE_URL (experiment: adds
                           reranker ["none", MODEL] to the search space; serve: reranks every request unless it
                           sends "rerank": false)
  --rerank-url URL         the endpoint (default AI4RAG_RERANK_BASE_URL; AI4RAG_RERANK_API_KEY is sent as a bearer token)
  --rerank-candidates N    fused candidates reranked down to k: k..${RERANK_CANDIDATES.MAX} (default max(${RERANK_CANDIDATES.MIN_DEFAULT}, ${RERANK_CANDIDATES.FACTOR}k));
                           experiment: adds rerank_candidates [0, N]`;

/** Per-attempt timeout and retries of the CLI's reranker (a failure then degrades to the retrieval order). */
const CLI_RERANK = Object.freeze({ timeoutMs: 30_000, maxRetries: 2 });

function rerankUrl(p: Parsed): string | undefined {
  const url = str(p, 'rerank-url')?.trim();
  if (url !== undefined && !/^https?:\/\/[^\s/]+/.test(url)) {
    throw new ValidationError(`--rerank-url must be an http(s) URL, got "${url}"`);
  }
  return url;
}

/**
 * Where `model` is served: `--rerank-url` (with AI4RAG_RERANK_API_KEY), else the endpoint the model id resolves
 * to (AI4RAG_RERANK_BASE_URL, or AI4RAG_ENDPOINT_<NAME>_BASE_URL for `model@name`).
 */
function endpointOf(p: Parsed, model: string): { baseURL: string; apiKey?: string } {
  const url = rerankUrl(p);
  const roleKey = ENV.AI4RAG_RERANK_API_KEY;
  if (url !== undefined) return { baseURL: url, ...(roleKey ? { apiKey: roleKey } : {}) };
  let endpoint: ReturnType<typeof resolveModel>['endpoint'];
  try {
    endpoint = resolveModel(parseEndpoints(ENV), 'rerank', model).endpoint;
  } catch (error) {
    throw new ValidationError(
      `--rerank ${model}: ${(error as Error).message} (or give --rerank-url URL)`,
      {
        cause: error,
      },
    );
  }
  if (endpoint === undefined) {
    throw new ValidationError(
      `--rerank ${model}: a local model id; rerankers are served by an endpoint`,
    );
  }
  return { baseURL: endpoint.baseURL, ...(endpoint.apiKey ? { apiKey: endpoint.apiKey } : {}) };
}

function modelFlag(p: Parsed): string | undefined {
  const model = str(p, 'rerank');
  if (model !== undefined && model.trim() === '') {
    throw new ValidationError('--rerank needs a model id, e.g. --rerank BAAI/bge-reranker-base');
  }
  return model?.trim();
}

function requireRerank(p: Parsed, flags: readonly string[]): void {
  for (const name of flags) {
    if (str(p, name) !== undefined) {
      throw new ValidationError(`--${name} applies only with --rerank MODEL`);
    }
  }
}

/** Reranking of one `search` or `ask`. */
export interface CliRerank {
  reranker: TeiReranker;
  candidates: number;
}

/**
 * The reranker and candidate count of `search` / `ask`, or undefined without `--rerank`.
 * @throws {ValidationError} naming the flag: `--rerank-url`/`--rerank-candidates` without `--rerank`, no
 * endpoint for the model, a URL that is not http(s), candidates outside k..200.
 * @example rerankFrom(parse(['--rerank', 'bge', '--rerank-url', 'http://127.0.0.1:8080'], RERANK_OPTIONS), 5)
 */
export function rerankFrom(p: Parsed, k: number): CliRerank | undefined {
  const model = modelFlag(p);
  if (model === undefined) {
    requireRerank(p, ['rerank-url', 'rerank-candidates']);
    return undefined;
  }
  const endpoint = endpointOf(p, model);
  const candidates = optInt(p, 'rerank-candidates') ?? defaultRerankCandidates(k);
  const problem = rerankCandidatesProblem(candidates, k);
  if (problem !== undefined) throw new ValidationError(`--rerank-candidates ${problem}`);
  return {
    reranker: new TeiReranker({ ...endpoint, model, ...CLI_RERANK }),
    candidates,
  };
}

function candidatesFlag(p: Parsed): number | undefined {
  const n = optInt(p, 'rerank-candidates');
  if (n !== undefined && (n < 1 || n > RERANK_CANDIDATES.MAX)) {
    throw new ValidationError(
      `--rerank-candidates must be an integer in 1..${RERANK_CANDIDATES.MAX}, got ${n}`,
    );
  }
  return n;
}

/**
 * The environment of `serve`'s runtime for the reranking flags: the endpoint (`--rerank-url` alone makes
 * reranking available per request), the model (`--rerank` reranks every request by default) and the default
 * candidates.
 * @throws {ValidationError} naming the flag.
 */
export function serveRerankEnv(p: Parsed): Record<string, string> {
  const model = modelFlag(p);
  if (model === undefined) requireRerank(p, ['rerank-candidates']);
  const url = rerankUrl(p);
  const candidates = candidatesFlag(p);
  return {
    ...(url !== undefined && { AI4RAG_RERANK_BASE_URL: url }),
    ...(model !== undefined && { AI4RAG_RERANK_MODEL: model }),
    ...(candidates !== undefined && { AI4RAG_RERANK_CANDIDATES: String(candidates) }),
  };
}

/**
 * `experiment`'s reranking flags: the search-space overrides they add (`reranker: ['none', MODEL]`, and
 * `rerank_candidates: [0, N]` with `--rerank-candidates`) and the runtime environment (the endpoint).
 * @throws {ValidationError} naming the flag, or when the search space already lists these parameters.
 */
export function experimentRerank(
  p: Parsed,
  searchSpace: unknown,
): { overrides?: Record<string, unknown[]>; env: Record<string, string> } {
  const model = modelFlag(p);
  if (model === undefined) requireRerank(p, ['rerank-candidates']);
  const url = rerankUrl(p);
  const env: Record<string, string> = url === undefined ? {} : { AI4RAG_RERANK_BASE_URL: url };
  if (model === undefined) return { env };
  const listed =
    typeof searchSpace === 'object' && searchSpace !== null
      ? ['reranker', 'rerank_candidates'].filter((name) => name in searchSpace)
      : [];
  if (listed.length > 0) {
    throw new ValidationError(
      `--rerank: the --search-space file already lists ${listed.map((n) => `"${n}"`).join(' and ')}; give the rerankers in one place`,
    );
  }
  const candidates = candidatesFlag(p);
  return {
    overrides: {
      reranker: ['none', model],
      ...(candidates !== undefined && { rerank_candidates: [0, candidates] }),
    },
    env,
  };
}
