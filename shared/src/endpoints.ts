/**
 * Model endpoints per role. Users commonly run embeddings on TEI or Ollama, chat on vLLM or a hosted provider, and
 * a reranker somewhere else: each role takes its own OpenAI-compatible base URL and key, falling back to
 * `OPENAI_BASE_URL` / `OPENAI_API_KEY`, and any model id may name an endpoint of its own (`model@name`, with
 * `AI4RAG_ENDPOINT_<NAME>_BASE_URL`), so one experiment can mix endpoints. Pure: the caller passes the environment.
 */
import { ValidationError } from './errors.js';

/**
 * The key sent to an endpoint configured without one (a local Ollama, TEI or vLLM without auth): the openai SDK
 * requires a non-empty key, and servers without auth ignore it.
 */
export const NO_API_KEY = 'no-key';

/** What a model is used for. */
export type ModelRole = 'embedding' | 'chat' | 'judge' | 'rerank';

export const MODEL_ROLES: readonly ModelRole[] = ['embedding', 'chat', 'judge', 'rerank'];

/** One endpoint: where requests go and the key they carry. */
export interface Endpoint {
  /** `openai` (OPENAI_*), a role (`embedding`, …) or a named endpoint. */
  name: string;
  baseURL: string;
  /** Sent as a bearer token; absent for servers without auth (a local Ollama). */
  apiKey?: string;
}

/** The endpoints an environment defines. */
export interface Endpoints {
  /** The endpoint a bare model id of each role uses (absent: none configured for that role). */
  roles: Partial<Record<ModelRole, Endpoint>>;
  /** Endpoints a model id can name with `@name`. */
  named: Readonly<Record<string, Endpoint>>;
}

/** A model id resolved to its endpoint. */
export interface ResolvedModel {
  /** The model id sent to the server (without `@name`). */
  model: string;
  /** Undefined for local models (`local/…`). */
  endpoint?: Endpoint;
}

/** Bad endpoint configuration; the message lists every problem at once. */
export class EndpointConfigError extends ValidationError {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'EndpointConfigError';
  }
}

const ROLE_VAR: Record<ModelRole, string> = {
  embedding: 'AI4RAG_EMBEDDING',
  chat: 'AI4RAG_CHAT',
  judge: 'AI4RAG_JUDGE',
  rerank: 'AI4RAG_RERANK',
};
/** Where a role falls back when its own variables are unset (the judge is a chat model). */
const FALLBACK: Record<ModelRole, readonly ('chat' | 'openai')[]> = {
  embedding: ['openai'],
  chat: ['openai'],
  judge: ['chat', 'openai'],
  rerank: [],
};
const NAMED = /^AI4RAG_ENDPOINT_([A-Z0-9_]+)_(BASE_URL|API_KEY)$/;
const NAME = /^[a-z0-9][a-z0-9_-]{0,31}$/;

function checkUrl(variable: string, value: string, problems: string[]): boolean {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    problems.push(`${variable}=${JSON.stringify(value)} is not a URL`);
    return false;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    problems.push(`${variable}=${JSON.stringify(value)} must be an http(s) URL`);
    return false;
  }
  return true;
}

/**
 * Reads the endpoint variables: `AI4RAG_{EMBEDDING,CHAT,JUDGE,RERANK}_BASE_URL` / `_API_KEY` per role (embedding
 * and chat fall back to `OPENAI_BASE_URL` / `OPENAI_API_KEY`, the judge to chat's), and
 * `AI4RAG_ENDPOINT_<NAME>_BASE_URL` / `_API_KEY` for named endpoints.
 * @throws {EndpointConfigError} naming every bad variable (a key without its URL, a URL that is not http(s)).
 * @example parseEndpoints({ OPENAI_BASE_URL: 'http://127.0.0.1:11434/v1' }).roles.embedding?.baseURL
 */
export function parseEndpoints(env: Readonly<Record<string, string | undefined>>): Endpoints {
  const problems: string[] = [];
  const read = (prefix: string, name: string): Endpoint | undefined => {
    const baseURL = env[`${prefix}_BASE_URL`]?.trim();
    const apiKey = env[`${prefix}_API_KEY`];
    if (!baseURL) {
      if (apiKey && prefix !== 'OPENAI') {
        problems.push(`${prefix}_API_KEY is set but ${prefix}_BASE_URL is not`);
      }
      return undefined;
    }
    if (!checkUrl(`${prefix}_BASE_URL`, baseURL, problems)) return undefined;
    return { name, baseURL: baseURL.replace(/\/+$/, ''), ...(apiKey ? { apiKey } : {}) };
  };
  const openai = read('OPENAI', 'openai');
  const own = Object.fromEntries(MODEL_ROLES.map((r) => [r, read(ROLE_VAR[r], r)])) as Record<
    ModelRole,
    Endpoint | undefined
  >;
  const roles: Partial<Record<ModelRole, Endpoint>> = {};
  for (const role of MODEL_ROLES) {
    const chosen =
      own[role] ??
      FALLBACK[role]
        .map((f) => (f === 'openai' ? openai : own[f]))
        .find((e): e is Endpoint => e !== undefined);
    if (chosen) roles[role] = chosen;
  }
  const namedVars = new Set<string>();
  for (const key of Object.keys(env)) {
    const m = NAMED.exec(key);
    if (m) namedVars.add(m[1] as string);
  }
  const named: Record<string, Endpoint> = {};
  for (const upper of [...namedVars].sort()) {
    const name = upper.toLowerCase().replaceAll('_', '-');
    if (!NAME.test(name)) {
      problems.push(
        `AI4RAG_ENDPOINT_${upper}_*: endpoint name ${JSON.stringify(name)} is too long`,
      );
      continue;
    }
    const endpoint = read(`AI4RAG_ENDPOINT_${upper}`, name);
    if (endpoint) named[name] = endpoint;
  }
  if (problems.length > 0) {
    throw new EndpointConfigError(`model endpoints: ${problems.join('; ')}`);
  }
  return { roles, named: Object.freeze(named) };
}

/**
 * Resolves a model id of a role: `local/…` needs no endpoint; `model@name` uses the named endpoint; any other id
 * uses the role's endpoint.
 * @throws {EndpointConfigError} for an unknown `@name`, or a remote model whose role has no endpoint (the message
 *   names the variables to set).
 * @example resolveModel(endpoints, 'chat', 'llama3:8b@vllm') // { model: 'llama3:8b', endpoint: named.vllm }
 */
export function resolveModel(endpoints: Endpoints, role: ModelRole, spec: string): ResolvedModel {
  if (spec.startsWith('local/')) return { model: spec };
  const at = endpointAt(spec);
  if (at > 0) {
    const name = spec.slice(at + 1);
    const endpoint = endpoints.named[name];
    if (!endpoint) {
      const known = Object.keys(endpoints.named);
      throw new EndpointConfigError(
        `model "${spec}" names endpoint "${name}", which is not defined: set AI4RAG_ENDPOINT_${name
          .toUpperCase()
          .replaceAll(
            '-',
            '_',
          )}_BASE_URL${known.length > 0 ? ` (defined: ${known.join(', ')})` : ''}`,
      );
    }
    return { model: spec.slice(0, at), endpoint };
  }
  const endpoint = endpoints.roles[role];
  if (!endpoint) {
    const own = `${ROLE_VAR[role]}_BASE_URL`;
    const fallbacks = FALLBACK[role].map((f) =>
      f === 'openai' ? 'OPENAI_BASE_URL' : `${ROLE_VAR[f]}_BASE_URL`,
    );
    throw new EndpointConfigError(
      `the ${role} model "${spec}" needs an endpoint: set ${[own, ...fallbacks].join(' or ')}, or name one with "${spec}@<endpoint>"`,
    );
  }
  return { model: spec, endpoint };
}

/** The model id without its `@endpoint` suffix (what a collection or a cache records it under, with the endpoint). */
export function modelName(spec: string): string {
  const at = endpointAt(spec);
  return at > 0 ? spec.slice(0, at) : spec;
}

/** Position of the `@` of a `model@name` suffix (a valid endpoint name after it), or -1. */
function endpointAt(spec: string): number {
  if (spec.startsWith('local/')) return -1;
  const at = spec.lastIndexOf('@');
  return at > 0 && NAME.test(spec.slice(at + 1)) ? at : -1;
}
