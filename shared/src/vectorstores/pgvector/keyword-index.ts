/**
 * The BM25 keyword index of a pgvector collection: an impact-ordered postings table `(term, weight, rid)` with a
 * b-tree on `(term, weight DESC, rid)`, kept in step with the chunk table's `bm25` sparsevec column by statement-level
 * triggers (insert, update of `bm25`, delete), inside the writer's own transaction, so it is exact under concurrent
 * writers, crashes and rollbacks. The store's binary COPY of new rows writes their postings itself instead (sorted,
 * in the same transaction: {@link keywordIndexClientWrite}); every other change goes through the triggers.
 *
 * A keyword search reads the `depth` highest-weighted postings of each query term (an index range scan whose cost
 * does not grow with the collection), sums the partial scores per chunk, and rescores the best candidates exactly
 * from their `bm25` column. The query also returns a bound on what any chunk it did not rescore can score (see
 * {@link keywordQuery}): when the k-th hit beats it, the top k is exactly the exact scan's. Otherwise the store
 * reads once more, deeper ({@link deeperDepth}: a fixed budget of postings shared among the cut lists), without the
 * bound, and keeps the better of the two reads; a chunk outside every term's top postings can then be missed. The
 * deeper read sums its postings in the client ({@link keywordPostingsRead}) and rescores only the candidates whose
 * upper bound can reach the top k ({@link keywordRescore})
 * (measured by `npm run bench -- --scale`, which reports the top-10 overlap with the exact scan). When the first
 * read cannot plausibly prove anything ({@link firstReadMayProve}) the store goes straight to the deeper one.
 *
 * The postings live in two tables of that shape, folded and fresh: a large collection's writers add to the fresh
 * one, whose b-tree stays in memory, and an index build folds it into the other ({@link keywordIndexFold}); searches
 * read both.
 */
import { auxiliaryName, quoteIdent } from '../naming.js';

/** Postings read per query term by default (see the module comment; measured in `bench/scale.ts`). */
export const DEFAULT_KEYWORD_DEPTH = 1000;

/**
 * Postings the deeper read may take in all, in units of the first read's depth: its depth per cut list (a term
 * with more postings than the first read took) is this budget shared among the cut lists, between 2 and
 * {@link DEEPER_MAX} times the first depth. A query's cost is then bounded whatever its length, and a short query
 * reads deeper. Measured at 1M chunks in `npm run bench -- --scale` (README, "One million chunks").
 */
export const DEEPER_BUDGET = 64;
/** The deeper read's largest depth per list, in units of the first read's depth. */
export const DEEPER_MAX = 16;
/** A list longer than this many times the first read's depth makes that read's bound loose (see below). */
export const LONG_LIST = 4;

/**
 * Whether the first read (bounded, `depth` postings a list) may prove its top k: not when two or more of the
 * query's lists (`lengths`, the terms' df) are over {@link LONG_LIST} times `depth`. The bound is then the sum of
 * two or more near-top impacts, which the k-th hit does not reach: at 1M chunks (`--scale` corpus) no query's first
 * read proved its top 10, and skipping it took 4 ms off the keyword p50 (README, "One million chunks").
 * @example firstReadMayProve(1000, [900, 5000, 3000]) // true
 * @example firstReadMayProve(1000, [4001, 5000, 30]) // false
 */
export function firstReadMayProve(depth: number, lengths: readonly number[]): boolean {
  return lengths.filter((n) => n > LONG_LIST * depth).length < 2;
}

/**
 * Whether a search reads first at `depth` (bounded) before the deeper read. A search whose caller needs its top k
 * proven exact (`proof`: a keyword search) reads first when {@link firstReadMayProve}. A hybrid search's keyword
 * candidates are used by rank only, fused with the dense side's, so a proof buys them nothing: they read first only
 * when no list is cut (`lengths`, the terms' df, all within `depth`), where the first read is complete. At 1M chunks
 * the first read of a hybrid's 100 candidates cost 10–13 ms and proved none (README, "The hybrid search's keyword
 * side").
 * @example firstReadWanted(1000, [900, 5000], true) // true: one long list may still be proven
 * @example firstReadWanted(1000, [900, 5000], false) // false: a list is cut, so read deeper at once
 * @example firstReadWanted(1000, [900, 1000], false) // true: complete, and exact
 */
export function firstReadWanted(
  depth: number,
  lengths: readonly number[],
  proof: boolean,
): boolean {
  return proof ? firstReadMayProve(depth, lengths) : lengths.every((n) => n <= depth);
}

/**
 * Depth per list of the deeper read after a first read at `depth` that cut `cut` lists (see {@link DEEPER_BUDGET}).
 * @example deeperDepth(1000, 3) // 16000
 * @example deeperDepth(1000, 5) // 12800
 */
export function deeperDepth(depth: number, cut: number): number {
  const share = Math.floor((DEEPER_BUDGET * depth) / Math.max(1, cut));
  return Math.min(DEEPER_MAX * depth, Math.max(2 * depth, share));
}

/** Quoted names of a collection's keyword-index objects. */
export interface KeywordIndexNames {
  /** The chunk table (quoted). */
  table: string;
  /** The folded postings (written in bulk: a fold, a rebuild; and by writers while the collection is small). */
  postings: string;
  postingsIndex: string;
  /**
   * The fresh postings: what writers add to a large collection (see {@link FRESH_POSTINGS_FROM_ROW}) and what the
   * insert trigger writes, until a fold ({@link keywordIndexFold}) moves them into {@link postings}. Searches read
   * both.
   */
  fresh: string;
  freshIndex: string;
  /** A name no object holds, taken for a moment while the two postings tables trade names ({@link keywordIndexSwap}). */
  spare: string;
  ridIndex: string;
  fn: string;
  insertTrigger: string;
  updateTrigger: string;
  deleteTrigger: string;
  /** The packed postings: each long list's head as one bytea ({@link keywordPackBuild}). */
  packed: string;
  /** The function that empties {@link packed} when postings are added to the folded table, and its triggers. */
  packFn: string;
  packTrigger: string;
  /** The folded table's name unquoted, as the pack trigger compares it (`TG_TABLE_NAME`) after a swap too. */
  postingsName: string;
  /** The advisory lock (its key, hashed) a pack build holds and an addition to the folded postings shares. */
  packLock: string;
}

/** Names of the keyword-index objects of collection `key` (lower-case, validated by the caller). */
export function keywordIndexNames(key: string): KeywordIndexNames {
  const q = (suffix: string) => quoteIdent(auxiliaryName(key, suffix));
  return {
    table: quoteIdent(key),
    postings: q('p'),
    postingsIndex: q('pi'),
    fresh: q('q'),
    freshIndex: q('qi'),
    spare: q('qx'),
    ridIndex: q('r'),
    fn: q('pf'),
    insertTrigger: q('ti'),
    updateTrigger: q('tu'),
    deleteTrigger: q('td'),
    packed: q('pk'),
    packFn: q('kf'),
    packTrigger: q('tk'),
    postingsName: auxiliaryName(key, 'p'),
    packLock: `${auxiliaryName(key, 'pk')}:pack`,
  };
}

/**
 * SQL expanding the rows of `rows` (a table with `rid` and `bm25`) into `(term, w, rid)` postings, parsed from the
 * sparsevec's text form `{i:v,...}/dim` (pgvector has no unnest for sparsevec). The text round-trips a float4
 * exactly, so the same row always yields the same postings (which is what lets a delete find them).
 */
function expand(rows: string): string {
  return `SELECT split_part(e, ':', 1)::int4 AS term, split_part(e, ':', 2)::float4 AS w, r.rid
    FROM ${rows} r, LATERAL unnest(string_to_array(
      btrim(split_part(r.bm25::text, '/', 1), '{}'), ',')) AS e
    WHERE r.bm25 IS NOT NULL AND e <> ''`;
}

/**
 * Statements creating the postings table, its index, the trigger function and the three triggers (idempotent:
 * `IF NOT EXISTS` / `OR REPLACE`), then back-filling postings for rows already in the table when the postings
 * table was just created. Run inside the schema transaction.
 */
export function keywordIndexDdl(n: KeywordIndexNames): string[] {
  return [
    `CREATE TABLE IF NOT EXISTS ${n.postings} (term int4 NOT NULL, w float4 NOT NULL, rid bigint NOT NULL)`,
    `CREATE INDEX IF NOT EXISTS ${n.postingsIndex} ON ${n.postings} (term, w DESC, rid)`,
    `CREATE TABLE IF NOT EXISTS ${n.fresh} (term int4 NOT NULL, w float4 NOT NULL, rid bigint NOT NULL)`,
    `CREATE INDEX IF NOT EXISTS ${n.freshIndex} ON ${n.fresh} (term, w DESC, rid)`,
    `CREATE UNIQUE INDEX IF NOT EXISTS ${n.ridIndex} ON ${n.table} (rid)`,
    `CREATE OR REPLACE FUNCTION ${n.fn}() RETURNS trigger LANGUAGE plpgsql AS $fn$
     DECLARE
       saved text[];
       rids bigint[];
       weights sparsevec[];
     BEGIN
       -- A re-weighting of the whole collection rebuilds the postings in one pass instead (keywordIndexBulk).
       IF current_setting('${BULK_SETTING}', true) = 'on' THEN
         RETURN NULL;
       END IF;
       IF TG_OP = 'INSERT' THEN
         INSERT INTO ${n.fresh} (term, w, rid) ${expand('new_rows')} ORDER BY 1, 2 DESC, 3;
         RETURN NULL;
       END IF;
       IF TG_OP = 'UPDATE' THEN
         -- Only rows whose weights changed (an upsert of unchanged content, or a token-count update, keeps them).
         SELECT array_agg(o.rid), array_agg(o.bm25) INTO rids, weights
           FROM old_rows o JOIN new_rows x ON x.rid = o.rid
           WHERE o.bm25::text IS DISTINCT FROM x.bm25::text;
         IF rids IS NULL THEN
           RETURN NULL;
         END IF;
       END IF;
       -- ${DELETE_PLAN_MARK}: one index probe per posting, on (term, w, rid). Left to itself the planner probed on
       -- (term, w) alone and filtered rid, reading every posting of that weight each time (memoized or not: 2.4 s
       -- for 3,000 rows of a 6,000-row collection), or hashed the whole postings table (a scan per delete): neither
       -- is bounded by what is deleted. The postings to delete come from one materialized relation, so all three
       -- columns are parameters of the probe, and the settings (restored before anything else runs) leave the
       -- planner the nested loop alone.
       saved := ARRAY[current_setting('enable_hashjoin'), current_setting('enable_mergejoin'),
         current_setting('enable_memoize')];
       PERFORM set_config('enable_hashjoin', 'off', true), set_config('enable_mergejoin', 'off', true),
         set_config('enable_memoize', 'off', true);
       -- ${FRESH_MARK}: a row's postings are in the fresh table or the folded one. The fresh table first, then the folded one in a
       -- statement of its own (a new snapshot): a fold moving them meanwhile holds their rows, so the first delete
       -- waits for it, finds them gone, and the second sees where the fold put them.
       IF TG_OP = 'DELETE' THEN
         rids := ARRAY(SELECT rid FROM old_rows WHERE bm25 IS NOT NULL);
         weights := ARRAY(SELECT bm25 FROM old_rows WHERE bm25 IS NOT NULL);
       END IF;
       WITH d AS MATERIALIZED (${expand('(SELECT * FROM unnest(rids, weights) AS u(rid, bm25))')})
       DELETE FROM ${n.fresh} p USING d WHERE p.term = d.term AND p.w = d.w AND p.rid = d.rid;
       WITH d AS MATERIALIZED (${expand('(SELECT * FROM unnest(rids, weights) AS u(rid, bm25))')})
       DELETE FROM ${n.postings} p USING d WHERE p.term = d.term AND p.w = d.w AND p.rid = d.rid;
       PERFORM set_config('enable_hashjoin', saved[1], true), set_config('enable_mergejoin', saved[2], true),
         set_config('enable_memoize', saved[3], true);
       IF TG_OP = 'UPDATE' THEN
         INSERT INTO ${n.fresh} (term, w, rid)
           ${expand('(SELECT x.rid, x.bm25 FROM new_rows x JOIN unnest(rids) AS c(rid) ON c.rid = x.rid)')}
           ORDER BY 1, 2 DESC, 3;
       END IF;
       RETURN NULL;
     END $fn$`,
    `DROP TRIGGER IF EXISTS ${n.insertTrigger} ON ${n.table}`,
    `CREATE TRIGGER ${n.insertTrigger} AFTER INSERT ON ${n.table}
       REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION ${n.fn}()`,
    `DROP TRIGGER IF EXISTS ${n.updateTrigger} ON ${n.table}`,
    `CREATE TRIGGER ${n.updateTrigger} AFTER UPDATE ON ${n.table}
       REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION ${n.fn}()`,
    `DROP TRIGGER IF EXISTS ${n.deleteTrigger} ON ${n.table}`,
    `CREATE TRIGGER ${n.deleteTrigger} AFTER DELETE ON ${n.table}
       REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION ${n.fn}()`,
    ...keywordPackDdl(n),
  ];
}

/**
 * The packed postings (see {@link keywordPackBuild}): the table (EXTERNAL storage, so a read of a list's head fetches
 * only the TOAST chunks it needs, uncompressed), and the statement-level trigger on both postings tables that
 * empties it, under the pack lock shared, when postings are added to the table that is the folded one at the time
 * (`TG_TABLE_NAME`: the swap trades the tables' names, and their triggers go with them). A pack is then never
 * missing a posting of the folded table: a build either sees an addition (it committed before the build took the
 * lock) or is emptied by it. Deleted postings stay in a pack until a fold empties the packs and a build packs them
 * again; a search rescores its candidates from the chunk table, where they are gone (see {@link keywordPostingsRead}).
 */
export function keywordPackDdl(n: KeywordIndexNames): string[] {
  return [
    `CREATE TABLE IF NOT EXISTS ${n.packed} (term int4 PRIMARY KEY, n int4 NOT NULL, whole boolean NOT NULL,
       data bytea NOT NULL)`,
    `ALTER TABLE ${n.packed} ALTER COLUMN data SET STORAGE EXTERNAL`,
    `CREATE OR REPLACE FUNCTION ${n.packFn}() RETURNS trigger LANGUAGE plpgsql AS $fn$
     BEGIN
       -- ${PACK_MARK}
       IF TG_TABLE_NAME = '${n.postingsName}' THEN
         PERFORM pg_advisory_xact_lock_shared(hashtextextended('${n.packLock}', 0));
         DELETE FROM ${n.packed};
       END IF;
       RETURN NULL;
     END $fn$`,
    ...[n.postings, n.fresh].flatMap((table) => [
      `DROP TRIGGER IF EXISTS ${n.packTrigger} ON ${table}`,
      `CREATE TRIGGER ${n.packTrigger} AFTER INSERT ON ${table} FOR EACH STATEMENT EXECUTE FUNCTION ${n.packFn}()`,
    ]),
  ];
}

/** Marks the pack trigger function's current version (see {@link keywordPackDdl}). */
export const PACK_MARK = 'packs emptied by additions to the folded postings';

/**
 * Terms whose document frequency is over this many get a pack: a shorter list is read from the b-tree in well under
 * a millisecond.
 */
export const PACK_MIN_DF = 2 * DEFAULT_KEYWORD_DEPTH;

/**
 * Postings one pack build takes in all (each term counted as its document frequency, at most a pack's length), the
 * longest lists first: a build's time then stays bounded whatever the collection's size. At 1M chunks every list
 * over {@link PACK_MIN_DF} fitted (37.6M postings, 71 s).
 */
export const PACK_MAX_POSTINGS = 40_000_000;

/**
 * Building the packed postings, one transaction: `lock` takes the pack lock (`$1` {@link KeywordIndexNames.packLock}),
 * which waits for every transaction that added folded postings to end and holds the next ones off until the build
 * commits; `clear` empties the table; `fill` packs, for the terms of document frequency over `$2`, the head of its
 * folded list, at most `$1` postings in the order a read takes them (weight descending, then row id), 12 bytes each
 * as {@link keywordPostingsRead} returns them, with its length and whether it is the whole list. Resolves through
 * `fill`'s one row to the terms packed. The terms are taken longest list first while their lengths (document
 * frequency, at most `$1`) add up to at most `$3` ({@link PACK_MAX_POSTINGS}).
 *
 * Reading a long list's head from the b-tree costs an index entry and a `string_agg` step per posting: at 1M chunks
 * a hybrid search's deeper read of about 24,500 postings took 7.5–8.4 ms at p50 from the b-tree and 2.9–3.4 ms from
 * packs (a scratch replay of 60 reads), and keyword searches 0.68–0.72 of their time (README, "Packed postings").
 */
export function keywordPackBuild(
  n: KeywordIndexNames,
  dfTable: string,
): { lock: string; clear: string; fill: string } {
  return {
    lock: 'SELECT pg_advisory_xact_lock(hashtextextended($1, 0))',
    clear: `DELETE FROM ${n.packed}`,
    fill: `WITH ins AS (INSERT INTO ${n.packed} (term, n, whole, data)
        SELECT d.term, x.n, x.n < $1, x.data FROM (
          SELECT term FROM (SELECT term, sum(least(df, $1)) OVER (ORDER BY df DESC, term) AS upto
            FROM ${dfTable} WHERE df > $2) c WHERE upto <= $3) d CROSS JOIN LATERAL (
          SELECT count(*)::int4 AS n, string_agg(int8send(y.rid) || float4send(y.w), ''::bytea) AS data
          FROM (SELECT rid, w FROM ${n.postings} WHERE ${n.postings}.term = d.term ORDER BY w DESC, rid LIMIT $1) y) x
        WHERE x.n > 0
        RETURNING 1)
      SELECT count(*)::int AS terms FROM ins`,
  };
}

/**
 * Transaction-local setting under which the triggers leave the postings to their writer (a rebuild, see
 * keywordIndexBulk, or a COPY writing its own, see keywordIndexClientWrite). A trigger function without it (the
 * index's first version) counts as missing schema, so the next writer replaces it.
 */
export const BULK_SETTING = 'ai4rag.postings_bulk';

/**
 * Marks the trigger function's version that deletes postings by one index probe each (see keywordIndexDdl); a
 * function without it is replaced by the next writer, like one without {@link BULK_SETTING}.
 */
export const DELETE_PLAN_MARK = 'postings deleted by probe';

/**
 * Marks the trigger function's version that writes into the fresh postings and deletes from both tables (see
 * keywordIndexDdl); a function without it is replaced by the next writer before anything opens the collection.
 */
export const FRESH_MARK = 'fresh postings first';

/**
 * For a writer that writes the postings of its new rows itself (binary COPY, sorted: several times cheaper than the
 * insert trigger parsing each row's weights from their text): `reserve` (`$1` the chunk table's name as text, `$2`
 * a count) returns that many new row ids (`rid`, float8, ascending) and switches the triggers off for the rest of
 * the transaction; `resume` switches them back on, before any other change to the chunk table.
 */
export function keywordIndexClientWrite(): { reserve: string; resume: string } {
  return {
    reserve: `SELECT nextval(s.seq)::float8 AS rid
      FROM (SELECT pg_get_serial_sequence($1, 'rid')::regclass AS seq, set_config('${BULK_SETTING}', 'on', true)) s,
        generate_series(1, $2::int) ORDER BY 1`,
    resume: `SELECT set_config('${BULK_SETTING}', 'off', true)`,
  };
}

/**
 * Statements around a rewrite of every row's weights (BM25 re-weighting): `begin` holds writers off (SHARE lock)
 * and switches the triggers off for this transaction, `end` switches them back on and rebuilds the postings in one
 * sorted pass — instead of the triggers deleting and re-inserting each row's postings one statement at a time. A
 * writer able to COPY runs `clear`, sends the postings itself, and ends with `resume`.
 */
export function keywordIndexBulk(n: KeywordIndexNames): {
  begin: string[];
  end: string[];
  clear: string[];
  resume: string;
} {
  return {
    begin: [`LOCK TABLE ${n.table} IN SHARE MODE`, `SET LOCAL ${BULK_SETTING} = 'on'`],
    end: [`SET LOCAL ${BULK_SETTING} = 'off'`, ...keywordIndexBackfill(n)],
    // A writer that sends every row's new postings itself (binary COPY) empties the index first and, instead of
    // `end`, only switches the triggers back on.
    clear: [`DELETE FROM ${n.fresh}`, `DELETE FROM ${n.postings}`],
    resume: `SET LOCAL ${BULK_SETTING} = 'off'`,
  };
}

/**
 * Rebuilds every posting from the chunk table (a collection created before the index existed, or a repair), with
 * writers held off (SHARE lock) until the transaction ends.
 */
export function keywordIndexBackfill(n: KeywordIndexNames): string[] {
  return [
    `LOCK TABLE ${n.table} IN SHARE MODE`,
    `DELETE FROM ${n.fresh}`,
    `DELETE FROM ${n.postings}`,
    `INSERT INTO ${n.postings} (term, w, rid) ${expand(n.table)} ORDER BY 1, 2 DESC, 3`,
  ];
}

/** Rows (one, `n`): postings missing from the index or present without their chunk's weight (0 when consistent). */
export function keywordIndexMismatchSql(n: KeywordIndexNames): string {
  return `SELECT count(*)::int AS n FROM (
    (SELECT term, w, rid FROM ${allPostings(n)} a EXCEPT ALL SELECT * FROM (${expand(n.table)}) e)
    UNION ALL (SELECT * FROM (${expand(n.table)}) e EXCEPT ALL SELECT term, w, rid FROM ${allPostings(n)} a)) x`;
}

/** SQL (a parenthesized relation `(term, w, rid)`): the folded and the fresh postings together. */
export function allPostings(n: KeywordIndexNames): string {
  return `(SELECT term, w, rid FROM ${n.postings} UNION ALL SELECT term, w, rid FROM ${n.fresh})`;
}

/** Statements dropping the keyword-index objects that outlive their chunk table (the triggers go with it). */
export function keywordIndexDrop(n: KeywordIndexNames): string[] {
  return [
    `DROP TABLE IF EXISTS ${n.postings}`,
    `DROP TABLE IF EXISTS ${n.fresh}`,
    `DROP TABLE IF EXISTS ${n.packed}`,
    `DROP FUNCTION IF EXISTS ${n.fn}()`,
    `DROP FUNCTION IF EXISTS ${n.packFn}()`,
  ];
}

/**
 * The query: `$1` term ids, `$2` their query weights (idf × query tf), `$3` depth, `$4` candidates kept, `$5` the
 * query as sparsevec (exact rescoring), `$6` limit; `visible` and `extra` are SQL predicates on the chunk table
 * (visibility of staged writes, the compiled metadata filter with parameters from `$7`). Result rows are the hits
 * best first; the last row (`id` NULL) carries `bound` and `ncand`:
 * - `bound`: the most a chunk missing from every cut list can score — the sum, over the terms with a list cut at
 *   `depth`, of the lowest partial score read from it (a term's postings are in two lists, folded and fresh, a
 *   chunk's in one of them: the larger of the two lists' lowest when both were cut; 0 when no list was cut);
 * - `cth`: the partial score of the last candidate kept when `ncand` reached `$4` (else 0), so a chunk read but not
 *   kept scores at most `cth + bound`.
 * The top k is provably exact when the k-th hit scores at least `cth + bound`.
 */
export function keywordQuery(
  n: KeywordIndexNames,
  visible: string,
  extra: string,
  projection: 'rows' | 'ids' = 'rows',
): string {
  return `WITH q(term, qw) AS (SELECT * FROM unnest($1::int4[], $2::float8[])),
    hits AS (SELECT p.rid, q.term, p.src, q.qw * p.w AS s FROM ${topPostings(n)}),
    cand AS (SELECT rid, sum(s) AS s FROM hits GROUP BY rid ORDER BY sum(s) DESC, rid LIMIT $4),
    res AS (${rescore(n, visible, extra, projection)})
    SELECT id, content, metadata, score, NULL::float8 AS bound, NULL::float8 AS cth, NULL::int AS ncand, 1 AS part
    FROM res
    UNION ALL SELECT NULL, NULL, NULL, NULL,
      (SELECT COALESCE(sum(m), 0) FROM (SELECT max(m) AS m FROM (SELECT term, min(s) AS m FROM hits
        GROUP BY term, src HAVING count(*) >= $3) c GROUP BY term) b),
      (SELECT CASE WHEN count(*) >= $4 THEN min(s) ELSE 0 END FROM cand),
      (SELECT count(*)::int FROM cand), 2
    ORDER BY part, score DESC, id`;
}

/**
 * The `$3` highest-weighted postings `p(rid, w, src)` of each query term `q(term, qw)` in each of the two postings
 * tables (`src` 0: folded, 1: fresh): an index range scan each, so a term's read is bounded by twice `$3` whatever
 * the planner thinks of the tables' sizes (a chunk's postings are in one of them).
 */
function topPostings(n: KeywordIndexNames): string {
  return `q CROSS JOIN LATERAL (
      (SELECT rid, w, 0 AS src FROM ${n.postings} WHERE ${n.postings}.term = q.term ORDER BY w DESC, rid LIMIT $3)
      UNION ALL
      (SELECT rid, w, 1 AS src FROM ${n.fresh} WHERE ${n.fresh}.term = q.term ORDER BY w DESC, rid LIMIT $3)) p`;
}

/**
 * The candidates `cand(rid)` rescored exactly from their `bm25` column (`$5`), visible and filtered, top `$6`. Each
 * candidate is one probe of the row-id index: the subquery is LATERAL and fenced (`OFFSET 0`), so the planner cannot
 * turn it into a hash join over a scan of the whole chunk table, which it did on a table not yet analysed (a new
 * collection: an experiment's trial searches it seconds after writing it) once the rows were wide enough.
 */
function rescore(
  n: KeywordIndexNames,
  visible: string,
  extra: string,
  projection: 'rows' | 'ids',
): string {
  return `SELECT r.id, r.content, r.metadata, r.score FROM cand CROSS JOIN LATERAL (
        ${probeCandidate(n, 'cand', '$5', visible, extra, projection)}) r
      ORDER BY r.score DESC, r.id LIMIT $6`;
}

/**
 * The chunk row of candidate `source.rid`, visible and filtered, scored exactly against the query weights `query`
 * (a parameter): one probe of the row-id index, fenced (`OFFSET 0`) for a LATERAL join (see {@link rescore}). With
 * projection `ids` (a hybrid search's candidates) the text and metadata columns are NULL, so the rows keep their
 * shape.
 */
function probeCandidate(
  n: KeywordIndexNames,
  source: string,
  query: string,
  visible: string,
  extra: string,
  projection: 'rows' | 'ids',
): string {
  const t = n.table;
  const body =
    projection === 'rows'
      ? `${t}.content, ${t}.metadata`
      : 'NULL::text AS content, NULL::jsonb AS metadata';
  return `SELECT ${t}.id, ${body}, ((${t}.bm25 <#> ${query}::sparsevec) * -1)::float8 AS score
        FROM ${t} WHERE ${t}.rid = ${source}.rid AND ${visible} ${extra} OFFSET 0`;
}

/**
 * {@link keywordQuery} without the bound: the same candidates and rescoring, with the postings read once into the
 * aggregate (no materialized CTE scanned a second time). The deeper read of a query whose lists would send the
 * client more than `CLIENT_MERGE_MAX` postings (search.ts) sums them here instead of in the client. Parameters
 * `$1`–`$6` (and the filter's from `$7`) as there; rows are the hits best first.
 */
export function keywordQueryUnbounded(
  n: KeywordIndexNames,
  visible: string,
  extra: string,
  projection: 'rows' | 'ids' = 'rows',
): string {
  return `WITH q(term, qw) AS (SELECT * FROM unnest($1::int4[], $2::float8[])),
    cand AS (SELECT p.rid, sum(q.qw * p.w) AS s FROM ${topPostings(n)}
      GROUP BY p.rid ORDER BY sum(q.qw * p.w) DESC, p.rid LIMIT $4)
    ${rescore(n, visible, extra, projection)}`;
}

/**
 * The deeper read's postings, for a result used whether or not it is proven exact: per query term (`$1`, one row
 * each, in order), the `$2` highest-weighted postings of each postings table (`folded`, `fresh`), packed as
 * `int8send(rid) || float4send(w)` (bytea, null for none). The client sums them (`mergeCandidates`, postings-merge.ts) and
 * rescores the best ({@link keywordRescore}): at 1.29M chunks the keyword p50 went from 22.2–25.0 ms, summing
 * and sorting them in SQL, to 13.4–16.2 ms (README, "Summing the deeper read in the client").
 */
export function keywordPostingsRead(n: KeywordIndexNames, packed = false): string {
  const list = (table: string) => `(SELECT string_agg(int8send(x.rid) || float4send(x.w), ''::bytea)
      FROM (SELECT rid, w FROM ${table} WHERE ${table}.term = q.term ORDER BY w DESC, rid LIMIT $2) x)`;
  // A pack serves a read it holds (`$2` postings, or the whole list): the same bytes as the b-tree's, or with
  // postings deleted since the build among them (see keywordPackDdl).
  const folded = packed
    ? `COALESCE((SELECT substring(k.data FROM 1 FOR $2 * 12) FROM ${n.packed} k
        WHERE k.term = q.term AND (k.whole OR k.n >= $2)), ${list(n.postings)})`
    : list(n.postings);
  return `SELECT ${folded} AS folded, ${list(n.fresh)} AS fresh
    FROM unnest($1::int4[]) WITH ORDINALITY AS q(term, i) ORDER BY q.i`;
}

/**
 * Exact rescoring of the candidates `$1` (row ids, best first by partial score) whose exact scores are at most `$2`
 * (their upper bounds), visible and filtered (the filter's parameters from `$6`), top `$5`, the query's weights in
 * `$4`. The first `$3` candidates are rescored, and of the rest only those whose bound reaches the `$5`-th best
 * score among those: the others cannot enter the top `$5`, so the result equals rescoring them all. Rows are the
 * hits best first, as {@link keywordQuery}'s.
 */
export function keywordRescore(
  n: KeywordIndexNames,
  visible: string,
  extra: string,
  projection: 'rows' | 'ids' = 'rows',
): string {
  const probe = probeCandidate(n, 'c', '$4', visible, extra, projection);
  return `WITH c AS MATERIALIZED (SELECT * FROM unnest($1::int8[], $2::float8[]) WITH ORDINALITY AS u(rid, up, i)),
    head AS MATERIALIZED (SELECT r.* FROM c CROSS JOIN LATERAL (${probe}) r WHERE c.i <= $3),
    bar AS MATERIALIZED (SELECT COALESCE(
      (SELECT score FROM head ORDER BY score DESC LIMIT 1 OFFSET $5 - 1), '-Infinity'::float8) AS v),
    tail AS (SELECT r.* FROM c CROSS JOIN bar CROSS JOIN LATERAL (${probe}) r WHERE c.i > $3 AND c.up >= bar.v)
    SELECT * FROM head UNION ALL SELECT * FROM tail ORDER BY score DESC, id LIMIT $5`;
}

/** How long the fold statement waits for a posting a writer holds before it gives up ({@link keywordIndexFold}). */
export const FOLD_ROW_WAIT_MS = 100;

/** Postings the fresh table holds before an index build folds them ({@link keywordIndexFold}). */
export const FOLD_MIN_POSTINGS = 2_000_000;

/**
 * A collection is large for its keyword index once its row ids pass this: writers then add postings to the fresh
 * table, whose b-tree stays small enough for the buffer cache, instead of to the folded one, where at 1M chunks
 * each posting landed on a b-tree leaf no longer in memory (a page read, a dirty page written and a full-page WAL
 * image per posting: README, "One million chunks"). Below it they write to the folded table directly, so a small
 * collection never pays for a fold.
 */
export const FRESH_POSTINGS_FROM_ROW = 100_000;

/** A fresh table of at most this many pages is counted to decide on a fold; a larger one is sampled first. */
export const FOLD_COUNT_PAGES = 1024;
/** Pages a sample of a larger fresh table reads (TABLESAMPLE SYSTEM: whole pages, each with the same chance). */
export const FOLD_SAMPLE_PAGES = 256;
/** A sample estimating fewer than this share of the fold's minimum means no fold, without counting. */
export const FOLD_SAMPLE_SHARE = 0.8;

/**
 * How the fold decides whether it is due, from the fresh table's size (`bytes`, `pg_relation_size`): `undefined` to
 * count its postings (up to the minimum: a small table), else the percentage of its pages to sample first. At
 * 2.3M fresh postings (102 MB) the count took 126–169 ms and a 1 % sample 2 ms, and a build runs after each
 * commit (README, "Adding to a large collection").
 * @example foldSamplePercent(8 * 1024 * 1024) // undefined: 1,024 pages are counted
 * @example foldSamplePercent(8 * 1024 * 10_240) // 2.5: 256 of 10,240 pages
 */
export function foldSamplePercent(bytes: number): number | undefined {
  const pages = Math.ceil(bytes / 8192);
  if (pages <= FOLD_COUNT_PAGES) return undefined;
  return (100 * FOLD_SAMPLE_PAGES) / pages;
}

/**
 * Whether a sample of `percent` % of the fresh table's pages that held `sampled` postings leaves the fold possibly
 * due at `min` postings: the estimate (`sampled` × 100 / `percent`) reaches {@link FOLD_SAMPLE_SHARE} of `min`. The
 * sample's error is a few percent at 256 pages of evenly filled pages, so a table at the minimum is missed
 * (and folded by a later build) far less often than once in a thousand.
 * @example foldMayBeDue(20_720, 1, 2_000_000) // true: about 2,072,000
 * @example foldMayBeDue(10_000, 1, 2_000_000) // false: about 1,000,000
 */
export function foldMayBeDue(sampled: number, percent: number, min: number): boolean {
  return (sampled * 100) / percent >= FOLD_SAMPLE_SHARE * min;
}

/**
 * The fold: `size` (`$1` the fresh table's quoted name) its bytes; `sample` (`$1` a percentage) the postings on a
 * sample of its pages; `probe` (`$1` a count) is `due` when it holds at least that many postings; `fold` moves every
 * fresh posting visible to it into the folded table, sorted in the index's order, in one statement (`moved`: how
 * many). Run in a transaction after `lock` (ROW EXCLUSIVE on the chunk table: it waits for a re-weighting or a
 * rebuild, which hold SHARE, and lets writers go on). A posting written meanwhile stays fresh; a delete racing with
 * the fold waits for it on the fresh table and then finds the posting where it was put (see the trigger). The fold
 * statement itself waits at most {@link FOLD_ROW_WAIT_MS} for a posting a writer's delete holds, and gives up (the
 * next build folds): well under PostgreSQL's 1 s `deadlock_timeout`, so a writer deleting postings in another order
 * never becomes a deadlock's victim. (Skipping locked postings instead, `FOR UPDATE SKIP LOCKED`, made a fold of
 * 2.3M postings at 1M chunks take 52.4 s instead of 16.8–21.9 s.)
 */
export function keywordIndexFold(n: KeywordIndexNames): {
  size: string;
  sample: string;
  probe: string;
  lock: string;
  fold: string;
} {
  return {
    size: 'SELECT pg_relation_size($1::regclass)::float8 AS bytes',
    sample: `SELECT count(*)::float8 AS n FROM ${n.fresh} TABLESAMPLE SYSTEM ($1)`,
    probe: `SELECT count(*) >= $1 AS due FROM (SELECT 1 FROM ${n.fresh} LIMIT $1) x`,
    lock: `LOCK TABLE ${n.table} IN ROW EXCLUSIVE MODE`,
    fold: `WITH moved AS (DELETE FROM ${n.fresh} RETURNING term, w, rid),
      ins AS (INSERT INTO ${n.postings} (term, w, rid) SELECT term, w, rid FROM moved ORDER BY 1, 2 DESC, 3
        RETURNING 1)
      SELECT count(*)::int AS moved FROM ins`,
  };
}

/**
 * A fresh table at least this large (heap bytes) that has also outgrown the folded one trades names with it before a
 * fold ({@link keywordIndexSwap}), so the fold moves the smaller table's postings. A bulk load without index builds
 * (`ingest --no-index`) leaves every posting past row 100,000 fresh: at 1M chunks, 104,245,029 fresh postings against
 * about 11.6M folded, and the fold moving them took about 426 s (README, "One million chunks").
 */
export const SWAP_MIN_BYTES = 64 * 1024 * 1024;

/**
 * Whether a fold should first swap the two postings tables: the fresh one holds at least `minBytes` and more than
 * the folded one (both heap bytes, `pg_relation_size`).
 * @example swapDue(900e6, 100e6, SWAP_MIN_BYTES) // true
 * @example swapDue(90e6, 100e6, SWAP_MIN_BYTES) // false: the folded table is the larger
 * @example swapDue(30e6, 0, SWAP_MIN_BYTES) // false: small enough to move
 */
export function swapDue(freshBytes: number, foldedBytes: number, minBytes: number): boolean {
  return freshBytes >= minBytes && freshBytes > foldedBytes;
}

/**
 * The swap: `sizes` (`$1` the folded table's quoted name, `$2` the fresh one's) their heap bytes; `holders` who
 * else holds a lock on them (autovacuum workers or others) and `deadlock_timeout`; after `lock` (the
 * chunk table, as the fold takes it) and `exclusive` (both postings tables, ACCESS EXCLUSIVE: it waits for every
 * search and writer using them, and holds the next ones until it commits), `rename` trades the tables' names and
 * their indexes' names, so the fresh postings become the folded table and the folded ones fresh, for the fold to
 * move, and empties the packs (they were of the other table). Nothing is copied: it costs the locks, not the
 * postings. Where a posting lives never changes what a search or a delete finds (both read both tables by name,
 * and a statement planned before the swap is planned again).
 */
export function keywordIndexSwap(n: KeywordIndexNames): {
  sizes: string;
  holders: string;
  lock: string;
  exclusive: string;
  rename: string[];
} {
  // The names are quoted plain identifiers (no schema), which RENAME TO takes as they are.
  const trade = (kind: 'TABLE' | 'INDEX', a: string, b: string) => [
    `ALTER ${kind} ${a} RENAME TO ${n.spare}`,
    `ALTER ${kind} ${b} RENAME TO ${a}`,
    `ALTER ${kind} ${n.spare} RENAME TO ${b}`,
  ];
  return {
    sizes:
      'SELECT pg_relation_size($1::regclass)::float8 AS folded, pg_relation_size($2::regclass)::float8 AS fresh',
    // Other sessions' granted locks on either table ($1, $2): held by autovacuum workers, by anyone else; and the
    // server's deadlock_timeout in ms.
    holders: `SELECT count(*) FILTER (WHERE a.backend_type = 'autovacuum worker')::int AS vacuum,
        count(*) FILTER (WHERE a.backend_type IS DISTINCT FROM 'autovacuum worker')::int AS other,
        (SELECT extract(epoch FROM current_setting('deadlock_timeout')::interval) * 1000)::float8 AS ms
      FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid
      WHERE l.granted AND l.pid <> pg_backend_pid() AND l.relation IN ($1::regclass, $2::regclass)`,
    lock: `LOCK TABLE ${n.table} IN ROW EXCLUSIVE MODE`,
    exclusive: `LOCK TABLE ${n.postings}, ${n.fresh} IN ACCESS EXCLUSIVE MODE`,
    rename: [
      ...trade('TABLE', n.postings, n.fresh),
      ...trade('INDEX', n.postingsIndex, n.freshIndex),
      // The packs were of the other table (no posting was added to the one now folded: its trigger stays still).
      `DELETE FROM ${n.packed}`,
    ],
  };
}
