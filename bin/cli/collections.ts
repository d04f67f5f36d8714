/**
 * `ai4rag collections list` (the collections of the store: name, embedding model, dimension, documents) and
 * `ai4rag collections drop <name> [--yes]` (its tables and registry row), and the confirmation both `collections
 * drop` and `documents delete` ask for.
 */
import { join } from 'node:path';
import { createInterface } from 'node:readline/promises';
import pg from 'pg';
import { DEFAULT_DATA_DIR, ENV } from '../../shared/src/config.js';
import { NotFoundError, ValidationError } from '../../shared/src/errors.js';
import { STORE_KINDS, type StoreKind } from '../../shared/src/runtime/open-store.js';
import { pgConnection, pgVectorConfigFromEnv } from '../../shared/src/vectorstores/config.js';
import {
  auxiliaryName,
  quoteIdent,
  resolveCollectionName,
} from '../../shared/src/vectorstores/naming.js';
import {
  dropPgCollection,
  REGISTRY_TABLE,
} from '../../shared/src/vectorstores/pgvector/pgvector-store.js';
import {
  fromPgPool,
  openPglite,
  type SqlClient,
} from '../../shared/src/vectorstores/sql-client.js';
import { ensureDataDir, flag, oneOf, type Parsed, str } from './args.js';

type Io = {
  out(line: string): void;
  err(line: string): void;
  /** Asks a yes/no question (tests); absent: on the terminal when stdin is one. */
  confirm?: (question: string) => Promise<boolean>;
};

/** One collection as `collections list` shows it. */
export interface CollectionSummary {
  collection: string;
  embedding_model: string;
  dimension: number;
  documents: number | null;
}

/**
 * Whether to go ahead with a destructive command: `--yes`, else a y/N question on the terminal.
 * @throws {ValidationError} when stdin is not a terminal and `--yes` was not given.
 */
export async function confirmed(p: Parsed, io: Io, question: string): Promise<boolean> {
  if (flag(p, 'yes')) return true;
  if (io.confirm) return io.confirm(question);
  if (process.stdin.isTTY !== true) {
    throw new ValidationError(
      `${question.replace(/\?$/, '')}: give --yes to confirm (stdin is not a terminal)`,
    );
  }
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    return /^y(es)?$/i.test((await rl.question(`${question} [y/N] `)).trim());
  } finally {
    rl.close();
  }
}

async function openSql(p: Parsed): Promise<SqlClient> {
  const kind = oneOf<StoreKind>(p, 'store', STORE_KINDS, 'pglite');
  if (kind === 'milvus') {
    throw new ValidationError(
      '--store milvus: collections list|drop read the PostgreSQL registry (pglite, pgvector); list Milvus collections with its own tools',
    );
  }
  if (kind === 'pgvector') {
    const config = pgVectorConfigFromEnv(ENV);
    const pool = new pg.Pool({
      ...pgConnection(config),
      max: 1,
      connectionTimeoutMillis: 10_000,
    });
    return fromPgPool(pool, { ownsPool: true });
  }
  const dataDir = await ensureDataDir(str(p, 'data-dir') ?? DEFAULT_DATA_DIR);
  return openPglite({ dataDir: join(dataDir, 'pglite') });
}

/** The collections in the store's registry, by name. */
export async function listCollections(client: SqlClient): Promise<CollectionSummary[]> {
  const reg = await client.query<{ t: string | null }>('SELECT to_regclass($1) AS t', [
    REGISTRY_TABLE,
  ]);
  if (reg.rows[0]?.t == null) return [];
  const rows = await client.query<{ name: string; embedding_model: string; dimension: number }>(
    `SELECT name, embedding_model, dimension FROM ${quoteIdent(REGISTRY_TABLE)} ORDER BY name`,
  );
  const out: CollectionSummary[] = [];
  for (const r of rows.rows) {
    const docs = auxiliaryName(r.name, 'd');
    const exists = await client.query<{ t: string | null }>('SELECT to_regclass($1) AS t', [docs]);
    const count =
      exists.rows[0]?.t == null
        ? null
        : Number(
            (
              await client.query<{ n: string | number }>(
                `SELECT count(*) AS n FROM ${quoteIdent(docs)} WHERE deleted_at IS NULL`,
              )
            ).rows[0]?.n ?? 0,
          );
    out.push({
      collection: r.name,
      embedding_model: r.embedding_model,
      dimension: Number(r.dimension),
      documents: count,
    });
  }
  return out;
}

/**
 * `ai4rag collections list|drop <name> [--yes]`.
 * @throws {ValidationError} for a missing or unknown subcommand, a bad name, or drop without confirmation.
 */
export async function cmdCollections(p: Parsed, io: Io): Promise<number> {
  const [sub, ...names] = p.positionals;
  if (sub !== 'list' && sub !== 'drop') {
    throw new ValidationError(
      `give list or drop <name>, e.g. ai4rag collections list${sub !== undefined ? ` (got "${sub}")` : ''}`,
    );
  }
  if (sub === 'list' && names.length > 0) {
    throw new ValidationError(`collections list takes no names (got "${names.join(' ')}")`);
  }
  if (sub === 'drop' && names.length !== 1) {
    throw new ValidationError(
      'give one collection to drop, e.g. ai4rag collections drop ai4rag_old',
    );
  }
  const name = names[0];
  if (name !== undefined) {
    try {
      resolveCollectionName(name);
    } catch (error) {
      throw new ValidationError((error as Error).message, { cause: error });
    }
  }
  const client = await openSql(p);
  try {
    const collections = await listCollections(client);
    if (sub === 'list') {
      if (flag(p, 'json')) io.out(JSON.stringify(collections));
      else if (collections.length === 0) io.out('no collections (run "ai4rag ingest <path>")');
      else {
        for (const c of collections) {
          io.out(
            `${c.collection}\t${c.documents ?? '?'} documents\t${c.embedding_model} (${c.dimension} dimensions)`,
          );
        }
      }
      return 0;
    }
    const key = resolveCollectionName(name as string).toLowerCase();
    const found = collections.find((c) => c.collection === key);
    if (found === undefined) {
      const known = collections.map((c) => c.collection).join(', ');
      throw new NotFoundError(
        `collection ${name} does not exist${known !== '' ? ` (collections: ${known})` : ''}`,
      );
    }
    if (
      !(await confirmed(p, io, `Drop collection ${key} (${found.documents ?? '?'} documents)?`))
    ) {
      io.err('not dropped');
      return 1;
    }
    await dropPgCollection(client, key);
    if (flag(p, 'json')) io.out(JSON.stringify({ dropped: key, documents: found.documents }));
    else io.out(`dropped ${key} (${found.documents ?? '?'} documents)`);
    return 0;
  } finally {
    await client.close();
  }
}
