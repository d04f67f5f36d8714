/**
 * Readers (`createIfMissing: false`) never change the schema: opening one issues no DDL, an out-of-date schema is
 * refused with how to migrate it, and a role with only USAGE + SELECT can search (vector, keyword, hybrid), the
 * statistics that writers left in the log included. PGlite in process, and the real server when PGVECTOR_HOST is
 * set (the role test needs it: PGlite has one user).
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { analyze } from '../../../shared/src/text/analyzer.js';
import { VectorStoreError } from '../../../shared/src/vectorstores/errors.js';
import { auxiliaryName } from '../../../shared/src/vectorstores/naming.js';
import {
  dropPgCollection,
  PgVectorStore,
} from '../../../shared/src/vectorstores/pgvector/pgvector-store.js';
import {
  fromPgPool,
  openPglite,
  type SqlClient,
} from '../../../shared/src/vectorstores/sql-client.js';
import { clientOptions, probePgServer } from '../../support/pg.js';
import { recordingClient } from '../../support/recording-client.js';
import { makeChunk } from './contract.js';
import { createHashEmbedder } from './fake-embedder.js';

const embedder = createHashEmbedder({ dimension: 16 });
const DOCS = [
  makeChunk('leave.md', 1, 'Employees get 25 days of annual leave per calendar year.'),
  makeChunk('leave.md', 2, "Sick leave requires a doctor's note after three days of absence."),
  makeChunk('expenses.md', 1, 'The approval limit for expenses is 500 euros per claim.'),
];
const MORE = [
  makeChunk('travel.md', 1, 'Train travel is booked in second class; flights need approval.'),
  makeChunk('travel.md', 2, 'Hotel costs are reimbursed up to 120 euros per night.'),
];
/** Statements that change the schema or the data (a CTE that deletes included). */
const WRITES =
  /^\s*(CREATE|ALTER|DROP|GRANT|REVOKE|COMMENT|TRUNCATE|INSERT|UPDATE|DELETE|COPY)\b|\bDELETE FROM\b/i;
const DDL = /^\s*(CREATE|ALTER|DROP|GRANT|REVOKE|COMMENT|TRUNCATE)\b/i;

/** A client that records every statement it (and its transactions and sessions) runs. */
function recording(inner: SqlClient, log: string[]): SqlClient {
  return recordingClient(inner, (text) => log.push(text));
}

const searches = (store: PgVectorStore) =>
  Promise.all([
    store.search('annual leave days', { k: 2 }),
    store.keywordSearch('approval limit euros', { k: 2 }),
    store.search('hotel euros per night', {
      k: 3,
      searchMode: 'hybrid',
      rankerStrategy: 'rrf',
      rankerK: 60,
    }),
  ]);

describe('pgvector reader on PGlite', () => {
  let client: SqlClient;
  beforeAll(async () => {
    client = await openPglite({});
  });
  afterAll(async () => {
    await client.close();
  });

  it('opens an existing collection with catalogue reads only: no DDL, no writes', async () => {
    // Prepare
    const writer = await PgVectorStore.create({
      client,
      embedder,
      collectionName: 'ai4rag_reader_open',
    });
    await writer.addChunks(DOCS);
    const log: string[] = [];

    // Act
    const reader = await PgVectorStore.create({
      client: recording(client, log),
      embedder,
      collectionName: 'ai4rag_reader_open',
      createIfMissing: false,
    });

    // Assess
    expect(log.length).toBeGreaterThan(0);
    expect(log.filter((sql) => WRITES.test(sql))).toEqual([]);
    expect(await searches(reader)).toEqual(await searches(writer));
  });

  it('does not run DDL when a writer reopens an up-to-date collection either', async () => {
    // Prepare
    const log: string[] = [];

    // Act
    await PgVectorStore.create({
      client: recording(client, log),
      embedder,
      collectionName: 'ai4rag_reader_open',
    });

    // Assess
    expect(log.filter((sql) => DDL.test(sql))).toEqual([]);
  });

  it('refuses an out-of-date collection, saying how to migrate; a writer migrates it', async () => {
    // Prepare: a document table from before tombstones
    const writer = await PgVectorStore.create({
      client,
      embedder,
      collectionName: 'ai4rag_reader_old',
    });
    await writer.addChunks(DOCS);
    const docTable = auxiliaryName('ai4rag_reader_old', 'd');
    await client.query(`ALTER TABLE "${docTable}" DROP COLUMN deleted_at`);
    const log: string[] = [];

    // Act
    const opened = PgVectorStore.create({
      client: recording(client, log),
      embedder,
      collectionName: 'ai4rag_reader_old',
      createIfMissing: false,
    });

    // Assess
    await expect(opened).rejects.toThrow(VectorStoreError);
    await expect(opened).rejects.toThrow(
      /ai4rag_reader_old needs a schema migration \(missing .*deleted_at\): re-run an ingestion into it/,
    );
    expect(log.filter((sql) => DDL.test(sql))).toEqual([]);
    const migrating: string[] = [];
    await PgVectorStore.create({
      client: recording(client, migrating),
      embedder,
      collectionName: 'ai4rag_reader_old',
    });
    expect(migrating).toContain(`SET LOCAL lock_timeout = 5000`);
    expect(migrating.some((sql) => sql.includes('pg_advisory_xact_lock'))).toBe(true);
    const reader = await PgVectorStore.create({
      client,
      embedder,
      collectionName: 'ai4rag_reader_old',
      createIfMissing: false,
    });
    expect(await reader.search('annual leave', { k: 1 })).toHaveLength(1);
  });
  it('opens a collection from before the version index for reading as it is; the next writer adds the index', async () => {
    // Prepare: a collection whose chunk table has no b-tree on version (as before it existed)
    const writer = await PgVectorStore.create({
      client,
      embedder,
      collectionName: 'ai4rag_reader_nover',
    });
    await writer.addChunks(DOCS);
    const index = auxiliaryName('ai4rag_reader_nover', 'v');
    await client.query(`DROP INDEX "${index}"`);
    const exists = async () =>
      (await client.query<{ oid: string | null }>('SELECT to_regclass($1) AS oid', [index])).rows[0]
        ?.oid != null;
    const log: string[] = [];

    // Act
    const reader = await PgVectorStore.create({
      client: recording(client, log),
      embedder,
      collectionName: 'ai4rag_reader_nover',
      createIfMissing: false,
    });
    const found = await searches(reader);
    const missingAfterReader = !(await exists());
    const migrating: string[] = [];
    await PgVectorStore.create({
      client: recording(client, migrating),
      embedder,
      collectionName: 'ai4rag_reader_nover',
    });

    // Assess: the reader ran no DDL and searched as before; the writer created the index
    expect(log.filter((sql) => DDL.test(sql))).toEqual([]);
    expect(found).toEqual(await searches(writer));
    expect(missingAfterReader).toBe(true);
    expect(migrating.some((sql) => sql.includes(`CREATE INDEX IF NOT EXISTS "${index}"`))).toBe(
      true,
    );
    expect(await exists()).toBe(true);
  });

  it('folds the statistics log when a staged write finishes, so readers add up little', async () => {
    // Prepare
    const writer = await PgVectorStore.create({
      client,
      embedder,
      collectionName: 'ai4rag_reader_fold',
    });
    const version = await writer.beginWrite();
    await writer.addChunks(MORE, { version });
    const log = `"${auxiliaryName('ai4rag_reader_fold', 'l')}"`;
    const pending = await client.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${log}`);

    // Act
    await writer.finishWrite(version, [
      {
        record: {
          documentId: 'travel.md',
          contentHash: 'h1',
          chunkCount: MORE.length,
          updatedAt: new Date().toISOString(),
        },
        chunkIds: MORE.map((c) => c.id),
      },
    ]);

    // Assess
    expect(pending.rows[0]?.n).toBeGreaterThan(0);
    const after = await client.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${log}`);
    expect(after.rows[0]?.n).toBe(0);
    expect((await writer.stats()).chunks).toBe(MORE.length);
  });
});

const server = await probePgServer(2000);

describe.skipIf(server === undefined)('pgvector reader role on a PostgreSQL server', () => {
  const suffix = `${process.pid}_${Date.now() % 1e6}`;
  const role = `ai4rag_test_ro_${suffix}`;
  const collection = `ai4rag_ro_${suffix}`;
  let admin: SqlClient;
  let readerClient: SqlClient;

  beforeAll(async () => {
    if (server === undefined) return;
    admin = fromPgPool(new pg.Pool({ ...clientOptions(server), max: 2 }), { ownsPool: true });
    await admin.query(`CREATE ROLE ${role} LOGIN`);
    readerClient = fromPgPool(
      new pg.Pool({ ...clientOptions({ ...server, password: undefined }), user: role, max: 2 }),
      { ownsPool: true },
    );
  });
  afterAll(async () => {
    await readerClient?.close();
    if (admin === undefined) return;
    await dropPgCollection(admin, collection).catch(() => undefined);
    await admin.query(`DROP OWNED BY ${role}`);
    await admin.query(`DROP ROLE ${role}`);
    await admin.close();
  });

  it('searches with SELECT only, counting statistics writers left in the log, and writes nothing', async () => {
    // Prepare: a writer fills the collection and adds more without a keyword search (its log stays unfolded)
    const writer = await PgVectorStore.create({
      client: admin,
      embedder,
      collectionName: collection,
    });
    await writer.addChunks(DOCS);
    await writer.keywordSearch('leave', { k: 1 });
    await writer.addChunks(MORE);
    await admin.query(`GRANT USAGE ON SCHEMA public TO ${role}`);
    await admin.query(`GRANT SELECT ON ALL TABLES IN SCHEMA public TO ${role}`);
    const log: string[] = [];

    // Act
    const reader = await PgVectorStore.create({
      client: recording(readerClient, log),
      embedder,
      collectionName: collection,
      createIfMissing: false,
    });
    const [dense, keyword, hybrid] = await searches(reader);
    const stats = await reader.termStats();
    // The window retrieval's neighbour read.
    const window = await reader.getChunksBySequence('leave.md', 1, 2);

    // Assess
    expect(log.filter((sql) => WRITES.test(sql))).toEqual([]);
    expect(window.map((h) => h.id)).toEqual(['leave.md#1', 'leave.md#2']);
    expect(dense).toHaveLength(2);
    expect(keyword[0]?.id).toBe('expenses.md#1');
    expect(hybrid.map((h) => h.id)).toContain('travel.md#2');
    // The reader's BM25 equals the writer's, which folds the log first.
    const [writerDense, writerKeyword, writerHybrid] = await searches(writer);
    expect([dense, keyword, hybrid]).toEqual([writerDense, writerKeyword, writerHybrid]);
    const writerStats = await writer.termStats();
    const terms = analyze('hotel euros leave approval night unseen');
    expect(stats.documents).toBe(writerStats.documents);
    expect(terms.map((t) => stats.idf(t))).toEqual(terms.map((t) => writerStats.idf(t)));
  });

  it('cannot write as the reader (the database refuses, the store reports it)', async () => {
    // Prepare
    const reader = await PgVectorStore.create({
      client: readerClient,
      embedder,
      collectionName: collection,
      createIfMissing: false,
    });

    // Act / Assess
    await expect(reader.addChunks([makeChunk('x.md', 1, 'forbidden write')])).rejects.toThrow(
      /SQLSTATE 42501/,
    );
  });

  it('refuses to create a collection as the reader (no CREATE on the schema)', async () => {
    // Act / Assess
    await expect(
      PgVectorStore.create({
        client: readerClient,
        embedder,
        collectionName: `${collection}_new`,
      }),
    ).rejects.toThrow(/SQLSTATE 42501/);
  });
});
