/**
 * The searches of a pgvector collection: dense search (exact scan or HNSW, with its settings scoped to the
 * statement), BM25 keyword search through the postings index or by the exact scan it is measured against, the
 * hybrid fusion of both, and the read of a document's chunks by sequence number (window retrieval).
 */
import type { ChunkMetadata } from '../../chunking/types.js';
import { normalizedFuse, rrfFuse, type ScoredId, weightedFuse } from '../../retrieval/fusion.js';
import type { ValidatedSearchParams } from '../../retrieval/search-params.js';
import { analyze } from '../../text/analyzer.js';
import { VectorStoreError } from '../errors.js';
import { compileFilterSql, type FilterNode } from '../filter.js';
import type { SqlClient } from '../sql-client.js';
import type { DistanceMetric, SearchHit } from '../types.js';
import { segmentPredicate } from './ann-index.js';
import { bm25Idf, sparseLiteral, termFrequencies } from './bm25.js';
import { queryStatistics } from './bm25-refresh.js';
import {
  deeperDepth,
  firstReadWanted,
  keywordPostingsRead,
  keywordQuery,
  keywordQueryUnbounded,
  keywordRescore,
} from './keyword-index.js';
import type { CollectionTables } from './names.js';
import { mergeCandidates, POSTING_BYTES } from './postings-merge.js';
import type { StoreContext } from './store-context.js';

/** A chunk as the searches read it. */
export interface ChunkRow {
  id: string;
  content: string;
  metadata: ChunkMetadata;
}

/** A chunk with its higher-is-better score. */
export interface ScoredRow extends ChunkRow {
  score: number;
}

/**
 * What a search reads of each hit: its text and metadata (`rows`), or its id and score only (`ids`). Hybrid search
 * reads its candidates as ids (a hundred a side by default, of which the fused top k are kept) and then the text of
 * those k in one more statement ({@link readChunks}): carrying every candidate's text and metadata to the client was
 * most of a hybrid search's cost on PGlite, where the results are decoded on the main thread.
 */
export type Projection = 'rows' | 'ids';

/** A hit as a search of projection `P` returns it. */
export type Projected<P extends Projection> = P extends 'ids' ? ScoredId : ScoredRow;

/** The select list of a projection over `table` (`id, content, metadata`, or `id`). */
function columnsOf(projection: Projection, table?: string): string {
  const q = table === undefined ? '' : `${table}.`;
  return projection === 'rows' ? `${q}id, ${q}content, ${q}metadata` : `${q}id`;
}

/** What a search needs of its store. */
export interface SearchContext {
  client: SqlClient;
  t: CollectionTables;
  distance: DistanceMetric;
  /** Some HNSW index serves searches (the legacy full-table one, or segments). */
  annIndex: boolean;
  /** The legacy full-table index is valid: a search uses it alone. */
  legacyIndex?: boolean;
  /** The HNSW segments a search probes, by `lo`, not overlapping (`ann-index.ts`); the other rows are scanned. */
  segments?: readonly { lo: number; hi: number }[];
  /** Whether pgvector has iterative index scans (0.8+). */
  iterativeScan: boolean;
  /** Smallest `hnsw.ef_search` of an index search. */
  efSearch: number;
  /** Postings read per query term (0: exact scan). */
  keywordDepth: number;
  /** The deeper keyword read takes long lists' heads from the packed postings (`keywordPackBuild`). */
  packedPostings?: boolean;
}

/**
 * Candidates of a deeper keyword read rescored before the others are pruned by their bounds (at least twice the
 * k asked for): the k-th best exact score among them is the bar the rest must reach (`keywordRescore`).
 */
export const RESCORE_FIRST = 20;

/** Relative (and absolute) slack added to a candidate's upper bound for rounding (see `indexedKeywordSearch`). */
export const BOUND_MARGIN = 1e-5;

/**
 * Postings a deeper keyword read may send the client (12 bytes each packed, 1.5 MiB); a longer read is summed by the
 * server ({@link clientMergeFits}). At 1M chunks a read of the `--scale` queries takes about 28,000.
 */
export const CLIENT_MERGE_MAX = 1 << 17;

/** pgvector's distance operator per metric. */
export const OPERATOR: Record<DistanceMetric, string> = {
  cosine: '<=>',
  l2: '<->',
  l1: '<+>',
  inner_product: '<#>',
};

/**
 * Converts a pgvector distance to a higher-is-better score: cosine 1 − d; l2 and l1 1 / (1 + d); inner product
 * −d (pgvector's `<#>` is the negated inner product, so this is the raw inner product).
 * @example distanceToScore('cosine', 0.25) // 0.75
 */
export function distanceToScore(distance: DistanceMetric, d: number): number {
  switch (distance) {
    case 'cosine':
      return 1 - d;
    case 'l2':
    case 'l1':
      return 1 / (1 + d);
    case 'inner_product':
      return -d;
  }
}

/**
 * Vector literal with components rounded to 1e-7 when |x| ≥ 1e-3 (embedding components; the cosine or
 * distance changes by well under 1e-6) and kept as float4 otherwise. The literal is half the length of
 * JavaScript's full double repr, which PGlite's WebAssembly parser reads measurably faster (bench/run.ts).
 */
export function vectorLiteral(v: readonly number[]): string {
  return `[${v.map((x) => (Math.abs(x) >= 1e-3 ? Math.round(x * 1e7) / 1e7 : Math.fround(x))).join(',')}]`;
}

/**
 * Best-first rows with higher-is-better scores. With HNSW segments, one statement: each segment's top `limit` from
 * its partial index, the rows after and between them scanned exactly through the row-id b-tree, the union ordered
 * once (a materialized CTE, since an iterative scan may return its rows slightly out of order).
 */
export async function vectorSearch<P extends Projection = 'rows'>(
  c: SearchContext,
  qvec: number[],
  limit: number,
  filter: FilterNode | undefined,
  projection: P = 'rows' as P,
): Promise<Projected<P>[]> {
  const op = OPERATOR[c.distance];
  const params: unknown[] = [vectorLiteral(qvec), limit];
  let where = `WHERE ${c.t.visible}`;
  if (filter !== undefined) where += ` AND ${compileFilterSql(filter, params, 'metadata')}`;
  const cols = columnsOf(projection);
  const select = (
    extra: string,
  ) => `SELECT ${cols}, (embedding ${op} $1::vector)::float8 AS distance
    FROM ${c.t.table} ${where}${extra} ORDER BY embedding ${op} $1::vector LIMIT $2`;
  const exactSql = select('');
  let sql = exactSql;
  if (c.annIndex) {
    // The HNSW settings for this statement only, without a transaction's BEGIN / SET LOCAL / COMMIT round trips:
    // set_config(…, true) in an uncorrelated sub-select is a one-time filter the executor evaluates before the
    // index scan starts, and a local setting ends with the statement's implicit transaction. Rows of staged
    // writes are filtered out too, so the scan may need to go past ef_search (iterative scan).
    params.push(String(Math.min(1000, Math.max(c.efSearch, 2 * limit))));
    const settings = [`set_config('hnsw.ef_search', $${params.length}, true)`];
    if (c.iterativeScan) settings.push(`set_config('hnsw.iterative_scan', 'relaxed_order', true)`);
    const tuned = ` AND (SELECT ${settings.join(' || ')}) IS NOT NULL`;
    const segments = c.legacyIndex === true ? [] : (c.segments ?? []);
    if (segments.length === 0) sql = select(tuned);
    else {
      const rid = `${c.t.table}.rid`;
      const part = (range: string, indexed: boolean) =>
        `(${select(` AND ${range}${indexed ? tuned : ''}`)})`;
      const parts: string[] = [];
      let cursor = 0;
      for (const s of segments) {
        // Integers from the catalogue, written as literals (checked by segmentPredicate): a partial index serves
        // a query only when the planner can prove its predicate from the query's constants.
        if (s.lo > cursor) parts.push(part(`${rid} > ${cursor} AND ${rid} <= ${s.lo}`, false));
        parts.push(part(segmentPredicate(rid, s.lo, s.hi), true));
        cursor = s.hi;
      }
      parts.push(part(`${rid} > ${cursor}`, false));
      sql = `WITH u AS MATERIALIZED (${parts.join(' UNION ALL ')})
        SELECT ${cols}, distance FROM u ORDER BY distance LIMIT $2`;
    }
  }
  let rows = (await c.client.query<ChunkRow & { distance: number }>(sql, params)).rows;
  // Filtered top-k is complete: an index scan that came back short (a filter too selective for the
  // iterative scan's hnsw.max_scan_tuples, or an older pgvector without iterative scans) is redone exactly,
  // with index scans off, so the answer has `limit` rows whenever that many match.
  if (c.annIndex && filter !== undefined && rows.length < limit) {
    rows = await c.client.transaction(async (tx) => {
      await tx.query('SET LOCAL enable_indexscan = off');
      return (await tx.query<ChunkRow & { distance: number }>(exactSql, params.slice(0, -1))).rows;
    });
  }
  return rows
    .map((r) => {
      const score = distanceToScore(c.distance, r.distance);
      return (
        projection === 'rows'
          ? { id: r.id, content: r.content, metadata: r.metadata, score }
          : { id: r.id, score }
      ) as Projected<P>;
    })
    .sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/**
 * Keyword search through the postings index (`keyword-index.ts`): the top `limit` when the query's bound proves
 * it exact, else the best of that read and one deeper read (`deeperDepth` postings a cut list, `listLengths` being
 * the terms' df; a chunk outside every term's top postings can be missed). Without a filter the first read is
 * skipped when it cannot plausibly prove its result, and for a hybrid search's candidates (projection `ids`, used by
 * rank only) whenever a list is cut (`firstReadWanted`). Undefined when the candidates hold fewer
 * than `limit` visible matches while more may exist (a selective filter, staged rows, a cut list): the caller then
 * scans exactly, so the result is complete.
 */
export async function indexedKeywordSearch<P extends Projection = 'rows'>(
  c: SearchContext,
  weights: ReadonlyMap<number, number>,
  limit: number,
  filter: FilterNode | undefined,
  listLengths: ReadonlyMap<number, number>,
  projection: P = 'rows' as P,
): Promise<Projected<P>[] | undefined> {
  const shape = (r: ScoredRow) =>
    (projection === 'rows'
      ? { id: r.id, content: r.content, metadata: r.metadata, score: r.score }
      : { id: r.id, score: r.score }) as Projected<P>;
  const terms = [...weights.keys()];
  const query = sparseLiteral(weights);
  /** Parameters `$1`–`$6` of both reads, and the filter's predicate (its parameters from `$7`). */
  const bind = (depth: number, candidates: number) => {
    const params: unknown[] = [
      terms,
      terms.map((t) => weights.get(t) as number),
      depth,
      candidates,
      query,
      limit,
    ];
    const extra = filter === undefined ? '' : `AND ${compileFilterSql(filter, params, 'metadata')}`;
    return { params, extra };
  };
  const attempt = async (depth: number, candidates: number) => {
    const { params, extra } = bind(depth, candidates);
    const res = await c.client.query<
      ScoredRow & { bound: number | null; cth: number | null; ncand: number | null }
    >(keywordQuery(c.t.kw, c.t.visible, extra, projection), params);
    const flags = res.rows[res.rows.length - 1];
    const rows = res.rows.slice(0, -1).map(shape);
    const bound = (flags?.bound ?? 0) + (flags?.cth ?? 0);
    // Every chunk holding a query term was a candidate: nothing was left unread.
    const complete = (flags?.bound ?? 0) === 0 && (flags?.ncand ?? 0) < candidates;
    const kth = rows[limit - 1]?.score;
    return { rows, complete, exact: complete || (kth !== undefined && kth >= bound) };
  };
  const base = filter === undefined ? Math.max(200, 4 * limit) : Math.max(1000, 20 * limit);
  const lengths = terms.map((t) => listLengths.get(t) ?? 0);
  let found: Awaited<ReturnType<typeof attempt>> | undefined;
  // A filter keeps the first read: when its candidates hold fewer than `limit` matches, the exact scan runs.
  if (filter !== undefined || firstReadWanted(c.keywordDepth, lengths, projection === 'rows')) {
    found = await attempt(c.keywordDepth, base);
    if (found.exact || found.rows.length < limit) {
      return found.rows.length >= limit || found.complete ? found.rows : undefined;
    }
  }
  // Not proven (or not worth trying): read deeper once (no bound: this result is used either way), and keep the
  // better of the two reads per chunk (both score exactly, so the union's top `limit` is at least as good as
  // either's).
  const depth = deeperDepth(c.keywordDepth, lengths.filter((n) => n > c.keywordDepth).length);
  let read: { rows: ScoredRow[]; complete?: boolean };
  if (clientMergeFits(lengths, depth)) {
    read = await deeperInClient(c, terms, weights, depth, base * 2, limit, filter, projection);
  } else {
    const { params, extra } = bind(depth, base * 2);
    read = await c.client.query<ScoredRow>(
      keywordQueryUnbounded(c.t.kw, c.t.visible, extra, projection),
      params,
    );
  }
  const deeper = read.rows.map(shape);
  // Short without the first read: unless the deeper read took every posting of the query's terms, whether more
  // matches exist is unknown, so the caller scans exactly.
  if (found === undefined) return deeper.length >= limit || read.complete ? deeper : undefined;
  const byId = new Map<string, Projected<P>>();
  for (const r of [...deeper, ...found.rows]) if (!byId.has(r.id)) byId.set(r.id, r);
  return [...byId.values()]
    .sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    .slice(0, limit);
}

/**
 * Whether a deeper read at `depth` of lists of these `lengths` (the terms' df) sends at most {@link CLIENT_MERGE_MAX}
 * postings (a term's read is at most its df and at most `depth` from each of its two tables), so the client sums
 * them; a longer read is summed by the server (`keywordQueryUnbounded`), so the client's memory stays bounded
 * whatever the query.
 * @example clientMergeFits([50_000, 3_000], 16_000) // true: 32,000 + 3,000
 * @example clientMergeFits(Array(100).fill(9_000), 2_000) // false: 100 × 4,000
 */
export function clientMergeFits(lengths: readonly number[], depth: number): boolean {
  return lengths.reduce((sum, n) => sum + Math.min(n, 2 * depth), 0) <= CLIENT_MERGE_MAX;
}

/**
 * The deeper read summed in the client: the terms' packed postings (`keywordPostingsRead`), their best `candidates`
 * by partial score with upper bounds (`mergeCandidates`), and the rescoring that skips those whose bound cannot
 * reach the top `limit` (`keywordRescore`). `complete` when no list was cut and every chunk read was a candidate:
 * every chunk holding a query term was then rescored, so a result shorter than `limit` holds every match.
 */
async function deeperInClient(
  c: SearchContext,
  terms: readonly number[],
  weights: ReadonlyMap<number, number>,
  depth: number,
  candidates: number,
  limit: number,
  filter: FilterNode | undefined,
  projection: Projection,
): Promise<{ rows: ScoredRow[]; complete: boolean }> {
  const read = await c.client.query<{ folded: Uint8Array | null; fresh: Uint8Array | null }>(
    keywordPostingsRead(c.t.kw, c.packedPostings === true),
    [terms, depth],
  );
  const picked = mergeCandidates(
    read.rows.map((r, i) => ({
      qw: weights.get(terms[i] as number) as number,
      lists: [r.folded, r.fresh],
    })),
    depth,
    candidates,
  );
  // The bounds are sums in float8 of float4 weights; the exact scores are pgvector's (float4 sums): a margin keeps a
  // candidate whose bound rounds below its own score.
  const params: unknown[] = [
    picked.rids,
    picked.uppers.map((u) => u + Math.abs(u) * BOUND_MARGIN + BOUND_MARGIN),
    Math.max(2 * limit, RESCORE_FIRST),
    sparseLiteral(weights),
    limit,
  ];
  const extra = filter === undefined ? '' : `AND ${compileFilterSql(filter, params, 'metadata')}`;
  const whole = read.rows.every((r) =>
    [r.folded, r.fresh].every((list) => list === null || list.byteLength < depth * POSTING_BYTES),
  );
  const res = await c.client.query<ScoredRow>(
    keywordRescore(c.t.kw, c.t.visible, extra, projection),
    params,
  );
  return { rows: res.rows, complete: whole && picked.rids.length < candidates };
}

/** Keyword search scanning every chunk's BM25 weights (linear in the collection; the exact reference). */
export async function exactKeywordSearch<P extends Projection = 'rows'>(
  c: SearchContext,
  weights: ReadonlyMap<number, number>,
  limit: number,
  filter: FilterNode | undefined,
  projection: P = 'rows' as P,
): Promise<Projected<P>[]> {
  const params: unknown[] = [sparseLiteral(weights), limit];
  let extra = '';
  if (filter !== undefined) extra = `AND ${compileFilterSql(filter, params, 'metadata')}`;
  const res = await c.client.query<Projected<P>>(
    `SELECT ${columnsOf(projection)}, ((bm25 <#> $1::sparsevec) * -1)::float8 AS score
     FROM ${c.t.table} WHERE (bm25 <#> $1::sparsevec) < 0 AND ${c.t.visible} ${extra}
     ORDER BY bm25 <#> $1::sparsevec, id LIMIT $2`,
    params,
  );
  return res.rows;
}

/** A row as the port's hit (with `score` when given). */
export function toHit(row: ChunkRow, score?: number): SearchHit {
  return {
    id: row.id,
    text: row.content,
    metadata: row.metadata,
    ...(score !== undefined ? { score } : {}),
  };
}

/** BM25 top-`limit` rows (score > 0), best first: the postings index when `keywordDepth` > 0, else exactly. */
export async function bm25Search<P extends Projection = 'rows'>(
  ctx: StoreContext,
  search: SearchContext,
  query: string,
  limit: number,
  filter: FilterNode | undefined,
  projection: P = 'rows' as P,
): Promise<Projected<P>[]> {
  const qtf = termFrequencies(analyze(query));
  if (qtf.size === 0) return [];
  const { reg, df } = await queryStatistics(ctx, [...qtf.keys()]);
  if (reg.n === 0) return [];
  // Ascending term order, whichever statement read the df (it fixes the order partial scores are summed in).
  const weights = new Map<number, number>();
  for (const term of [...df.keys()].sort((a, b) => a - b)) {
    weights.set(term, bm25Idf(reg.n, df.get(term) as number) * (qtf.get(term) ?? 0));
  }
  if (weights.size === 0) return [];
  if (search.keywordDepth > 0) {
    const indexed = await indexedKeywordSearch(search, weights, limit, filter, df, projection);
    if (indexed !== undefined) return indexed;
  }
  return exactKeywordSearch(search, weights, limit, filter, projection);
}

/**
 * Hybrid search: both sides' ranked ids (one after the other when `sequential`, else at once, the dense side's error
 * first), fused by `p.rankerStrategy`, top `p.k`, with their text and metadata from `read`. Undefined when `read`
 * misses one of the fused ids (a chunk deleted, replaced or re-labelled between the statements): the caller then
 * searches again with sides that read their rows themselves.
 */
export async function hybridSearch(
  p: ValidatedSearchParams,
  denseSide: () => Promise<ScoredId[]>,
  keywordSide: () => Promise<ScoredId[]>,
  sequential: boolean,
  read: (ids: string[]) => Promise<ReadonlyMap<string, ChunkRow>>,
): Promise<SearchHit[] | undefined> {
  let dense: ScoredId[];
  let keyword: ScoredId[];
  if (sequential) {
    dense = await denseSide();
    keyword = await keywordSide();
  } else {
    // Two statements at once on a server's pool (its own connection each); the dense side's error first.
    const [d, kw] = await Promise.allSettled([denseSide(), keywordSide()]);
    if (d.status === 'rejected') throw d.reason;
    if (kw.status === 'rejected') throw kw.reason;
    dense = d.value;
    keyword = kw.value;
  }
  let fused: ScoredId[];
  if (p.rankerStrategy === 'rrf') fused = rrfFuse([dense, keyword], p.rankerK);
  else if (p.rankerStrategy === 'weighted') fused = weightedFuse(dense, keyword, p.rankerAlpha);
  else fused = normalizedFuse([dense, keyword]);
  const top = fused.slice(0, p.k);
  if (top.length === 0) return [];
  const rows = await read(top.map((f) => f.id));
  const hits: SearchHit[] = [];
  for (const f of top) {
    const row = rows.get(f.id);
    if (row === undefined) return undefined;
    hits.push(toHit(row, p.includeScores ? f.score : undefined));
  }
  return hits;
}

/**
 * The visible chunks among `ids` that pass `filter`, by id: the text of a hybrid search's fused top k, read in one
 * statement through the primary key.
 */
export async function readChunks(
  ctx: StoreContext,
  ids: readonly string[],
  filter: FilterNode | undefined,
): Promise<Map<string, ChunkRow>> {
  const params: unknown[] = [ids];
  const extra = filter === undefined ? '' : ` AND ${compileFilterSql(filter, params, 'metadata')}`;
  const res = await ctx.client.query<ChunkRow>(
    `SELECT id, content, metadata FROM ${ctx.t.table}
       WHERE id = ANY($1::text[]) AND ${ctx.t.visible}${extra}`,
    params,
  );
  const out = new Map<string, ChunkRow>();
  for (const r of res.rows) if (!out.has(r.id)) out.set(r.id, r);
  return out;
}

/** Visible chunks of one document with sequence_number in [from, to], by sequence_number. */
export async function getChunksBySequence(
  ctx: StoreContext,
  documentId: string,
  from: number,
  to: number,
): Promise<SearchHit[]> {
  if (!Number.isInteger(from) || !Number.isInteger(to)) {
    throw new VectorStoreError('sequence bounds must be integers');
  }
  const res = await ctx.run('read chunks', () =>
    ctx.client.query<ChunkRow>(
      `SELECT id, content, metadata FROM ${ctx.t.table}
         WHERE document_id = $1 AND sequence_number BETWEEN $2 AND $3 AND ${ctx.t.visible}
         ORDER BY sequence_number, id`,
      [documentId, from, to],
    ),
  );
  return res.rows.map((r) => toHit(r));
}
