/**
 * Deploy configuration of the CDK app. It comes from CDK context (`cdk.json` defaults, overridden with
 * `-c key=value` on the command line, where every value arrives as a string), so numbers and booleans are
 * coerced here, and every problem is reported at once in one {@link DeployConfigError} that fails synth
 * before any construct is built.
 */
import { readFileSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { z } from 'zod';
import { KB_COLLECTION_NAME, KB_COLLECTION_RULE } from '../shared/src/defaults.js';
import { modelName } from '../shared/src/endpoints.js';
import { ValidationError } from '../shared/src/errors.js';
import { RERANK_CANDIDATES } from '../shared/src/retrieval/rerank.js';

/** Invalid deploy configuration (CDK context or serving pattern): synth stops with this message. */
export class DeployConfigError extends ValidationError {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'DeployConfigError';
  }
}

/** Embedding model used when no OpenAI-compatible endpoint is configured (the local embedder). */
export const LOCAL_EMBEDDING_MODEL = 'local';
/** Foundation model used when no OpenAI-compatible endpoint is configured (local extractive answers). */
export const LOCAL_FOUNDATION_MODEL = 'local/extractive-v1';
/**
 * Largest serving-pattern JSON passed as an environment variable. Lambda caps all variables of a function
 * at 4 KB together, and the other variables need about 1 KB.
 */
export const MAX_SERVING_PATTERN_BYTES = 3000;
/**
 * What the reranker's variables (endpoint, model, candidates, key secret ARN) take of that 4 KB: a serving
 * pattern may use this much less when a reranker is configured.
 */
export const RERANK_ENVIRONMENT_BYTES = 400;
/** What one per-role model endpoint's variables (base URL, key secret ARN) take of the 4 KB. */
export const ROLE_ENDPOINT_ENVIRONMENT_BYTES = 250;
/** Roles that may have an endpoint of their own (`<role>BaseUrl`, `<role>ApiKeySecretName`). */
export const ENDPOINT_ROLES = ['embedding', 'chat', 'judge'] as const;
export type EndpointRole = (typeof ENDPOINT_ROLES)[number];
/** Most candidates a deployment may rerank per query (the query API's own limit). */
const MAX_RERANK_CANDIDATES = RERANK_CANDIDATES.MAX;

const isLocalModel = (id: string): boolean => id === 'local' || id.startsWith('local/');

/** `-c flag=false` arrives as the string 'false'; cdk.json gives a real boolean. */
const contextBoolean = (fallback: boolean) =>
  z.preprocess(
    (value) => (value === 'true' ? true : value === 'false' ? false : value),
    z.boolean({ error: 'must be true or false' }).default(fallback),
  );

const optionalText = z.preprocess(
  (value) => (typeof value === 'string' && value.trim() === '' ? undefined : value),
  z.string().trim().min(1).optional(),
);

const httpsUrl = z.url({
  protocol: /^https$/,
  error: (issue) =>
    issue.input === undefined
      ? 'is required'
      : `must be an https URL (got ${JSON.stringify(issue.input)})`,
});

/** Secrets Manager secret names: 1–512 characters of letters, digits and /_+=.@- . */
const secretName = z
  .string()
  .regex(
    /^[A-Za-z0-9/_+=.@-]{1,512}$/,
    'must be a Secrets Manager secret name ([A-Za-z0-9/_+=.@-])',
  );

/**
 * `corsOrigins`: browser origins allowed by CORS, as a JSON array or a comma-separated string (`-c
 * corsOrigins=https://app.example.com`); each is `*` alone or `scheme://host[:port]` without a path. Empty: off.
 */
const corsOriginsSchema = z
  .preprocess(
    (value) =>
      typeof value === 'string'
        ? value
            .split(',')
            .map((o) => o.trim())
            .filter((o) => o !== '')
        : value,
    z
      .array(
        z
          .string()
          .regex(
            /^(\*|https?:\/\/[A-Za-z0-9.-]+(:\d{1,5})?)$/,
            "must be '*' or an origin such as https://app.example.com (no path)",
          ),
      )
      .default([]),
  )
  .refine((origins) => !origins.includes('*') || origins.length === 1, {
    message: "'*' cannot be combined with other origins",
  });

/**
 * `interfaceEndpoints`: extra interface VPC endpoints, as a JSON array or a comma-separated string. An AWS
 * service is named by its short name (`bedrock-runtime`, `sagemaker.runtime`); a PrivateLink endpoint service (a
 * model server in this or another account) by its full name (`com.amazonaws.vpce.<region>.vpce-svc-…`).
 */
const interfaceEndpointsSchema = z.preprocess(
  (value) =>
    typeof value === 'string'
      ? value
          .split(',')
          .map((e) => e.trim())
          .filter((e) => e !== '')
      : value,
  z
    .array(
      z
        .string()
        .regex(
          /^([a-z0-9][a-z0-9.-]{0,62}|com\.amazonaws\.vpce\.[a-z0-9-]+\.vpce-svc-[0-9a-f]{8,17})$/,
          "must be an AWS service name such as 'bedrock-runtime' or an endpoint service name such as com.amazonaws.vpce.eu-west-1.vpce-svc-0123456789abcdef0",
        ),
    )
    .default([]),
);

/**
 * The raw context keys and their rules. Unknown context keys (CDK feature flags) are ignored.
 */
export const deployContextSchema = z.object({
  vectorStore: z.enum(['pgvector', 'zilliz'], {
    error: (issue) =>
      `must be 'pgvector' or 'zilliz' (got ${issue.input === undefined ? 'nothing' : JSON.stringify(issue.input)})`,
  }),
  zillizUri: httpsUrl.optional(),
  zillizTokenSecretName: secretName.default('ai4rag/zilliz-token'),
  openaiBaseUrl: z.preprocess(
    (value) => (value === '' ? undefined : value),
    z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).optional(),
  ),
  embeddingModel: optionalText,
  foundationModel: optionalText,
  openaiApiKeySecretName: secretName.default('ai4rag/openai-api-key'),
  rerankBaseUrl: z.preprocess(
    (value) => (value === '' ? undefined : value),
    z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).optional(),
  ),
  rerankModel: optionalText,
  rerankCandidates: z.preprocess(
    (value) => (value === '' ? undefined : value),
    z.coerce
      .number({ error: `must be an integer from 1 to ${MAX_RERANK_CANDIDATES}` })
      .int(`must be an integer from 1 to ${MAX_RERANK_CANDIDATES}`)
      .min(1, `must be an integer from 1 to ${MAX_RERANK_CANDIDATES}`)
      .max(MAX_RERANK_CANDIDATES, `must be an integer from 1 to ${MAX_RERANK_CANDIDATES}`)
      .optional(),
  ),
  rerankApiKeySecretName: secretName.optional(),
  embeddingBaseUrl: z.preprocess(
    (value) => (value === '' ? undefined : value),
    z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).optional(),
  ),
  embeddingApiKeySecretName: secretName.optional(),
  chatBaseUrl: z.preprocess(
    (value) => (value === '' ? undefined : value),
    z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).optional(),
  ),
  chatApiKeySecretName: secretName.optional(),
  judgeBaseUrl: z.preprocess(
    (value) => (value === '' ? undefined : value),
    z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).optional(),
  ),
  judgeApiKeySecretName: secretName.optional(),
  servingPattern: optionalText,
  trialConcurrency: z.coerce
    .number({ error: 'must be an integer from 1 to 10' })
    .int('must be an integer from 1 to 10')
    .min(1, 'must be an integer from 1 to 10')
    .max(10, 'must be an integer from 1 to 10')
    .default(2),
  apiAuth: z.enum(['iam', 'apiKey'], { error: "must be 'iam' or 'apiKey'" }).default('iam'),
  collection: z
    .string()
    // The functions check the same rule (functions/_shared/env.ts): a name they would refuse fails the synth.
    .regex(KB_COLLECTION_NAME, KB_COLLECTION_RULE)
    .default('ai4rag_default'),
  dbDeletionProtection: contextBoolean(true),
  dbMultiAz: contextBoolean(false),
  dbInstanceType: z
    .string()
    .regex(/^[a-z0-9]+\.[a-z0-9]+$/, "must be an instance type such as 't4g.small'")
    .default('t4g.small'),
  autoDeleteBuckets: contextBoolean(false),
  alarmEmail: z.email('must be an e-mail address').optional(),
  vpcId: z.preprocess(
    (value) => (value === '' ? undefined : value),
    z
      .string()
      .regex(/^vpc-[0-9a-f]{8,17}$/, "must be a VPC id such as 'vpc-0123456789abcdef0'")
      .optional(),
  ),
  natGateways: z.preprocess(
    (value) => (value === '' ? undefined : value),
    z.coerce
      .number({ error: 'must be an integer from 0 to 2' })
      .int('must be an integer from 0 to 2')
      .min(0, 'must be an integer from 0 to 2')
      .max(2, 'must be an integer from 0 to 2 (the VPC spans two availability zones)')
      .optional(),
  ),
  interfaceEndpoints: interfaceEndpointsSchema,
  awsServiceEndpoints: contextBoolean(true),
  corsOrigins: corsOriginsSchema,
});

/** Raw context after coercion and defaults, before cross-field rules. */
export type DeployContext = z.output<typeof deployContextSchema>;

/** The context keys the app reads (everything else in the context is ignored). */
export const DEPLOY_CONTEXT_KEYS: readonly (keyof DeployContext)[] = Object.keys(
  deployContextSchema.shape,
) as (keyof DeployContext)[];

/** The fields of a promoted `pattern.json` that search and generate need. Extra fields are dropped. */
export const servingPatternSchema = z.object({
  name: z.string().min(1),
  settings: z.object({
    vector_store_binding: z.object({ provider_type: z.string(), collection_name: z.string() }),
    chunking: z
      .object({
        method: z.string(),
        chunk_size: z.number().int().positive(),
        chunk_overlap: z.number().int().nonnegative(),
        include_metadata: z.boolean().optional(),
        parent_chunk_size: z.number().int().positive().optional(),
        semantic_breakpoint: z.enum(['percentile', 'standard_deviation', 'gradient']).optional(),
        semantic_breakpoint_amount: z.number().nonnegative().optional(),
      })
      .optional(),
    embedding: z.object({
      model_id: z.string().min(1),
      embedding_params: z
        .object({
          embedding_dimension: z.number().int().positive(),
          context_length: z.number().int().positive().nullable(),
        })
        .optional(),
    }),
    retrieval: z.object({
      method: z.string().min(1),
      number_of_chunks: z.number().int().positive(),
      search_mode: z.string().min(1),
      window_size: z.number().int().nonnegative().optional(),
      ranker_strategy: z.string().optional(),
      ranker_k: z.number().nonnegative().optional(),
      ranker_alpha: z.number().min(0).max(1).optional(),
      reranker: z
        .object({
          model_id: z.string().min(1),
          candidates: z.number().int().min(1).max(MAX_RERANK_CANDIDATES),
        })
        .optional(),
    }),
    generation: z.object({
      model_id: z.string().min(1),
      temperature: z.number().min(0).max(2),
      max_completion_tokens: z.number().int().positive(),
      context_template_text: z.string(),
      user_message_text: z.string(),
      system_message_text: z.string(),
      language: z.object({ code: z.string(), name: z.string() }),
    }),
  }),
});

/** The promoted pattern as passed to search and generate (`AI4RAG_SERVING_PATTERN`). */
export type ServingPattern = z.output<typeof servingPatternSchema>;

/** The validated deploy configuration the stack is built from. */
export interface DeployConfig {
  vectorStore: 'pgvector' | 'zilliz';
  /** Set for 'zilliz' only. */
  zilliz?: { uri: string; tokenSecretName: string };
  /** OpenAI-compatible endpoint; absent means the local embedder and extractive model. */
  openai?: { baseUrl: string; apiKeySecretName: string };
  /**
   * TEI-compatible reranker endpoint of search, generate and the experiment's trials; `model` (or the serving
   * pattern's reranker) reranks every query by default. Absent: reranking is unavailable.
   */
  rerank?: { baseUrl: string; model?: string; candidates?: number; apiKeySecretName?: string };
  /**
   * Per-role OpenAI-compatible endpoints (embeddings on TEI or Ollama, chat on vLLM, a judge elsewhere); a role
   * without one uses `openai`. Keys are Secrets Manager secrets, read at run time.
   */
  endpoints?: Partial<Record<EndpointRole, { baseUrl: string; apiKeySecretName?: string }>>;
  embeddingModel: string;
  foundationModel: string;
  servingPattern?: ServingPattern;
  trialConcurrency: number;
  apiAuth: 'iam' | 'apiKey';
  collection: string;
  database: { deletionProtection: boolean; multiAz: boolean; instanceType: string };
  autoDeleteBuckets: boolean;
  alarmEmail?: string;
  /** The pgvector network (ignored for Zilliz). */
  network: NetworkConfig;
  /** Browser origins allowed to call the Query API (CORS); absent: CORS off. */
  corsOrigins?: string[];
}

/** Where the pgvector database and the functions that reach it run. */
export interface NetworkConfig {
  /** An existing VPC to deploy into (looked up at synth; the stack then needs an account and region). */
  vpcId?: string;
  /**
   * NAT gateways of the created VPC. Absent: 1 when an outside endpoint (openaiBaseUrl, rerankBaseUrl, a role's
   * endpoint) is configured, else 0. The subnets are the same either way; only the NAT and its routes change.
   */
  natGateways?: number;
  /** Extra interface endpoints (AWS service short names or endpoint service names). */
  interfaceEndpoints: string[];
  /** Create the S3, SQS, Secrets Manager and X-Ray endpoints the functions use (false: the VPC provides them). */
  awsServiceEndpoints: boolean;
}

/** Options of {@link parseDeployConfig}. */
export interface ParseDeployConfigOptions {
  /** Directory a relative `servingPattern` path is resolved against (default: the process cwd). */
  baseDir?: string;
  /** Reads the serving pattern file (default: `fs.readFileSync(path, 'utf8')`). */
  readFile?: (path: string) => string;
}

const formatIssues = (issues: readonly z.core.$ZodIssue[], prefix = ''): string[] =>
  issues.map((issue) => {
    const path = issue.path.map(String).join('.');
    const where = prefix + path;
    return where === '' ? issue.message : `${where}: ${issue.message}`;
  });

const fail = (problems: string[], cause?: unknown): never => {
  throw new DeployConfigError(
    `Invalid deploy configuration (CDK context): ${problems.join('; ')}`,
    cause === undefined ? undefined : { cause },
  );
};

function loadServingPattern(
  path: string,
  options: ParseDeployConfigOptions,
  maxBytes: number,
): { pattern?: ServingPattern; problems: string[] } {
  const file = isAbsolute(path) ? path : resolve(options.baseDir ?? process.cwd(), path);
  let text: string;
  try {
    text = (options.readFile ?? ((p: string) => readFileSync(p, 'utf8')))(file);
  } catch (error) {
    return { problems: [`servingPattern: cannot read ${file} (${(error as Error).message})`] };
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    return { problems: [`servingPattern: ${file} is not JSON (${(error as Error).message})`] };
  }
  const parsed = servingPatternSchema.safeParse(json);
  if (!parsed.success) return { problems: formatIssues(parsed.error.issues, 'servingPattern.') };
  const bytes = Buffer.byteLength(JSON.stringify(parsed.data), 'utf8');
  if (bytes > maxBytes) {
    return {
      problems: [
        `servingPattern: ${bytes} bytes as JSON, more than the ${maxBytes} that fit in a Lambda environment variable (shorten the prompt templates)`,
      ],
    };
  }
  return { pattern: parsed.data, problems: [] };
}

/**
 * Validates the CDK context into a {@link DeployConfig}, reading the serving pattern file if one is named.
 * All problems are collected into one message so a user fixes them in one round.
 *
 * @throws {DeployConfigError} when any context value or the serving pattern is invalid.
 * @example
 * const config = parseDeployConfig({ vectorStore: 'zilliz', zillizUri: 'https://x.zillizcloud.com' });
 * new Ai4ragStack(app, 'Ai4rag', { config });
 */
export function parseDeployConfig(
  context: Readonly<Record<string, unknown>>,
  options: ParseDeployConfigOptions = {},
): DeployConfig {
  const parsed = deployContextSchema.safeParse(context);
  if (!parsed.success) return fail(formatIssues(parsed.error.issues), parsed.error);
  const ctx = parsed.data;
  const problems: string[] = [];

  if (ctx.vectorStore === 'zilliz' && ctx.zillizUri === undefined) {
    problems.push("zillizUri: is required when vectorStore is 'zilliz' (an https URL)");
  }
  if (ctx.vpcId !== undefined && ctx.natGateways !== undefined) {
    problems.push('natGateways: applies to the VPC the stack creates, not to an existing vpcId');
  }
  const rerankKeys = (
    ['rerankModel', 'rerankCandidates', 'rerankApiKeySecretName'] as const
  ).filter((key) => ctx[key] !== undefined);
  if (ctx.rerankBaseUrl === undefined) {
    for (const key of rerankKeys) {
      problems.push(`${key}: needs rerankBaseUrl (the TEI-compatible reranker endpoint)`);
    }
  }
  // The functions get the one rerank endpoint; `model@name` endpoints exist only locally.
  const namesEndpoint = (id: string): boolean => modelName(id) !== id;
  if (ctx.rerankModel !== undefined && namesEndpoint(ctx.rerankModel)) {
    problems.push(
      `rerankModel: '${ctx.rerankModel}' names an endpoint (model@name); the deployment has one, rerankBaseUrl`,
    );
  }
  const roleUrl = {
    embedding: ctx.embeddingBaseUrl,
    chat: ctx.chatBaseUrl,
    judge: ctx.judgeBaseUrl,
  };
  const roleSecret = {
    embedding: ctx.embeddingApiKeySecretName,
    chat: ctx.chatApiKeySecretName,
    judge: ctx.judgeApiKeySecretName,
  };
  for (const role of ENDPOINT_ROLES) {
    if (roleSecret[role] !== undefined && roleUrl[role] === undefined) {
      problems.push(`${role}ApiKeySecretName: needs ${role}BaseUrl`);
    }
  }
  const roleEndpoints = ENDPOINT_ROLES.filter((role) => roleUrl[role] !== undefined);
  let pattern: ServingPattern | undefined;
  if (ctx.servingPattern !== undefined) {
    const budget =
      MAX_SERVING_PATTERN_BYTES -
      (ctx.rerankBaseUrl === undefined ? 0 : RERANK_ENVIRONMENT_BYTES) -
      roleEndpoints.length * ROLE_ENDPOINT_ENVIRONMENT_BYTES;
    const loaded = loadServingPattern(ctx.servingPattern, options, budget);
    // Without a readable pattern the model checks below would only add noise.
    if (loaded.problems.length > 0) return fail([...problems, ...loaded.problems]);
    pattern = loaded.pattern;
  }
  const patternReranker = pattern?.settings.retrieval.reranker;
  if (patternReranker !== undefined) {
    if (namesEndpoint(patternReranker.model_id)) {
      problems.push(
        `servingPattern: its reranker '${patternReranker.model_id}' names an endpoint (model@name); the deployment has one, rerankBaseUrl`,
      );
    }
    if (ctx.rerankBaseUrl === undefined) {
      problems.push(
        `servingPattern: reranks with '${patternReranker.model_id}', so rerankBaseUrl is required`,
      );
    }
    if (ctx.rerankModel !== undefined && ctx.rerankModel !== patternReranker.model_id) {
      problems.push(
        `rerankModel: '${ctx.rerankModel}' differs from the serving pattern's reranker '${patternReranker.model_id}' (the endpoint serves one model)`,
      );
    }
    if (patternReranker.candidates < (pattern?.settings.retrieval.number_of_chunks ?? 0)) {
      problems.push('servingPattern: reranker.candidates must be at least number_of_chunks');
    }
  }
  const patternEmbedding = pattern?.settings.embedding.model_id;
  if (
    ctx.embeddingModel !== undefined &&
    patternEmbedding !== undefined &&
    ctx.embeddingModel !== patternEmbedding
  ) {
    problems.push(
      `embeddingModel: '${ctx.embeddingModel}' differs from the serving pattern's '${patternEmbedding}' (queries and index must use one model)`,
    );
  }
  // A role's models need its endpoint: its own, else openaiBaseUrl.
  const embeddingEndpoint = ctx.embeddingBaseUrl ?? ctx.openaiBaseUrl;
  const chatEndpoint = ctx.chatBaseUrl ?? ctx.openaiBaseUrl;
  const embeddingModel =
    ctx.embeddingModel ??
    patternEmbedding ??
    (embeddingEndpoint === undefined ? LOCAL_EMBEDDING_MODEL : undefined);
  const foundationModel =
    ctx.foundationModel ??
    pattern?.settings.generation.model_id ??
    (chatEndpoint === undefined ? LOCAL_FOUNDATION_MODEL : undefined);
  for (const [key, id, endpoint, urlKey] of [
    ['embeddingModel', embeddingModel, embeddingEndpoint, 'embeddingBaseUrl'],
    ['foundationModel', foundationModel, chatEndpoint, 'chatBaseUrl'],
  ] as const) {
    if (endpoint === undefined) {
      if (id !== undefined && !isLocalModel(id)) {
        problems.push(
          `${key}: '${id}' is not a local model, so ${urlKey} or openaiBaseUrl is required`,
        );
      }
    } else if (id === undefined) {
      problems.push(
        `${key}: is required when ${ctx[urlKey] !== undefined ? urlKey : 'openaiBaseUrl'} is set`,
      );
    } else if (namesEndpoint(id)) {
      problems.push(
        `${key}: '${id}' names an endpoint (model@name); a deployment uses ${urlKey} or openaiBaseUrl`,
      );
    }
  }
  if (problems.length > 0 || embeddingModel === undefined || foundationModel === undefined) {
    return fail(problems);
  }

  return {
    vectorStore: ctx.vectorStore,
    ...(ctx.vectorStore === 'zilliz' && ctx.zillizUri !== undefined
      ? { zilliz: { uri: ctx.zillizUri, tokenSecretName: ctx.zillizTokenSecretName } }
      : {}),
    ...(ctx.openaiBaseUrl !== undefined
      ? { openai: { baseUrl: ctx.openaiBaseUrl, apiKeySecretName: ctx.openaiApiKeySecretName } }
      : {}),
    ...(ctx.rerankBaseUrl !== undefined
      ? {
          rerank: {
            baseUrl: ctx.rerankBaseUrl,
            ...(ctx.rerankModel !== undefined ? { model: ctx.rerankModel } : {}),
            ...(ctx.rerankCandidates !== undefined ? { candidates: ctx.rerankCandidates } : {}),
            ...(ctx.rerankApiKeySecretName !== undefined
              ? { apiKeySecretName: ctx.rerankApiKeySecretName }
              : {}),
          },
        }
      : {}),
    ...(roleEndpoints.length > 0
      ? {
          endpoints: Object.fromEntries(
            roleEndpoints.map((role) => [
              role,
              {
                baseUrl: roleUrl[role] as string,
                ...(roleSecret[role] !== undefined ? { apiKeySecretName: roleSecret[role] } : {}),
              },
            ]),
          ),
        }
      : {}),
    embeddingModel,
    foundationModel,
    ...(pattern !== undefined ? { servingPattern: pattern } : {}),
    trialConcurrency: ctx.trialConcurrency,
    apiAuth: ctx.apiAuth,
    collection: ctx.collection,
    database: {
      deletionProtection: ctx.dbDeletionProtection,
      multiAz: ctx.dbMultiAz,
      instanceType: ctx.dbInstanceType,
    },
    autoDeleteBuckets: ctx.autoDeleteBuckets,
    ...(ctx.alarmEmail !== undefined ? { alarmEmail: ctx.alarmEmail } : {}),
    network: {
      ...(ctx.vpcId !== undefined && { vpcId: ctx.vpcId }),
      ...(ctx.natGateways !== undefined && { natGateways: ctx.natGateways }),
      interfaceEndpoints: ctx.interfaceEndpoints,
      awsServiceEndpoints: ctx.awsServiceEndpoints,
    },
    ...(ctx.corsOrigins.length > 0 ? { corsOrigins: ctx.corsOrigins } : {}),
  };
}

/**
 * Reads the deploy context keys from a construct's node (the CDK `App`), ready for {@link parseDeployConfig}.
 */
export function readDeployContext(node: {
  tryGetContext(key: string): unknown;
}): Record<string, unknown> {
  return Object.fromEntries(DEPLOY_CONTEXT_KEYS.map((key) => [key, node.tryGetContext(key)]));
}
