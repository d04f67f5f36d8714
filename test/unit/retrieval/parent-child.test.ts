import { MilvusClient } from '@zilliz/milvus2-sdk-node';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chunkId } from '../../../shared/src/chunking/chunk-id.js';
import type { AI4RAGChunk } from '../../../shared/src/chunking/types.js';
import type { LoadedDocument } from '../../../shared/src/documents/types.js';
import type { Embedder } from '../../../shared/src/embeddings/types.js';
import { ingestDocuments } from '../../../shared/src/ingest/pipeline.js';
import {
  collapseToParents,
  Retriever,
  RetrieverError,
} from '../../../shared/src/retrieval/retriever.js';
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
import type { SearchHit, VectorStore } from '../../../shared/src/vectorstores/types.js';
import { type FakeMilvus, startFakeMilvus } from '../../support/fake-milvus/server.js';
import { clientOptions, probePgServer } from '../../support/pg.js';
import { createFixedEmbedder, createHashEmbedder } from '../vectorstores/fake-embedder.js';

type OpenStore = (opts: { collectionName: string; embedder: Embedder }) => Promise<VectorStore>;

const PARENTS = {
  A1: 'Annual leave is twenty days. It accrues monthly.',
  A2: 'Sick leave needs a note. It is paid in full.',
  B1: 'Remote work needs approval. Managers approve it.',
} as const;

/** A child of a parent chunk, with the contract metadata (issue 15) computed as the chunker does. */
function child(
  documentId: string,
  sequence: number,
  text: string,
  parent: { sequence: number; text: string; start: number },
): AI4RAGChunk {
  return {
    id: chunkId(documentId, sequence, text),
    text,
    metadata: {
      document_id: documentId,
      sequence_number: sequence,
      start_index: parent.start + parent.text.indexOf(text),
      parent_id: chunkId(documentId, parent.sequence, parent.text),
      parent_sequence_number: parent.sequence,
      parent_start_index: parent.start,
      parent_text: parent.text,
    },
  };
}

const A1 = { sequence: 1, text: PARENTS.A1, start: 0 };
const A2 = { sequence: 2, text: PARENTS.A2, start: PARENTS.A1.length + 2 };
const B1 = { sequence: 1, text: PARENTS.B1, start: 0 };
const CHILDREN = {
  a1: child('doc-a', 1, 'Annual leave is twenty days.', A1),
  a2: child('doc-a', 2, 'It accrues monthly.', A1),
  a3: child('doc-a', 3, 'Sick leave needs a note.', A2),
  a4: child('doc-a', 4, 'It is paid in full.', A2),
  b1: child('doc-b', 1, 'Remote work needs approval.', B1),
  b2: child('doc-b', 2, 'Managers approve it.', B1),
};

/**
 * Cosine to the query [1, 0, 0] is 1/√(1 + y²), so the children rank a3 > a4 > a1 > b1 > a2 > b2: the two best
 * share parent A2, so two parents need a second, larger fetch.
 */
const VECTORS: Record<string, number[]> = {
  'which leave?': [1, 0, 0],
  [CHILDREN.a3.text]: [1, 0.05, 0],
  [CHILDREN.a4.text]: [1, 0.1, 0],
  [CHILDREN.a1.text]: [1, 0.2, 0],
  [CHILDREN.b1.text]: [1, 0.4, 0],
  [CHILDREN.a2.text]: [1, 0.8, 0],
  [CHILDREN.b2.text]: [1, 1.6, 0],
};
const cos = (y: number) => 1 / Math.sqrt(1 + y * y);

function doc(key: string, text: string): LoadedDocument {
  return { key, text, blocks: [], contentHash: `hash:${text}`, format: 'txt' };
}

/** Hand-made hierarchical chunking: parents are the paragraphs, children their sentences. */
function hierarchical(d: LoadedDocument): AI4RAGChunk[] {
  const out: AI4RAGChunk[] = [];
  let start = 0;
  d.text.split('\n\n').forEach((text, p) => {
    const parent = { sequence: p + 1, text, start };
    for (const m of text.matchAll(/[^.]+\./g)) {
      out.push(child(d.key, out.length + 1, m[0].trim(), parent));
    }
    start += text.length + 2;
  });
  return out;
}

function runParentChildSuite(label: string, open: () => OpenStore, cleanup?: () => Promise<void>) {
  describe(`parent–child retrieval: ${label}`, () => {
    let store: VectorStore;
    const suffix = `${process.pid}_${Date.now().toString(36)}`;
    beforeAll(async () => {
      store = await open()({
        collectionName: `ai4rag_pc_rank_${suffix}`,
        embedder: createFixedEmbedder(VECTORS, { dimension: 3 }),
      });
      await store.addChunks(Object.values(CHILDREN));
    });
    afterAll(async () => {
      await store?.drop();
      await cleanup?.();
    });

    it('finds children and returns each parent once, in the rank of its best child', async () => {
      // Act
      const passages = await new Retriever(store, { numberOfChunks: 2 }).retrieve('which leave?');
      // Assess: a3 and a4 (both of A2) fill the first fetch of 2, so children are fetched again
      expect(passages.map((p) => p.text)).toEqual([PARENTS.A2, PARENTS.A1]);
      expect(passages.map((p) => p.id)).toEqual([CHILDREN.a3.id, CHILDREN.a1.id]);
      expect(passages.map((p) => p.chunkIds)).toEqual([
        [CHILDREN.a3.id, CHILDREN.a4.id],
        [CHILDREN.a1.id, CHILDREN.a2.id],
      ]);
      expect(passages[0]?.score).toBeCloseTo(cos(0.05), 5);
      expect(passages[1]?.score).toBeCloseTo(cos(0.2), 5);
      const { parent_text: _text, ...kept } = CHILDREN.a3.metadata;
      expect(passages[0]?.metadata).toEqual(kept);
      expect(passages.every((p) => !('parent_text' in p.metadata))).toBe(true);
    });

    it('returns k distinct parents and stops at the parents the collection has', async () => {
      // Act
      const three = await new Retriever(store, { numberOfChunks: 3 }).retrieve('which leave?');
      const five = await new Retriever(store, { numberOfChunks: 5 }).retrieve('which leave?');
      // Assess
      expect(three.map((p) => p.text)).toEqual([PARENTS.A2, PARENTS.A1, PARENTS.B1]);
      expect(five.map((p) => p.text)).toEqual([PARENTS.A2, PARENTS.A1, PARENTS.B1]);
      expect(five[2]?.chunkIds).toEqual([CHILDREN.b1.id, CHILDREN.b2.id]);
    });

    it('refuses window retrieval on a hierarchical collection, naming the method', async () => {
      // Act
      const act = new Retriever(store, {
        numberOfChunks: 2,
        method: 'window',
        windowSize: 1,
      }).retrieve('which leave?');
      // Assess
      await expect(act).rejects.toThrow(RetrieverError);
      await expect(act).rejects.toThrow(/"window" does not apply to a hierarchical/);
    });

    it('re-ingesting a changed document leaves no stale parent, and both levels pass the integrity check', async () => {
      // Prepare
      const kb = await open()({
        collectionName: `ai4rag_pc_sync_${suffix}`,
        embedder: createHashEmbedder({ dimension: 8 }),
      });
      const chunking = { method: 'hierarchical' as const, chunkSize: 128, chunkOverlap: 0 };
      const v1 =
        'Leave is twenty days. Ask your manager.\n\nPay day is the 25th. Slips are online.';
      const v2 = 'Leave is thirty days. Ask HR.\n\nPay day is the 25th. Slips are online.';
      try {
        await ingestDocuments(
          [doc('policy', v1), doc('other', 'Parking is free. Bring a badge.')],
          {
            store: kb,
            chunking,
            chunk: hierarchical,
          },
        );
        const retriever = new Retriever(kb, { numberOfChunks: 10 });
        const before = await retriever.retrieve('leave days');
        // Act
        const summary = await ingestDocuments([doc('policy', v2)], {
          store: kb,
          chunking,
          chunk: hierarchical,
        });
        const after = await retriever.retrieve('leave days');
        const report = await kb.checkIntegrity();
        // Assess
        expect(before.map((p) => p.text).sort()).toEqual([
          'Leave is twenty days. Ask your manager.',
          'Parking is free. Bring a badge.',
          'Pay day is the 25th. Slips are online.',
        ]);
        expect(summary.documents).toEqual([{ documentId: 'policy', status: 'indexed', chunks: 4 }]);
        expect(after.map((p) => p.text).sort()).toEqual([
          'Leave is thirty days. Ask HR.',
          'Parking is free. Bring a badge.',
          'Pay day is the 25th. Slips are online.',
        ]);
        expect(report).toMatchObject({ documents: 2, chunks: 6, orphanChunks: 0, clean: true });
        expect(report.mismatched).toEqual([]);
        // Act: deleting the document removes its children, so its parents are never returned again
        const deleted = await kb.deleteDocument('policy');
        const left = await retriever.retrieve('leave days');
        // Assess
        expect(deleted).toBe(4);
        expect(left.map((p) => p.text)).toEqual(['Parking is free. Bring a badge.']);
        expect(await kb.checkIntegrity()).toMatchObject({ documents: 1, chunks: 2, clean: true });
      } finally {
        await kb.drop();
      }
    });
  });
}

describe('collapseToParents', () => {
  const hit = (c: AI4RAGChunk, score: number): SearchHit => ({ ...c, score });

  it('keeps a chunk without parent_id as its own passage, between parents in rank order', () => {
    // Prepare
    const plain: SearchHit = {
      id: 'p#1',
      text: 'plain',
      metadata: { document_id: 'p', sequence_number: 1 },
    };
    // Act
    const out = collapseToParents([
      hit(CHILDREN.a4, 0.9),
      { ...plain, score: 0.8 },
      hit(CHILDREN.a3, 0.7),
      hit(CHILDREN.b2, 0.6),
    ]);
    // Assess
    expect(out.map((p) => [p.id, p.text, p.score, p.chunkIds])).toEqual([
      [CHILDREN.a4.id, PARENTS.A2, 0.9, [CHILDREN.a3.id, CHILDREN.a4.id]],
      ['p#1', 'plain', 0.8, ['p#1']],
      [CHILDREN.b2.id, PARENTS.B1, 0.6, [CHILDREN.b2.id]],
    ]);
  });
});

let pglite: SqlClient;
runParentChildSuite(
  'pgvector on in-memory PGlite',
  () => (opts) => PgVectorStore.create({ client: pglite, ...opts }),
);
beforeAll(async () => {
  pglite = await openPglite();
});
afterAll(async () => {
  await pglite?.close();
});

let fake: FakeMilvus;
let milvus: MilvusClient;
beforeAll(async () => {
  fake = await startFakeMilvus();
  milvus = new MilvusClient({ address: fake.uri, logLevel: 'error' });
  await milvus.connectPromise;
});
afterAll(async () => {
  await milvus?.closeConnection();
  await fake?.close();
});
runParentChildSuite(
  'Milvus (fake server)',
  () => (opts) => MilvusVectorStore.create({ client: milvus, ...opts }),
);

// A real PostgreSQL + pgvector from PGVECTOR_* (`source /tmp/pgenv.sh`); skipped otherwise.
const config = await probePgServer(2000);
describe.skipIf(config === undefined)('real PostgreSQL server', () => {
  let server: SqlClient;
  const created: string[] = [];
  beforeAll(() => {
    if (config === undefined) return;
    server = fromPgPool(new pg.Pool({ ...clientOptions(config), max: 4 }), { ownsPool: true });
  });
  afterAll(async () => {
    await server?.close();
  });
  runParentChildSuite(
    'pgvector on a PostgreSQL server',
    () => (opts) => {
      created.push(opts.collectionName);
      return PgVectorStore.create({ client: server, ...opts });
    },
    async () => {
      for (const name of created) await dropPgCollection(server, name).catch(() => undefined);
    },
  );
});
