import { MilvusClient } from '@zilliz/milvus2-sdk-node';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  matchesMetadataFilter,
  parseMetadataFilter,
} from '../../../shared/src/vectorstores/filter.js';
import { MilvusVectorStore } from '../../../shared/src/vectorstores/milvus/milvus-store.js';
import {
  dropPgCollection,
  PgVectorStore,
} from '../../../shared/src/vectorstores/pgvector/pgvector-store.js';
import {
  fromPgPool,
  openPglite,
  type SqlClient,
} from '../../../shared/src/vectorstores/sql-client.js';
import type {
  EmbeddedChunk,
  MetadataFilter,
  VectorStore,
} from '../../../shared/src/vectorstores/types.js';
import { startFakeMilvus } from '../../support/fake-milvus/server.js';
import { clientOptions, probePgServer } from '../../support/pg.js';
import { makeChunk } from './contract.js';
import { createFixedEmbedder } from './fake-embedder.js';

/**
 * Filtered top-k is complete: 25,000 chunks, filters matching 1 % of them (250), k = 10 → 10 hits, on every
 * store. One corpus, two selective tenants: `rare` chunks are scattered among the others (pgvector's iterative
 * HNSW scan finds them), `far` chunks all point away from the query (the iterative scan gives up at
 * hnsw.max_scan_tuples, so the store redoes the search exactly). Vectors are 8-dimensional and seeded, so every
 * run is identical.
 */
// More than hnsw.max_scan_tuples (20,000) rows lie nearer the query than every `far` chunk.
const N = 25_000;
const DIM = 8;
const K = 10;
const QUERY = [1, 0, 0, 0, 0, 0, 0, 0];

function mulberry32(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** 1 % `rare` (i ≡ 0 mod 100), 1 % `far` (i ≡ 50 mod 100, first coordinate ≤ −4), the rest `common`. */
function corpus(): EmbeddedChunk[] {
  const rand = mulberry32(42);
  const out: EmbeddedChunk[] = [];
  for (let i = 0; i < N; i++) {
    const tenant = i % 100 === 0 ? 'rare' : i % 100 === 50 ? 'far' : 'common';
    const v = Array.from({ length: DIM }, () => rand() * 2 - 1);
    if (tenant === 'far') v[0] = -4 - rand();
    const chunk = makeChunk(`doc${Math.floor(i / 100)}`, (i % 100) + 1, `chunk ${i}`, {
      user: { tenant },
    });
    out.push({ chunk, vector: v });
  }
  return out;
}

/** Exact top-k ids by cosine similarity to e1 among the chunks the filter matches. */
function exactTopK(rows: EmbeddedChunk[], filter: MetadataFilter): string[] {
  const node = parseMetadataFilter(filter);
  return rows
    .filter((r) => matchesMetadataFilter(node, r.chunk.metadata))
    .map((r) => ({ id: r.chunk.id, s: (r.vector[0] as number) / Math.hypot(...r.vector) }))
    .sort((a, b) => b.s - a.s || (a.id < b.id ? -1 : 1))
    .slice(0, K)
    .map((x) => x.id);
}

const embedder = createFixedEmbedder({ query: QUERY }, { dimension: DIM });

interface Backend {
  name: string;
  open(collectionName: string): Promise<VectorStore>;
  /** pgvector only: builds the HNSW index. */
  indexed?: (store: VectorStore) => Promise<void>;
  /** pgvector only: the hits of a plain HNSW scan (what the store returned before iterative scans). */
  plainScanHits?: (store: PgVectorStore, tenant: string) => Promise<number>;
  close(): Promise<void>;
}

function pgBackend(name: string, client: () => SqlClient, cleanup?: () => Promise<void>): Backend {
  const stores: PgVectorStore[] = [];
  return {
    name,
    async open(collectionName) {
      const store = await PgVectorStore.create({ client: client(), embedder, collectionName });
      stores.push(store);
      return store;
    },
    async indexed(store) {
      const s = store as PgVectorStore;
      const built = await s.buildIndex({ force: true });
      expect(built.built).toBe(true);
    },
    async plainScanHits(store, tenant) {
      // What a plain HNSW scan (no iterative scan, ef_search 40) returns for the same filter.
      const table = `"${store.collectionName.toLowerCase()}"`;
      // The index is one segment over every row (built with force): its predicate, so the planner uses it.
      const max = await client().query<{ max: string }>(
        `SELECT max(rid)::text AS max FROM ${table}`,
      );
      const range = `(rid + 0) > 0 AND (rid + 0) <= ${Number(max.rows[0]?.max)}`;
      return client().transaction(async (tx) => {
        await tx.query('SET LOCAL hnsw.ef_search = 40');
        await tx.query('SET LOCAL hnsw.iterative_scan = off');
        const res = await tx.query(
          `SELECT id FROM ${table} WHERE metadata @> $2::jsonb AND ${range}
           ORDER BY embedding <=> $1::vector LIMIT ${K}`,
          [JSON.stringify(QUERY), JSON.stringify({ user: { tenant } })],
        );
        return res.rows.length;
      });
    },
    async close() {
      for (const s of stores) await dropPgCollection(client(), s.collectionName);
      await cleanup?.();
    },
  };
}

const pgConfig = await probePgServer(2000);
let pglite: SqlClient;
let server: SqlClient | undefined;

const backends: Backend[] = [
  pgBackend('PGlite', () => pglite),
  ...(pgConfig === undefined
    ? []
    : [pgBackend('the PostgreSQL server', () => server as SqlClient)]),
  (() => {
    let fake: Awaited<ReturnType<typeof startFakeMilvus>> | undefined;
    let client: MilvusClient | undefined;
    const stores: MilvusVectorStore[] = [];
    return {
      name: 'fake Milvus',
      async open(collectionName: string) {
        fake ??= await startFakeMilvus();
        client ??= new MilvusClient({ address: fake.uri, logLevel: 'error' });
        const store = await MilvusVectorStore.create({ client, embedder, collectionName });
        stores.push(store);
        return store;
      },
      async close() {
        for (const s of stores) await s.close();
        await client?.closeConnection();
        await fake?.close();
      },
    };
  })(),
];

beforeAll(async () => {
  pglite = await openPglite();
  if (pgConfig !== undefined) {
    server = fromPgPool(new pg.Pool({ ...clientOptions(pgConfig), max: 2 }), { ownsPool: true });
  }
});
afterAll(async () => {
  for (const b of backends) await b.close();
  await pglite?.close();
  await server?.close();
});

describe.each(backends)('filtered top-k on $name', (backend) => {
  const rows = corpus();
  let store: VectorStore;
  beforeAll(async () => {
    store = await backend.open('ai4rag_filter_complete');
    await store.upsert(rows);
    await backend.indexed?.(store);
  }, 120_000);

  it.each(['rare', 'far'])(
    'returns k hits for a filter matching 1 percent of 25k chunks (tenant %s)',
    async (tenant) => {
      // Prepare
      const filter: MetadataFilter = { 'user.tenant': tenant };
      const exact = exactTopK(rows, filter);
      // Act
      const hits = await store.search('query', { k: K, filter });
      // Assess
      expect(exact).toHaveLength(K);
      expect(hits).toHaveLength(K);
      expect(hits.every((h) => (h.metadata.user as { tenant: string }).tenant === tenant)).toBe(
        true,
      );
      if (backend.indexed === undefined || tenant === 'far') {
        // Exact search (Milvus FLAT, or pgvector's exact re-run): exactly the true top k.
        expect(hits.map((h) => h.id)).toEqual(exact);
      } else {
        // relaxed_order iterative HNSW is approximate: k hits, nearly all of the exact top k.
        expect(hits.filter((h) => exact.includes(h.id)).length).toBeGreaterThanOrEqual(K - 2);
      }
      if (backend.plainScanHits !== undefined) {
        // Without iterative scans and the exact re-run, the index scan alone comes back short.
        expect(await backend.plainScanHits(store as PgVectorStore, tenant)).toBeLessThan(K);
      }
    },
    60_000,
  );
});
