/**
 * The staged-write ledger of a pgvector collection: beginning a write (a version with an owner and a lease),
 * renewing its lease with every batch, finishing it (per document: commit, or refuse as expired, superseded,
 * deleted or incomplete), aborting it, and sweeping writes whose lease lapsed or whose local writer is gone, with
 * their staged chunks. Chunks of a write still in the ledger are invisible.
 */
import { checkDocumentRecord, VectorStoreError, WriteEndedError } from '../errors.js';
import type { SqlClient } from '../sql-client.js';
import {
  checkLease,
  checkVersion,
  compareSequencers,
  DEFAULT_LEASE_SECONDS,
  isDeadLocalOwner,
  localOwner,
  MAX_LEASE_SECONDS,
  newVersion,
} from '../staged.js';
import type { BeginWriteOptions, CommitRefusal, VersionedCommit, WriteOutcome } from '../types.js';
import { foldIfIdle } from './bm25-refresh.js';
import { deleteRows, lockDocuments, writeDocuments } from './documents.js';
import type { StoreContext } from './store-context.js';

/**
 * Why a document of a staged write may not be committed, or undefined when it may (see `finishWrite`).
 * Sequencers decide when both sides carry one; else a deletion after the writer read the source refuses it; last,
 * the staged chunks must be exactly the version's.
 */
function refusal(
  entry: VersionedCommit,
  current: { sequencer: string | null; deleted_at: Date | string | null } | undefined,
  staged: ReadonlySet<string> | undefined,
): { reason: CommitRefusal; message: string } | undefined {
  const id = entry.record.documentId;
  const deletedAt = current?.deleted_at == null ? undefined : new Date(current.deleted_at);
  if (entry.sequencer !== undefined && current?.sequencer != null) {
    if (compareSequencers(entry.sequencer, current.sequencer) < 0) {
      return deletedAt
        ? {
            reason: 'deleted',
            message: `${id}: removed by a later event (sequencer ${current.sequencer} > ${entry.sequencer}); not restored`,
          }
        : {
            reason: 'superseded',
            message: `${id}: a newer upload is stored (sequencer ${current.sequencer} > ${entry.sequencer})`,
          };
    }
  } else if (
    deletedAt &&
    entry.readAt !== undefined &&
    Date.parse(entry.readAt) < deletedAt.getTime()
  ) {
    return {
      reason: 'deleted',
      message: `${id}: deleted at ${deletedAt.toISOString()}, after this ingest read it (${entry.readAt}); not restored`,
    };
  }
  const have = entry.chunkIds.filter((c) => staged?.has(c)).length;
  if (have !== entry.chunkIds.length || (staged?.size ?? 0) !== entry.chunkIds.length) {
    return {
      reason: 'incomplete',
      message: `${id}: ${have} of ${entry.chunkIds.length} chunks staged${
        (staged?.size ?? 0) > have ? ` (and ${(staged?.size ?? 0) - have} unexpected)` : ''
      }; previous version kept`,
    };
  }
  return undefined;
}

/** Renews a staged write's lease inside `tx` (row-locking it against a sweep), or throws when it ended. */
export async function holdWrite(ctx: StoreContext, tx: SqlClient, version: string): Promise<void> {
  const res = await tx.query<{ one: number }>(
    `UPDATE ${ctx.t.writesTable} SET expires_at = now() + lease_seconds * interval '1 second'
       WHERE version = $1 AND finished_at IS NULL RETURNING 1 AS one`,
    [version],
  );
  if (res.rows.length === 0) {
    throw new WriteEndedError(
      `write ${version} on collection ${ctx.collectionName} has ended or expired (finished, aborted, or swept ` +
        'after its lease lapsed); begin a new write',
    );
  }
}

/** Starts (or renews) a staged write after sweeping lapsed ones; returns its version. */
export async function beginWrite(
  ctx: StoreContext,
  options: BeginWriteOptions = {},
): Promise<string> {
  const version = options.version === undefined ? newVersion() : checkVersion(options.version);
  const lease = checkLease(options.leaseSeconds ?? DEFAULT_LEASE_SECONDS);
  const owner = options.owner ?? localOwner();
  await sweepWrites(ctx);
  const res = await ctx.exclusive(() =>
    ctx.run('begin write', () =>
      ctx.client.query<{ version: string }>(
        `INSERT INTO ${ctx.t.writesTable} AS w (version, owner, lease_seconds, expires_at)
           VALUES ($1, $2, $3, now() + $3 * interval '1 second')
           ON CONFLICT (version) DO UPDATE SET owner = EXCLUDED.owner,
             lease_seconds = EXCLUDED.lease_seconds, expires_at = EXCLUDED.expires_at
           WHERE w.finished_at IS NULL
           RETURNING version`,
        [version, owner, lease],
      ),
    ),
  );
  if (res.rows.length === 0) {
    // Finished writes are remembered (for MAX_LEASE_SECONDS), so a late redelivery cannot re-stage — and thereby
    // hide — a committed version.
    throw new WriteEndedError(
      `write ${version} on collection ${ctx.collectionName} has already ended; it cannot be begun again`,
    );
  }
  return version;
}

/** Writes that lapsed (lease expired, or a dead local owner), with their staged chunk counts. */
export async function lapsedWrites(
  ctx: StoreContext,
): Promise<
  { version: string; owner: string; expiresAt: string; expired: boolean; chunks: number }[]
> {
  const res = await ctx.client.query<{
    version: string;
    owner: string;
    expires_at: Date | string;
    expired: boolean;
    chunks: number;
  }>(
    `SELECT w.version, w.owner, w.expires_at, w.expires_at < now() AS expired,
              (SELECT count(*) FROM ${ctx.t.table} c WHERE c.version = w.version)::int AS chunks
       FROM ${ctx.t.writesTable} w WHERE w.finished_at IS NULL ORDER BY w.created_at, w.version`,
  );
  return res.rows.map((r) => ({
    version: r.version,
    owner: r.owner,
    expiresAt: new Date(r.expires_at).toISOString(),
    expired: r.expired || isDeadLocalOwner(r.owner),
    chunks: r.chunks,
  }));
}

/** Deletes lapsed writes and their staged chunks. Returns [writes swept, chunks deleted]. */
export async function sweepWrites(ctx: StoreContext): Promise<[number, number]> {
  const lapsed = (await ctx.run('list writes', () => lapsedWrites(ctx))).filter((w) => w.expired);
  // Ended writes are remembered as long as a lease can last, then forgotten.
  await ctx.run('sweep writes', () =>
    ctx.client.query(
      `DELETE FROM ${ctx.t.writesTable} WHERE finished_at < now() - $1 * interval '1 second'`,
      [MAX_LEASE_SECONDS],
    ),
  );
  if (lapsed.length === 0) return [0, 0];
  const dead = lapsed.filter((w) => isDeadLocalOwner(w.owner)).map((w) => w.version);
  return ctx.exclusive(() =>
    ctx.run('sweep writes', () =>
      ctx.client.transaction(async (tx) => {
        // Re-checked under the row locks: a writer that renewed its lease meanwhile keeps it.
        const gone = await tx.query<{ version: string }>(
          `UPDATE ${ctx.t.writesTable} SET finished_at = now()
             WHERE version = ANY($1::text[]) AND finished_at IS NULL
               AND (expires_at < now() OR version = ANY($2::text[]))
             RETURNING version`,
          [lapsed.map((w) => w.version), dead],
        );
        const versions = gone.rows.map((r) => r.version);
        if (versions.length === 0) return [0, 0] as [number, number];
        const chunks = await deleteRows(ctx, tx, 'version = ANY($1::text[])', [versions]);
        ctx.logger(
          `collection ${ctx.collectionName}: swept ${versions.length} abandoned write(s) (${chunks} staged chunks)`,
        );
        return [versions.length, chunks] as [number, number];
      }),
    ),
  );
}

/** Commits the documents of a staged write that may be (see {@link refusal}), then ends the write: one transaction. */
export async function finishWrite(
  ctx: StoreContext,
  version: string,
  entries: VersionedCommit[],
): Promise<WriteOutcome> {
  checkVersion(version);
  const ids = new Set<string>();
  for (const e of entries) {
    checkDocumentRecord(e.record);
    const id = e.record.documentId;
    if (ids.has(id)) throw new VectorStoreError(`document ${id} appears twice in one commit`);
    ids.add(id);
    if (!Array.isArray(e.chunkIds) || e.chunkIds.length !== e.record.chunkCount) {
      throw new VectorStoreError(
        `document ${id}: chunkCount ${e.record.chunkCount} differs from the ${e.chunkIds?.length ?? 0} chunk ids given`,
      );
    }
    if (new Set(e.chunkIds).size !== e.chunkIds.length) {
      throw new VectorStoreError(`document ${id}: chunk ids repeat`);
    }
  }
  return ctx.exclusive(() =>
    ctx
      .run('finish write', () =>
        ctx.client.transaction(async (tx) => {
          const write = await tx.query<{ version: string }>(
            `SELECT version FROM ${ctx.t.writesTable} WHERE version = $1 AND finished_at IS NULL FOR UPDATE`,
            [version],
          );
          if (write.rows.length === 0) {
            return {
              committed: [],
              refused: entries.map((e) => ({
                documentId: e.record.documentId,
                reason: 'expired' as const,
                message: `${e.record.documentId}: write ${version} had ended (its lease lapsed and it was swept); nothing committed`,
              })),
              chunksDeleted: 0,
            };
          }
          await lockDocuments(ctx, tx, [...ids]);
          const current = await tx.query<{
            document_id: string;
            sequencer: string | null;
            deleted_at: Date | string | null;
          }>(
            `SELECT document_id, sequencer, deleted_at FROM ${ctx.t.docTable} WHERE document_id = ANY($1::text[])`,
            [[...ids]],
          );
          const byId = new Map(current.rows.map((r) => [r.document_id, r]));
          const staged = await tx.query<{ document_id: string; id: string }>(
            `SELECT document_id, id FROM ${ctx.t.table} WHERE version = $1`,
            [version],
          );
          const stagedIds = new Map<string, Set<string>>();
          for (const r of staged.rows) {
            let set = stagedIds.get(r.document_id);
            if (!set) {
              set = new Set();
              stagedIds.set(r.document_id, set);
            }
            set.add(r.id);
          }
          const accepted: VersionedCommit[] = [];
          const refused: WriteOutcome['refused'] = [];
          for (const e of entries) {
            const id = e.record.documentId;
            const reason = refusal(e, byId.get(id), stagedIds.get(id));
            if (reason === undefined) accepted.push(e);
            else refused.push({ documentId: id, ...reason });
          }
          const acceptedIds = accepted.map((e) => e.record.documentId);
          let chunksDeleted = 0;
          if (acceptedIds.length > 0) {
            chunksDeleted += await deleteRows(
              ctx,
              tx,
              `document_id = ANY($1::text[]) AND version <> $2 AND ${ctx.t.visible}`,
              [acceptedIds, version],
            );
          }
          chunksDeleted += await deleteRows(
            ctx,
            tx,
            'version = $1 AND NOT (document_id = ANY($2::text[]))',
            [version, acceptedIds],
          );
          if (accepted.length > 0) {
            await writeDocuments(
              ctx,
              tx,
              accepted.map((e) => ({
                ...e.record,
                version,
                ...(e.sequencer !== undefined ? { sequencer: e.sequencer } : {}),
              })),
            );
          }
          await tx.query(`UPDATE ${ctx.t.writesTable} SET finished_at = now() WHERE version = $1`, [
            version,
          ]);
          return { committed: acceptedIds, refused, chunksDeleted };
        }),
      )
      .then(async (outcome) => {
        await foldIfIdle(ctx);
        return outcome;
      }),
  );
}

/** Ends a staged write without committing it; returns the staged chunks deleted. */
export async function abortWrite(ctx: StoreContext, version: string): Promise<number> {
  checkVersion(version);
  return ctx.exclusive(() =>
    ctx.run('abort write', () =>
      ctx.client.transaction(async (tx) => {
        const ended = await tx.query(
          `UPDATE ${ctx.t.writesTable} SET finished_at = now() WHERE version = $1 AND finished_at IS NULL
             RETURNING version`,
          [version],
        );
        // A finished write's chunks are the committed version: never delete those.
        if (ended.rows.length === 0) return 0;
        return deleteRows(ctx, tx, 'version = $1', [version]);
      }),
    ),
  );
}
