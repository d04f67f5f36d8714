/**
 * A collection keeps its embeddings and BM25 weights in the chunk rows (STORAGE MAIN), so an exact vector scan (and a
 * keyword candidate's rescoring) reads the table's pages and nothing else: with pgvector's default (EXTERNAL) a row with a 384-dimension vector, its text and its BM25
 * weights passes the ~2 kB TOAST threshold and every scanned row costs three more buffer reads from the TOAST table.
 * A collection written before is opened by a reader as it is and migrated by its next writer. PGlite in process, and
 * the real server when PGVECTOR_HOST is set.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Embedder } from '../../../shared/src/embeddings/types.js';
import { collectionTables } from '../../../shared/src/vectorstores/pgvector/names.js';
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

const embedder = createHashEmbedder({ dimension: 384 });

/** Dense pseudo-random unit vectors of 3,072 dimensions, one per text (a sparse one would compress into the row). */
const DENSE_WIDE: Embedder = {
  modelId: 'fake/dense-3072',
  dimension: 3072,
  contextLength: 8192,
  async embedDocuments(texts) {
    return Promise.all(texts.map((t) => this.embedQuery(t)));
  },
  async embedQuery(text) {
    let seed = [...text].reduce(
      (h, ch) => Math.imul(h ^ ch.charCodeAt(0), 0x01000193) >>> 0,
      0x811c9dc5,
    );
    const v = Array.from({ length: 3072 }, () => {
      seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
      return seed / 2 ** 32 - 0.5;
    });
    const norm = Math.hypot(...v);
    return v.map((x) => x / norm);
  },
};
const ROWS = 120;

/** Chunks of about 700 characters: with their 1,544-byte vectors the rows pass the TOAST threshold. */
function chunks(prefix: string, count: number) {
  return Array.from({ length: count }, (_, i) =>
    makeChunk(
      `${prefix}-${i % 12}.md`,
      Math.floor(i / 12),
      Array.from(
        { length: 40 },
        (_, w) => `${prefix}w${(i * 7 + w * 13) % 97} term${(i + w) % 31} v${w}`,
      ).join(' '),
    ),
  );
}

/**
 * Buffers a scan of the whole table reads (EXPLAIN ANALYZE, BUFFERS), and the table's own pages: with the vectors in
 * the rows the first is at most the second (plus the few pages of the staged-writes check). `of` is what the scan
 * reads of every row: the embedding (an exact vector search) or the BM25 weights (what a keyword candidate's
 * rescoring reads).
 */
async function scanCost(
  client: SqlClient,
  name: string,
  of: 'embedding' | 'bm25' = 'embedding',
): Promise<{ buffers: number; pages: number }> {
  const t = collectionTables(name);
  const query = `[${(await embedder.embedQuery('w1 term2')).join(',')}]`;
  const plan = await client.query<{ 'QUERY PLAN': unknown }>(
    of === 'embedding'
      ? `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON)
     SELECT id FROM ${t.table} WHERE ${t.visible} ORDER BY embedding <=> '${query}'::vector LIMIT 10`
      : `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON)
     SELECT max(bm25 <#> '{1:1}/1000000000'::sparsevec) FROM ${t.table} WHERE ${t.visible}`,
  );
  const raw = plan.rows[0]?.['QUERY PLAN'];
  const root = (typeof raw === 'string' ? JSON.parse(raw) : raw) as {
    Plan: { 'Shared Hit Blocks': number; 'Shared Read Blocks': number };
  }[];
  const top = root[0]?.Plan;
  const pages = await client.query<{ pages: string }>(
    `SELECT pg_relation_size($1::regclass) / current_setting('block_size')::int AS pages`,
    [t.table.slice(1, -1)],
  );
  return {
    buffers: (top?.['Shared Hit Blocks'] ?? 0) + (top?.['Shared Read Blocks'] ?? 0),
    pages: Number(pages.rows[0]?.pages),
  };
}

/** The storage of the embedding and BM25 columns, e.g. `m m` (MAIN) or `e e` (EXTERNAL). */
const storage = async (client: SqlClient, name: string) =>
  (
    await client.query<{ s: string }>(
      `SELECT attstorage AS s FROM pg_attribute
       WHERE attrelid = $1::regclass AND attname IN ('embedding', 'bm25') ORDER BY attname DESC`,
      [collectionTables(name).table.slice(1, -1)],
    )
  ).rows
    .map((r) => r.s)
    .join(' ');

/** Every plan node under `node` (EXPLAIN's JSON form). */
function planNodes(node: Record<string, unknown>): Record<string, unknown>[] {
  const children = (node.Plans as Record<string, unknown>[] | undefined) ?? [];
  return [node, ...children.flatMap(planNodes)];
}

function suite(label: string, connect: () => Promise<SqlClient>): void {
  describe(`embeddings kept in the rows on ${label}`, () => {
    let client: SqlClient;
    const run = Date.now().toString(36);
    const names: string[] = [];
    const fresh = (tag: string) => {
      const name = `ai4rag_inline_${tag}_${run}`;
      names.push(name);
      return name;
    };
    beforeAll(async () => {
      client = await connect();
    });
    afterAll(async () => {
      for (const name of names) await dropPgCollection(client, name).catch(() => undefined);
      await client.close();
    });

    it('a new collection keeps its vectors in its rows: an exact scan reads no more buffers than the table has pages', async () => {
      // Prepare
      const name = fresh('new');
      const store = await PgVectorStore.create({ client, embedder, collectionName: name });
      // Act
      await store.addChunks(chunks('a', ROWS));
      const cost = await scanCost(client, name);
      const weights = await scanCost(client, name, 'bm25');
      const hits = await store.search('aw5 term3', { k: 5 });
      // Assert
      expect(await storage(client, name)).toBe('m m');
      expect(cost.pages).toBeGreaterThan(0);
      expect(cost.buffers).toBeLessThanOrEqual(cost.pages + 4);
      expect(weights.buffers).toBeLessThanOrEqual(weights.pages + 4);
      expect(hits).toHaveLength(5);
      await store.close();
    });

    it('vectors too large for a page still go out of line: dense 3,072-dimension vectors (text-embedding-3-large) are written and found', async () => {
      // Prepare: dense 12,296-byte vectors (no compression helps them), more than a heap page holds
      const name = fresh('wide');
      const store = await PgVectorStore.create({
        client,
        embedder: DENSE_WIDE,
        collectionName: name,
      });
      // Act
      await store.addChunks(chunks('d', 24));
      const hits = await store.search('dw5 term3', { k: 3 });
      const stored = await client.query<{ dims: number; bytes: number; n: number }>(
        `SELECT min(vector_dims(embedding))::int AS dims, min(pg_column_size(embedding))::int AS bytes,
                count(*)::int AS n FROM ${collectionTables(name).table}`,
      );
      // Assert: every row stored whole and uncompressed (MAIN moves such a value out rather than refuse the row)
      expect(await storage(client, name)).toBe('m m');
      expect(stored.rows[0]).toMatchObject({ dims: 3072, n: 24 });
      expect(stored.rows[0]?.bytes).toBeGreaterThanOrEqual(4 * 3072);
      expect(hits).toHaveLength(3);
      await store.close();
    });

    it('a keyword search on a table not yet analysed reads each candidate by its row id, never the whole chunk table', async () => {
      // Prepare: a new collection, searched before any ANALYZE (an experiment's trial does so seconds after writing it)
      const name = fresh('kw');
      const t = collectionTables(name);
      const store = await PgVectorStore.create({ client, embedder, collectionName: name });
      await store.addChunks(chunks('k', 600));
      const seen: { text: string; params: readonly unknown[] | undefined }[] = [];
      const reader = await PgVectorStore.create({
        client: recordingClient(client, (text, params) => seen.push({ text, params })),
        embedder,
        collectionName: name,
        createIfMissing: false,
      });
      // Act: the search, then its keyword statement's plan for the same parameters
      const hits = await reader.keywordSearch('kw5 term3 kw12', { k: 5 });
      const statement = seen.find((s) => s.text.trimStart().startsWith('WITH q(term, qw)'));
      expect(statement).toBeDefined();
      const plan = await client.query<{ 'QUERY PLAN': unknown }>(
        `EXPLAIN (FORMAT JSON) ${statement?.text}`,
        statement?.params as unknown[],
      );
      const raw = plan.rows[0]?.['QUERY PLAN'];
      const root = (typeof raw === 'string' ? JSON.parse(raw) : raw) as {
        Plan: Record<string, unknown>;
      }[];
      const onTable = planNodes(root[0]?.Plan ?? {}).filter(
        (n) => n['Relation Name'] === t.table.slice(1, -1),
      );
      // Assert: the chunk table is read through its row-id index only, and the search answered
      expect(hits).toHaveLength(5);
      expect(onTable.length).toBeGreaterThan(0);
      expect(onTable.map((n) => n['Node Type'])).not.toContain('Seq Scan');
      expect(onTable.map((n) => n['Node Type'])).not.toContain('Bitmap Heap Scan');
      await reader.close();
      await store.close();
    });

    it('a collection written with its vectors out of line: a reader opens it as it is, the next writer migrates it and VACUUM FULL brings the old rows in', async () => {
      // Prepare: a collection as an earlier version left it (pgvector's EXTERNAL storage), with rows
      const name = fresh('old');
      const t = collectionTables(name);
      const first = await PgVectorStore.create({ client, embedder, collectionName: name });
      await client.query(
        `ALTER TABLE ${t.table} ALTER COLUMN embedding SET STORAGE EXTERNAL, ALTER COLUMN bm25 SET STORAGE EXTERNAL`,
      );
      await first.addChunks(chunks('b', ROWS));
      await first.close();
      const before = await scanCost(client, name);
      // The premise: out of line, every row's vector is a TOAST fetch (its index and heap: two buffers or more a row)
      expect(before.buffers).toBeGreaterThanOrEqual(before.pages + 2 * ROWS);

      // Act 1: a reader opens it (no migration asked of it) and searches
      const reader = await PgVectorStore.create({
        client,
        embedder,
        collectionName: name,
        createIfMissing: false,
      });
      const seen = await reader.search('bw5 term3', { k: 5 });
      await reader.close();
      // Assert 1: unchanged, and the search answered
      expect(seen).toHaveLength(5);
      expect(await storage(client, name)).toBe('e e');

      // Act 2: a writer opens it and adds rows
      const log: string[] = [];
      const writer = await PgVectorStore.create({
        client,
        embedder,
        collectionName: name,
        logger: (m) => log.push(m),
      });
      await writer.addChunks(chunks('c', ROWS));
      // Assert 2: migrated, said so (naming the table and the rewrite), and the search finds old and new rows alike
      expect(await storage(client, name)).toBe('m m');
      expect(log.filter((m) => m.includes('kept in the chunk table'))).toEqual([
        `collection ${name}: embeddings and BM25 weights of new rows are kept in the chunk table's rows (exact scans, keyword rescoring and index builds read no TOAST); rows written before keep theirs in the TOAST table until VACUUM FULL ${t.table} rewrites them`,
      ]);
      expect((await writer.search('bw5 term3', { k: 5 })).map((h) => h.id)).toEqual(
        seen.map((h) => h.id),
      );
      const mixed = await scanCost(client, name);
      // Only the old rows still fetch their vectors from TOAST (the new ones would double the fetches)
      expect(mixed.buffers).toBeGreaterThanOrEqual(mixed.pages + 2 * ROWS);
      expect(mixed.buffers).toBeLessThan(mixed.pages + 4 * ROWS);

      // Act 3: the rewrite the message names
      await client.query(`VACUUM FULL ${t.table}`);
      const after = await scanCost(client, name);
      // Assert 3: every vector in its row, the results the same, every posting still matching its row
      expect(after.buffers).toBeLessThanOrEqual(after.pages + 4);
      const weights = await scanCost(client, name, 'bm25');
      expect(weights.buffers).toBeLessThanOrEqual(weights.pages + 4);
      expect((await writer.search('bw5 term3', { k: 5 })).map((h) => h.id)).toEqual(
        seen.map((h) => h.id),
      );
      expect(await writer.checkIntegrity()).toMatchObject({
        chunks: 2 * ROWS,
        keywordIndexMismatch: 0,
      });
      await writer.close();
    });
  });
}

suite('PGlite', () => openPglite({}));

const server = await probePgServer(2000);
if (server !== undefined) {
  suite('a PostgreSQL server', async () =>
    fromPgPool(new pg.Pool(clientOptions(server)), { ownsPool: true }));
}
