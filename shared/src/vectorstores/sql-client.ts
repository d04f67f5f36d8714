import { readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { mkdir, readdir, rm } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { PGlite, Transaction } from '@electric-sql/pglite';
import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import type { PgliteConfig } from './config.js';
import { DataDirInUseError, VectorStoreError } from './errors.js';
import { amortizeMemfsGrowth } from './pglite-memfs.js';
import {
  discardPgliteTemplate,
  type PgliteOrigin,
  pgliteTemplateSetting,
  readPgliteTemplate,
  savePgliteTemplate,
} from './pglite-template.js';
import { isProcessAlive } from './staged.js';

/**
 * The minimal SQL port the pgvector store needs. Both PGlite (in-process) and a `pg.Pool` (server, or PGlite
 * through pglite-socket) implement it. Inside `transaction`, use only the `tx` given to the callback: the
 * socket server serializes whole transactions, so waiting on another pooled connection there deadlocks.
 */
export interface SqlClient {
  query<R>(text: string, params?: unknown[]): Promise<{ rows: R[] }>;
  transaction<T>(fn: (tx: SqlClient) => Promise<T>): Promise<T>;
  close(): Promise<void>;
  readonly dialect: 'pglite' | 'postgres';
  /**
   * Optional bulk load: `COPY table (columns) FROM` a PostgreSQL **binary** COPY stream (see
   * `pgvector/copy-binary.ts`). Identifiers must already be validated and quoted. Returns the rows loaded.
   */
  copyFrom?(table: string, columns: readonly string[], data: Uint8Array): Promise<number>;
  /**
   * Runs `fn` on one connection outside any transaction (session settings such as `SET lock_timeout` then apply to
   * its statements, and `CREATE INDEX CONCURRENTLY` is allowed). Optional: clients without it run `fn` on themselves.
   */
  session?<T>(fn: (c: SqlClient) => Promise<T>): Promise<T>;
}

function copySql(table: string, columns: readonly string[], source: string): string {
  return `COPY ${table} (${columns.join(', ')}) FROM ${source} WITH (FORMAT binary)`;
}

async function pgliteCopy(
  db: { query: PGlite['query'] },
  table: string,
  columns: readonly string[],
  data: Uint8Array,
): Promise<number> {
  const res = await db.query(copySql(table, columns, "'/dev/blob'"), [], {
    blob: new Blob([data as Uint8Array<ArrayBuffer>]),
  });
  return res.affectedRows ?? 0;
}

async function pgCopy(
  client: pg.PoolClient,
  table: string,
  columns: readonly string[],
  data: Uint8Array,
): Promise<number> {
  const stream = client.query(copyFrom(copySql(table, columns, 'STDIN')));
  await pipeline(
    Readable.from([Buffer.from(data.buffer, data.byteOffset, data.byteLength)]),
    stream,
  );
  return Number(stream.rowCount ?? 0);
}

/** SQLSTATE classes and socket codes of a connection lost before or between statements. */
const CONNECTION_LOST = /^(08|57P0[123])/;
const SOCKET_CODES = new Set(['ECONNRESET', 'EPIPE', 'ECONNREFUSED', 'ETIMEDOUT', 'ENOTCONN']);

/** Whether an error means the connection was lost (not that the statement was wrong). */
export function isConnectionError(error: unknown): boolean {
  const e = error as { code?: unknown; message?: unknown } | null;
  const code = typeof e?.code === 'string' ? e.code : '';
  if (CONNECTION_LOST.test(code) || SOCKET_CODES.has(code)) return true;
  const message = typeof e?.message === 'string' ? e.message : '';
  return /Connection terminated|connection is closed|Client has encountered a connection error/i.test(
    message,
  );
}

/** Options of {@link fromPgPool}. */
export interface PgPoolClientOptions {
  /** `close()` ends the pool. @default false */
  ownsPool?: boolean;
  /**
   * Told about errors of idle pooled connections (a proxy or server closing them: RDS Proxy does after its idle
   * timeout). Without a listener such an error is an uncaught exception that kills the process; the pool drops the
   * connection either way. @default ignore
   */
  onIdleError?: (error: Error) => void;
}

/**
 * Adapts a `pg.Pool`. A transaction checks out one client and runs BEGIN/COMMIT (ROLLBACK on error), always
 * releasing it. `close()` ends the pool only when `ownsPool`. Idle-connection errors are handled (see
 * {@link PgPoolClientOptions.onIdleError}). A connection lost at checkout or BEGIN is replaced once; a transaction
 * whose connection is lost after BEGIN is never re-run (the server rolls it back; the caller sees the error); a
 * single statement outside a transaction is tried once more.
 * @example const client = fromPgPool(new pg.Pool({ max: 5 }), { ownsPool: true });
 */
export function fromPgPool(pool: pg.Pool, options: PgPoolClientOptions = {}): SqlClient {
  const ownsPool = options.ownsPool ?? false;
  const onIdleError = options.onIdleError ?? (() => undefined);
  pool.on('error', (error: Error) => onIdleError(error));
  /** Checks out a client whose connection answers, retrying once when the first one is dead. */
  const checkout = async (): Promise<pg.PoolClient> => {
    for (let attempt = 0; ; attempt++) {
      let c: pg.PoolClient | undefined;
      try {
        c = await pool.connect();
        await c.query('BEGIN');
        return c;
      } catch (error: unknown) {
        c?.release(error instanceof Error ? error : true);
        if (attempt > 0 || !isConnectionError(error)) throw error;
      }
    }
  };
  const onClient = (c: pg.PoolClient): SqlClient => ({
    dialect: 'postgres',
    copyFrom: (table, columns, data) => pgCopy(c, table, columns, data),
    async query<R>(text: string, params?: unknown[]) {
      const res = await c.query(text, params);
      return { rows: res.rows as R[] };
    },
    async transaction<T>(fn: (tx: SqlClient) => Promise<T>) {
      // Already inside a transaction: run in place (no nested BEGIN).
      return fn(onClient(c));
    },
    async close() {},
  });
  return {
    dialect: 'postgres',
    async copyFrom(table, columns, data) {
      const c = await pool.connect();
      try {
        return await pgCopy(c, table, columns, data);
      } finally {
        c.release();
      }
    },
    async query<R>(text: string, params?: unknown[]) {
      // One statement outside a transaction: tried once more on a fresh connection when its connection was lost
      // (a container thawed after the proxy closed it). The store's autocommit statements are reads or idempotent
      // upserts, so a second run is harmless even if the first reached the server.
      for (let attempt = 0; ; attempt++) {
        try {
          const res = await pool.query(text, params);
          return { rows: res.rows as R[] };
        } catch (error: unknown) {
          if (attempt > 0 || !isConnectionError(error)) throw error;
        }
      }
    },
    async transaction<T>(fn: (tx: SqlClient) => Promise<T>) {
      const c = await checkout();
      let broken: Error | undefined;
      try {
        try {
          const out = await fn(onClient(c));
          await c.query('COMMIT');
          return out;
        } catch (error: unknown) {
          try {
            await c.query('ROLLBACK');
          } catch (rollbackError: unknown) {
            broken =
              rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError));
          }
          throw error;
        }
      } finally {
        // A connection whose ROLLBACK failed is destroyed rather than returned to the pool.
        c.release(broken);
      }
    },
    async session<T>(fn: (c: SqlClient) => Promise<T>) {
      const c = await pool.connect();
      let broken: Error | undefined;
      try {
        return await fn(onClient(c));
      } catch (error: unknown) {
        // Session settings may be left behind: such a connection is not returned to the pool.
        broken = error instanceof Error ? error : new Error(String(error));
        throw error;
      } finally {
        c.release(broken ?? true);
      }
    },
    async close() {
      if (ownsPool) await pool.end();
    },
  };
}

function fromPgliteTx(tx: Transaction): SqlClient {
  return {
    dialect: 'pglite',
    copyFrom: (table, columns, rows) => pgliteCopy(tx, table, columns, rows),
    async query<R>(text: string, params?: unknown[]) {
      const res = await tx.query<R>(text, params);
      return { rows: res.rows };
    },
    async transaction<T>(fn: (inner: SqlClient) => Promise<T>) {
      return fn(fromPgliteTx(tx));
    },
    async close() {},
  };
}

/**
 * Adapts a PGlite instance. `close()` closes the database only when `ownsDb`.
 * @example const client = fromPglite(await PGlite.create({ extensions: { vector } }), { ownsDb: true });
 */
export function fromPglite(
  db: PGlite,
  options: { ownsDb?: boolean; onClose?: () => void } = {},
): SqlClient {
  return {
    dialect: 'pglite',
    copyFrom: (table, columns, rows) => pgliteCopy(db, table, columns, rows),
    async query<R>(text: string, params?: unknown[]) {
      const res = await db.query<R>(text, params);
      return { rows: res.rows };
    },
    async transaction<T>(fn: (tx: SqlClient) => Promise<T>) {
      return db.transaction((tx) => fn(fromPgliteTx(tx)));
    },
    async close() {
      if (options.ownsDb === true && !db.closed) await db.close();
      options.onClose?.();
    },
  };
}

/** A SqlClient over a PGlite this module opened; `db` is exposed to serve it through pglite-socket. */
export interface PgliteSqlClient extends SqlClient {
  readonly db: PGlite;
  /** How the database came to be: unpacked from the template, made by initdb, or an existing data directory. */
  readonly origin: PgliteOrigin;
}

/**
 * Takes `<dataDir>.lock` (holding our pid), taking over a stale lock left by a dead process. PGlite has no
 * cross-process lock: two processes on one data directory silently lose writes.
 * @returns the release function (removes the file only if it still holds our pid).
 */
function acquireDataDirLock(dataDir: string): () => void {
  const lockPath = `${resolve(dataDir)}.lock`;
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(lockPath, String(process.pid), { flag: 'wx' });
      return () => {
        try {
          if (readFileSync(lockPath, 'utf8').trim() === String(process.pid)) unlinkSync(lockPath);
        } catch {
          // Already gone: nothing to release.
        }
      };
    } catch (error: unknown) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') {
        throw new VectorStoreError(`cannot create lock file for data directory ${dataDir}`, {
          cause: error,
        });
      }
    }
    let holder = Number.NaN;
    try {
      holder = Number.parseInt(readFileSync(lockPath, 'utf8').trim(), 10);
    } catch {
      // Vanished between the two calls: retry.
    }
    if (Number.isInteger(holder) && holder > 0 && isProcessAlive(holder)) {
      throw new DataDirInUseError(`data directory ${dataDir} is in use by process ${holder}`);
    }
    try {
      unlinkSync(lockPath);
    } catch {
      // Someone else removed it: retry.
    }
  }
  throw new DataDirInUseError(`data directory ${dataDir} is being locked by another process`);
}

/**
 * Opens PGlite with the pgvector extension (in-memory when `dataDir` is undefined) and creates the extension.
 * A data directory is guarded by an exclusive `<dataDir>.lock` file, released on `close()`.
 * @throws {DataDirInUseError} when another live process (or this one) holds the data directory.
 * @example const client = await openPglite({ dataDir: './data/pg' }); … await client.close();
 */
export async function openPglite(config: PgliteConfig = {}): Promise<PgliteSqlClient> {
  let release: (() => void) | undefined;
  let fresh = true;
  if (config.dataDir !== undefined) {
    await mkdir(dirname(resolve(config.dataDir)), { recursive: true });
    release = acquireDataDirLock(config.dataDir);
    fresh = ((await readdir(config.dataDir).catch(() => [])) as string[]).length === 0;
  }
  const templatePath = config.template ?? pgliteTemplateSetting();
  let db: PGlite;
  let origin: PgliteOrigin = fresh ? 'initdb' : 'existing';
  try {
    // Loaded on first open, so the pg.Pool path (the deployed functions' bundles) carries no PGlite.
    const [{ PGlite }, { vector }] = await Promise.all([
      import('@electric-sql/pglite'),
      import('@electric-sql/pglite-pgvector'),
    ]);
    const create = (loadDataDir?: Blob) =>
      PGlite.create({
        ...(config.dataDir !== undefined ? { dataDir: config.dataDir } : {}),
        extensions: { vector },
        ...(loadDataDir !== undefined && { loadDataDir }),
      });
    const template =
      fresh && templatePath !== false ? await readPgliteTemplate(templatePath) : undefined;
    if (template !== undefined) {
      try {
        db = await create(template);
        origin = 'template';
      } catch {
        // A template PGlite cannot load: drop it, empty what it unpacked, and run initdb.
        await discardPgliteTemplate(templatePath as string);
        if (config.dataDir !== undefined) await emptyDir(config.dataDir);
        db = await create();
      }
    } else {
      db = await create();
    }
    if (config.dataDir === undefined && config.amortizedGrowth !== false) amortizeMemfsGrowth(db);
    await db.exec('CREATE EXTENSION IF NOT EXISTS vector');
    if (origin === 'initdb' && templatePath !== false) {
      // Nothing but the extension has run here yet: this database is the next one's template.
      await savePgliteTemplate(templatePath, await db.dumpDataDir('none'));
    }
  } catch (error: unknown) {
    release?.();
    throw new VectorStoreError('cannot open PGlite', { cause: error });
  }
  const base = fromPglite(db, { ownsDb: true, ...(release ? { onClose: release } : {}) });
  return { ...base, db, origin };
}

/** Removes what is inside `dir` (a data directory this call found empty and a failed template load filled). */
async function emptyDir(dir: string): Promise<void> {
  for (const name of await readdir(dir))
    await rm(join(dir, name), { recursive: true, force: true });
}
