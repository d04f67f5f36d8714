/**
 * Document records of a pgvector collection and the deletions that keep BM25 statistics in step: reading and
 * listing records, writing them (one multi-row statement), tombstones, per-document advisory locks, and deleting
 * chunk rows by condition (each deletion logs its statistics changes).
 */
import { analyze } from '../../text/analyzer.js';
import { checkDocumentRecord, checkListLimit, VectorStoreError } from '../errors.js';
import { compileFilterSql, type FilterNode } from '../filter.js';
import type { SqlClient } from '../sql-client.js';
import { compareSequencers } from '../staged.js';
import type {
  DeleteDocumentOptions,
  DocumentCommit,
  DocumentRecord,
  ListDocumentsOptions,
} from '../types.js';
import { termFrequencies } from './bm25.js';
import { logDf } from './bm25-stats.js';
import type { StoreContext } from './store-context.js';

/** A document record as stored. */
interface DocRow {
  document_id: string;
  content_hash: string;
  chunk_count: number;
  updated_at: Date | string;
  metadata: Record<string, unknown> | null;
  version: string | null;
  sequencer: string | null;
}

/** The columns of {@link DocRow}, in order. */
const DOC_COLUMNS =
  'document_id, content_hash, chunk_count, updated_at, metadata, version, sequencer';

function toDocumentRecord(row: DocRow): DocumentRecord {
  return {
    documentId: row.document_id,
    contentHash: row.content_hash,
    chunkCount: row.chunk_count,
    updatedAt: new Date(row.updated_at).toISOString(),
    ...(row.metadata !== null ? { metadata: row.metadata } : {}),
    ...(row.version ? { version: row.version } : {}),
    ...(row.sequencer ? { sequencer: row.sequencer } : {}),
  };
}

/** Deletes rows matching `where` and keeps df, N and total tokens in step. */
export function deleteWhere(
  ctx: StoreContext,
  where: string,
  params: unknown[],
  after?: (tx: SqlClient) => Promise<void>,
): Promise<number> {
  return ctx.exclusive(() =>
    ctx.run('delete', () =>
      ctx.client.transaction(async (tx) => {
        const count = await deleteRows(ctx, tx, where, params);
        await after?.(tx);
        return count;
      }),
    ),
  );
}

/** Deletes chunk rows matching `where` inside `tx`, logging their statistics changes. Returns rows deleted. */
export async function deleteRows(
  ctx: StoreContext,
  tx: SqlClient,
  where: string,
  params: unknown[],
): Promise<number> {
  const res = await tx.query<{ content: string; token_count: number }>(
    `DELETE FROM ${ctx.t.table} WHERE ${where} RETURNING content, token_count`,
    params,
  );
  const delta = new Map<number, number>();
  let tokens = 0;
  for (const row of res.rows) {
    tokens += row.token_count;
    for (const id of termFrequencies(analyze(row.content)).keys()) {
      delta.set(id, (delta.get(id) ?? 0) - 1);
    }
  }
  const count = res.rows.length;
  if (count > 0) await logDf(tx, ctx.t, ctx.useCopy, delta, -count, -tokens);
  return count;
}

/** Takes transaction-scoped advisory locks on documents of this collection, in a fixed order (no deadlock). */
export async function lockDocuments(
  ctx: StoreContext,
  tx: SqlClient,
  documentIds: readonly string[],
): Promise<void> {
  const keys = [...new Set(documentIds)].map((d) => `${ctx.t.key}:${d}`).sort();
  if (keys.length === 0) return;
  await tx.query(
    `SELECT count(pg_advisory_xact_lock(hashtextextended(k, 0)))::int AS n
       FROM unnest($1::text[]) WITH ORDINALITY AS u(k, i)`,
    [keys],
  );
}

/** Deletes a document's chunks except `keepIds`; without `keepIds`, the document (see {@link deleteDocument}). */
export async function deleteByDocument(
  ctx: StoreContext,
  documentId: string,
  options: { keepIds?: string[] } = {},
): Promise<number> {
  const { keepIds } = options;
  if (keepIds === undefined) return Math.max(0, await deleteDocument(ctx, documentId));
  return deleteWhere(ctx, `document_id = $1 AND NOT (id = ANY($2::text[])) AND ${ctx.t.visible}`, [
    documentId,
    keepIds,
  ]);
}

/** Creates or replaces a document record. */
export async function putDocument(ctx: StoreContext, record: DocumentRecord): Promise<void> {
  checkDocumentRecord(record);
  await ctx.run('put document', () => writeDocuments(ctx, ctx.client, [record]));
}

/** Multi-row upsert of document records (one statement); a tombstone of the same id is replaced. */
export async function writeDocuments(
  ctx: StoreContext,
  c: SqlClient,
  records: readonly DocumentRecord[],
): Promise<void> {
  await c.query(
    `INSERT INTO ${ctx.t.docTable} (document_id, content_hash, chunk_count, updated_at, metadata, version, sequencer)
       SELECT u.id, u.hash, u.n, u.at::timestamptz, u.meta::jsonb, u.v, u.s
       FROM unnest($1::text[], $2::text[], $3::int4[], $4::text[], $5::text[], $6::text[], $7::text[])
         AS u(id, hash, n, at, meta, v, s)
       ON CONFLICT (document_id) DO UPDATE SET content_hash = EXCLUDED.content_hash,
         chunk_count = EXCLUDED.chunk_count, updated_at = EXCLUDED.updated_at, metadata = EXCLUDED.metadata,
         version = EXCLUDED.version, sequencer = EXCLUDED.sequencer, deleted_at = NULL`,
    [
      records.map((r) => r.documentId),
      records.map((r) => r.contentHash),
      records.map((r) => r.chunkCount),
      records.map((r) => r.updatedAt),
      records.map((r) => (r.metadata === undefined ? null : JSON.stringify(r.metadata))),
      records.map((r) => r.version ?? null),
      records.map((r) => r.sequencer ?? null),
    ],
  );
}

/** Deletes the chunks of several documents not in their `keepIds` and writes their records, in one transaction. */
export async function commitDocuments(
  ctx: StoreContext,
  entries: DocumentCommit[],
): Promise<number> {
  if (entries.length === 0) return 0;
  const ids = new Set<string>();
  for (const e of entries) {
    checkDocumentRecord(e.record);
    if (ids.has(e.record.documentId)) {
      throw new VectorStoreError(`document ${e.record.documentId} appears twice in one commit`);
    }
    ids.add(e.record.documentId);
  }
  return deleteWhere(
    ctx,
    `document_id = ANY($1::text[]) AND NOT (id = ANY($2::text[])) AND ${ctx.t.visible}`,
    [[...ids], entries.flatMap((e) => e.keepIds)],
    (tx) =>
      writeDocuments(
        ctx,
        tx,
        entries.map((e) => e.record),
      ),
  );
}

/** Deletes a document's committed chunks and record, leaving a tombstone; -1 when `sequencer` is older. */
export async function deleteDocument(
  ctx: StoreContext,
  documentId: string,
  options: DeleteDocumentOptions = {},
): Promise<number> {
  if (typeof documentId !== 'string' || documentId.length === 0) {
    throw new VectorStoreError('documentId must be a non-empty string');
  }
  const { sequencer } = options;
  return ctx.exclusive(() =>
    ctx.run('delete document', () =>
      ctx.client.transaction(async (tx) => {
        await lockDocuments(ctx, tx, [documentId]);
        const cur = await tx.query<{ sequencer: string | null }>(
          `SELECT sequencer FROM ${ctx.t.docTable} WHERE document_id = $1`,
          [documentId],
        );
        const stored = cur.rows[0]?.sequencer ?? null;
        if (
          sequencer !== undefined &&
          stored !== null &&
          compareSequencers(sequencer, stored) < 0
        ) {
          return -1;
        }
        const deleted = await deleteRows(ctx, tx, `document_id = $1 AND ${ctx.t.visible}`, [
          documentId,
        ]);
        await tx.query(
          `INSERT INTO ${ctx.t.docTable} (document_id, content_hash, chunk_count, updated_at, metadata, version,
               sequencer, deleted_at)
             VALUES ($1, '', 0, now(), NULL, NULL, $2, now())
             ON CONFLICT (document_id) DO UPDATE SET content_hash = '', chunk_count = 0, updated_at = now(),
               metadata = NULL, version = NULL, sequencer = COALESCE($2, ${ctx.t.docTable}.sequencer),
               deleted_at = now()`,
          [documentId, sequencer ?? null],
        );
        return deleted;
      }),
    ),
  );
}

/** The live records of `documentIds` found. */
export async function getDocuments(
  ctx: StoreContext,
  documentIds: string[],
): Promise<Map<string, DocumentRecord>> {
  const res = await ctx.run('get documents', () =>
    ctx.client.query<DocRow>(
      `SELECT ${DOC_COLUMNS} FROM ${ctx.t.docTable}
         WHERE document_id = ANY($1::text[]) AND deleted_at IS NULL`,
      [documentIds],
    ),
  );
  return new Map(res.rows.map((row) => [row.document_id, toDocumentRecord(row)]));
}

/** The live record of `documentId`, if any. */
export async function getDocument(
  ctx: StoreContext,
  documentId: string,
): Promise<DocumentRecord | undefined> {
  const res = await ctx.run('get document', () =>
    ctx.client.query<DocRow>(
      `SELECT ${DOC_COLUMNS} FROM ${ctx.t.docTable} WHERE document_id = $1 AND deleted_at IS NULL`,
      [documentId],
    ),
  );
  const row = res.rows[0];
  return row === undefined ? undefined : toDocumentRecord(row);
}

/** Document records ordered by id: all, or a page (`document_id > after … LIMIT`). */
export async function listDocuments(
  ctx: StoreContext,
  options: ListDocumentsOptions = {},
): Promise<DocumentRecord[]> {
  checkListLimit(options.limit);
  const params: unknown[] = [];
  let where = 'deleted_at IS NULL';
  if (options.after !== undefined) {
    params.push(options.after);
    where += ` AND document_id > $${params.length}`;
  }
  let limit = '';
  if (options.limit !== undefined) {
    params.push(options.limit);
    limit = ` LIMIT $${params.length}`;
  }
  const res = await ctx.run('list documents', () =>
    ctx.client.query<DocRow>(
      `SELECT ${DOC_COLUMNS} FROM ${ctx.t.docTable} WHERE ${where} ORDER BY document_id${limit}`,
      params,
    ),
  );
  return res.rows.map(toDocumentRecord);
}

/** Deletes the chunks matching a parsed, non-empty filter (records are left alone). */
export function deleteByFilter(ctx: StoreContext, f: FilterNode): Promise<number> {
  const params: unknown[] = [];
  const where = compileFilterSql(f, params, 'metadata');
  return deleteWhere(ctx, `${where} AND ${ctx.t.visible}`, params);
}

/** Live documents (records that are not tombstones) and visible chunks. */
export async function countLive(ctx: StoreContext): Promise<{ documents: number; chunks: number }> {
  const res = await ctx.run('stats', () =>
    ctx.client.query<{ documents: number; chunks: number }>(
      `SELECT (SELECT count(*) FROM ${ctx.t.docTable} WHERE deleted_at IS NULL)::int AS documents,
                (SELECT count(*) FROM ${ctx.t.table} WHERE ${ctx.t.visible})::int AS chunks`,
    ),
  );
  return { documents: res.rows[0]?.documents ?? 0, chunks: res.rows[0]?.chunks ?? 0 };
}
