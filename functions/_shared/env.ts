/**
 * Parsing of the Lambda environment the CDK stack sets. Env records are passed in (shared/src/config.ts owns
 * `process.env`), so tests inject their own and a bad deployment fails at the first invocation with one message.
 */
import * as z from 'zod';
import {
  DEFAULT_COLLECTION,
  KB_COLLECTION_NAME,
  KB_COLLECTION_RULE,
} from '../../shared/src/defaults.js';
import { parseEndpoints, resolveModel } from '../../shared/src/endpoints.js';
import { ValidationError } from '../../shared/src/errors.js';
import { type PriceTable, parsePriceTable } from '../../shared/src/pricing.js';
import { QUERY_TRANSFORMS } from '../../shared/src/retrieval/query-transform.js';
import { RERANK_CANDIDATES } from '../../shared/src/retrieval/rerank.js';
import { parseMetadataFilter } from '../../shared/src/vectorstores/filter.js';
import type { MetadataFilter } from '../../shared/src/vectorstores/types.js';

/** An environment record (`ENV` in production, a literal in tests). */
export type EnvRecord = Readonly<Record<string, string | undefined>>;

/** Vector-store backends a function can serve from. */
export type FunctionStoreKind = 'pgvector' | 'milvus' | 'pglite';

/**
 * The chunking-independent part of a promoted pattern that the query functions apply: retrieval and generation
 * (pattern.json `settings.retrieval` / `settings.generation`), plus the embedding model and chunking it was built
 * with (used by ingestion).
 */
export const ServingPatternSchema = z.object({
  chunking: z
    .object({
      method: z.enum(['recursive', 'hybrid', 'fixed', 'semantic', 'hierarchical']),
      chunk_size: z.number().int().min(1),
      chunk_overlap: z.number().int().min(0),
    })
    .loose()
    .optional(),
  embedding: z
    .object({ model_id: z.string().min(1) })
    .loose()
    .optional(),
  retrieval: z
    .object({
      method: z.enum(['simple', 'window']),
      number_of_chunks: z.number().int().min(1).max(100),
      search_mode: z.enum(['vector', 'hybrid']),
      window_size: z.number().int().min(0).max(4).optional(),
      ranker_strategy: z.enum(['', 'rrf', 'weighted', 'normalized']).optional(),
      ranker_k: z.number().int().min(0).max(100).optional(),
      ranker_alpha: z.number().min(0).max(1).optional(),
      /** Cross-encoder reranking of `candidates` fused passages down to `number_of_chunks`. */
      reranker: z
        .object({
          model_id: z.string().min(1),
          candidates: z.number().int().min(1).max(RERANK_CANDIDATES.MAX),
        })
        .loose()
        .optional(),
      /** A query transform the pattern was optimized with (absent: none). */
      query_transform: z.enum(QUERY_TRANSFORMS).optional(),
      /**
       * A metadata filter every search of the deployment applies (e.g. one tenant's documents), in the language
       * of `shared/src/vectorstores/filter.ts`; a request's filter narrows it (both must match), never widens it.
       */
      filter: z
        .unknown()
        .superRefine((value, ctx) => {
          try {
            parseMetadataFilter(value);
          } catch (error: unknown) {
            ctx.addIssue({ code: 'custom', message: (error as Error).message });
          }
        })
        .transform((value) => value as MetadataFilter)
        .optional(),
    })
    .loose()
    .refine((r) => r.query_transform !== 'rm3' || r.search_mode === 'hybrid', {
      message: 'query_transform rm3 needs search_mode hybrid',
      path: ['query_transform'],
    })
    .refine((r) => r.reranker === undefined || r.reranker.candidates >= r.number_of_chunks, {
      message: 'reranker.candidates must be at least number_of_chunks',
      path: ['reranker', 'candidates'],
    }),
  generation: z
    .object({
      model_id: z.string().min(1),
      temperature: z.number().min(0).max(2).optional(),
      max_completion_tokens: z.number().int().min(1).optional(),
      context_template_text: z.string().optional(),
      user_message_text: z.string().optional(),
      system_message_text: z.string().optional(),
    })
    .loose()
    .optional(),
});

/** The validated serving pattern (a subset of a pattern's `settings`). */
export type ServingPattern = z.infer<typeof ServingPatternSchema>;

/** Settings of the functions, parsed from the environment. */
export interface FunctionEnv {
  store: FunctionStoreKind;
  collection: string;
  documentsBucket?: string;
  artifactsBucket?: string;
  queueUrls: { ingest?: string; chunk?: string; embed?: string };
  embeddingModel?: string;
  foundationModel?: string;
  openaiBaseUrl?: string;
  openaiApiKeySecretArn?: string;
  openaiApiKey?: string;
  pgvectorSecretArn?: string;
  milvusTokenSecretArn?: string;
  /** The rerank endpoint (AI4RAG_RERANK_BASE_URL, see `shared/src/endpoints.ts`). */
  rerankBaseUrl?: string;
  /** The reranker model (AI4RAG_RERANK_MODEL; `model@name` for a named endpoint): reranks every query by default. */
  rerankModel?: string;
  /** Default candidates fetched before reranking (AI4RAG_RERANK_CANDIDATES). */
  rerankCandidates?: number;
  rerankApiKeySecretArn?: string;
  rerankApiKey?: string;
  servingPattern?: ServingPattern;
  /** USD per million tokens per model (AI4RAG_PRICES): the answers' `cost_usd`. */
  prices?: PriceTable;
}

function get(env: EnvRecord, name: string): string | undefined {
  const v = env[name]?.trim();
  return v === undefined || v === '' ? undefined : v;
}

/**
 * Parses the function settings.
 * @throws {ValidationError} for an unknown AI4RAG_STORE, a collection not starting with "ai4rag", an
 * AI4RAG_SERVING_PATTERN that is not a valid pattern `settings` JSON, or an AI4RAG_PRICES that is not a price table.
 * @example parseFunctionEnv({ AI4RAG_STORE: 'pgvector', AI4RAG_COLLECTION: 'ai4rag_kb' })
 */
export function parseFunctionEnv(env: EnvRecord): FunctionEnv {
  const store = get(env, 'AI4RAG_STORE') ?? 'pglite';
  if (store !== 'pgvector' && store !== 'milvus' && store !== 'pglite') {
    throw new ValidationError(`AI4RAG_STORE must be pgvector, milvus or pglite, got "${store}"`);
  }
  const collection = get(env, 'AI4RAG_COLLECTION') ?? DEFAULT_COLLECTION;
  if (!KB_COLLECTION_NAME.test(collection)) {
    throw new ValidationError(`AI4RAG_COLLECTION ${KB_COLLECTION_RULE}, got "${collection}"`);
  }
  const out: FunctionEnv = { store, collection, queueUrls: {} };
  const set = <K extends keyof FunctionEnv>(key: K, name: string): void => {
    const v = get(env, name);
    if (v !== undefined) (out as unknown as Record<string, unknown>)[key] = v;
  };
  set('documentsBucket', 'AI4RAG_DOCUMENTS_BUCKET');
  set('artifactsBucket', 'AI4RAG_ARTIFACTS_BUCKET');
  set('embeddingModel', 'AI4RAG_EMBEDDING_MODEL');
  set('foundationModel', 'AI4RAG_FOUNDATION_MODEL');
  set('openaiBaseUrl', 'OPENAI_BASE_URL');
  set('openaiApiKeySecretArn', 'OPENAI_API_KEY_SECRET_ARN');
  set('openaiApiKey', 'OPENAI_API_KEY');
  set('pgvectorSecretArn', 'PGVECTOR_SECRET_ARN');
  set('milvusTokenSecretArn', 'MILVUS_TOKEN_SECRET_ARN');
  set('rerankBaseUrl', 'AI4RAG_RERANK_BASE_URL');
  set('rerankModel', 'AI4RAG_RERANK_MODEL');
  set('rerankApiKeySecretArn', 'AI4RAG_RERANK_API_KEY_SECRET_ARN');
  set('rerankApiKey', 'AI4RAG_RERANK_API_KEY');
  for (const [name, variable] of [
    ['ingest', 'AI4RAG_INGEST_QUEUE_URL'],
    ['chunk', 'AI4RAG_CHUNK_QUEUE_URL'],
    ['embed', 'AI4RAG_EMBED_QUEUE_URL'],
  ] as const) {
    const v = get(env, variable);
    if (v !== undefined) out.queueUrls[name] = v;
  }
  const pattern = get(env, 'AI4RAG_SERVING_PATTERN');
  if (pattern !== undefined) out.servingPattern = parseServingPattern(pattern);
  checkRerankEnv(env, out);
  const prices = parsePricesEnv(env);
  if (prices !== undefined) out.prices = prices;
  return out;
}

/**
 * Parses AI4RAG_PRICES: a price table as JSON, USD per million tokens per model id,
 * `{"gpt-4o-mini": {"input": 0.15, "output": 0.6}}` (see `shared/src/pricing.ts`); undefined when unset.
 * @throws {ValidationError} when it is not JSON or not a price table (naming the bad entries).
 * @example parsePricesEnv({ AI4RAG_PRICES: '{"gpt-4o-mini": {"input": 0.15, "output": 0.6}}' })
 */
export function parsePricesEnv(env: EnvRecord): PriceTable | undefined {
  const text = get(env, 'AI4RAG_PRICES');
  if (text === undefined) return undefined;
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new ValidationError('AI4RAG_PRICES is not valid JSON', { cause: error });
  }
  return parsePriceTable(raw, 'AI4RAG_PRICES');
}

/**
 * The reranker settings must resolve to an endpoint before anything asks for reranking: the default model
 * (AI4RAG_RERANK_MODEL) and the serving pattern's reranker go to the rerank endpoint (AI4RAG_RERANK_BASE_URL)
 * or to the one they name (`model@name`, AI4RAG_ENDPOINT_<NAME>_BASE_URL).
 */
function checkRerankEnv(env: EnvRecord, out: FunctionEnv): void {
  const candidates = get(env, 'AI4RAG_RERANK_CANDIDATES');
  if (candidates !== undefined) {
    const n = Number(candidates);
    if (!/^\d+$/.test(candidates) || n < 1 || n > RERANK_CANDIDATES.MAX) {
      throw new ValidationError(
        `AI4RAG_RERANK_CANDIDATES must be an integer in 1..${RERANK_CANDIDATES.MAX}, got "${candidates}"`,
      );
    }
    out.rerankCandidates = n;
  }
  const patternModel = out.servingPattern?.retrieval.reranker?.model_id;
  const specs: [string, string][] = [];
  if (out.rerankModel !== undefined) specs.push(['AI4RAG_RERANK_MODEL', out.rerankModel]);
  if (patternModel !== undefined) specs.push(["the serving pattern's reranker", patternModel]);
  if (specs.length === 0 && out.rerankBaseUrl === undefined) {
    if (candidates !== undefined) {
      throw new ValidationError(
        'AI4RAG_RERANK_CANDIDATES needs a reranker: set AI4RAG_RERANK_BASE_URL (and AI4RAG_RERANK_MODEL to rerank by default)',
      );
    }
    return;
  }
  // Only now: a deployment that does not rerank is not failed by another role's endpoint variables.
  const endpoints = parseEndpoints(env);
  for (const [what, spec] of specs) {
    try {
      if (resolveModel(endpoints, 'rerank', spec).endpoint === undefined) {
        throw new ValidationError(
          `"${spec}" is a local model; rerankers are served by an endpoint`,
        );
      }
    } catch (error) {
      throw new ValidationError(`${what}: ${(error as Error).message}`, { cause: error });
    }
  }
  if (
    out.rerankModel !== undefined &&
    patternModel !== undefined &&
    out.rerankModel !== patternModel
  ) {
    throw new ValidationError(
      `AI4RAG_RERANK_MODEL '${out.rerankModel}' differs from the serving pattern's reranker '${patternModel}' (the endpoint serves one model)`,
    );
  }
}

/**
 * Parses AI4RAG_SERVING_PATTERN: the `settings` object of a pattern.json (a whole pattern.json is accepted too).
 * @throws {ValidationError} when it is not JSON or misses retrieval settings.
 */
export function parseServingPattern(text: string): ServingPattern {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new ValidationError('AI4RAG_SERVING_PATTERN is not valid JSON', { cause: error });
  }
  const settings =
    raw !== null && typeof raw === 'object' && 'settings' in raw
      ? (raw as { settings: unknown }).settings
      : raw;
  const parsed = ServingPatternSchema.safeParse(settings);
  if (!parsed.success) {
    const detail = parsed.error.issues
      .slice(0, 3)
      .map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`)
      .join('; ');
    throw new ValidationError(`AI4RAG_SERVING_PATTERN is not a pattern's settings: ${detail}`, {
      cause: parsed.error,
    });
  }
  return parsed.data;
}
