import type { ChunkMetadata } from '../chunking/types.js';
import { ValidationError } from '../errors.js';
import type {
  MetadataFilter,
  RankerStrategy,
  SearchHit,
  SearchMode,
  VectorStore,
} from '../vectorstores/types.js';
import {
  applyQueryTransform,
  type QueryTransformOptions,
  type QueryTransformReport,
  validateQueryTransform,
} from './query-transform.js';

export type RetrievalMethod = 'simple' | 'window';

/** Retrieval settings (ai4rag's retrieval parameters). */
export interface RetrieverOptions {
  /** Chunks asked from the store (1..10 in ai4rag's constraints; any positive integer here). */
  numberOfChunks: number;
  /** @default 'simple' */
  method?: RetrievalMethod;
  /** Neighbours on each side added around every hit by `window` (0..4). @default 0 */
  windowSize?: number;
  /** @default 'vector' */
  searchMode?: SearchMode;
  rankerStrategy?: RankerStrategy;
  rankerK?: number;
  rankerAlpha?: number;
  filter?: MetadataFilter;
  /** A query transform whose results are fused (RRF) with the original query's. @default none */
  queryTransform?: QueryTransformOptions;
}

/** The passages of {@link Retriever.retrieveWithReport} and what the query transform did. */
export interface RetrievalResult {
  chunks: RetrievedChunk[];
  /** Absent without a transform (or with `none`). */
  queryTransform?: QueryTransformReport;
}

/**
 * A retrieved passage: one chunk (simple), a merged window of neighbouring chunks, or a parent chunk (its
 * children found, hierarchical chunking).
 */
export interface RetrievedChunk extends SearchHit {
  /** Ids of the stored chunks this passage is made of, in sequence order. */
  chunkIds: string[];
}

/** Options that cannot work together or are out of range. */
export class RetrieverError extends ValidationError {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'RetrieverError';
  }
}

const MAX_WINDOW = 4;

/** Most children one query fetches while looking for `numberOfChunks` distinct parents. */
export const MAX_CHILD_FETCH = 1000;
/** Factor by which the children fetched grow between rounds. */
const CHILD_FETCH_GROWTH = 4;

function hasParent(hit: SearchHit): boolean {
  return typeof hit.metadata.parent_id === 'string' && hit.metadata.parent_id !== '';
}

/**
 * Retrieves chunks for a query. `window` really expands each hit with its neighbours by `sequence_number`
 * within `windowSize` and merges windows that overlap or touch in the same document (ai4rag's current
 * backends silently behave like `simple`). On a hierarchical (parent–child) collection — hits carrying
 * `parent_id` — each passage is a parent chunk, once per parent, in the rank of its best child (see
 * {@link collapseToParents}); children are over-fetched so `numberOfChunks` distinct parents come back when the
 * collection has them, and `window` is refused (the parent already is the wider context).
 * @example
 * const retriever = new Retriever(store, { numberOfChunks: 5, method: 'window', windowSize: 1 });
 * const passages = await retriever.retrieve('How many leave days?');
 */
export class Retriever {
  private readonly options: Required<
    Pick<RetrieverOptions, 'numberOfChunks' | 'method' | 'windowSize'>
  > &
    RetrieverOptions;

  constructor(
    private readonly store: VectorStore,
    options: RetrieverOptions,
  ) {
    const method = options.method ?? 'simple';
    const windowSize = options.windowSize ?? 0;
    if (!Number.isInteger(options.numberOfChunks) || options.numberOfChunks < 1) {
      throw new RetrieverError(
        `numberOfChunks must be a positive integer, got ${options.numberOfChunks}`,
      );
    }
    if (method !== 'simple' && method !== 'window') {
      throw new RetrieverError(
        `retrieval method must be "simple" or "window", got "${String(method)}"`,
      );
    }
    if (!Number.isInteger(windowSize) || windowSize < 0 || windowSize > MAX_WINDOW) {
      throw new RetrieverError(
        `windowSize must be an integer in 0..${MAX_WINDOW}, got ${windowSize}`,
      );
    }
    // ai4rag's rule: window_size 0 ⇔ simple, window_size > 0 ⇔ window.
    if ((method === 'window') !== windowSize > 0) {
      throw new RetrieverError(
        method === 'window'
          ? 'retrieval method "window" needs windowSize > 0'
          : `retrieval method "simple" needs windowSize 0, got ${windowSize}`,
      );
    }
    if (options.queryTransform !== undefined) {
      try {
        validateQueryTransform(options.queryTransform, options.searchMode ?? 'vector');
      } catch (error: unknown) {
        throw new RetrieverError((error as Error).message, { cause: error });
      }
    }
    this.options = { ...options, method, windowSize };
  }

  /** Runs the search and, for `window`, the neighbour expansion. Best passage first. */
  async retrieve(query: string): Promise<RetrievedChunk[]> {
    return (await this.retrieveWithReport(query)).chunks;
  }

  /**
   * As {@link retrieve}, with the query transform's report. The transform runs on the chunks (before window
   * expansion), so windows grow around the fused hits.
   */
  async retrieveWithReport(query: string): Promise<RetrievalResult> {
    const o = this.options;
    const k = o.numberOfChunks;
    // A hierarchical collection answers with parents: children are over-fetched (×4 per round, up to
    // MAX_CHILD_FETCH) until k distinct parents are found or the store has no more matching children.
    for (let fetch = k; ; fetch = Math.min(MAX_CHILD_FETCH, fetch * CHILD_FETCH_GROWTH)) {
      const { hits, report } = await this.search(query, fetch);
      const extras = report ? { queryTransform: report } : {};
      if (!hits.some(hasParent)) {
        const chunks =
          o.method === 'simple'
            ? hits.map((hit) => ({ ...hit, chunkIds: [hit.id] }))
            : await this.expandWindows(hits, o.windowSize);
        return { chunks, ...extras };
      }
      if (o.method === 'window') {
        throw new RetrieverError(
          'retrieval method "window" does not apply to a hierarchical (parent–child) collection: its passages ' +
            'already are the parent chunks; use "simple"',
        );
      }
      const parents = collapseToParents(hits);
      if (parents.length >= k || hits.length < fetch || fetch >= MAX_CHILD_FETCH) {
        return { chunks: parents.slice(0, k), ...extras };
      }
    }
  }

  /** One store search of `k` chunks, with the query transform's fusion when there is one. */
  private async search(
    query: string,
    k: number,
  ): Promise<{ hits: SearchHit[]; report?: QueryTransformReport }> {
    const o = this.options;
    const params = {
      k,
      includeScores: true,
      ...(o.searchMode !== undefined && { searchMode: o.searchMode }),
      ...(o.rankerStrategy !== undefined && { rankerStrategy: o.rankerStrategy }),
      ...(o.rankerK !== undefined && { rankerK: o.rankerK }),
      ...(o.rankerAlpha !== undefined && { rankerAlpha: o.rankerAlpha }),
      ...(o.filter !== undefined && { filter: o.filter }),
    };
    const hits = await this.store.search(query, params);
    if (o.queryTransform === undefined || o.queryTransform.kind === 'none') return { hits };
    return applyQueryTransform(this.store, query, hits, params, o.queryTransform);
  }

  private async expandWindows(hits: SearchHit[], windowSize: number): Promise<RetrievedChunk[]> {
    const windows = planWindows(hits, windowSize);
    const out: RetrievedChunk[] = [];
    for (const w of windows) {
      const chunks = await this.store.getChunksBySequence(w.documentId, w.from, w.to);
      out.push(mergeWindow(w, chunks));
    }
    return out;
  }
}

/** A window of sequence numbers in one document, with the best hit that produced it. */
export interface WindowPlan {
  documentId: string;
  from: number;
  to: number;
  best: SearchHit;
  /** Rank of the best hit (0-based) — windows are returned in this order. */
  rank: number;
}

/**
 * Pure: turns ranked hits into merged windows [seq − w, seq + w] per document; windows that overlap or touch
 * merge, keeping the best (earliest) hit's rank and score.
 */
export function planWindows(hits: readonly SearchHit[], windowSize: number): WindowPlan[] {
  const byDoc = new Map<string, WindowPlan[]>();
  hits.forEach((hit, rank) => {
    const seq = hit.metadata.sequence_number;
    const plan: WindowPlan = {
      documentId: hit.metadata.document_id,
      from: Math.max(1, seq - windowSize),
      to: seq + windowSize,
      best: hit,
      rank,
    };
    const list = byDoc.get(plan.documentId) ?? [];
    list.push(plan);
    byDoc.set(plan.documentId, list);
  });
  const merged: WindowPlan[] = [];
  for (const list of byDoc.values()) {
    list.sort((a, b) => a.from - b.from);
    let current: WindowPlan | undefined;
    for (const w of list) {
      if (current && w.from <= current.to + 1) {
        current.to = Math.max(current.to, w.to);
        if (w.rank < current.rank) {
          current.rank = w.rank;
          current.best = w.best;
        }
      } else {
        if (current) merged.push(current);
        current = { ...w };
      }
    }
    if (current) merged.push(current);
  }
  return merged.sort((a, b) => a.rank - b.rank);
}

/**
 * Pure: joins a window's chunks (ordered by sequence number) into one passage. Chunks with `start_index`
 * (recursive chunking) are stitched by character offset so their overlap is not repeated; others are joined
 * with a blank line.
 */
export function mergeWindow(plan: WindowPlan, chunks: readonly SearchHit[]): RetrievedChunk {
  const ordered = [...chunks].sort(
    (a, b) => a.metadata.sequence_number - b.metadata.sequence_number,
  );
  if (ordered.length === 0) return { ...plan.best, chunkIds: [plan.best.id] };
  let text = '';
  let end = -1;
  ordered.forEach((chunk, i) => {
    const start = chunk.metadata.start_index;
    if (i === 0) {
      text = chunk.text;
    } else if (typeof start === 'number' && end >= 0 && start < end) {
      text += chunk.text.slice(Math.min(end - start, chunk.text.length));
    } else {
      text += `\n\n${chunk.text}`;
    }
    end = typeof start === 'number' ? Math.max(end, start + chunk.text.length) : -1;
  });
  const first = ordered[0] as SearchHit;
  const last = ordered[ordered.length - 1] as SearchHit;
  const metadata: ChunkMetadata = {
    ...plan.best.metadata,
    window_start: first.metadata.sequence_number,
    window_end: last.metadata.sequence_number,
  };
  return {
    id: plan.best.id,
    text,
    metadata,
    ...(plan.best.score !== undefined && { score: plan.best.score }),
    chunkIds: ordered.map((c) => c.id),
  };
}

/**
 * Pure: turns ranked hits of a hierarchical (parent–child) collection into parent passages, one per parent, in
 * the rank of its best (first) child, with that child's score and metadata without `parent_text` (`parent_id`,
 * `parent_sequence_number` and `parent_start_index` are kept: the passage text starts at `parent_start_index` of
 * the document). `chunkIds` are the children found, in sequence order. A hit without `parent_id` is its own passage.
 * @example collapseToParents([c1 (parent P), c2 (parent Q), c3 (parent P)]) // [P (c1, c3), Q (c2)]
 */
export function collapseToParents(hits: readonly SearchHit[]): RetrievedChunk[] {
  const groups = new Map<string, { best: SearchHit; children: SearchHit[] }>();
  for (const hit of hits) {
    const key = hasParent(hit) ? `parent:${hit.metadata.parent_id}` : `chunk:${hit.id}`;
    const group = groups.get(key);
    if (group) group.children.push(hit);
    else groups.set(key, { best: hit, children: [hit] });
  }
  return [...groups.values()].map(({ best, children }) => {
    const { parent_text: parentText, ...metadata } = best.metadata;
    const ordered = [...children].sort(
      (a, b) => a.metadata.sequence_number - b.metadata.sequence_number,
    );
    return {
      id: best.id,
      text: typeof parentText === 'string' && hasParent(best) ? parentText : best.text,
      metadata,
      ...(best.score !== undefined && { score: best.score }),
      chunkIds: ordered.map((c) => c.id),
    };
  });
}
