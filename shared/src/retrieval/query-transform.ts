import { ValidationError } from '../errors.js';
import type { TermStats } from '../generation/term-stats.js';
import type { ChatMessage, ChatUsage, FoundationModel } from '../generation/types.js';
import type { TokenUsage } from '../pricing.js';
import type {
  MetadataFilter,
  SearchHit,
  SearchParams,
  VectorStore,
} from '../vectorstores/types.js';
import { rrfFuse } from './fusion.js';
import { type Rm3Options, rm3Expand, rm3Options, rm3QueryText } from './rm3.js';
import { DEFAULT_RANKER_K } from './search-params.js';

/** The query transforms: none, chat-model rewrites, a hypothetical answer passage, RM3 feedback. */
export const QUERY_TRANSFORMS = Object.freeze(['none', 'multi_query', 'hyde', 'rm3'] as const);
export type QueryTransformKind = (typeof QUERY_TRANSFORMS)[number];

/** Default number of rewrites of `multi_query`. */
export const DEFAULT_MULTI_QUERY_COUNT = 3;
/** Most rewrites of `multi_query` (each is one more search). */
export const MAX_MULTI_QUERY_COUNT = 10;
/** Completion budget of a transform's chat call: rewrites and a passage are short. */
export const TRANSFORM_MAX_COMPLETION_TOKENS = 256;

/** A query transform of a {@link Retriever}. */
export interface QueryTransformOptions {
  kind: QueryTransformKind;
  /** `multi_query`: rewrites asked of the model (1..{@link MAX_MULTI_QUERY_COUNT}). @default 3 */
  queries?: number;
  /** `rm3`: feedback parameters (Anserini's defaults). */
  rm3?: Rm3Options;
  /** The chat model of `multi_query` and `hyde` (a real one: the local extractive model only copies text). */
  model?: FoundationModel;
  /** RRF k fusing the transformed results with the original query's. @default DEFAULT_RANKER_K */
  rrfK?: number;
  /** Millisecond clock, injectable for exact timings in tests. @default performance.now */
  now?: () => number;
}

/** What a transform did, returned with the passages. */
export interface QueryTransformReport {
  kind: Exclude<QueryTransformKind, 'none'>;
  /** Milliseconds of the transform: its chat call and its extra searches (not the original query's search). */
  ms: number;
  /** Tokens of the chat call (multi_query, hyde), when the model reported them. */
  usage?: TokenUsage;
  /** multi_query: the rewrites searched. */
  queries?: string[];
  /** hyde: the hypothetical passage embedded for the dense search. */
  passage?: string;
  /** rm3: the expanded query's terms and weights, heaviest first. */
  expansion?: { term: string; weight: number }[];
}

/**
 * The messages asking for `n` rewrites of a query (one per line).
 * @example multiQueryMessages('How many leave days?', 3)[1].content.startsWith('Write 3 different') // true
 */
export function multiQueryMessages(query: string, n: number): ChatMessage[] {
  return [
    {
      role: 'system',
      content: 'You rewrite questions into search queries for a document retrieval system.',
    },
    {
      role: 'user',
      content: `Write ${n} different versions of the following question to retrieve relevant documents from a search index. Give one version per line, with no numbering and no other text.\n\nQuestion: ${query}`,
    },
  ];
}

/** The HyDE prompt (Gao et al. 2022, web search): one user message. */
export function hydeMessages(query: string): ChatMessage[] {
  return [
    {
      role: 'user',
      content: `Please write a passage to answer the question.\nQuestion: ${query}\nPassage:`,
    },
  ];
}

/**
 * The rewrites of a model's answer: one per line, list markers and numbering removed, empty lines, repeats and
 * the original query (case-insensitive) dropped, at most `n`.
 * @example parseRewrites('1. a\n- b\n\nA', 'q', 3) // ['a', 'b']
 */
export function parseRewrites(answer: string, query: string, n: number): string[] {
  const seen = new Set([query.trim().toLowerCase()]);
  const out: string[] = [];
  for (const line of answer.split('\n')) {
    const text = line.replace(/^\s*(?:[-*•]|\d+[.)])\s*/u, '').trim();
    const key = text.toLowerCase();
    if (text === '' || seen.has(key)) continue;
    seen.add(key);
    out.push(text);
    if (out.length === n) break;
  }
  return out;
}

/** Validates a transform's options, so a bad configuration fails when the retriever is built. */
export function validateQueryTransform(t: QueryTransformOptions, searchMode: string): void {
  if (!(QUERY_TRANSFORMS as readonly string[]).includes(t?.kind)) {
    throw new ValidationError(
      `query transform must be one of ${QUERY_TRANSFORMS.join(', ')}, got ${String(t?.kind)}`,
    );
  }
  if ((t.kind === 'multi_query' || t.kind === 'hyde') && t.model === undefined) {
    throw new ValidationError(`query transform ${t.kind} needs a chat model`);
  }
  const q = t.queries ?? DEFAULT_MULTI_QUERY_COUNT;
  if (!Number.isInteger(q) || q < 1 || q > MAX_MULTI_QUERY_COUNT) {
    throw new ValidationError(
      `multi_query queries must be an integer in 1..${MAX_MULTI_QUERY_COUNT}, got ${String(q)}`,
    );
  }
  if (t.kind === 'rm3') {
    rm3Options(t.rm3);
    if (searchMode !== 'hybrid') {
      throw new ValidationError(
        `query transform rm3 needs a keyword leg (search mode hybrid), got search mode ${searchMode}`,
      );
    }
  }
  const k = t.rrfK ?? DEFAULT_RANKER_K;
  if (!Number.isFinite(k) || k < 0) throw new ValidationError(`rrfK must be ≥ 0, got ${k}`);
}

function usageOf(u: ChatUsage | undefined): TokenUsage | undefined {
  const { promptTokens, completionTokens } = u ?? {};
  if (!Number.isFinite(promptTokens) || !Number.isFinite(completionTokens)) return undefined;
  return { promptTokens: promptTokens as number, completionTokens: completionTokens as number };
}

/** A store that has a BM25-only search (the pgvector store). */
interface KeywordSearcher {
  keywordSearch(
    query: string,
    options: { k: number; filter?: MetadataFilter },
  ): Promise<SearchHit[]>;
}

function hasKeywordSearch(store: VectorStore): store is VectorStore & KeywordSearcher {
  return typeof (store as Partial<KeywordSearcher>).keywordSearch === 'function';
}

/**
 * Keyword-only ranking: the store's BM25 search when it has one (raw BM25 scores), else a hybrid search with all
 * the weight on the keyword side (`weighted`, α = 0: min-max-scaled BM25 scores; passages without a query term
 * follow with score 0).
 */
export function keywordOnlySearch(
  store: VectorStore,
  query: string,
  k: number,
  filter: MetadataFilter | undefined,
): Promise<SearchHit[]> {
  if (hasKeywordSearch(store)) {
    return store.keywordSearch(query, { k, ...(filter !== undefined && { filter }) });
  }
  return store.search(query, {
    k,
    includeScores: true,
    searchMode: 'hybrid',
    rankerStrategy: 'weighted',
    rankerAlpha: 0,
    ...(filter !== undefined && { filter }),
  });
}

/**
 * How long a store's term statistics are reused (RM3's document-frequency filter, the local model's term rarity):
 * a whole-vocabulary read, so a container reads them at most once a minute per store.
 */
const TERM_STATS_TTL_MS = 60_000;
const termStatsCache = new WeakMap<VectorStore, { at: number; stats: Promise<TermStats> }>();

/** The store's term statistics (a whole-vocabulary read), reused for {@link TERM_STATS_TTL_MS}. */
export function cachedTermStats(store: VectorStore): Promise<TermStats | undefined> {
  if (store.termStats === undefined) return Promise.resolve(undefined);
  const hit = termStatsCache.get(store);
  if (hit && Date.now() - hit.at < TERM_STATS_TTL_MS) return hit.stats;
  const stats = store.termStats();
  termStatsCache.set(store, { at: Date.now(), stats });
  stats.catch(() => termStatsCache.delete(store));
  return stats;
}

/** RRF of several hit lists keyed by chunk id (the first list's hit object wins), cut to `k`, RRF scores. */
export function fuseHits(lists: readonly SearchHit[][], k: number, rrfK: number): SearchHit[] {
  const byId = new Map<string, SearchHit>();
  for (const list of lists) for (const h of list) if (!byId.has(h.id)) byId.set(h.id, h);
  const fused = rrfFuse(
    lists.map((l) => l.map((h) => ({ id: h.id, score: h.score ?? 0 }))),
    rrfK,
  );
  return fused.slice(0, k).map((f) => ({ ...(byId.get(f.id) as SearchHit), score: f.score }));
}

/**
 * Runs a query transform after the original query's search and fuses (RRF) the transformed results with it:
 * - `multi_query`: the model writes `queries` rewrites; each is searched with the original's parameters;
 * - `hyde`: the model writes a hypothetical answer passage; it is embedded for a dense (vector) search;
 * - `rm3`: the original query's top `fbDocs` keyword hits are the feedback; the RM3-expanded query (see
 *   {@link rm3Expand}) runs as a keyword query ({@link rm3QueryText}), with the store's term statistics (when it
 *   has them) for the document-frequency filter.
 * @param original the original query's hits, best first.
 * @param params the original query's search parameters (`k` is the number of passages kept after fusion).
 */
export async function applyQueryTransform(
  store: VectorStore,
  query: string,
  original: SearchHit[],
  params: SearchParams,
  t: QueryTransformOptions,
): Promise<{ hits: SearchHit[]; report?: QueryTransformReport }> {
  if (t.kind === 'none') return { hits: original };
  const now = t.now ?? (() => performance.now());
  const rrfK = t.rrfK ?? DEFAULT_RANKER_K;
  const t0 = now();
  if (t.kind === 'rm3') {
    const o = rm3Options(t.rm3);
    const feedback = await keywordOnlySearch(store, query, o.fbDocs, params.filter);
    const stats = await cachedTermStats(store);
    const terms = rm3Expand(
      query,
      feedback.map((h) => ({ text: h.text, score: h.score ?? 0 })),
      o,
      stats,
    );
    const text = rm3QueryText(terms);
    const expanded =
      text === '' ? [] : await keywordOnlySearch(store, text, params.k, params.filter);
    const hits = fuseHits([original, expanded], params.k, rrfK);
    return {
      hits,
      report: {
        kind: 'rm3',
        ms: now() - t0,
        expansion: terms.map(({ term, weight }) => ({ term, weight })),
      },
    };
  }
  const model = t.model as FoundationModel;
  const n = t.queries ?? DEFAULT_MULTI_QUERY_COUNT;
  const messages = t.kind === 'hyde' ? hydeMessages(query) : multiQueryMessages(query, n);
  const result = await model.chat(messages, {
    maxCompletionTokens: TRANSFORM_MAX_COMPLETION_TOKENS,
  });
  const usage = usageOf(result.usage);
  if (t.kind === 'hyde') {
    const passage = result.content.trim();
    const dense =
      passage === ''
        ? []
        : await store.search(passage, {
            k: params.k,
            includeScores: true,
            searchMode: 'vector',
            ...(params.filter !== undefined && { filter: params.filter }),
          });
    return {
      hits: fuseHits([original, dense], params.k, rrfK),
      report: { kind: 'hyde', ms: now() - t0, ...(usage && { usage }), passage },
    };
  }
  const queries = parseRewrites(result.content, query, n);
  const lists = [original];
  // Sequential: at most MAX_MULTI_QUERY_COUNT searches, and the store's pool is shared with other requests.
  for (const q of queries) lists.push(await store.search(q, { ...params, includeScores: true }));
  return {
    hits: fuseHits(lists, params.k, rrfK),
    report: { kind: 'multi_query', ms: now() - t0, ...(usage && { usage }), queries },
  };
}
