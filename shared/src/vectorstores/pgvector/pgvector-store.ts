/**
 * The pgvector adapter's entry point: `PgVectorStore` (options, state, serialization; each method delegates to the
 * module of its concern, listed in `shared/src/vectorstores/README.md`) and the names other modules import from here.
 */
import type { AI4RAGChunk } from '../../chunking/types.js';
import { formatBytes } from '../../documents/limits.js';
import type { Embedder } from '../../embeddings/types.js';
import type { TermStats } from '../../generation/term-stats.js';
import { validateSearchParams } from '../../retrieval/search-params.js';
import { ANALYZER_VERSION } from '../../text/analyzer.js';
import { VectorStoreError } from '../errors.js';
import { type FilterNode, parseMetadataFilter } from '../filter.js';
import type { SqlClient } from '../sql-client.js';
import type {
  BeginWriteOptions,
  BuildIndexOptions,
  CollectionStats,
  DeleteDocumentOptions,
  DistanceMetric,
  DocumentCommit,
  DocumentRecord,
  EmbeddedChunk,
  IndexBuildResult,
  IntegrityReport,
  ListDocumentsOptions,
  MetadataFilter,
  SearchHit,
  SearchParams,
  StatisticsRefresh,
  VectorStore,
  VersionedCommit,
  WriteOutcome,
} from '../types.js';
import { type AnnState, buildIndex, noticeAnnIndex, refreshAnnIndex } from './ann-index.js';
import { refreshBm25, refreshStatistics, termStats } from './bm25-refresh.js';
import {
  commitDocuments,
  countLive,
  deleteByDocument,
  deleteByFilter,
  deleteDocument,
  getDocument,
  getDocuments,
  listDocuments,
  putDocument,
} from './documents.js';
import { checkIntegrity } from './integrity.js';
import {
  DEEPER_MAX,
  FOLD_ROW_WAIT_MS,
  foldMayBeDue,
  foldSamplePercent,
  keywordIndexFold,
  keywordIndexSwap,
  keywordPackBuild,
  swapDue,
} from './keyword-index.js';
import { collectionTables } from './names.js';
import { type PgVectorStoreOptions, type ResolvedOptions, resolveOptions } from './options.js';
import { type OpenedCollection, openCollection } from './registry.js';
import { collectionSizeBytes, createPackSchema, dropPgCollection } from './schema.js';
import {
  bm25Search,
  getChunksBySequence,
  hybridSearch,
  type Projected,
  type Projection,
  readChunks,
  type ScoredRow,
  type SearchContext,
  toHit,
  vectorSearch,
} from './search.js';
import { checkNumber, runOperation, type StoreContext, sqlState } from './store-context.js';
import { abortWrite, beginWrite, finishWrite } from './write-ledger.js';
import { addChunks, upsert } from './writes.js';

export { MAX_HNSW_DIMENSION, MAX_SEGMENTS, SEGMENT_MIN_ROWS } from './ann-index.js';
export { MAX_VECTOR_DIMENSION, type PgVectorStoreOptions } from './options.js';
export { dropPgCollection, REGISTRY_TABLE, SCHEMA_LOCK_TIMEOUT_MS } from './schema.js';
export { distanceToScore, vectorLiteral } from './search.js';
export { UPSERT_BATCH_SIZE } from './writes.js';

/**
 * pgvector-backed {@link VectorStore} over any {@link SqlClient} (PGlite in-process, or a `pg.Pool`). Dense search
 * uses pgvector's distance operators (HNSW segment indexes built by `buildIndex`, never in a search); keyword search is real BM25 stored as `sparsevec`
 * weights; hybrid search fuses both in memory. See `shared/src/vectorstores/README.md`: this class holds the
 * options and state and serializes writes; the work is done by the modules of this folder, given `ctx`.
 */
export class PgVectorStore implements VectorStore {
  readonly collectionName: string;
  readonly distance: DistanceMetric;
  readonly dimension: number;
  private readonly embedder: Embedder;
  private readonly annMinRows: number;
  private readonly hybridCandidates: number;
  private readonly keywordDepth: number;
  private readonly efSearch: number;
  /** pgvector has iterative index scans (0.8+). */
  private readonly iterativeScan: boolean;
  /** The packed postings exist (`keywordPackBuild`). */
  private packed: boolean;
  /** Keyword searches read long lists from their packs (`packedReads`, when they exist). */
  private packedReads: boolean;
  private readonly packedReadsWanted: boolean;
  private readonly ownsClient: boolean;
  private readonly ann: AnnState;
  /** What the modules are given: names, client, settings, `run` and `exclusive` (bound to this store). */
  private readonly ctx: StoreContext;
  private closed = false;
  private queue: Promise<unknown> = Promise.resolve();

  private constructor(
    embedder: Embedder,
    o: ResolvedOptions,
    base: Omit<StoreContext, 'run' | 'exclusive' | 'hints'>,
    opened: OpenedCollection,
  ) {
    this.collectionName = base.collectionName;
    this.distance = base.distance;
    this.dimension = base.dimension;
    this.embedder = embedder;
    this.annMinRows = o.annMinRows;
    this.hybridCandidates = o.hybridCandidates;
    this.keywordDepth = o.keywordDepth;
    this.efSearch = o.efSearch;
    this.iterativeScan = opened.iterativeScan;
    this.packed = opened.packed;
    this.packedReadsWanted = o.packedReads;
    this.packedReads = opened.packed && o.packedReads;
    this.ownsClient = o.ownsClient;
    this.ann = opened.ann;
    this.ctx = {
      ...base,
      run: <T>(operation: string, fn: () => Promise<T>) => this.run(operation, fn),
      exclusive: <T>(fn: () => Promise<T>) => this.exclusive(fn),
      hints: {},
    };
  }

  /**
   * Opens (creating when needed) a collection. Reopening checks the registry: a different dimension, distance
   * or embedding model is refused rather than mixing vectors.
   * @throws {CollectionNameError} for a name failing the `ai4rag` guard.
   * @throws {VectorStoreConfigError} for bad options.
   * @throws {VectorStoreError} for an incompatible existing collection or a SQL failure.
   * @example
   * const store = await PgVectorStore.create({ client: await openPglite(), embedder, collectionName: 'ai4rag_kb' });
   */
  static async create(options: PgVectorStoreOptions): Promise<PgVectorStore> {
    const o = resolveOptions(options);
    const { client, embedder } = options;
    const t = collectionTables(o.name.toLowerCase());
    const opened = await runOperation(o.name, 'open collection', () =>
      openCollection({
        client,
        t,
        collectionName: o.name,
        embedder,
        distance: o.distance,
        k1: o.bm25.k1,
        b: o.bm25.b,
        createIfMissing: o.createIfMissing,
        logger: o.logger,
      }),
    );
    const store = new PgVectorStore(
      embedder,
      o,
      {
        client,
        t,
        collectionName: o.name,
        dimension: embedder.dimension,
        distance: o.distance,
        bm25: o.bm25,
        keywordIndex: o.keywordIndex,
        logger: o.logger,
        useCopy: opened.useCopy,
        readOnly: opened.readOnly,
        pglite: opened.pglite,
      },
      opened,
    );
    if (opened.reg.analyzer_version !== ANALYZER_VERSION) {
      await store.run('open collection', async () => {
        if (opened.readOnly) {
          throw new VectorStoreError(
            `collection ${o.name} was indexed with analyzer ${opened.reg.analyzer_version}, not ${ANALYZER_VERSION}: ` +
              're-run an ingestion into it (unchanged documents are skipped) as a writer to re-weight it',
          );
        }
        await refreshBm25(store.ctx, true);
      });
    }
    return store;
  }

  /** Wraps foreign errors; the message names the operation, never SQL text or values. */
  private run<T>(operation: string, fn: () => Promise<T>): Promise<T> {
    return runOperation(this.collectionName, operation, fn);
  }

  /** Serializes this store's writes (statistics are read-modify-write). */
  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.queue.then(fn, fn);
    this.queue = next.catch(() => undefined);
    return next;
  }

  private assertOpen(): void {
    if (this.closed) throw new VectorStoreError(`store for ${this.collectionName} is closed`);
  }

  /**
   * Upserts chunks with precomputed vectors: duplicate ids keep the first; one statement per 1,024 rows; BM25
   * statistics change only for new ids (or changed content), so re-upserting is idempotent.
   * @throws {VectorStoreError} for a vector of the wrong dimension or a SQL failure.
   */
  async upsert(records: EmbeddedChunk[], options: { version?: string } = {}): Promise<number> {
    this.assertOpen();
    return upsert(this.ctx, records, options);
  }

  /**
   * Embeds chunks with the store's embedder (≤ 1,024 texts per call) and upserts them, each batch embedded and
   * prepared while the previous one is written.
   * @throws {VectorStoreError} when the embedder returns the wrong number or size of vectors.
   */
  async addChunks(chunks: AI4RAGChunk[], options: { version?: string } = {}): Promise<number> {
    this.assertOpen();
    return addChunks(this.ctx, this.embedder, chunks, options);
  }

  /**
   * Vector, or hybrid (vector + BM25 fused in memory), search. Parameters are validated before any I/O.
   * @throws {SearchParamsError} for invalid parameters.
   * @throws {VectorStoreError} for a SQL failure.
   */
  async search(query: string, params: SearchParams): Promise<SearchHit[]> {
    const p = validateSearchParams(params);
    this.assertOpen();
    if (typeof query !== 'string') throw new VectorStoreError('query must be a string');
    const qvec = await this.embedder.embedQuery(query);
    if (qvec.length !== this.dimension || !qvec.every(Number.isFinite)) {
      throw new VectorStoreError(`query vector must hold ${this.dimension} finite numbers`);
    }
    if (p.searchMode === 'vector') {
      const rows = await this.run('vector search', () => this.dense(qvec, p.k, p.filter));
      return rows.map((r) => toHit(r, p.includeScores ? r.score : undefined));
    }
    const n = Math.max(this.hybridCandidates, p.k);
    const fast = await hybridSearch(
      p,
      () => this.run('vector search', () => this.dense(qvec, n, p.filter, 'ids')),
      () => this.run('keyword search', () => this.bm25Search(query, n, p.filter, 'ids')),
      this.ctx.pglite,
      (ids) => this.run('read chunks', () => readChunks(this.ctx, ids, p.filter)),
    );
    if (fast !== undefined) return fast;
    // A fused hit changed between the candidates and the read of its text (a concurrent delete or update): once
    // more, each side reading its rows in its own statement, so every hit comes from the snapshot that ranked it.
    const rows = new Map<string, ScoredRow>();
    const keep = (side: ScoredRow[]) => {
      for (const r of side) if (!rows.has(r.id)) rows.set(r.id, r);
      return side;
    };
    return (
      (await hybridSearch(
        p,
        async () => keep(await this.run('vector search', () => this.dense(qvec, n, p.filter))),
        async () =>
          keep(await this.run('keyword search', () => this.bm25Search(query, n, p.filter))),
        this.ctx.pglite,
        async () => rows,
      )) ?? []
    );
  }

  /**
   * BM25-only search (pgvector-specific; the port exposes it only through hybrid search). Scores are raw Okapi
   * BM25 (idf × saturated tf), best first; chunks without a query term are excluded.
   * @throws {VectorStoreError} for a bad `k`, filter or a SQL failure.
   */
  async keywordSearch(
    query: string,
    options: { k: number; filter?: MetadataFilter },
  ): Promise<SearchHit[]> {
    this.assertOpen();
    checkNumber('k', options.k, 1, 10_000, true);
    let filter: FilterNode | undefined;
    try {
      filter = parseMetadataFilter(options.filter ?? {});
    } catch (error: unknown) {
      throw new VectorStoreError(`invalid filter: ${(error as Error).message}`, { cause: error });
    }
    const rows = await this.run('keyword search', () => this.bm25Search(query, options.k, filter));
    return rows.map((r) => toHit(r, r.score));
  }

  /** Dense search, best first, after noticing an index built meanwhile (see {@link refreshAnnIndex}). */
  private async dense<P extends Projection = 'rows'>(
    qvec: number[],
    limit: number,
    filter: FilterNode | undefined,
    projection: P = 'rows' as P,
  ): Promise<Projected<P>[]> {
    await refreshAnnIndex(this.ctx, this.ann);
    return vectorSearch(this.searchContext(), qvec, limit, filter, projection);
  }

  private searchContext(): SearchContext {
    return {
      client: this.ctx.client,
      t: this.ctx.t,
      distance: this.distance,
      annIndex: this.ann.valid,
      legacyIndex: this.ann.legacy,
      segments: this.ann.segments,
      iterativeScan: this.iterativeScan,
      efSearch: this.efSearch,
      keywordDepth: this.keywordDepth,
      packedPostings: this.packedReads,
    };
  }

  /**
   * Builds HNSW indexes once the collection holds `annMinRows` rows (or with `force`): the rows after the last
   * segment become a new segment (the first time, then from {@link SEGMENT_MIN_ROWS} rows, 1/16 of the indexed rows
   * up to 20,000, or with `force`), and segments are merged newest first while similar in size, at most
   * {@link MAX_SEGMENTS} kept (`ann-index.ts`). On a PostgreSQL server it runs `CREATE INDEX CONCURRENTLY`
   * on its own connection with a lock timeout, so searches and writes go on meanwhile (rows outside a valid
   * segment are scanned exactly), one build at a time in the database (a build that waited its lock timeout for
   * another returns `built: false`); an invalid index left by a failed build is dropped and built again. On PGlite
   * (one connection) it is a plain `CREATE INDEX`.
   * @throws {VectorStoreError} when the build fails (a lock timeout included: try again later).
   */
  async buildIndex(options: BuildIndexOptions = {}): Promise<IndexBuildResult> {
    this.assertOpen();
    // `merge` (ai4rag index --merge: everything into one structure) folds whatever is fresh.
    const folded = await foldFreshPostings(
      this.ctx,
      options.merge === true ? 1 : this.ctx.keywordIndex.foldMin,
      options.lockTimeoutMs ?? 5000,
    );
    if (options.pack === true && !this.packed && !this.ctx.readOnly) {
      // A collection from before the packs, opened as a reader opens it (the CLI's `index`): their schema now.
      const serialize = this.ctx.pglite ? this.ctx.exclusive : <T>(fn: () => Promise<T>) => fn();
      this.packed = await serialize(() =>
        this.ctx.run('keyword index pack', () => createPackSchema(this.ctx.client, this.ctx.t)),
      );
      this.packedReads = this.packed && this.packedReadsWanted;
      if (this.packed)
        this.ctx.logger(`collection ${this.collectionName}: packed postings created`);
    }
    const packed =
      options.pack === true && this.packed
        ? await packPostings(
            this.ctx,
            DEEPER_MAX * this.keywordDepth,
            options.lockTimeoutMs ?? 5000,
          )
        : undefined;
    const built = await buildIndex(this.ctx, this.ann, this.annMinRows, options);
    return {
      ...built,
      ...(packed !== undefined ? { postingsPacked: packed } : {}),
      ...(folded.moved > 0 ? { postingsFolded: folded.moved } : {}),
      ...(folded.swapped ? { postingsSwapped: true } : {}),
    };
  }

  /**
   * Folds the pending BM25 statistics and, when the average chunk length drifted past `bm25.reweightTolerance` (or
   * k1/b changed), re-weights every row now, unless the collection holds more than `maxRows` rows. Writers call it
   * after committing (the knowledge-base flow, `ingestDocuments`), so a keyword search seldom has to.
   * @throws {VectorStoreError} for a SQL failure.
   */
  async refreshStatistics(options: { maxRows?: number } = {}): Promise<StatisticsRefresh> {
    this.assertOpen();
    return refreshStatistics(this.ctx, options.maxRows);
  }

  /**
   * Term rarity over this collection's chunks, read from the BM25 document-frequency table (after folding pending
   * updates), so serving weighs question terms exactly as the keyword index does.
   */
  async termStats(): Promise<TermStats> {
    return termStats(this.ctx);
  }

  /** BM25 top-`limit` rows (score > 0), best first. */
  private bm25Search<P extends Projection = 'rows'>(
    query: string,
    limit: number,
    filter: FilterNode | undefined,
    projection: P = 'rows' as P,
  ): Promise<Projected<P>[]> {
    return bm25Search(this.ctx, this.searchContext(), query, limit, filter, projection);
  }

  /**
   * Chunks of one document with sequence_number in [from, to], ordered by sequence_number (window retrieval).
   * @throws {VectorStoreError} for non-integer bounds or a SQL failure.
   */
  async getChunksBySequence(documentId: string, from: number, to: number): Promise<SearchHit[]> {
    this.assertOpen();
    return getChunksBySequence(this.ctx, documentId, from, to);
  }

  /**
   * Deletes a document's chunks except `keepIds`; without `keepIds` also removes its document record.
   * @returns the number of chunks deleted.
   */
  async deleteByDocument(
    documentId: string,
    options: { keepIds?: string[] } = {},
  ): Promise<number> {
    this.assertOpen();
    return deleteByDocument(this.ctx, documentId, options);
  }

  /**
   * Deletes the chunks matching a non-empty filter (the language of `filter.ts`; typed: 1 ≠ '1').
   * Document records are left alone.
   * @throws {MetadataFilterError} for an empty or malformed filter.
   */
  async deleteByFilter(filter: MetadataFilter): Promise<number> {
    const f = parseMetadataFilter(filter, { nonEmpty: true }) as FilterNode;
    this.assertOpen();
    return deleteByFilter(this.ctx, f);
  }

  /** Creates or replaces a document record. */
  async putDocument(record: DocumentRecord): Promise<void> {
    this.assertOpen();
    await putDocument(this.ctx, record);
  }

  /**
   * Deletes the stale chunks of several documents (those not in their `keepIds`) and writes their records, in
   * one transaction with two statements — the batched form of `deleteByDocument(id, { keepIds })` +
   * `putDocument`, which ingestion calls once per embedding batch instead of twice per document.
   */
  async commitDocuments(entries: DocumentCommit[]): Promise<number> {
    this.assertOpen();
    return commitDocuments(this.ctx, entries);
  }

  /**
   * Starts (or, for a known version, renews) a staged write, after sweeping writes whose lease lapsed or whose
   * writer on this host is gone (their staged chunks are deleted with them, in one transaction).
   * @throws {VectorStoreConfigError} for a bad version token or lease.
   */
  async beginWrite(options: BeginWriteOptions = {}): Promise<string> {
    this.assertOpen();
    return beginWrite(this.ctx, options);
  }

  /**
   * Commits documents of a staged write (see the port). Per document, under an advisory lock: refused when the
   * write ended (`expired`), when a newer upload or a deletion outranks it (`superseded` / `deleted`), or when its
   * staged chunks are not exactly `chunkIds` (`incomplete`); else its other committed chunks are deleted and its
   * record written. Then the write's uncommitted staged chunks are deleted and the write ends — one transaction.
   * @throws {VectorStoreError} for malformed entries or a SQL failure (nothing is changed then).
   */
  async finishWrite(version: string, entries: VersionedCommit[]): Promise<WriteOutcome> {
    this.assertOpen();
    return finishWrite(this.ctx, version, entries);
  }

  /** Ends a staged write without committing it; returns the staged chunks deleted. */
  async abortWrite(version: string): Promise<number> {
    this.assertOpen();
    return abortWrite(this.ctx, version);
  }

  /**
   * Deletes a document's committed chunks and record, leaving a tombstone (deletion time and sequencer) that
   * refuses older commits of it. Staged writes of the document are left to finish (and be refused).
   * @returns chunks deleted, or -1 when `sequencer` is older than the stored version's (nothing changed).
   */
  async deleteDocument(documentId: string, options: DeleteDocumentOptions = {}): Promise<number> {
    this.assertOpen();
    return deleteDocument(this.ctx, documentId, options);
  }

  /**
   * Verifies I1–I2: chunks of no committed version and no live write (orphans), documents whose stored chunks
   * differ from their record, and writes whose lease lapsed. With `repair`: sweeps lapsed writes, deletes orphans,
   * and marks mismatched documents for re-indexing (record count set to what is stored, content hash changed so
   * the next ingest redoes them).
   */
  async checkIntegrity(options: { repair?: boolean } = {}): Promise<IntegrityReport> {
    this.assertOpen();
    return checkIntegrity(this.ctx, options);
  }

  async getDocuments(documentIds: string[]): Promise<Map<string, DocumentRecord>> {
    this.assertOpen();
    return getDocuments(this.ctx, documentIds);
  }

  async getDocument(documentId: string): Promise<DocumentRecord | undefined> {
    this.assertOpen();
    return getDocument(this.ctx, documentId);
  }

  /**
   * Document records ordered by id (the database's collation, which the page condition uses too): all, or a
   * page read through the primary-key index (`document_id > after … LIMIT`).
   */
  async listDocuments(options: ListDocumentsOptions = {}): Promise<DocumentRecord[]> {
    this.assertOpen();
    return listDocuments(this.ctx, options);
  }

  async stats(): Promise<CollectionStats> {
    this.assertOpen();
    // Stats read the catalogue: an index another session built counts at once.
    await noticeAnnIndex(this.ctx, this.ann);
    const counts = await countLive(this.ctx);
    return {
      collection: this.collectionName,
      ...counts,
      dimension: this.dimension,
      distance: this.distance,
      embeddingModel: this.embedder.modelId,
      annIndex: this.ann.valid,
      annSegments: this.ann.segments.length,
      sizeBytes: await collectionSizeBytes(this.ctx.client, this.ctx.t),
    };
  }

  /** Drops this collection (tables and registry row), then closes the store. */
  async drop(): Promise<void> {
    this.assertOpen();
    await this.exclusive(() =>
      this.run('drop collection', () => dropPgCollection(this.ctx.client, this.collectionName)),
    );
    await this.close();
  }

  /** Closes the store; the client too when the store owns it. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.queue;
    if (this.ownsClient) await this.ctx.client.close();
  }
}

/**
 * Moves the fresh postings into the folded table (`keywordIndexFold`) when there are at least `min`, in one
 * transaction that waits at most `lockTimeoutMs` for a re-weighting or a rebuild to end, and {@link FOLD_ROW_WAIT_MS}
 * for a writer holding some fresh postings (either way it folds nothing, and the next build tries again). When the
 * fresh table has outgrown the folded one (`swapDue`: a bulk load without builds), the two tables first trade names
 * (`keywordIndexSwap`, waiting as long for the same locks and for every search and writer on the postings, else it
 * folds without the swap), and the fold then moves what had been folded. Resolves to the postings moved and whether
 * the tables were swapped.
 * @throws {VectorStoreError} for a SQL failure other than the lock timeout.
 */
export async function foldFreshPostings(
  ctx: StoreContext,
  min: number,
  lockTimeoutMs: number,
): Promise<{ moved: number; swapped: boolean }> {
  const f = keywordIndexFold(ctx.t.kw);
  const none = { moved: 0, swapped: false };
  // PGlite has one connection: the fold queues behind the store's other exclusive work. On a server it runs on a
  // pooled connection while this store's writers go on (the fold is safe beside them: see keywordIndexFold).
  const serialize = ctx.pglite ? ctx.exclusive : <T>(fn: () => Promise<T>) => fn();
  return serialize(() =>
    ctx.run('keyword index fold', async () => {
      // A large fresh table is sampled first, so a build that folds nothing costs no count of it.
      const size = await ctx.client.query<{ bytes: number }>(f.size, [ctx.t.kw.fresh]);
      const percent = foldSamplePercent(Number(size.rows[0]?.bytes ?? 0));
      if (percent !== undefined) {
        const sampled = await ctx.client.query<{ n: number }>(f.sample, [percent]);
        if (!foldMayBeDue(Number(sampled.rows[0]?.n ?? 0), percent, min)) return none;
      }
      const due = await ctx.client.query<{ due: boolean }>(f.probe, [min]);
      if (due.rows[0]?.due !== true) return none;
      const swapped = await swapPostingTables(ctx, lockTimeoutMs);
      const started = performance.now();
      try {
        const moved = await ctx.client.transaction(async (tx) => {
          if (!ctx.pglite) await tx.query(`SET LOCAL lock_timeout = ${Math.round(lockTimeoutMs)}`);
          await tx.query(f.lock);
          if (!ctx.pglite) await tx.query(`SET LOCAL lock_timeout = ${FOLD_ROW_WAIT_MS}`);
          return (await tx.query<{ moved: number }>(f.fold)).rows[0]?.moved ?? 0;
        });
        ctx.logger(
          `collection ${ctx.collectionName}: keyword index: ${moved} ${swapped ? 'formerly folded' : 'fresh'} postings folded in ${((performance.now() - started) / 1000).toFixed(2)} s`,
        );
        return { moved, swapped };
      } catch (error: unknown) {
        if (sqlState(error) !== '55P03') throw error;
        ctx.logger(
          `collection ${ctx.collectionName}: keyword index fold skipped (a re-weighting held the collection, or a writer some fresh postings); the next build folds`,
        );
        return { moved: 0, swapped };
      }
    }),
  );
}

/**
 * Packs the head of each long folded list (`keywordPackBuild`: at most `max` postings of each term with more than
 * `keywordIndex.packMinDf`, the longest first, `keywordIndex.packMaxPostings` in all) when the packs are empty (a
 * build not run yet, or emptied since by postings added to the folded table: a fold, a swap, a rebuild) and the
 * collection is past `keywordIndex.freshFromRow` (a smaller one's writers add to the folded table, which would empty
 * the packs each time). One transaction, waiting at most
 * `lockTimeoutMs` for the pack lock (else it packs nothing, and the next build tries again). Resolves to the terms
 * packed, undefined when it did not pack.
 * @throws {VectorStoreError} for a SQL failure other than the lock timeout.
 */
export async function packPostings(
  ctx: StoreContext,
  max: number,
  lockTimeoutMs: number,
): Promise<number | undefined> {
  if (max <= 0) return undefined;
  const pk = keywordPackBuild(ctx.t.kw, ctx.t.dfTable);
  const serialize = ctx.pglite ? ctx.exclusive : <T>(fn: () => Promise<T>) => fn();
  return serialize(() =>
    ctx.run('keyword index pack', async () => {
      const due = await ctx.client.query<{ pack_due: boolean }>(
        `SELECT NOT EXISTS (SELECT 1 FROM ${ctx.t.kw.packed})
           AND COALESCE((SELECT max(rid) FROM ${ctx.t.table}), 0) > $1 AS pack_due`,
        [ctx.keywordIndex.freshFromRow],
      );
      if (due.rows[0]?.pack_due !== true) return undefined;
      const started = performance.now();
      try {
        const terms = await ctx.client.transaction(async (tx) => {
          if (!ctx.pglite) await tx.query(`SET LOCAL lock_timeout = ${Math.round(lockTimeoutMs)}`);
          await tx.query(pk.lock, [ctx.t.kw.packLock]);
          await tx.query(pk.clear);
          return (
            (
              await tx.query<{ terms: number }>(pk.fill, [
                max,
                ctx.keywordIndex.packMinDf,
                ctx.keywordIndex.packMaxPostings,
              ])
            ).rows[0]?.terms ?? 0
          );
        });
        ctx.logger(
          `collection ${ctx.collectionName}: keyword index: ${terms} long lists packed in ${((performance.now() - started) / 1000).toFixed(2)} s`,
        );
        return terms;
      } catch (error: unknown) {
        if (sqlState(error) !== '55P03') throw error;
        ctx.logger(
          `collection ${ctx.collectionName}: keyword index pack skipped (a writer adding to the folded postings held it); the next build packs`,
        );
        return undefined;
      }
    }),
  );
}

/**
 * Trades the names of the two postings tables when the fresh one is due to ({@link swapDue}), in one transaction
 * that gives up at the lock timeouts of the fold; resolves to whether it did. Runs inside the fold's `ctx.run`.
 * When only autovacuum held the tables (it vacuums a bulk load's fresh table as it grows, and was doing so when the
 * first 1M `ai4rag index` tried), it tries once more waiting past `deadlock_timeout`, after which PostgreSQL cancels
 * an autovacuum that blocks a lock request; searches wait behind the request meanwhile.
 */
export async function swapPostingTables(
  ctx: StoreContext,
  lockTimeoutMs: number,
): Promise<boolean> {
  const sw = keywordIndexSwap(ctx.t.kw);
  const tables = [ctx.t.kw.postings, ctx.t.kw.fresh];
  const sizes = await ctx.client.query<{ folded: number; fresh: number }>(sw.sizes, tables);
  const folded = Number(sizes.rows[0]?.folded ?? 0);
  const fresh = Number(sizes.rows[0]?.fresh ?? 0);
  if (!swapDue(fresh, folded, ctx.keywordIndex.swapMinBytes)) return false;
  const what = `the fresh postings (${formatBytes(fresh)}) outgrew the folded ones (${formatBytes(folded)})`;
  const started = performance.now();
  const attempt = (waitMs: number) =>
    ctx.client.transaction(async (tx) => {
      if (!ctx.pglite) await tx.query(`SET LOCAL lock_timeout = ${Math.round(lockTimeoutMs)}`);
      await tx.query(sw.lock);
      if (!ctx.pglite) await tx.query(`SET LOCAL lock_timeout = ${Math.round(waitMs)}`);
      await tx.query(sw.exclusive);
      for (const sql of sw.rename) await tx.query(sql);
    });
  const gaveUp = (error: unknown) => {
    if (!['55P03', '40P01'].includes(sqlState(error) ?? '')) throw error;
    ctx.logger(
      `collection ${ctx.collectionName}: keyword index: ${what}, but other sessions held them (searches, writers, a vacuum); folding without the swap`,
    );
    return false;
  };
  try {
    await attempt(FOLD_ROW_WAIT_MS);
  } catch (error: unknown) {
    if (sqlState(error) !== '55P03') return gaveUp(error);
    const held = await ctx.client.query<{ vacuum: number; other: number; ms: number }>(
      sw.holders,
      tables,
    );
    const h = held.rows[0];
    if (h === undefined || h.vacuum === 0 || h.other > 0) return gaveUp(error);
    ctx.logger(
      `collection ${ctx.collectionName}: keyword index: ${what}; autovacuum holds them, waiting up to ${Math.round(h.ms + AUTOVACUUM_MARGIN_MS)} ms for PostgreSQL to cancel it`,
    );
    try {
      await attempt(h.ms + AUTOVACUUM_MARGIN_MS);
    } catch (again: unknown) {
      return gaveUp(again);
    }
  }
  ctx.logger(
    `collection ${ctx.collectionName}: keyword index: ${what}: the tables traded names in ${((performance.now() - started) / 1000).toFixed(2)} s`,
  );
  return true;
}

/** How long past `deadlock_timeout` a swap waits for an autovacuum to be cancelled ({@link swapPostingTables}). */
const AUTOVACUUM_MARGIN_MS = 1000;
