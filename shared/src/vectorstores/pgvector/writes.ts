/**
 * The write path of a pgvector collection: validating and de-duplicating chunks, and writing them in batches of
 * {@link UPSERT_BATCH_SIZE} — each batch one transaction that renews its staged write's lease, computes BM25
 * weights against the registry's avgdl, sends new rows and their keyword-index postings through binary COPY (updated
 * ones through a multi-row INSERT … ON CONFLICT, their postings kept by the triggers) and logs its statistics changes.
 * Embedding and each batch's client-side work (analysis, weights, encoding) are pipelined with writing.
 */
import type { AI4RAGChunk } from '../../chunking/types.js';
import type { Embedder } from '../../embeddings/types.js';
import { analyze } from '../../text/analyzer.js';
import { VectorStoreError } from '../errors.js';
import type { SqlClient } from '../sql-client.js';
import { checkVersion } from '../staged.js';
import type { EmbeddedChunk } from '../types.js';
import { BM25_DIM, bm25DocWeights, termFrequencies } from './bm25.js';
import { logDf } from './bm25-stats.js';
import {
  type ChunkRow as CopyRow,
  encodeChunkRowsWithRids,
  encodePostings,
} from './copy-binary.js';
import { keywordIndexClientWrite } from './keyword-index.js';
import { lockRegistry } from './registry.js';
import { REGISTRY_TABLE } from './schema.js';
import { vectorLiteral } from './search.js';
import { type StoreContext, sqlState } from './store-context.js';
import { holdWrite } from './write-ledger.js';

/** Rows per upsert statement (ai4rag's PGVector batch size). */
export const UPSERT_BATCH_SIZE = 1024;

/** The chunk table's columns, in the order `encodeChunkRowsWithRids` writes them. */
const COPY_COLUMNS = [
  'id',
  'document_id',
  'sequence_number',
  'content',
  'metadata',
  'embedding',
  'bm25',
  'token_count',
  'version',
  'rid',
] as const;

/** The postings table's columns, in the order `encodePostings` writes them. */
const POSTING_COLUMNS = ['term', 'w', 'rid'] as const;

/** Attempts of one batch when other writers insert the same rows at the same time (see {@link upsert}). */
const MAX_BATCH_ATTEMPTS = 5;
/** Outcomes retried: a unique violation (COPY met a row inserted meanwhile), a deadlock, a {@link WriteConflict}. */
const RETRIED_STATES = new Set(['23505', '40P01', 'conflict']);

/** Rows this batch took for new were inserted by another writer meanwhile: the transaction is rolled back. */
class WriteConflict extends Error {}

/** Sparse BM25 weights: ascending term ids and their values. */
export interface SortedWeights {
  indices: number[];
  values: number[];
}

/** Sparse weights as ascending term ids and their non-zero finite values. */
export function sortedWeights(weights: ReadonlyMap<number, number>): SortedWeights {
  const entries = [...weights.entries()]
    .filter(([, v]) => v !== 0 && Number.isFinite(v))
    .sort((a, b) => a[0] - b[0]);
  return { indices: entries.map(([i]) => i), values: entries.map(([, v]) => v) };
}

/** `sparsevec` text of sorted weights. */
export function sortedLiteral(w: SortedWeights): string {
  return `{${w.indices.map((i, j) => `${i}:${w.values[j]}`).join(',')}}/${BM25_DIM}`;
}

/** Rows analysed per turn of the event loop while a batch is prepared (so the previous batch's statements move on). */
const PREPARE_SLICE = 32;

/** Lets queued I/O callbacks run (a write in flight on another batch) before more CPU-bound work. */
const yieldToLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Term frequencies and token count of one row's text. */
interface Analyzed {
  tf: Map<number, number>;
  dl: number;
}

/**
 * A batch's client-side work done before its transaction, while the previous batch is still on the server: the
 * analysis always; the weights and the COPY rows too when the store already knows the collection's avgdl (checked
 * inside the transaction: a batch prepared with another one is weighed again there).
 */
interface PreparedBatch {
  batch: EmbeddedChunk[];
  analyzed: Analyzed[];
  /** Document frequencies and tokens the batch adds if every row is new (the usual case). */
  dfIfNew: Map<number, number>;
  tokensIfNew: number;
  /** The avgdl `weights` and `copy` were computed with; absent when none was known. */
  avgdl?: number;
  weights?: SortedWeights[];
  /** Every row, taken for new, as one binary COPY stream (when the store writes through COPY), and its postings. */
  copy?: ReturnType<typeof encodeChunkRowsWithRids>;
  postings?: BatchPostings;
}

/** A batch's postings in the index's order (term, weight descending, row); `row` indexes the batch. */
export interface BatchPostings {
  term: Int32Array;
  w: Float32Array;
  row: Int32Array;
}

/** The postings of the rows `pick` of a batch, sorted as the index orders them (its inserts are then in order). */
export function sortedPostings(
  weights: readonly SortedWeights[],
  pick: (i: number) => boolean,
): BatchPostings {
  // Each term's entries in row order, then the terms in order and each list by weight (a stable sort: rows stay
  // ascending within a weight). Several times faster than one comparison sort of every posting.
  const lists = new Map<number, number[]>();
  let count = 0;
  weights.forEach((x, i) => {
    if (!pick(i)) return;
    for (let j = 0; j < x.indices.length; j += 1) {
      const t = x.indices[j] as number;
      let list = lists.get(t);
      if (list === undefined) {
        list = [];
        lists.set(t, list);
      }
      // float4, as the sparsevec stores the weight the trigger would read back
      list.push(Math.fround(x.values[j] as number), i);
    }
    count += x.indices.length;
  });
  const terms = Float64Array.from(lists.keys()).sort();
  const out: BatchPostings = {
    term: new Int32Array(count),
    w: new Float32Array(count),
    row: new Int32Array(count),
  };
  let k = 0;
  for (const t of terms) {
    const flat = lists.get(t) as number[];
    const order = Array.from({ length: flat.length / 2 }, (_, e) => e);
    if (order.length > 1) order.sort((a, b) => (flat[2 * b] as number) - (flat[2 * a] as number));
    for (const e of order) {
      out.term[k] = t;
      out.w[k] = flat[2 * e] as number;
      out.row[k] = flat[2 * e + 1] as number;
      k += 1;
    }
  }
  return out;
}

/** Checks each record (id, text, metadata, vector) and drops repeated ids (first wins). */
function validateRecords(ctx: StoreContext, records: EmbeddedChunk[]): EmbeddedChunk[] {
  const seen = new Set<string>();
  const unique: EmbeddedChunk[] = [];
  for (const r of records) {
    const { chunk, vector } = r;
    if (typeof chunk?.id !== 'string' || chunk.id.length === 0) {
      throw new VectorStoreError('every chunk needs a non-empty string id');
    }
    if (seen.has(chunk.id)) continue;
    seen.add(chunk.id);
    if (typeof chunk.text !== 'string') throw new VectorStoreError(`chunk ${chunk.id} has no text`);
    const md = chunk.metadata;
    if (typeof md?.document_id !== 'string' || !Number.isInteger(md.sequence_number)) {
      throw new VectorStoreError(
        `chunk ${chunk.id} needs metadata.document_id (string) and metadata.sequence_number (integer)`,
      );
    }
    if (
      !Array.isArray(vector) ||
      vector.length !== ctx.dimension ||
      !vector.every(Number.isFinite)
    ) {
      throw new VectorStoreError(
        `chunk ${chunk.id}: vector must hold ${ctx.dimension} finite numbers (got ${Array.isArray(vector) ? vector.length : typeof vector})`,
      );
    }
    unique.push(r);
  }
  return unique;
}

/** The BM25 weights of analysed rows under `avgdl`. */
function weigh(ctx: StoreContext, analyzed: readonly Analyzed[], avgdl: number): SortedWeights[] {
  return analyzed.map((a) =>
    sortedWeights(bm25DocWeights(a.tf, a.dl, avgdl, ctx.bm25.k1, ctx.bm25.b)),
  );
}

/** The COPY rows of `batch` at the indexes `pick`. */
function copyRows(
  batch: readonly EmbeddedChunk[],
  analyzed: readonly Analyzed[],
  weights: readonly SortedWeights[],
  version: string,
  pick: (i: number) => boolean,
): CopyRow[] {
  const rows: CopyRow[] = [];
  batch.forEach((r, i) => {
    if (!pick(i)) return;
    const w = weights[i] as SortedWeights;
    rows.push({
      id: r.chunk.id,
      documentId: r.chunk.metadata.document_id,
      sequenceNumber: r.chunk.metadata.sequence_number,
      content: r.chunk.text,
      metadataJson: JSON.stringify(r.chunk.metadata),
      embedding: r.vector,
      bm25Indices: w.indices,
      bm25Values: w.values,
      bm25Dim: BM25_DIM,
      tokenCount: (analyzed[i] as Analyzed).dl,
      version,
    });
  });
  return rows;
}

/** Does a batch's client-side work (see {@link PreparedBatch}), yielding to the event loop between slices. */
async function prepareBatch(
  ctx: StoreContext,
  batch: EmbeddedChunk[],
  version: string,
): Promise<PreparedBatch> {
  const analyzed: Analyzed[] = [];
  const dfIfNew = new Map<number, number>();
  let tokensIfNew = 0;
  for (let i = 0; i < batch.length; i += 1) {
    if (i > 0 && i % PREPARE_SLICE === 0) await yieldToLoop();
    const tokens = analyze((batch[i] as EmbeddedChunk).chunk.text);
    const tf = termFrequencies(tokens);
    for (const id of tf.keys()) dfIfNew.set(id, (dfIfNew.get(id) ?? 0) + 1);
    tokensIfNew += tokens.length;
    analyzed.push({ tf, dl: tokens.length });
  }
  const prepared: PreparedBatch = { batch, analyzed, dfIfNew, tokensIfNew };
  const avgdl = ctx.hints.avgdl;
  if (avgdl === undefined) return prepared;
  await yieldToLoop();
  prepared.avgdl = avgdl;
  prepared.weights = weigh(ctx, analyzed, avgdl);
  if (ctx.useCopy) {
    await yieldToLoop();
    const weights = prepared.weights;
    prepared.copy = encodeChunkRowsWithRids(
      copyRows(batch, analyzed, weights, version, () => true),
    );
    await yieldToLoop();
    prepared.postings = sortedPostings(weights, () => true);
  }
  return prepared;
}

/** Validates and de-duplicates `records`, then writes them in batches (each one transaction, one at a time). */
export async function upsert(
  ctx: StoreContext,
  records: EmbeddedChunk[],
  options: { version?: string } = {},
): Promise<number> {
  const version = options.version === undefined ? '' : checkVersion(options.version);
  const unique = validateRecords(ctx, records);
  for (let i = 0; i < unique.length; i += UPSERT_BATCH_SIZE) {
    await writeBatch(
      ctx,
      await prepareBatch(ctx, unique.slice(i, i + UPSERT_BATCH_SIZE), version),
      version,
    );
  }
  return unique.length;
}

/**
 * Writes one prepared batch as one transaction, retried when other writers insert the same rows meanwhile or
 * deadlock with it; returns its row count.
 */
async function writeBatch(
  ctx: StoreContext,
  prepared: PreparedBatch,
  version: string,
): Promise<number> {
  // PGlite has one connection: its writes queue behind the store's other exclusive work. On a server each batch is
  // its own transaction on a pooled connection; batches of different staged writes (concurrent ingest writers)
  // then run at once, as safely as two processes' do (per-document commits, an append-only statistics log).
  const serialize = ctx.pglite ? ctx.exclusive : <T>(fn: () => Promise<T>) => fn();
  await serialize(async () => {
    for (let attempt = 1; ; attempt += 1) {
      try {
        const avgdl = await ctx.run('upsert', () =>
          ctx.client.transaction((tx) => upsertBatch(ctx, tx, prepared, version, attempt === 1)),
        );
        ctx.hints.avgdl = avgdl;
        return;
      } catch (error: unknown) {
        // Another writer inserted some of these rows after this batch looked for them (binary COPY cannot skip
        // a conflict, and the INSERT skips it rather than count it twice), or two writers' inserts deadlocked:
        // nothing of this batch was committed, so it runs again, finding those rows and updating them in place.
        const cause = (error as { cause?: unknown }).cause;
        const code = cause instanceof WriteConflict ? 'conflict' : sqlState(cause);
        if (!RETRIED_STATES.has(code ?? '') || attempt >= MAX_BATCH_ATTEMPTS) {
          if (cause instanceof WriteConflict) {
            throw new VectorStoreError(
              `upsert failed on collection ${ctx.collectionName}: other writers kept writing the same chunk ids (${MAX_BATCH_ATTEMPTS} attempts); nothing of this batch was written`,
            );
          }
          throw error;
        }
      }
    }
  });
  return prepared.batch.length;
}

/**
 * Writes one batch inside `tx`: renews the write's lease, weighs the rows, COPYs new ones (when `allowCopy` and the
 * client can), updates the rest in place, logs the statistics changes; the first write fixes the avgdl. Returns the
 * avgdl the rows were weighed with.
 */
async function upsertBatch(
  ctx: StoreContext,
  tx: SqlClient,
  prepared: PreparedBatch,
  version: string,
  allowCopy: boolean,
): Promise<number> {
  const { batch, analyzed } = prepared;
  if (version !== '') await holdWrite(ctx, tx, version);
  // The table's write lock before the avgdl is read: a re-weighting (SHARE lock) has then either committed, and
  // its avgdl is read here, or waits for this batch and re-weights its rows too.
  await tx.query(`LOCK TABLE ${ctx.t.table} IN ROW EXCLUSIVE MODE`);
  // Read without a lock: the counts only seed avgdl; their changes go to the append-only log.
  let reg = await lockRegistry(tx, ctx.t, ctx.collectionName, false);
  // The first writes of a collection fix its avgdl: one at a time, so all weigh their rows with the same one.
  if (reg.bm25_avgdl_weighted === null || reg.bm25_avgdl_weighted <= 0) {
    reg = await lockRegistry(tx, ctx.t, ctx.collectionName, true);
  }
  const ids = batch.map((r) => r.chunk.id);
  // Row-locked (in id order), so that no other writer changes or deletes them before this batch commits: the
  // statistics change logged below is then exactly what the batch did to them.
  const existing = await tx.query<{ id: string; content: string }>(
    `SELECT id, content FROM ${ctx.t.table} WHERE version = $2 AND id = ANY($1::text[]) ORDER BY id FOR UPDATE`,
    [ids, version],
  );
  const old = new Map(existing.rows.map((r) => [r.id, r.content]));
  let n = reg.n;
  let total = reg.total;
  let added: number;
  let tokenDelta: number;
  let dfDelta: Map<number, number>;
  if (old.size === 0) {
    // Every row is new: the changes counted when the batch was prepared.
    added = batch.length;
    tokenDelta = prepared.tokensIfNew;
    dfDelta = prepared.dfIfNew;
    n += added;
    total += tokenDelta;
  } else {
    added = 0;
    tokenDelta = 0;
    dfDelta = new Map<number, number>();
    const bump = (tf: Map<number, number>, by: number) => {
      for (const id of tf.keys()) dfDelta.set(id, (dfDelta.get(id) ?? 0) + by);
    };
    batch.forEach((r, i) => {
      const { tf, dl } = analyzed[i] as Analyzed;
      const prev = old.get(r.chunk.id);
      if (prev === undefined) {
        n += 1;
        total += dl;
        added += 1;
        tokenDelta += dl;
        bump(tf, 1);
      } else if (prev !== r.chunk.text) {
        const prevTokens = analyze(prev);
        total += dl - prevTokens.length;
        tokenDelta += dl - prevTokens.length;
        bump(termFrequencies(prevTokens), -1);
        bump(tf, 1);
      }
    });
  }
  const avgdl =
    reg.bm25_avgdl_weighted !== null && reg.bm25_avgdl_weighted > 0
      ? reg.bm25_avgdl_weighted
      : total > 0 && n > 0
        ? total / n
        : 1;
  const prepWeighed = prepared.avgdl === avgdl && prepared.weights !== undefined;
  const weights = prepWeighed ? (prepared.weights as SortedWeights[]) : weigh(ctx, analyzed, avgdl);
  const isNew = batch.map((r) => !old.has(r.chunk.id));
  // New rows go through binary COPY where the client offers it (no float parsing; several times faster
  // than the INSERT below); rows that exist are updated in place. Rows are keyed by (id, version) and one
  // writer owns a version; a concurrent redelivery of the same batch makes the COPY fail (the caller retries
  // without it).
  const viaCopy = allowCopy && ctx.useCopy && tx.copyFrom !== undefined;
  const pick = batch.map((_, i) => i).filter((i) => !viaCopy || !isNew[i]);
  const copied = batch.length - pick.length;
  if (viaCopy && tx.copyFrom && copied > 0) {
    // The new rows and their postings, with row ids taken from the table's sequence; the insert trigger stands
    // aside meanwhile (it would parse every row's weights back from their text).
    const clientWrite = keywordIndexClientWrite();
    const reserved = await tx.query<{ rid: number }>(clientWrite.reserve, [ctx.t.table, copied]);
    const rids = reserved.rows.map((r) => Number(r.rid));
    const ridOf = new Float64Array(batch.length);
    let next = 0;
    isNew.forEach((fresh, i) => {
      if (fresh) ridOf[i] = rids[next++] as number;
    });
    const asPrepared = prepWeighed && old.size === 0 && prepared.copy !== undefined;
    const rows = asPrepared
      ? (prepared.copy as NonNullable<PreparedBatch['copy']>)
      : encodeChunkRowsWithRids(
          copyRows(batch, analyzed, weights, version, (i) => isNew[i] === true),
        );
    rows.setRids(rids);
    await tx.copyFrom(ctx.t.table, COPY_COLUMNS, rows.bytes);
    const postings =
      asPrepared && prepared.postings !== undefined
        ? prepared.postings
        : sortedPostings(weights, (i) => isNew[i] === true);
    // A large collection's new postings go to the fresh table (its b-tree stays in memory); an index build folds
    // them into the other in one sorted pass (keywordIndexFold).
    const large = (rids[0] ?? 0) > ctx.keywordIndex.freshFromRow;
    await tx.copyFrom(
      large ? ctx.t.kw.fresh : ctx.t.kw.postings,
      POSTING_COLUMNS,
      encodePostings({
        term: postings.term,
        w: postings.w,
        rid: Float64Array.from(postings.row, (i) => ridOf[i] as number),
      }),
    );
    if (pick.length > 0) await tx.query(clientWrite.resume);
  }
  if (pick.length > 0) {
    const at = <T>(f: (r: EmbeddedChunk, i: number) => T) =>
      pick.map((i) => f(batch[i] as EmbeddedChunk, i));
    const written = await tx.query<{ one: number }>(
      `INSERT INTO ${ctx.t.table} (id, document_id, sequence_number, content, metadata, embedding, bm25, token_count, version)
         SELECT u.id, u.doc, u.seq, u.content, u.meta::jsonb, u.emb::vector, u.bm::sparsevec, u.tc, $9
         FROM unnest($1::text[], $2::text[], $3::int4[], $4::text[], $5::text[], $6::text[], $7::text[], $8::int4[])
           AS u(id, doc, seq, content, meta, emb, bm, tc)
         ON CONFLICT (id, version) DO UPDATE SET document_id = EXCLUDED.document_id,
           sequence_number = EXCLUDED.sequence_number, content = EXCLUDED.content, metadata = EXCLUDED.metadata,
           embedding = EXCLUDED.embedding, bm25 = EXCLUDED.bm25, token_count = EXCLUDED.token_count
           WHERE ${ctx.t.table}.id = ANY($10::text[])
         RETURNING 1 AS one`,
      [
        at((r) => r.chunk.id),
        at((r) => r.chunk.metadata.document_id),
        at((r) => r.chunk.metadata.sequence_number),
        at((r) => r.chunk.text),
        at((r) => JSON.stringify(r.chunk.metadata)),
        at((r) => vectorLiteral(r.vector)),
        at((_, i) => sortedLiteral(weights[i] as SortedWeights)),
        at((_, i) => (analyzed[i] as Analyzed).dl),
        version,
        [...old.keys()],
      ],
    );
    // A row this batch took for new but another writer inserted meanwhile is neither inserted nor updated here
    // (it was not counted, and is not locked): roll back and run the batch again.
    if (written.rows.length !== pick.length) throw new WriteConflict();
  }
  await logDf(tx, ctx.t, ctx.useCopy, dfDelta, added, tokenDelta);
  if (reg.bm25_avgdl_weighted === null || reg.bm25_avgdl_weighted <= 0) {
    // The first write of a collection fixes the avgdl its weights were computed with (the only registry write
    // on the write path; later drift is handled by re-weighting before a keyword search).
    await tx.query(
      `UPDATE ${REGISTRY_TABLE} SET bm25_avgdl_weighted = $2
         WHERE name = $1 AND (bm25_avgdl_weighted IS NULL OR bm25_avgdl_weighted <= 0)`,
      [ctx.t.key, avgdl],
    );
  }
  return avgdl;
}

/**
 * Embeds `chunks` (≤ 1,024 texts per call) and writes them in batches: batch i + 1 is embedded and prepared (analysis,
 * weights, COPY encoding) while batch i is on the server; writes stay in order, one at a time.
 */
export async function addChunks(
  ctx: StoreContext,
  embedder: Embedder,
  chunks: AI4RAGChunk[],
  options: { version?: string } = {},
): Promise<number> {
  const version = options.version === undefined ? '' : checkVersion(options.version);
  const seen = new Set<string>();
  const unique: AI4RAGChunk[] = [];
  for (const c of chunks) {
    if (seen.has(c.id)) continue;
    seen.add(c.id);
    unique.push(c);
  }
  let stored = 0;
  let writing: Promise<number> | undefined;
  try {
    for (let i = 0; i < unique.length; i += UPSERT_BATCH_SIZE) {
      const batch = unique.slice(i, i + UPSERT_BATCH_SIZE);
      const vectors = await embedder.embedDocuments(batch.map((c) => c.text));
      if (vectors.length !== batch.length) {
        throw new VectorStoreError(
          `embedder returned ${vectors.length} vectors for ${batch.length} texts`,
        );
      }
      const records = validateRecords(
        ctx,
        batch.map((chunk, j) => ({ chunk, vector: vectors[j] ?? [] })),
      );
      const prepared = await prepareBatch(ctx, records, version);
      if (writing) stored += await writing;
      writing = writeBatch(ctx, prepared, version);
      // Marked handled now; the rejection, if any, is rethrown by the await above or below.
      writing.catch(() => undefined);
    }
    if (writing) stored += await writing;
  } catch (error: unknown) {
    // Never leave a write running behind the caller's back.
    await writing?.catch(() => undefined);
    throw error;
  }
  return stored;
}
