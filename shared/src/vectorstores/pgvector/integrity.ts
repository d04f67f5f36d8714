/**
 * The integrity check of a pgvector collection (I1–I2): orphan chunks (of no committed version and no live write),
 * documents whose stored chunks differ from their record, writes whose lease lapsed, and postings out of step with
 * the chunks' BM25 weights; and its repair (sweep, delete orphans, mark records for re-indexing, rebuild postings).
 */
import type { IntegrityReport } from '../types.js';
import { deleteWhere } from './documents.js';
import { keywordIndexBackfill, keywordIndexMismatchSql } from './keyword-index.js';
import type { StoreContext } from './store-context.js';
import { lapsedWrites, sweepWrites } from './write-ledger.js';

/** Checks (and with `repair`, repairs) the collection; see `PgVectorStore.checkIntegrity`. */
export async function checkIntegrity(
  ctx: StoreContext,
  options: { repair?: boolean } = {},
): Promise<IntegrityReport> {
  const orphanWhere = `${ctx.t.visible} AND NOT EXISTS (
      SELECT 1 FROM ${ctx.t.docTable} d WHERE d.document_id = ${ctx.t.table}.document_id
        AND d.deleted_at IS NULL AND COALESCE(d.version, '') = ${ctx.t.table}.version)`;
  const inspect = async () => {
    const counts = await ctx.client.query<{
      documents: number;
      chunks: number;
      orphans: number;
    }>(
      `SELECT (SELECT count(*) FROM ${ctx.t.docTable} WHERE deleted_at IS NULL)::int AS documents,
                (SELECT count(*) FROM ${ctx.t.table} WHERE ${ctx.t.visible})::int AS chunks,
                (SELECT count(*) FROM ${ctx.t.table} WHERE ${orphanWhere})::int AS orphans`,
    );
    const mismatched = await ctx.client.query<{
      document_id: string;
      recorded: number;
      stored: number;
    }>(
      `SELECT d.document_id, d.chunk_count AS recorded, count(c.id)::int AS stored
         FROM ${ctx.t.docTable} d LEFT JOIN ${ctx.t.table} c
           ON c.document_id = d.document_id AND c.version = COALESCE(d.version, '')
         WHERE d.deleted_at IS NULL GROUP BY d.document_id, d.chunk_count
         HAVING count(c.id) <> d.chunk_count ORDER BY d.document_id`,
    );
    const writes = await lapsedWrites(ctx);
    const postings = await ctx.client.query<{ n: number }>(keywordIndexMismatchSql(ctx.t.kw));
    return {
      counts: counts.rows[0],
      mismatched: mismatched.rows,
      writes,
      keywordIndexMismatch: postings.rows[0]?.n ?? 0,
    };
  };
  const found = await ctx.run('check', inspect);
  const report: IntegrityReport = {
    collection: ctx.collectionName,
    documents: found.counts?.documents ?? 0,
    chunks: found.counts?.chunks ?? 0,
    orphanChunks: found.counts?.orphans ?? 0,
    mismatched: found.mismatched.map((m) => ({
      documentId: m.document_id,
      recorded: m.recorded,
      stored: m.stored,
    })),
    liveWrites: found.writes
      .filter((w) => !w.expired)
      .map(({ version, owner, expiresAt, chunks }) => ({ version, owner, expiresAt, chunks })),
    expiredWrites: found.writes
      .filter((w) => w.expired)
      .map(({ version, owner, chunks }) => ({ version, owner, chunks })),
    keywordIndexMismatch: found.keywordIndexMismatch,
    clean: false,
  };
  report.clean =
    report.orphanChunks === 0 &&
    report.mismatched.length === 0 &&
    report.expiredWrites.length === 0 &&
    report.keywordIndexMismatch === 0;
  if (options.repair) {
    const [writesSwept, sweptChunks] = await sweepWrites(ctx);
    const orphans = await deleteWhere(ctx, orphanWhere, []);
    let recordsFixed = 0;
    if (report.mismatched.length > 0) {
      recordsFixed = await ctx.exclusive(() =>
        ctx.run('repair records', async () => {
          const res = await ctx.client.query(
            `UPDATE ${ctx.t.docTable} d SET chunk_count = s.stored,
                 content_hash = 'repair:' || d.content_hash, updated_at = now()
               FROM (SELECT d2.document_id, count(c.id)::int AS stored
                     FROM ${ctx.t.docTable} d2 LEFT JOIN ${ctx.t.table} c
                       ON c.document_id = d2.document_id AND c.version = COALESCE(d2.version, '')
                     WHERE d2.deleted_at IS NULL AND d2.document_id = ANY($1::text[])
                     GROUP BY d2.document_id) s
               WHERE d.document_id = s.document_id RETURNING d.document_id`,
            [report.mismatched.map((m) => m.documentId)],
          );
          return res.rows.length;
        }),
      );
    }
    let keywordIndexRebuilt = false;
    if (found.keywordIndexMismatch > 0) {
      await ctx.exclusive(() =>
        ctx.run('rebuild keyword index', () =>
          ctx.client.transaction(async (tx) => {
            for (const sql of keywordIndexBackfill(ctx.t.kw)) await tx.query(sql);
          }),
        ),
      );
      keywordIndexRebuilt = true;
    }
    report.repaired = {
      chunksDeleted: sweptChunks + orphans,
      writesSwept,
      recordsFixed,
      keywordIndexRebuilt,
    };
  }
  return report;
}
