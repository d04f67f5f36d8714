/**
 * The `hnsw.ef_search` of an index search: at least the store's floor (`efSearch`, default 200, chosen with
 * `npm run bench -- --hnsw`) and 2·k, at most 1000; never set when the collection has no valid index.
 */
import { describe, expect, it } from 'vitest';
import { FeatureHashEmbedder } from '../../../shared/src/embeddings/feature-hash.js';
import { VectorStoreConfigError } from '../../../shared/src/vectorstores/errors.js';
import { collectionTables } from '../../../shared/src/vectorstores/pgvector/names.js';
import {
  DEFAULT_EF_SEARCH,
  resolveOptions,
} from '../../../shared/src/vectorstores/pgvector/options.js';
import { vectorSearch } from '../../../shared/src/vectorstores/pgvector/search.js';
import type { SqlClient } from '../../../shared/src/vectorstores/sql-client.js';

/** A client that records each statement and answers with no rows. */
function recorder() {
  const seen: { text: string; params: unknown[] }[] = [];
  const client: SqlClient = {
    dialect: 'postgres',
    async query<R>(text: string, params: unknown[] = []) {
      seen.push({ text, params });
      return { rows: [] as R[] };
    },
    async transaction(fn) {
      return fn(client);
    },
    async close() {},
  };
  return { client, seen };
}

async function efOf(limit: number, efSearch: number, annIndex = true): Promise<unknown> {
  const { client, seen } = recorder();
  await vectorSearch(
    {
      client,
      t: collectionTables('ai4rag_ef'),
      distance: 'cosine',
      annIndex,
      iterativeScan: true,
      efSearch,
      keywordDepth: 0,
    },
    [0.6, 0.8],
    limit,
    undefined,
  );
  const [statement] = seen;
  if (!statement?.text.includes("set_config('hnsw.ef_search'")) return undefined;
  return statement.params[2];
}

describe('hnsw.ef_search of a vector search', () => {
  it('is the floor for small k, 2·k above it, and 1000 at most', async () => {
    expect(DEFAULT_EF_SEARCH).toBe(200);
    expect(await efOf(10, 200)).toBe('200');
    expect(await efOf(150, 200)).toBe('300');
    expect(await efOf(600, 200)).toBe('1000');
    expect(await efOf(10, 40)).toBe('40');
    expect(await efOf(30, 40)).toBe('60');
    expect(await efOf(10, 200, false)).toBeUndefined();
  });

  it('defaults to 200 and refuses a floor outside 1..1000, naming it', () => {
    const embedder = new FeatureHashEmbedder();
    expect(resolveOptions({ client: recorder().client, embedder }).efSearch).toBe(200);
    for (const bad of [0, 1001, 2.5]) {
      expect(() => resolveOptions({ client: recorder().client, embedder, efSearch: bad })).toThrow(
        VectorStoreConfigError,
      );
      expect(() => resolveOptions({ client: recorder().client, embedder, efSearch: bad })).toThrow(
        /efSearch/,
      );
    }
  });

  it('takes the keyword index settings with their defaults and refuses a bad one, naming it', () => {
    const embedder = new FeatureHashEmbedder();
    expect(resolveOptions({ client: recorder().client, embedder }).keywordIndex).toEqual({
      freshFromRow: 100_000,
      foldMin: 2_000_000,
      swapMinBytes: 64 * 1024 * 1024,
      packMinDf: 2000,
      packMaxPostings: 40_000_000,
    });
    expect(
      resolveOptions({ client: recorder().client, embedder, keywordIndex: { swapMinBytes: 0 } })
        .keywordIndex.swapMinBytes,
    ).toBe(0);
    const keys = ['freshFromRow', 'foldMin', 'swapMinBytes', 'packMinDf', 'packMaxPostings'];
    for (const key of keys) {
      for (const bad of [-1, 2.5, Number.NaN]) {
        expect(() =>
          resolveOptions({ client: recorder().client, embedder, keywordIndex: { [key]: bad } }),
        ).toThrow(new RegExp(`keywordIndex\\.${key}`));
      }
    }
    expect(() =>
      resolveOptions({ client: recorder().client, embedder, keywordIndex: { foldMin: 0 } }),
    ).toThrow(/keywordIndex\.foldMin/);
    expect(() =>
      resolveOptions({
        client: recorder().client,
        embedder,
        packedReads: 'false' as unknown as boolean,
      }),
    ).toThrow(/packedReads must be true or false, got "false"/);
  });
});
