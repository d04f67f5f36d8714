/**
 * `npm run bench -- --builds [--rows 40000]`: two collections' HNSW builds at once on the PostgreSQL server (the
 * one PGVECTOR_* names, or one started as for the other benches). Collection A holds `--rows` rows, B 2,000; B's
 * build starts 1 s after A's, both with the default lock timeout (5 s). Prints each build's outcome and time, and
 * A's build alone for comparison. A concurrent build of a partial index (every segment is one) waits for every
 * older snapshot in the database, so before one build at a time per database B built its graph and then failed
 * with SQLSTATE 55P03; now B waits for the database's build lock before any work and reports that it did.
 */
import pg from 'pg';
import type { AI4RAGChunk } from '../shared/src/chunking/types.js';
import { ENV } from '../shared/src/config.js';
import type { Embedder } from '../shared/src/embeddings/types.js';
import { mulberry32 } from '../shared/src/util/random.js';
import { pgConnection, pgVectorConfigFromEnv } from '../shared/src/vectorstores/config.js';
import {
  dropPgCollection,
  PgVectorStore,
} from '../shared/src/vectorstores/pgvector/pgvector-store.js';
import { fromPgPool } from '../shared/src/vectorstores/sql-client.js';
import type { EmbeddedChunk, IndexBuildResult } from '../shared/src/vectorstores/types.js';
import { startPostgres } from './postgres.js';

const DIMENSION = 128;

/** `count` chunks with seeded random vectors (the build's cost does not depend on where vectors come from). */
function rows(count: number, seed: number): EmbeddedChunk[] {
  const random = mulberry32(seed);
  return Array.from({ length: count }, (_, i) => {
    const chunk: AI4RAGChunk = {
      id: `d${i % 100}#${i}`,
      text: `chunk ${i}`,
      metadata: { document_id: `d${i % 100}`, sequence_number: i },
    };
    return { chunk, vector: Array.from({ length: DIMENSION }, () => random() * 2 - 1) };
  });
}

/** The embedder a store needs to open; the bench writes vectors itself and never searches. */
const embedder: Embedder = {
  modelId: 'bench/random-128',
  dimension: DIMENSION,
  contextLength: 512,
  embedDocuments: async (texts: string[]) => texts.map(() => new Array(DIMENSION).fill(0)),
  embedQuery: async () => new Array(DIMENSION).fill(0),
};

type Outcome = { result?: IndexBuildResult; error?: string; seconds: number };

export async function runBuilds(argv: readonly string[]): Promise<void> {
  const at = argv.indexOf('--rows');
  const big = at < 0 ? 40_000 : Number(argv[at + 1]);
  if (!Number.isInteger(big) || big < 5_000) {
    throw new Error(`--rows must be an integer ≥ 5000, got "${argv[at + 1]}"`);
  }
  const server = startPostgres();
  if (server === undefined) {
    console.log('builds: no PostgreSQL server (set PGVECTOR_* or run as root); skipped');
    return;
  }
  const config = pgVectorConfigFromEnv({ ...ENV, ...server.env });
  const client = fromPgPool(new pg.Pool({ ...pgConnection(config), max: 6 }), { ownsPool: true });
  const stamp = Date.now().toString(36);
  const names = [`ai4rag_bench_build_a_${stamp}`, `ai4rag_bench_build_b_${stamp}`] as const;
  try {
    const open = async (name: string, count: number) => {
      const store = await PgVectorStore.create({ client, embedder, collectionName: name });
      await store.upsert(rows(count, count));
      return store;
    };
    const a = await open(names[0], big);
    const b = await open(names[1], 2_000);
    const t0 = performance.now();
    const timed = (p: Promise<IndexBuildResult>): Promise<Outcome> =>
      p.then(
        (result) => ({ result, seconds: (performance.now() - t0) / 1000 }),
        (error: Error) => ({ error: error.message, seconds: (performance.now() - t0) / 1000 }),
      );
    const first = timed(a.buildIndex({ force: true }));
    await new Promise((r) => setTimeout(r, 1000));
    const second = timed(b.buildIndex({ force: true }));
    const [ra, rb] = [await first, await second];
    // A alone: its index dropped, then built again with nothing else running.
    await client.query(`DROP INDEX IF EXISTS ${(await segmentNames(client, names[0])).join(', ')}`);
    const alone = await a.buildIndex({ force: true });
    await a.close();
    await b.close();
    const line = (label: string, o: Outcome) =>
      `${label.padEnd(34)} ${o.seconds.toFixed(1).padStart(6)} s  ${
        o.error ?? `${o.result?.built ? 'built' : 'not built'}: ${o.result?.reason}`
      }`;
    console.log(`two index builds at once (A ${big} rows, B 2000 rows started 1 s later)`);
    console.log(line(`A (${big} rows)`, ra));
    console.log(line('B (2000 rows), ends at', rb));
    console.log(line(`A alone`, { result: alone, seconds: alone.seconds }));
    console.log(`A with B beside it / A alone: ${(ra.seconds / alone.seconds).toFixed(2)}`);
  } finally {
    for (const name of names) await dropPgCollection(client, name).catch(() => undefined);
    await client.close();
    server.stop();
  }
}

/** The HNSW indexes on a collection's table. */
async function segmentNames(
  client: ReturnType<typeof fromPgPool>,
  name: string,
): Promise<string[]> {
  const res = await client.query<{ indexname: string }>(
    `SELECT indexname FROM pg_indexes WHERE tablename = $1 AND indexdef LIKE '%USING hnsw%'`,
    [name],
  );
  return res.rows.map((r) => `"${r.indexname}"`);
}
