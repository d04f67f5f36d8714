/**
 * Request and response schemas of every Query-API route. The handlers validate bodies with them and
 * `openapi.ts` turns them into `docs/openapi.json`, so the contract and its documentation cannot drift.
 * Field names are snake_case, as ai4rag's service API.
 */
import * as z from 'zod';
import { ValidationError } from '../errors.js';
import { MAX_MULTI_QUERY_COUNT, QUERY_TRANSFORMS } from '../retrieval/query-transform.js';
import { RERANK_CANDIDATES } from '../retrieval/rerank.js';
import { parseMetadataFilter } from '../vectorstores/filter.js';
import type { MetadataFilter as MetadataFilterJson } from '../vectorstores/types.js';

/** Error body of every non-2xx answer. */
export const ErrorResponse = z
  .object({
    error: z.object({
      code: z.string().meta({ description: 'machine-readable code, e.g. validation_error' }),
      message: z.string(),
    }),
  })
  .meta({ id: 'ErrorResponse' });

/** A query transform of a request: its name, or an object with its parameters. */
const QueryTransformSchema = z
  .union([
    z.enum(QUERY_TRANSFORMS),
    z.strictObject({
      type: z.enum(QUERY_TRANSFORMS),
      queries: z
        .number()
        .int()
        .min(1)
        .max(MAX_MULTI_QUERY_COUNT)
        .optional()
        .meta({ description: 'multi_query: rewrites asked of the chat model (default 3)' }),
      fb_docs: z.number().int().min(1).max(100).optional().meta({
        description: 'rm3: feedback documents (default 10)',
      }),
      fb_terms: z.number().int().min(1).max(100).optional().meta({
        description: 'rm3: expansion terms (default 10)',
      }),
      original_query_weight: z.number().min(0).max(1).optional().meta({
        description: 'rm3: weight of the original query in the expanded one (default 0.5)',
      }),
    }),
  ])
  .meta({
    description:
      "rewrite the query before retrieval and fuse (RRF) the results with the original query's: multi_query (the chat model writes rewrites), hyde (the chat model writes a hypothetical answer passage, searched densely), rm3 (pseudo-relevance feedback from the keyword hits; needs search_mode hybrid), none",
  });

/** What a query transform did: its time and, for the chat transforms, its tokens. */
const QueryTransformReportSchema = z
  .object({
    type: z.enum(['multi_query', 'hyde', 'rm3']),
    ms: z.number(),
    usage: z
      .object({ prompt_tokens: z.number().int(), completion_tokens: z.number().int() })
      .optional(),
    queries: z.array(z.string()).optional(),
    passage: z.string().optional(),
    expansion: z.array(z.object({ term: z.string(), weight: z.number() })).optional(),
  })
  .meta({ id: 'QueryTransformReport' });

/**
 * A metadata filter, checked by the one filter parser (`parseMetadataFilter`): not a `z.record`, which would
 * silently drop a `__proto__` key (assigning it sets the prototype) instead of refusing it.
 */
const MetadataFilter = z
  .unknown()
  .superRefine((value, ctx) => {
    try {
      parseMetadataFilter(value);
    } catch (error: unknown) {
      ctx.addIssue({ code: 'custom', message: (error as Error).message });
    }
  })
  .transform((value) => value as MetadataFilterJson)
  .meta({
    type: 'object',
    description:
      'metadata filter: fields document_id, sequence_number, start_index, headings or user.<key>, each a value (equality) or an object of operators eq, ne, in, nin, gt, gte, lt, lte, startsWith; combined with and: [...], or: [...], not: {...}. Example: {"user.year": {"gte": 2020}, "or": [{"user.lang": "en"}, {"user.lang": "de"}]}',
  });

/** Retrieval settings a caller may override (the serving pattern or the defaults fill the rest). */
const RetrievalFields = {
  k: z.number().int().min(1).max(100).optional().meta({ description: 'chunks to retrieve' }),
  search_mode: z.enum(['vector', 'hybrid']).optional(),
  query_transform: QueryTransformSchema.optional(),
  ranker_strategy: z.enum(['rrf', 'weighted', 'normalized']).optional(),
  ranker_k: z.number().int().min(1).max(100).optional(),
  ranker_alpha: z.number().min(0).lt(1).optional(),
  filter: MetadataFilter.optional(),
  rerank: z
    .union([
      z.literal(false),
      z.strictObject({
        model: z.string().trim().min(1).max(200).optional().meta({
          description:
            "the reranker's model; must be the one the endpoint serves when the deployment names it",
        }),
        candidates: z
          .number()
          .int()
          .min(1)
          .max(RERANK_CANDIDATES.MAX)
          .optional()
          .meta({
            description: `fused passages fetched and reranked down to k (≥ k; default max(${RERANK_CANDIDATES.MIN_DEFAULT}, ${RERANK_CANDIDATES.FACTOR}k), at most ${RERANK_CANDIDATES.MAX})`,
          }),
      }),
    ])
    .optional()
    .meta({
      description:
        'cross-encoder reranking (TEI-compatible endpoint): an object turns it on or adjusts it, false turns off a deployment default',
    }),
};

/** Degradations of an answer, e.g. a reranker that failed (results then in retrieval order). */
const Warnings = z.array(z.string()).optional().meta({
  description:
    'present only when something degraded or was changed, e.g. a failed reranker, passages the guardrails flagged, personal data redacted',
});

/** Guardrails of an answer: prompt-injection screening and PII redaction (`shared/src/generation/guardrails.ts`). */
const GuardrailsSchema = z
  .strictObject({
    injection: z.enum(['exclude', 'quote', 'off']).optional().meta({
      description:
        'passages that look like instructions aimed at the model: exclude them (default), pass them as quoted data, or off (no screening); a question that looks like one is answered with a refusal unless off; either way `warnings` says what was flagged',
    }),
    pii: z.enum(['redact', 'off']).optional().meta({
      description:
        'redact e-mail addresses, phone, card and account numbers in the answer (default off)',
    }),
  })
  .meta({ id: 'Guardrails' });

/** Answering-only fields of /generate, /stream and /chat. */
const AnswerFields = {
  guardrails: GuardrailsSchema.optional(),
  citations: z.boolean().optional().meta({
    description:
      'ask the model to cite its sources with inline markers [n] (n-th reference document) and return them parsed in `citations`; default false',
  }),
};

/** The guardrails of a search: injection screening of the results (there is no answer to redact). */
const SearchGuardrailsSchema = z
  .strictObject({
    injection: z.enum(['exclude', 'quote', 'off']).optional().meta({
      description:
        'results that look like instructions aimed at a model: exclude them (default; more are fetched so k clean results come back when the collection has them), keep them marked with `flagged_rules` (quote), or off; `warnings` names the flagged ones',
    }),
  })
  .meta({ id: 'SearchGuardrails' });

/** POST /search body: a query and optional retrieval overrides. */
export const SearchRequest = z
  .strictObject({
    query: z.string().trim().min(1).max(10_000),
    ...RetrievalFields,
    guardrails: SearchGuardrailsSchema.optional(),
  })
  .meta({ id: 'SearchRequest' });
/** Parsed POST /search body. */
export type SearchRequest = z.infer<typeof SearchRequest>;

/** One search hit: the chunk, its document key and score (null when the store gives none). */
export const SearchHitSchema = z
  .object({
    id: z.string(),
    document_key: z.string(),
    sequence_number: z.number().int(),
    text: z.string(),
    score: z.number().nullable(),
    metadata: z.record(z.string(), z.unknown()),
    flagged_rules: z.array(z.string()).optional().meta({
      description:
        'with guardrails.injection quote: the screener rules this result fired (possible prompt injection); absent for a clean result',
    }),
  })
  .meta({ id: 'SearchHit' });

/** POST /search answer. */
export const SearchResponse = z
  .object({
    query: z.string(),
    collection: z.string(),
    results: z.array(SearchHitSchema),
    warnings: Warnings,
    query_transform: QueryTransformReportSchema.optional(),
  })
  .meta({ id: 'SearchResponse' });
/** POST /search answer, typed. */
export type SearchResponse = z.infer<typeof SearchResponse>;

/** POST /generate and POST /stream body. */
export const GenerateRequest = z
  .strictObject({
    question: z.string().trim().min(1).max(10_000),
    ...RetrievalFields,
    ...AnswerFields,
  })
  .meta({ id: 'GenerateRequest' });
/** Parsed POST /generate body. */
export type GenerateRequest = z.infer<typeof GenerateRequest>;

const ChatMessageSchema = z
  .strictObject({
    role: z.enum(['system', 'user', 'assistant']),
    content: z.string().max(100_000),
  })
  .meta({ id: 'ChatMessage' });

/** POST /chat body: the conversation so far, ending with a user turn. */
export const ChatRequest = z
  .strictObject({
    messages: z.array(ChatMessageSchema).min(1).max(100),
    ...RetrievalFields,
    ...AnswerFields,
  })
  .meta({ id: 'ChatRequest' });
/** Parsed POST /chat body. */
export type ChatRequest = z.infer<typeof ChatRequest>;

const ReferenceDocumentSchema = z
  .object({
    document_key: z.string(),
    sequence_number: z.number().int(),
    text: z.string(),
    score: z.number().nullable(),
    chunk_ids: z.array(z.string()),
  })
  .meta({ id: 'ReferenceDocument' });

const TimingSchema = z
  .object({
    retrieve_ms: z.number(),
    rerank_ms: z.number().meta({ description: '0 when the answer was not reranked' }),
    generate_ms: z.number(),
    total_ms: z.number(),
    transform_ms: z
      .number()
      .optional()
      .meta({ description: 'the query transform, part of retrieve_ms; only with one' }),
  })
  .meta({ id: 'Timing' });

/** Tokens of an answer's chat call. */
export const UsageSchema = z
  .object({
    prompt_tokens: z.number().int().min(0),
    completion_tokens: z.number().int().min(0),
    total_tokens: z.number().int().min(0),
  })
  .meta({
    id: 'Usage',
    description:
      "tokens of the answer's chat call as the model reported them (the local model counts ceil(characters / 4)); absent when the model reported none",
  });

/** Cost of an answer's tokens by the deployment's price table. */
const CostUsd = z.number().min(0).optional().meta({
  description:
    'USD of `usage` by the price table (AI4RAG_PRICES, or `ai4rag serve --prices FILE`); 0 for local models; absent when the table has no price for the model or the usage is unknown',
});

/** One inline marker of an answer bound to its source, with the cited span. */
const CitationSchema = z
  .object({
    marker: z.number().int().min(1).meta({
      description: 'the n of the marker [n] in the answer: reference_documents[n - 1]',
    }),
    document_key: z.string(),
    chunk_id: z.string().meta({ description: 'first chunk id of that reference document' }),
    start: z.number().int().min(0).meta({
      description: 'start offset of the cited span in reference_documents[n - 1].text',
    }),
    end: z.number().int().min(0).meta({ description: 'end offset (exclusive) of the cited span' }),
  })
  .meta({ id: 'Citation' });

/** The citations of an answer asked with `citations: true`. */
const CitationFields = {
  citations: z.array(CitationSchema).optional().meta({
    description: 'with `citations: true`: the markers of the answer, in answer order',
  }),
  removed_citations: z.number().int().min(0).optional().meta({
    description:
      'with `citations: true`: markers to documents that were not given, removed from the answer',
  }),
};

/** POST /generate answer: text, model, sources, per-step timing and tokens. */
export const GenerateResponse = z
  .object({
    answer: z.string(),
    question: z.string(),
    model: z.string(),
    reference_documents: z.array(ReferenceDocumentSchema),
    timing: TimingSchema,
    warnings: Warnings,
    usage: UsageSchema.optional(),
    cost_usd: CostUsd,
    query_transform: QueryTransformReportSchema.optional().meta({
      description: 'what the query transform did; its tokens are not in `usage`',
    }),
    ...CitationFields,
  })
  .meta({ id: 'GenerateResponse' });
/** POST /generate answer, typed. */
export type GenerateResponse = z.infer<typeof GenerateResponse>;

/** The `done` event of POST /stream: timing, model and, when known, tokens and cost (as /generate). */
export const StreamDoneEvent = z
  .object({
    timing: TimingSchema,
    model: z.string().optional(),
    usage: UsageSchema.optional(),
    cost_usd: CostUsd,
    ...CitationFields,
    warnings: z.array(z.string()).optional().meta({
      description:
        'what the guardrails changed in the answer once complete, e.g. personal data redacted (pii: redact); absent when nothing was',
    }),
  })
  .meta({ id: 'StreamDoneEvent' });
/** The `done` event, typed. */
export type StreamDoneEvent = z.infer<typeof StreamDoneEvent>;

/** POST /chat answer: as /generate, plus the conversation ready for the next turn. */
export const ChatResponse = GenerateResponse.extend({
  conversation: z.array(ChatMessageSchema),
}).meta({ id: 'ChatResponse' });
/** POST /chat answer, typed. */
export type ChatResponse = z.infer<typeof ChatResponse>;

/** Ingestion status of a document in the knowledge-base flow. */
export const DocumentStatus = z.enum(['pending', 'indexed', 'failed']).meta({
  id: 'DocumentStatus',
});
/** Ingestion status, typed. */
export type DocumentStatus = z.infer<typeof DocumentStatus>;

/** A document as the documents routes return it (store record merged with its ingestion status). */
export const DocumentSchema = z
  .object({
    document_key: z.string(),
    status: DocumentStatus,
    content_hash: z.string().nullable(),
    chunk_count: z.number().int(),
    updated_at: z.string().nullable(),
    error: z.string().optional(),
    metadata: z.record(z.string(), z.unknown()).optional(),
  })
  .meta({ id: 'Document' });
/** A document view, typed. */
export type DocumentView = z.infer<typeof DocumentSchema>;

/** Documents per GET /documents page when the request does not say. */
export const DEFAULT_PAGE_SIZE = 100;
/** Largest GET /documents page. */
export const MAX_PAGE_SIZE = 1000;

/**
 * GET /documents query string (strings coerced: API Gateway passes them as text): page size and the opaque
 * cursor of the previous page's `next_cursor`.
 */
export const ListDocumentsQuery = z
  .object({
    limit: z.coerce.number().int().min(1).max(MAX_PAGE_SIZE).default(DEFAULT_PAGE_SIZE),
    cursor: z.string().max(2048).optional(),
  })
  .meta({ id: 'ListDocumentsQuery' });

/** GET /documents answer; `next_cursor` null on the last page. */
export const ListDocumentsResponse = z
  .object({ documents: z.array(DocumentSchema), next_cursor: z.string().nullable() })
  .meta({ id: 'ListDocumentsResponse' });

/** DELETE /documents/{id} answer. */
export const DeleteDocumentResponse = z
  .object({ document_key: z.string(), deleted: z.literal(true), chunks_deleted: z.number().int() })
  .meta({ id: 'DeleteDocumentResponse' });

/** Longest accepted document key (S3's own key limit). */
export const MAX_DOCUMENT_KEY_LENGTH = 1024;

/** POST /uploads body: the document key to upload to. */
export const UploadRequest = z
  .strictObject({
    key: z.string().min(1).max(MAX_DOCUMENT_KEY_LENGTH),
    content_type: z.string().min(1).max(255).optional(),
  })
  .meta({ id: 'UploadRequest' });
/** Parsed POST /uploads body. */
export type UploadRequest = z.infer<typeof UploadRequest>;

/** POST /uploads answer: where and how to PUT the file. */
export const UploadResponse = z
  .object({
    key: z.string(),
    url: z.string(),
    method: z.literal('PUT'),
    headers: z.record(z.string(), z.string()),
    expires_in: z.number().int(),
  })
  .meta({ id: 'UploadResponse' });

/** GET /stats answer. */
export const StatsResponse = z
  .object({
    collection: z.string(),
    store: z.string(),
    documents: z.number().int(),
    chunks: z.number().int(),
    dimension: z.number().int().nullable(),
    embedding_model: z.string().nullable(),
    /** Bytes the collection's tables take on disk with their indexes (PostgreSQL stores; null for Milvus). */
    size_bytes: z.number().int().nullable(),
    by_status: z.record(z.string(), z.number().int()),
  })
  .meta({ id: 'StatsResponse' });

/** GET /health answer. */
export const HealthResponse = z
  .object({ status: z.literal('ok'), collection: z.string(), store: z.string() })
  .meta({ id: 'HealthResponse' });

/** One documented route: what the OpenAPI generator needs. */
export interface RouteSpec {
  method: 'get' | 'post' | 'delete';
  path: string;
  summary: string;
  operationId: string;
  request?: z.ZodType;
  query?: z.ZodObject;
  pathParams?: string[];
  response: z.ZodType;
  /** Status codes besides 200 the route may answer (each with ErrorResponse). */
  errors: number[];
  /** Server-sent events instead of JSON. */
  stream?: boolean;
  /** The data of a stream's closing `done` event. */
  streamDone?: z.ZodType;
  /** Needs no bearer token. */
  public?: boolean;
}

/** Every route of the Query API, in documentation order. */
export const ROUTES: readonly RouteSpec[] = [
  {
    method: 'post',
    path: '/search',
    summary: 'Search the knowledge base',
    operationId: 'search',
    request: SearchRequest,
    response: SearchResponse,
    errors: [400, 401, 404, 405, 415, 503, 504],
  },
  {
    method: 'post',
    path: '/generate',
    summary: 'Answer a question with cited sources and per-step timing',
    operationId: 'generate',
    request: GenerateRequest,
    response: GenerateResponse,
    errors: [400, 401, 404, 405, 415, 503, 504],
  },
  {
    method: 'post',
    path: '/chat',
    summary: 'Continue a conversation; the last user turn is enriched with retrieved passages',
    operationId: 'chat',
    request: ChatRequest,
    response: ChatResponse,
    errors: [400, 401, 404, 405, 415, 503, 504],
  },
  {
    method: 'post',
    path: '/stream',
    summary: 'Answer a question as server-sent events: sources, token*, done',
    operationId: 'stream',
    request: GenerateRequest,
    response: z.string(),
    errors: [400, 401, 404, 503],
    stream: true,
    streamDone: StreamDoneEvent,
  },
  {
    method: 'get',
    path: '/documents',
    summary: 'List indexed documents (paged)',
    operationId: 'listDocuments',
    query: ListDocumentsQuery,
    response: ListDocumentsResponse,
    errors: [400, 401, 405],
  },
  {
    method: 'get',
    path: '/documents/{id}',
    summary: 'One document and its ingestion status (id: the URL-encoded document key)',
    operationId: 'getDocument',
    pathParams: ['id'],
    response: DocumentSchema,
    errors: [400, 401, 404, 405],
  },
  {
    method: 'delete',
    path: '/documents/{id}',
    summary: 'Delete a document: its object and its chunks',
    operationId: 'deleteDocument',
    pathParams: ['id'],
    response: DeleteDocumentResponse,
    errors: [400, 401, 404, 405],
  },
  {
    method: 'post',
    path: '/uploads',
    summary: 'A short-lived pre-signed PUT URL to upload a document',
    operationId: 'createUpload',
    request: UploadRequest,
    response: UploadResponse,
    errors: [400, 401, 405, 415],
  },
  {
    method: 'get',
    path: '/stats',
    summary: 'Collection statistics and document counts by status',
    operationId: 'stats',
    response: StatsResponse,
    errors: [401, 405],
  },
  {
    method: 'get',
    path: '/health',
    summary:
      'Liveness (authenticated like every route of the deployed API; `ai4rag serve` leaves it open)',
    operationId: 'health',
    response: HealthResponse,
    errors: [401, 405],
  },
];

/**
 * Methods a route of the API serves (upper case, `OPTIONS` excluded), or undefined for a path that is no route:
 * the `Allow` header of a 405.
 * @example allowedMethods('/documents/{id}') // ['GET', 'DELETE']
 */
export function allowedMethods(resource: string | undefined): string[] | undefined {
  const methods = ROUTES.filter((r) => r.path === resource).map((r) => r.method.toUpperCase());
  return methods.length > 0 ? methods : undefined;
}

/**
 * Validates a value against a schema, turning zod issues into one readable {@link ValidationError} (HTTP 400).
 * @throws {ValidationError} naming each offending field.
 * @example const body = parseWith(SearchRequest, event.body, 'request body');
 */
export function parseWith<S extends z.ZodType>(
  schema: S,
  value: unknown,
  what: string,
): z.output<S> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const detail = parsed.error.issues
    .slice(0, 5)
    .map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`)
    .join('; ');
  throw new ValidationError(`invalid ${what}: ${detail}`, { cause: parsed.error });
}
