/**
 * `ingestDocuments` with several staged writes in flight (`writers`): at most that many at once, results in the
 * order of the documents whatever order the writes finish in, one group's failure failing only its documents, and
 * on the real stores (PGlite, the PostgreSQL server) the same chunks, BM25 statistics and a clean integrity check
 * as one writer gives.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AI4RAGChunk, ChunkingOptions } from '../../../shared/src/chunking/types.js';
import type { LoadedDocument } from '../../../shared/src/documents/types.js';
import { ingestDocuments, MAX_INGEST_WRITERS } from '../../../shared/src/ingest/pipeline.js';
import { analyze } from '../../../shared/src/text/analyzer.js';
import { PgVectorStore } from '../../../shared/src/vectorstores/pgvector/pgvector-store.js';
import {
  fromPgPool,
  openPglite,
  type SqlClient,
} from '../../../shared/src/vectorstores/sql-client.js';
import { MemoryStore, testChunk } from '../../support/memory-store.js';
import { clientOptions, probePgServer } from '../../support/pg.js';
import { createHashEmbedder } from '../vectorstores/fake-embedder.js';

const chunking: ChunkingOptions = { method: 'recursive', chunkSize: 128, chunkOverlap: 0 };

function doc(key: string, text: string): LoadedDocument {
  return { key, text, blocks: [], contentHash: `h-${text}`, format: 'txt' };
}

/** One chunk per line. */
function byLine(d: LoadedDocument): AI4RAGChunk[] {
  return d.text.split('\n').map((line, i) => ({ ...testChunk(d.key, i + 1, line), text: line }));
}

/** A MemoryStore whose `addChunks` waits until released, recording how many staged writes were open at once. */
class GatedStore extends MemoryStore {
  open = 0;
  maxOpen = 0;
  readonly waiting: (() => void)[] = [];
  failDocument: string | undefined;

  override async beginWrite(...args: Parameters<MemoryStore['beginWrite']>): Promise<string> {
    this.open += 1;
    this.maxOpen = Math.max(this.maxOpen, this.open);
    return super.beginWrite(...args);
  }

  override async addChunks(
    chunks: AI4RAGChunk[],
    options: { version?: string } = {},
  ): Promise<number> {
    await new Promise<void>((release) => this.waiting.push(release));
    if (chunks.some((c) => c.metadata.document_id === this.failDocument)) {
      this.open -= 1;
      throw new Error(`refused ${this.failDocument}`);
    }
    return super.addChunks(chunks, options);
  }

  override async finishWrite(...args: Parameters<MemoryStore['finishWrite']>) {
    this.open -= 1;
    return super.finishWrite(...args);
  }
}

/** Releases the gated writes newest first, so later groups finish before earlier ones. */
async function releaseNewestFirst(store: GatedStore, done: Promise<unknown>): Promise<void> {
  let finished = false;
  const end = () => {
    finished = true;
  };
  done.then(end, end);
  while (!finished) {
    await new Promise((r) => setTimeout(r, 5));
    store.waiting.pop()?.();
  }
}

const DOCS = Array.from({ length: 12 }, (_, i) =>
  doc(`d${String(i).padStart(2, '0')}.txt`, `alpha ${i}\nbeta ${i}`),
);

describe('ingestDocuments with several writers', () => {
  it.each([1, 2, 3])(
    'keeps at most %i staged writes open and reports in document order whatever order they finish in',
    async (writers) => {
      // Prepare
      const store = new GatedStore();

      // Act
      const run = ingestDocuments(DOCS, {
        store,
        chunking,
        chunk: byLine,
        writers,
        batchChunks: 4,
      });
      await releaseNewestFirst(store, run);
      const summary = await run;

      // Assess: 12 documents of 2 chunks in groups of 2 documents = 6 staged writes
      expect(store.maxOpen).toBe(writers);
      expect(summary.documents.map((d) => [d.documentId, d.status, d.chunks])).toEqual(
        DOCS.map((d) => [d.key, 'indexed', 2]),
      );
      expect(summary.chunksStored).toBe(24);
      expect(store.chunks.size).toBe(24);
      expect((await store.checkIntegrity()).clean).toBe(true);
    },
  );

  it('fails only the documents of a group whose write fails, the others in flight complete', async () => {
    // Prepare
    const store = new GatedStore();
    store.failDocument = 'd05.txt';

    // Act
    const run = ingestDocuments(DOCS, {
      store,
      chunking,
      chunk: byLine,
      writers: 2,
      batchChunks: 4,
    });
    await releaseNewestFirst(store, run);
    const summary = await run;

    // Assess: d04 + d05 were one group; retried one by one, only d05 fails
    const failed = summary.documents.filter((d) => d.status === 'failed');
    expect(failed.map((d) => [d.documentId, d.error])).toEqual([['d05.txt', 'refused d05.txt']]);
    expect(summary.documents.map((d) => d.documentId)).toEqual(DOCS.map((d) => d.key));
    expect(store.chunks.size).toBe(22);
    expect(store.documents.has('d05.txt')).toBe(false);
  });

  it.each([0, MAX_INGEST_WRITERS + 1, 1.5])('refuses writers = %s before any work', async (w) => {
    const store = new MemoryStore();
    await expect(
      ingestDocuments(DOCS, { store, chunking, chunk: byLine, writers: w }),
    ).rejects.toThrow(`writers must be an integer from 1 to ${MAX_INGEST_WRITERS}, got ${w}`);
    expect(store.embedCalls).toBe(0);
  });
});

const pgConfig = await probePgServer(2000);

/** 240 documents of 3 short lines: 720 chunks, 24 staged writes of 30 chunks. */
const CORPUS = Array.from({ length: 240 }, (_, i) =>
  doc(
    `c/${String(i).padStart(3, '0')}.txt`,
    [`term${i % 17} shared words ${i}`, `other${i % 5} text ${i * 7}`, `tail ${i % 3} end`].join(
      '\n',
    ),
  ),
);

describe.each([
  ['PGlite', false],
  ['PostgreSQL', true],
] as const)('several writers on %s', (_kind, server) => {
  const enabled = !server || pgConfig !== undefined;
  let client: SqlClient;
  const names: string[] = [];
  beforeAll(async () => {
    if (!enabled) return;
    client =
      server && pgConfig !== undefined
        ? fromPgPool(new pg.Pool({ ...clientOptions(pgConfig), max: 6 }), { ownsPool: true })
        : await openPglite({});
  });
  afterAll(async () => {
    if (!enabled) return;
    for (const name of names) {
      const s = await PgVectorStore.create({
        client,
        embedder: createHashEmbedder({ dimension: 16 }),
        collectionName: name,
      });
      await s.drop();
      await s.close();
    }
    await client.close();
  });

  it.skipIf(!enabled)(
    'stores the same chunks and exact BM25 statistics with 4 writers as with 1, integrity clean',
    async () => {
      // Act
      const outcomes = [];
      for (const writers of [1, 4]) {
        const name = `ai4rag_writers_${writers}_${Date.now().toString(36)}`;
        names.push(name);
        const store = await PgVectorStore.create({
          client,
          embedder: createHashEmbedder({ dimension: 16 }),
          collectionName: name,
        });
        const summary = await ingestDocuments(CORPUS, {
          store,
          chunking,
          chunk: byLine,
          writers,
          batchChunks: 30,
          buildIndex: false,
        });
        outcomes.push({
          summary,
          stats: await store.stats(),
          terms: await store.termStats(),
          integrity: await store.checkIntegrity(),
          hits: await store.keywordSearch('term3 shared other2', { k: 10 }),
        });
        await store.close();
      }
      const [one, four] = outcomes as [(typeof outcomes)[0], (typeof outcomes)[0]];

      // Assess
      expect(four.summary.documents).toEqual(one.summary.documents);
      expect(four.summary.documents.every((d) => d.status === 'indexed')).toBe(true);
      expect(four.stats.chunks).toBe(720);
      expect(four.stats.documents).toBe(240);
      // BM25 statistics exact: the number of chunks each analyzed term occurs in, counted from the corpus itself.
      const expected = new Map<string, number>();
      for (const d of CORPUS) {
        for (const line of d.text.split('\n')) {
          for (const term of new Set(analyze(line)))
            expected.set(term, (expected.get(term) ?? 0) + 1);
        }
      }
      for (const o of [one, four]) {
        expect(o.terms.documents).toBe(720);
        const df = [...expected.keys()].map((t) => [t, o.terms.documentFrequency?.(t)]);
        expect(df).toEqual([...expected.entries()]);
      }
      expect(four.integrity).toMatchObject({ clean: true, orphanChunks: 0 });
      expect(four.hits.map((h) => [h.id, h.score])).toEqual(one.hits.map((h) => [h.id, h.score]));
    },
    60_000,
  );
});
