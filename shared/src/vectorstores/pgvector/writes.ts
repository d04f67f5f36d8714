/**
 * The write path of a pgvector collection: validating and de-duplicating chunks, and writing them in batches of
 * {@link UPSERT_BATCH_SIZE} — each batch one transaction that renews its staged write's lease, computes BM25
 * weights against the registry's avgdl, sends new rows through binary COPY (updated ones through a multi-row
 * INSERT … ON CONFLICT) and logs its statistics changes. Embedding is pipelined with writing.
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
import { type ChunkRow as CopyRow, encodeChunkRows } from './copy-binary.js';
import { lockRegistry } from './registry.js';
import { REGISTRY_TABLE } from './schema.js';
import { vectorLiteral } from './search.js';
import { type StoreContext, sqlState } from './store-context.js';
import { holdWrite } from './write-ledger.js';

/** Rows per upsert statement (ai4rag's PGVector batch size). */
export const UPSERT_BATCH_SIZE = 1024;

/** The chunk table's columns, in the order `encodeChunkRows` writes them. */
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
] as const;

/** Attempts of one batch when other writers insert the same rows at the same time (see {@link upsert}). */
const MAX_BATCH_ATTEMPTS = 5;
/** Outcomes retried: a unique violation (COPY met a row inserted meanwhile), a deadlock, a {@link WriteConflict}. */
const RETRIED_STATES = new Set(['23505', '40P01', 'conflict']);

/** Rows this batch took for new were inserted by another writer meanwhile: the transaction is rolled back. */
class WriteConflict extends Error {}

/** Sparse BM25 weights: ascending term ids and their values. */
interface SortedWeights {
  indices: number[];
  values: number[];
}

/** Sparse weights as ascending term ids and their non-zero finite values. */
function sortedWeights(weights: ReadonlyMap<number, number>): SortedWeights {
  const entries = [...weights.entries()]
    .filter(([, v]) => v !== 0 && Number.isFinite(v))
    .sort((a, b) => a[0] - b[0]);
  return { indices: entries.map(([i]) => i), values: entries.map(([, v]) => v) };
}

function sortedLiteral(w: SortedWeights): string {
  return `{${w.indices.map((i, j) => `${i}:${w.values[j]}`).join(',')}}/${BM25_DIM}`;
}

/** Validates and de-duplicates `records`, then writes them in batches (each one transaction, one at a time). */
export async function upsert(
  ctx: StoreContext,
  records: EmbeddedChunk[],
  options: { version?: string } = {},
): Promise<number> {
  const version = options.version === undefined ? '' : checkVersion(options.version);
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
  // PGlite has one connection: its writes queue behind the store's other exclusive work. On a server each batch is
  // its own transaction on a pooled connection; batches of different staged writes (concurrent ingest writers)
  // then run at once, as safely as two processes' do (per-document commits, an append-only statistics log).
  const serialize = ctx.pglite ? ctx.exclusive : <T>(fn: () => Promise<T>) => fn();
  for (let i = 0; i < unique.length; i += UPSERT_BATCH_SIZE) {
    const batch = unique.slice(i, i + UPSERT_BATCH_SIZE);
    await serialize(async () => {
      for (let attempt = 1; ; attempt += 1) {
        try {
          await ctx.run('upsert', () =>
            ctx.client.transaction((tx) => upsertBatch(ctx, tx, batch, version, attempt === 1)),
          );
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
  }
  return unique.length;
}

/**
 * Writes one batch inside `tx`: renews the write's lease, weighs the rows, COPYs new ones (when `allowCopy` and the
 * client can), updates the rest in place, logs the statistics changes; the first write fixes the avgdl.
 */
async function upsertBatch(
  ctx: StoreContext,
  tx: SqlClient,
  batch: EmbeddedChunk[],
  version: string,
  allowCopy: boolean,
): Promise<void> {
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
  let added = 0;
  let tokenDelta = 0;
  const dfDelta = new Map<number, number>();
  const bump = (tf: Map<number, number>, by: number) => {
    for (const id of tf.keys()) dfDelta.set(id, (dfDelta.get(id) ?? 0) + by);
  };
  const analyzed = batch.map((r) => {
    const tokens = analyze(r.chunk.text);
    const tf = termFrequencies(tokens);
    const prev = old.get(r.chunk.id);
    if (prev === undefined) {
      n += 1;
      total += tokens.length;
      added += 1;
      tokenDelta += tokens.length;
      bump(tf, 1);
    } else if (prev !== r.chunk.text) {
      const prevTokens = analyze(prev);
      total += tokens.length - prevTokens.length;
      tokenDelta += tokens.length - prevTokens.length;
      bump(termFrequencies(prevTokens), -1);
      bump(tf, 1);
    }
    return { tf, dl: tokens.length };
  });
  const avgdl =
    reg.bm25_avgdl_weighted !== null && reg.bm25_avgdl_weighted > 0
      ? reg.bm25_avgdl_weighted
      : total > 0 && n > 0
        ? total / n
        : 1;
  const weights = analyzed.map((a) =>
    sortedWeights(bm25DocWeights(a.tf, a.dl, avgdl, ctx.bm25.k1, ctx.bm25.b)),
  );
  const isNew = batch.map((r) => !old.has(r.chunk.id));
  // New rows go through binary COPY where the client offers it (no float parsing; several times faster
  // than the INSERT below); rows that exist are updated in place. Rows are keyed by (id, version) and one
  // writer owns a version; a concurrent redelivery of the same batch makes the COPY fail (the caller retries
  // without it).
  const viaCopy = allowCopy && ctx.useCopy && tx.copyFrom !== undefined;
  if (viaCopy && tx.copyFrom && isNew.some(Boolean)) {
    const rows: CopyRow[] = [];
    batch.forEach((r, i) => {
      if (!isNew[i]) return;
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
        tokenCount: (analyzed[i] as { dl: number }).dl,
        version,
      });
    });
    await tx.copyFrom(ctx.t.table, COPY_COLUMNS, encodeChunkRows(rows));
  }
  const pick = batch.map((_, i) => i).filter((i) => !viaCopy || !isNew[i]);
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
        at((_, i) => (analyzed[i] as { dl: number }).dl),
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
}

/** Embeds `chunks` (≤ 1,024 texts per call) while the previous batch is written by `upsert`. */
export async function addChunks(
  embedder: Embedder,
  chunks: AI4RAGChunk[],
  upsert: (records: EmbeddedChunk[]) => Promise<number>,
): Promise<number> {
  const seen = new Set<string>();
  const unique: AI4RAGChunk[] = [];
  for (const c of chunks) {
    if (seen.has(c.id)) continue;
    seen.add(c.id);
    unique.push(c);
  }
  // Pipelined: batch i + 1 is embedded while batch i is being written (writes stay in order, one at a time).
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
      if (writing) stored += await writing;
      writing = upsert(batch.map((chunk, j) => ({ chunk, vector: vectors[j] ?? [] })));
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
