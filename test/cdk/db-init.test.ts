import { createHash, createHmac, pbkdf2Sync } from 'node:crypto';
import { PGlite } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createDbInitHandler,
  type DbInitDeps,
  DbInitError,
  type DbInitEvent,
  scramSha256Verifier,
} from '../../functions/db-init/handler.js';
import { ValidationError } from '../../shared/src/errors.js';
import { PgVectorStore } from '../../shared/src/vectorstores/pgvector/pgvector-store.js';
import { fromPgPool, type SqlClient } from '../../shared/src/vectorstores/sql-client.js';
import { clientOptions, probePgServer } from '../support/pg.js';
import { makeChunk } from '../unit/vectorstores/contract.js';
import { createHashEmbedder } from '../unit/vectorstores/fake-embedder.js';

const PROPS = {
  host: 'proxy.example.internal',
  port: '5432',
  database: 'ai4rag',
  secretArn: 'arn:aws:secretsmanager:eu-west-1:000000000000:secret:db-AbCdEf',
  extension: 'vector',
};
const SECRET = JSON.stringify({ username: 'ai4rag_admin', password: 's3cret' });

const event = (RequestType: DbInitEvent['RequestType']): DbInitEvent => ({
  RequestType,
  ResourceProperties: PROPS,
  ...(RequestType === 'Create' ? {} : { PhysicalResourceId: 'ai4rag-extension-vector' }),
});

describe('DbInitFunction handler', () => {
  let db: PGlite;
  const connects: unknown[] = [];
  let ended = 0;
  let deps: DbInitDeps;

  beforeAll(async () => {
    db = await PGlite.create({ extensions: { vector } });
    deps = {
      readSecret: async (arn) => (arn === PROPS.secretArn ? SECRET : '{}'),
      connect: async (options) => {
        connects.push(options);
        return {
          query: async (sql: string, params?: unknown[]) => ({
            rows: (await db.query(sql, params)).rows as never,
          }),
          end: async () => {
            ended += 1;
          },
        };
      },
    };
  });
  afterAll(async () => {
    await db.close();
  });

  it('creates the vector extension on Create and reports its version', async () => {
    // Act
    const result = await createDbInitHandler(deps)(event('Create'));

    // Assess
    const { rows } = await db.query<{ extversion: string }>(
      "SELECT extversion FROM pg_extension WHERE extname = 'vector'",
    );
    expect(rows).toHaveLength(1);
    expect(result).toEqual({
      PhysicalResourceId: 'ai4rag-extension-vector',
      Data: { extension: 'vector', version: rows[0]!.extversion },
    });
    expect(connects).toEqual([
      {
        host: 'proxy.example.internal',
        port: 5432,
        database: 'ai4rag',
        user: 'ai4rag_admin',
        password: 's3cret',
      },
    ]);
    expect(ended).toBe(1);
  });

  it('is idempotent on Update', async () => {
    // Act
    const result = await createDbInitHandler(deps)(event('Update'));

    // Assess
    expect(result.PhysicalResourceId).toBe('ai4rag-extension-vector');
    expect(ended).toBe(2);
  });

  it('leaves the database alone on Delete', async () => {
    // Prepare
    const before = connects.length;

    // Act
    const result = await createDbInitHandler(deps)(event('Delete'));

    // Assess
    expect(result).toEqual({ PhysicalResourceId: 'ai4rag-extension-vector' });
    expect(connects).toHaveLength(before);
  });

  it('rejects an extension name that is not an identifier', async () => {
    // Prepare
    const bad: DbInitEvent = {
      RequestType: 'Create',
      ResourceProperties: { ...PROPS, extension: 'vector; DROP TABLE x' },
    };

    // Act
    const run = createDbInitHandler(deps)(bad);

    // Assess
    await expect(run).rejects.toBeInstanceOf(ValidationError);
  });

  it('rejects a secret without credentials', async () => {
    // Act
    const run = createDbInitHandler({ ...deps, readSecret: async () => '{"username":"x"}' })(
      event('Create'),
    );

    // Assess
    await expect(run).rejects.toThrow('database secret lacks username/password');
  });

  it('wraps a connection failure with its cause', async () => {
    // Prepare
    const refused = new Error('ECONNREFUSED');

    // Act
    const error = await createDbInitHandler({
      ...deps,
      connect: async () => {
        throw refused;
      },
    })(event('Create')).then(
      () => new Error('expected a rejection'),
      (e: unknown) => e as Error,
    );

    // Assess
    expect(error).toBeInstanceOf(DbInitError);
    expect(error.message).toBe('cannot connect to proxy.example.internal:5432/ai4rag');
    expect(error.cause).toBe(refused);
  });
});

/** Whether a stored SCRAM-SHA-256 verifier accepts `password` (what the server checks at login). */
function verifierAccepts(stored: string, password: string): boolean {
  const m = /^SCRAM-SHA-256\$(\d+):([^$]+)\$([^:]+):(.+)$/.exec(stored);
  if (m === null) return false;
  const salted = pbkdf2Sync(
    password,
    Buffer.from(m[2] as string, 'base64'),
    Number(m[1]),
    32,
    'sha256',
  );
  const clientKey = createHmac('sha256', salted).update('Client Key').digest();
  return createHash('sha256').update(clientKey).digest('base64') === m[3];
}

describe('scramSha256Verifier', () => {
  it('matches the RFC 7677 key derivation and salts every call', () => {
    // Prepare
    const salt = Buffer.alloc(16, 7);

    // Act
    const a = scramSha256Verifier('pencil', salt);
    const b = scramSha256Verifier('pencil');

    // Assess
    expect(a).toMatch(
      /^SCRAM-SHA-256\$4096:BwcHBwcHBwcHBwcHBwcHBw==\$[A-Za-z0-9+/=]{44}:[A-Za-z0-9+/=]{44}$/,
    );
    expect(verifierAccepts(a, 'pencil')).toBe(true);
    expect(verifierAccepts(a, 'pencil2')).toBe(false);
    expect(b).not.toBe(a);
  });
});

const server = await probePgServer(2000);

describe.skipIf(server === undefined)('DbInitFunction roles on a PostgreSQL server', () => {
  const suffix = `${process.pid}_${Date.now() % 1e6}`;
  const database = `ai4rag_dbinit_${suffix}`;
  const writerRole = `ai4rag_w_${suffix}`;
  const readerRole = `ai4rag_r_${suffix}`;
  const passwords: Record<string, string> = { writer: 'w-pass-1', reader: "r'pass\\1 $$;" };
  const ROLE_PROPS = {
    ...PROPS,
    database,
    writerRole,
    writerSecretArn: 'arn:writer',
    readerRole,
    readerSecretArn: 'arn:reader',
  };
  const roleEvent = (RequestType: DbInitEvent['RequestType']): DbInitEvent => ({
    RequestType,
    ResourceProperties: ROLE_PROPS,
    ...(RequestType === 'Create' ? {} : { PhysicalResourceId: 'ai4rag-extension-vector' }),
  });
  let admin: pg.Client;
  let master: SqlClient;
  const embedder = createHashEmbedder({ dimension: 8 });
  let deps: DbInitDeps;
  const poolAs = (user?: string): SqlClient => {
    const base = clientOptions({ ...(server as NonNullable<typeof server>), database });
    return fromPgPool(new pg.Pool({ ...base, ...(user !== undefined && { user }), max: 2 }), {
      ownsPool: true,
    });
  };

  beforeAll(async () => {
    if (server === undefined) return;
    admin = new pg.Client(clientOptions(server));
    await admin.connect();
    await admin.query(`CREATE DATABASE ${database}`);
    master = poolAs();
    deps = {
      readSecret: async (arn) =>
        JSON.stringify(
          arn === 'arn:writer'
            ? { username: writerRole, password: passwords.writer }
            : arn === 'arn:reader'
              ? { username: readerRole, password: passwords.reader }
              : { username: server?.user, password: 'unused' },
        ),
      connect: async (options) => {
        const client = new pg.Client({
          ...clientOptions({ ...server!, database }),
          user: options.user,
        });
        await client.connect();
        return client;
      },
    };
  });
  afterAll(async () => {
    if (admin === undefined) return;
    await master?.close();
    await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    for (const role of [readerRole, writerRole]) await admin.query(`DROP ROLE IF EXISTS ${role}`);
    await admin.end();
  });

  const storedVerifier = async (role: string): Promise<string> =>
    String(
      (await admin.query('SELECT rolpassword FROM pg_authid WHERE rolname = $1', [role])).rows[0]
        ?.rolpassword,
    );

  it('creates both roles with their secrets passwords and hands existing tables to the writer', async () => {
    // Prepare: a collection the master user created before the roles existed
    const before = await PgVectorStore.create({
      client: master,
      embedder,
      collectionName: 'ai4rag_old',
    });
    await before.addChunks([makeChunk('a.md', 1, 'annual leave is 25 days')]);

    // Act
    const result = await createDbInitHandler(deps)(roleEvent('Create'));

    // Assess
    expect(result.Data).toMatchObject({ extension: 'vector', writerRole, readerRole });
    expect(verifierAccepts(await storedVerifier(writerRole), passwords.writer as string)).toBe(
      true,
    );
    expect(verifierAccepts(await storedVerifier(readerRole), passwords.reader as string)).toBe(
      true,
    );
    const owners = await master.query<{ tableowner: string }>(
      `SELECT DISTINCT tableowner FROM pg_tables WHERE schemaname = 'public' AND tablename LIKE 'ai4rag%'`,
    );
    expect(owners.rows).toEqual([{ tableowner: writerRole }]);
    const reader = poolAs(readerRole);
    try {
      const store = await PgVectorStore.create({
        client: reader,
        embedder,
        collectionName: 'ai4rag_old',
        createIfMissing: false,
      });
      expect(await store.keywordSearch('annual leave', { k: 1 })).toHaveLength(1);
    } finally {
      await reader.close();
    }
  });

  it('lets the writer create and migrate collections that the reader can then search, and no more', async () => {
    // Prepare
    const writer = poolAs(writerRole);
    const reader = poolAs(readerRole);
    try {
      // Act
      const store = await PgVectorStore.create({
        client: writer,
        embedder,
        collectionName: 'ai4rag_new',
      });
      await store.addChunks([makeChunk('b.md', 1, 'the expense approval limit is 500 euros')]);
      const readOnly = await PgVectorStore.create({
        client: reader,
        embedder,
        collectionName: 'ai4rag_new',
        createIfMissing: false,
      });

      // Assess
      expect(await readOnly.keywordSearch('expense approval', { k: 1 })).toHaveLength(1);
      await expect(reader.query('CREATE TABLE ai4rag_sneaky (x int)')).rejects.toMatchObject({
        code: '42501',
      });
      await expect(readOnly.addChunks([makeChunk('c.md', 1, 'no')])).rejects.toThrow(/42501/);
    } finally {
      await writer.close();
      await reader.close();
    }
  });

  it('is idempotent, and an Update sets a rotated password', async () => {
    // Prepare
    const oldVerifier = await storedVerifier(readerRole);
    passwords.reader = 'r-pass-2';

    // Act
    await createDbInitHandler(deps)(roleEvent('Update'));
    await createDbInitHandler(deps)(roleEvent('Update'));

    // Assess
    const verifier = await storedVerifier(readerRole);
    expect(verifier).not.toBe(oldVerifier);
    expect(verifierAccepts(verifier, 'r-pass-2')).toBe(true);
    expect(verifierAccepts(await storedVerifier(writerRole), passwords.writer as string)).toBe(
      true,
    );
  });

  it('rejects half a role pair and role names that are not plain identifiers', async () => {
    // Prepare
    const half: DbInitEvent = {
      RequestType: 'Create',
      ResourceProperties: { ...PROPS, writerRole: 'ai4rag_writer' },
    };
    const bad: DbInitEvent = {
      RequestType: 'Create',
      ResourceProperties: { ...ROLE_PROPS, readerRole: 'Reader"; DROP' },
    };

    // Act / Assess
    await expect(createDbInitHandler(deps)(half)).rejects.toThrow(/go together/);
    await expect(createDbInitHandler(deps)(bad)).rejects.toThrow(ValidationError);
  });
});
