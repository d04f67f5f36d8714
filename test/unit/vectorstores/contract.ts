import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { AI4RAGChunk } from '../../../shared/src/chunking/types.js';
import type { Embedder } from '../../../shared/src/embeddings/types.js';
import { SearchParamsError } from '../../../shared/src/retrieval/search-params.js';
import { CollectionNameError } from '../../../shared/src/vectorstores/errors.js';
import type {
  DistanceMetric,
  MetadataFilter,
  SearchHit,
  SearchParams,
  VectorStore,
} from '../../../shared/src/vectorstores/types.js';
import { createFixedEmbedder, createHashEmbedder } from './fake-embedder.js';

/** What the contract passes to a backend's factory. */
export interface ContractStoreOptions {
  collectionName: string;
  embedder: Embedder;
  distance?: DistanceMetric;
}

/** Backend limits the contract honours explicitly (skipped cases, never weakened assertions). */
export interface ContractOptions {
  /** Distance metrics the backend cannot offer (e.g. Milvus has no l1); their ordering case is skipped. */
  unsupportedDistances?: DistanceMetric[];
}

/** Builds a chunk with a readable deterministic id. */
export function makeChunk(
  documentId: string,
  sequence: number,
  text: string,
  extra: Record<string, unknown> = {},
): AI4RAGChunk {
  return {
    id: `${documentId}#${sequence}`,
    text,
    metadata: { document_id: documentId, sequence_number: sequence, ...extra },
  };
}

const CORPUS: AI4RAGChunk[] = [
  makeChunk('d1', 1, 'Proteins fold into three dimensional structures', {
    user: { lang: 'en', year: 2019, topic: 'bio/fold' },
  }),
  makeChunk('d1', 2, 'Enzymes are proteins that catalyse reactions', {
    user: { lang: 'en', year: 2021, topic: 'bio_chem' },
  }),
  makeChunk('d1', 3, 'Ribosomes translate messenger RNA into proteins', {
    user: { lang: 'en', year: 2023, topic: 'bio%rna', draft: true },
  }),
  makeChunk('d2', 1, 'The stock market closed higher on Friday', {
    user: { lang: 'en', year: '2021', topic: 'finance' },
  }),
  makeChunk('d2', 2, 'Bond yields fell as investors sought safety', { user: { lang: 'en' } }),
  makeChunk('d3', 1, 'Der Hund spielt im Garten mit dem Ball', {
    user: { lang: 'de', year: 2024 },
  }),
];

/** Vectors chosen so that each metric ranks the five documents differently (query = e1). */
const METRIC_VECTORS: Record<string, number[]> = {
  query: [1, 0, 0],
  a: [3, 0, 0],
  b: [1, 0.2, 0],
  c: [0.5, 0.5, 0],
  d: [0, 0, 1.2],
  e: [0.2, 0.05, 0],
};

/** Expected order and scores (higher is better) per metric, computed by hand. */
const METRIC_EXPECTED: Record<DistanceMetric, [string, number][]> = {
  // 1 − cosine distance
  cosine: [
    ['a', 1],
    ['b', 1 / Math.sqrt(1.04)],
    ['e', 0.2 / Math.sqrt(0.0425)],
    ['c', 0.5 / Math.sqrt(0.5)],
    ['d', 0],
  ],
  // 1 / (1 + euclidean distance)
  l2: [
    ['b', 1 / 1.2],
    ['c', 1 / (1 + Math.sqrt(0.5))],
    ['e', 1 / (1 + Math.sqrt(0.6425))],
    ['d', 1 / (1 + Math.sqrt(2.44))],
    ['a', 1 / 3],
  ],
  // 1 / (1 + manhattan distance)
  l1: [
    ['b', 1 / 1.2],
    ['e', 1 / 1.85],
    ['c', 1 / 2],
    ['a', 1 / 3],
    ['d', 1 / 3.2],
  ],
  // raw inner product: the longest aligned vector wins (ai4rag shipped this inverted)
  inner_product: [
    ['a', 3],
    ['b', 1],
    ['c', 0.5],
    ['e', 0.2],
    ['d', 0],
  ],
};

function ids(hits: SearchHit[]): string[] {
  return hits.map((h) => h.id);
}

function expectNonIncreasing(hits: SearchHit[]): void {
  for (let i = 0; i < hits.length; i++) {
    expect(typeof hits[i]?.score).toBe('number');
    if (i > 0) expect(hits[i]?.score ?? 0).toBeLessThanOrEqual(hits[i - 1]?.score ?? 0);
  }
}

/**
 * The backend-agnostic VectorStore contract. Every adapter (pgvector on PGlite, over a socket, on a server;
 * Milvus later) runs it. Each test uses its own collection; stores are closed after each test.
 */
export function runVectorStoreContract(
  label: string,
  makeStore: (opts: ContractStoreOptions) => Promise<VectorStore>,
  cleanup?: () => Promise<void>,
  options: ContractOptions = {},
): void {
  describe(`VectorStore contract: ${label}`, () => {
    const runId = `${Date.now().toString(36)}${Math.floor(Math.random() * 1e6).toString(36)}`;
    let counter = 0;
    const opened: VectorStore[] = [];
    const open = async (
      embedder: Embedder = createHashEmbedder(),
      distance?: DistanceMetric,
      name?: string,
    ): Promise<VectorStore> => {
      counter += 1;
      const store = await makeStore({
        collectionName: name ?? `ai4rag_ct_${runId}_${counter}`,
        embedder,
        ...(distance ? { distance } : {}),
      });
      opened.push(store);
      return store;
    };

    afterEach(async () => {
      for (const s of opened.splice(0)) await s.close();
    });
    afterAll(async () => {
      await cleanup?.();
    });

    it('finds the exact chunk first with vector search', async () => {
      // Prepare
      const store = await open();
      await store.addChunks(CORPUS);
      // Act
      const hits = await store.search('Bond yields fell as investors sought safety', {
        k: 3,
        includeScores: true,
      });
      // Assess
      expect(hits).toHaveLength(3);
      expect(hits[0]?.id).toBe('d2#2');
      expect(hits[0]?.text).toBe('Bond yields fell as investors sought safety');
      expect(hits[0]?.metadata).toEqual({
        document_id: 'd2',
        sequence_number: 2,
        user: { lang: 'en' },
      });
      expect(hits[0]?.score).toBeCloseTo(1, 5);
    });

    it('upserts idempotently: same counts and same keyword scores after re-adding', async () => {
      // Prepare
      const store = await open();
      await store.addChunks(CORPUS);
      const params: SearchParams = {
        k: 6,
        includeScores: true,
        searchMode: 'hybrid',
        rankerStrategy: 'rrf',
      };
      const before = await store.search('proteins reactions', params);
      // Act
      const stored = await store.addChunks(CORPUS);
      const after = await store.search('proteins reactions', params);
      // Assess
      expect(stored).toBe(CORPUS.length);
      expect((await store.stats()).chunks).toBe(CORPUS.length);
      expect(after).toEqual(before);
    });

    it('keeps the first of duplicate ids within one call', async () => {
      // Prepare
      const store = await open();
      const first = makeChunk('dup', 1, 'first version wins');
      const second = { ...makeChunk('dup', 1, 'second version loses') };
      // Act
      const stored = await store.upsert([
        { chunk: first, vector: [1, 0, 0, 0, 0, 0, 0, 0] },
        { chunk: second, vector: [0, 1, 0, 0, 0, 0, 0, 0] },
      ]);
      // Assess
      expect(stored).toBe(1);
      expect(ids(await store.getChunksBySequence('dup', 1, 1))).toEqual(['dup#1']);
      expect((await store.getChunksBySequence('dup', 1, 1))[0]?.text).toBe('first version wins');
    });

    it('stores more than one batch (2,100 chunks)', async () => {
      // Prepare
      const store = await open();
      const chunks = Array.from({ length: 2100 }, (_, i) =>
        makeChunk('big', i + 1, `tiny chunk number ${i + 1} word${i % 7}`),
      );
      // Act
      const stored = await store.addChunks(chunks);
      // Assess
      expect(stored).toBe(2100);
      expect((await store.stats()).chunks).toBe(2100);
      const around = await store.getChunksBySequence('big', 1023, 1026);
      expect(ids(around)).toEqual(['big#1023', 'big#1024', 'big#1025', 'big#1026']);
      const last = await store.search('tiny chunk number 2100 word6', {
        k: 1,
        includeScores: true,
        filter: { sequence_number: 2100 },
      });
      expect(ids(last)).toEqual(['big#2100']);
      expect(last[0]?.score).toBeCloseTo(1, 5);
    });

    for (const metric of ['cosine', 'l2', 'l1', 'inner_product'] as const) {
      const unsupported = options.unsupportedDistances?.includes(metric) ?? false;
      it.skipIf(unsupported)(
        `orders ${metric} results best first with higher-is-better scores`,
        async () => {
          // Prepare
          const embedder = createFixedEmbedder(METRIC_VECTORS, { dimension: 3 });
          const store = await open(embedder, metric);
          await store.addChunks(['a', 'b', 'c', 'd', 'e'].map((t, i) => makeChunk('m', i + 1, t)));
          // Act
          const hits = await store.search('query', { k: 5, includeScores: true });
          // Assess
          const expected = METRIC_EXPECTED[metric];
          expect(hits.map((h) => h.text)).toEqual(expected.map(([t]) => t));
          hits.forEach((h, i) => {
            expect(h.score).toBeCloseTo(expected[i]?.[1] ?? Number.NaN, 5);
          });
        },
      );
    }

    describe('hybrid search', () => {
      const vectors: Record<string, number[]> = {
        quokka: [1, 0, 0],
        'apples and pears': [1, 0.1, 0],
        'bananas and kiwis': [1, 0.3, 0],
        'cherries and plums': [0.5, 1, 0],
        'the quokka smiles': [0, 0, 1],
      };
      const chunks = Object.keys(vectors)
        .filter((t) => t !== 'quokka')
        .map((t, i) => makeChunk('h', i + 1, t));
      const hybridCases: [string, SearchParams][] = [
        ['rrf', { k: 2, searchMode: 'hybrid', rankerStrategy: 'rrf', rankerK: 60 }],
        ['weighted', { k: 2, searchMode: 'hybrid', rankerStrategy: 'weighted', rankerAlpha: 0.5 }],
        ['normalized', { k: 2, searchMode: 'hybrid', rankerStrategy: 'normalized' }],
      ];
      for (const [strategy, params] of hybridCases) {
        it(`${strategy} returns the keyword-only match that vector search misses`, async () => {
          // Prepare
          const store = await open(createFixedEmbedder(vectors, { dimension: 3 }));
          await store.addChunks(chunks);
          // Act
          const vectorOnly = await store.search('quokka', { k: 2 });
          const hybrid = await store.search('quokka', params);
          // Assess
          expect(vectorOnly.map((h) => h.text)).not.toContain('the quokka smiles');
          expect(hybrid).toHaveLength(2);
          expect(hybrid.map((h) => h.text)).toContain('the quokka smiles');
          expect(hybrid.every((h) => h.score === undefined)).toBe(true);
        });
      }
    });

    it('returns non-increasing scores only when includeScores is set', async () => {
      // Prepare
      const store = await open();
      await store.addChunks(CORPUS);
      const modes: SearchParams[] = [
        { k: 6 },
        { k: 6, searchMode: 'hybrid', rankerStrategy: 'rrf' },
        { k: 6, searchMode: 'hybrid', rankerStrategy: 'weighted', rankerAlpha: 0.3 },
        { k: 6, searchMode: 'hybrid', rankerStrategy: 'normalized' },
      ];
      for (const mode of modes) {
        // Act
        const scored = await store.search('proteins in the market', {
          ...mode,
          includeScores: true,
        });
        const plain = await store.search('proteins in the market', mode);
        // Assess
        expect(scored.length).toBeGreaterThan(0);
        expectNonIncreasing(scored);
        expect(plain.every((h) => !('score' in h))).toBe(true);
        expect(ids(plain)).toEqual(ids(scored));
      }
    });

    it('applies metadata filters to vector and hybrid search', async () => {
      // Prepare
      const store = await open();
      await store.addChunks(CORPUS);
      // Act
      const byDoc = await store.search('proteins', { k: 6, filter: { document_id: 'd2' } });
      const byLang = await store.search('proteins', {
        k: 6,
        searchMode: 'hybrid',
        rankerStrategy: 'rrf',
        filter: { 'user.lang': 'de' },
      });
      const bySeq = await store.search('proteins', {
        k: 6,
        searchMode: 'hybrid',
        rankerStrategy: 'weighted',
        filter: { document_id: 'd1', sequence_number: 2 },
      });
      const typed = await store.search('proteins', { k: 6, filter: { sequence_number: '2' } });
      // Assess
      expect(ids(byDoc).sort()).toEqual(['d2#1', 'd2#2']);
      expect(ids(byLang)).toEqual(['d3#1']);
      expect(ids(bySeq)).toEqual(['d1#2']);
      expect(typed).toEqual([]);
    });

    it.each([
      ['eq (shorthand)', { 'user.year': 2021 }, ['d1#2']],
      ['eq', { 'user.year': { eq: '2021' } }, ['d2#1']],
      ['ne (missing fields match)', { 'user.lang': { ne: 'en' } }, ['d3#1']],
      [
        'ne on a sparse field',
        { 'user.draft': { ne: true } },
        ['d1#1', 'd1#2', 'd2#1', 'd2#2', 'd3#1'],
      ],
      ['in', { 'user.year': { in: [2019, 2024] } }, ['d1#1', 'd3#1']],
      ['nin', { document_id: { nin: ['d1', 'd2'] } }, ['d3#1']],
      ['gt (numbers only)', { 'user.year': { gt: 2021 } }, ['d1#3', 'd3#1']],
      ['gte + lte', { 'user.year': { gte: 2019, lte: 2021 } }, ['d1#1', 'd1#2']],
      ['lt on strings (byte order)', { 'user.topic': { lt: 'bio_' } }, ['d1#1', 'd1#3']],
      ['gt on a built-in field', { sequence_number: { gt: 1 } }, ['d1#2', 'd1#3', 'd2#2']],
      ['startsWith', { 'user.topic': { startsWith: 'bio' } }, ['d1#1', 'd1#2', 'd1#3']],
      [
        'startsWith with % and _ taken literally',
        { 'user.topic': { startsWith: 'bio%' } },
        ['d1#3'],
      ],
      ['startsWith with _', { 'user.topic': { startsWith: 'bio_' } }, ['d1#2']],
      ['or', { or: [{ document_id: 'd3' }, { 'user.year': '2021' }] }, ['d2#1', 'd3#1']],
      [
        'and + not',
        { and: [{ document_id: 'd1' }, { not: { 'user.year': { gte: 2023 } } }] },
        ['d1#1', 'd1#2'],
      ],
      [
        'not of a missing field',
        { not: { 'user.draft': true } },
        ['d1#1', 'd1#2', 'd2#1', 'd2#2', 'd3#1'],
      ],
    ] as [string, MetadataFilter, string[]][])(
      'filters with %s, in vector and hybrid search',
      async (_name, filter, expected) => {
        // Prepare
        const store = await open();
        await store.addChunks(CORPUS);
        // Act
        const dense = await store.search('proteins', { k: 6, filter });
        const hybrid = await store.search('proteins', {
          k: 6,
          searchMode: 'hybrid',
          rankerStrategy: 'rrf',
          filter,
        });
        // Assess
        expect(ids(dense).sort()).toEqual(expected);
        expect(ids(hybrid).sort()).toEqual(expected);
      },
    );

    it.each([
      [JSON.parse('{"__proto__": {"document_id": "d1"}}'), /key "__proto__" is refused/],
      [{ 'user.constructor': 1 }, /refused/],
      [{ lang: 'en' }, /unknown field "lang"/],
      [{ 'user.year': { between: [1, 2] } }, /unknown operator "between"/],
      [{ 'user.year': { gt: true } }, /filter\.user\.year\.gt: expected a number or a string/],
      [{ or: [] }, /filter\.or: expected a non-empty array/],
    ])('refuses the bad filter %j before any I/O', async (filter, message) => {
      // Prepare
      const store = await open();
      // Act / Assess
      await expect(store.search('proteins', { k: 3, filter: filter as never })).rejects.toThrow(
        SearchParamsError,
      );
      await expect(store.search('proteins', { k: 3, filter: filter as never })).rejects.toThrow(
        message,
      );
    });

    it('reads a window of chunks by sequence number, ordered', async () => {
      // Prepare
      const store = await open();
      await store.addChunks([...CORPUS].reverse());
      // Act
      const window = await store.getChunksBySequence('d1', 2, 3);
      const outside = await store.getChunksBySequence('d1', 4, 9);
      // Assess
      expect(ids(window)).toEqual(['d1#2', 'd1#3']);
      expect(window[0]?.text).toBe('Enzymes are proteins that catalyse reactions');
      expect(outside).toEqual([]);
    });

    it('deletes a document with its record, or all but keepIds without touching the record', async () => {
      // Prepare
      const store = await open();
      await store.addChunks(CORPUS);
      const record = {
        documentId: 'd1',
        contentHash: 'h1',
        chunkCount: 3,
        updatedAt: '2026-01-02T03:04:05.000Z',
      };
      await store.putDocument(record);
      await store.putDocument({ ...record, documentId: 'd2' });
      // Act
      const partial = await store.deleteByDocument('d1', { keepIds: ['d1#2'] });
      const full = await store.deleteByDocument('d2');
      // Assess
      expect(partial).toBe(2);
      expect(ids(await store.getChunksBySequence('d1', 1, 9))).toEqual(['d1#2']);
      expect(await store.getDocument('d1')).toEqual(record);
      expect(full).toBe(2);
      expect(await store.getChunksBySequence('d2', 1, 9)).toEqual([]);
      expect(await store.getDocument('d2')).toBeUndefined();
      expect((await store.stats()).chunks).toBe(2);
      const hits = await store.search('stock market bond yields', {
        k: 6,
        searchMode: 'hybrid',
        rankerStrategy: 'rrf',
      });
      expect(ids(hits).some((id) => id.startsWith('d2#'))).toBe(false);
    });

    it('commits several documents at once: stale chunks removed, records written', async () => {
      // Prepare: d1 and d2 stored; their new versions keep d1#1 and d2#2 only
      const store = await open();
      await store.addChunks(CORPUS);
      const record = (documentId: string, chunkCount: number) => ({
        documentId,
        contentHash: `hash-${documentId}`,
        chunkCount,
        updatedAt: '2026-05-06T07:08:09.000Z',
        metadata: { indexing: 'recursive:512:64' },
      });
      // Act
      const deleted = await store.commitDocuments([
        { record: record('d1', 1), keepIds: ['d1#1'] },
        { record: record('d2', 1), keepIds: ['d2#2'] },
      ]);
      // Assess
      expect(deleted).toBe(3);
      expect(ids(await store.getChunksBySequence('d1', 1, 9))).toEqual(['d1#1']);
      expect(ids(await store.getChunksBySequence('d2', 1, 9))).toEqual(['d2#2']);
      const records = await store.getDocuments(['d2', 'd1', 'missing']);
      expect([...records.keys()].sort()).toEqual(['d1', 'd2']);
      expect(records.get('d1')).toEqual(record('d1', 1));
      expect((await store.stats()).chunks).toBe(3);
      expect(await store.commitDocuments([])).toBe(0);
      await expect(
        store.commitDocuments([
          { record: record('d1', 1), keepIds: [] },
          { record: record('d1', 1), keepIds: [] },
        ]),
      ).rejects.toThrow(/twice/);
    });

    it('drops a whole collection: reopening the name finds it empty', async () => {
      // Prepare
      const name = `ai4rag_ct_${runId}_drop`;
      const store = await open(undefined, undefined, name);
      await store.addChunks(CORPUS);
      await store.putDocument({
        documentId: 'd1',
        contentHash: 'h',
        chunkCount: 3,
        updatedAt: '2026-01-01T00:00:00.000Z',
      });
      // Act
      await store.drop();
      const again = await open(undefined, undefined, name);
      // Assess
      expect((await again.stats()).chunks).toBe(0);
      expect(await again.listDocuments()).toEqual([]);
      expect(
        await again.search('proteins', { k: 3, searchMode: 'hybrid', rankerStrategy: 'rrf' }),
      ).toEqual([]);
    });

    it('deletes by a non-empty metadata filter', async () => {
      // Prepare
      const store = await open();
      await store.addChunks(CORPUS);
      // Act
      const deleted = await store.deleteByFilter({ 'user.lang': 'en', document_id: 'd1' });
      // Assess
      expect(deleted).toBe(3);
      expect((await store.stats()).chunks).toBe(3);
      await expect(store.deleteByFilter({})).rejects.toThrow(/must not be empty/);
      await expect(store.deleteByFilter({ 'bad key': 1 })).rejects.toThrow(
        /unknown field "bad key"/,
      );
      await expect(store.deleteByFilter({ 'user.year': { lt: 2022 } })).resolves.toBe(0);
      expect((await store.stats()).chunks).toBe(3);
    });

    it('round-trips document records', async () => {
      // Prepare
      const store = await open();
      const a = {
        documentId: 'b-doc',
        contentHash: 'abc',
        chunkCount: 4,
        updatedAt: '2026-03-04T05:06:07.089Z',
        metadata: { title: 'B', tags: ['x'] },
      };
      const b = {
        documentId: 'a-doc',
        contentHash: 'def',
        chunkCount: 1,
        updatedAt: '2026-03-04T05:06:08.000Z',
      };
      // Act
      await store.putDocument(a);
      await store.putDocument(b);
      await store.putDocument({ ...b, contentHash: 'ghi', chunkCount: 2 });
      // Assess
      expect(await store.getDocument('b-doc')).toEqual(a);
      expect(await store.getDocument('missing')).toBeUndefined();
      expect(await store.listDocuments()).toEqual([{ ...b, contentHash: 'ghi', chunkCount: 2 }, a]);
    });

    it('reports stats', async () => {
      // Prepare
      const embedder = createHashEmbedder({ dimension: 8, modelId: 'fake-model-x' });
      const store = await open(embedder, 'l2');
      await store.addChunks(CORPUS);
      await store.putDocument({
        documentId: 'd1',
        contentHash: 'h',
        chunkCount: 3,
        updatedAt: new Date(0).toISOString(),
      });
      // Act
      const stats = await store.stats();
      // Assess
      expect(stats).toMatchObject({
        collection: store.collectionName,
        documents: 1,
        chunks: 6,
        dimension: 8,
        distance: 'l2',
        embeddingModel: 'fake-model-x',
      });
      expect(typeof stats.annIndex).toBe('boolean');
    });

    it('rejects invalid search params before embedding or querying', async () => {
      // Prepare
      const embedder = createHashEmbedder();
      const store = await open(embedder);
      const bad: SearchParams[] = [
        { k: 0 },
        { k: 3, rankerStrategy: 'rrf' },
        { k: 3, searchMode: 'hybrid' },
        { k: 3, searchMode: 'hybrid', rankerStrategy: 'weighted', rankerK: 60 },
      ];
      for (const params of bad) {
        // Act / Assess
        await expect(store.search('anything', params)).rejects.toBeInstanceOf(SearchParamsError);
      }
      expect(embedder.calls.queries).toBe(0);
    });

    it('refuses a collection name without the ai4rag prefix', async () => {
      // Act
      const act = makeStore({ collectionName: 'customers', embedder: createHashEmbedder() });
      // Assess
      await expect(act).rejects.toBeInstanceOf(CollectionNameError);
    });

    it('refuses to reopen a collection with a different dimension or model', async () => {
      // Prepare
      const name = `ai4rag_ct_${runId}_reopen`;
      const store = await open(createHashEmbedder({ dimension: 8 }), undefined, name);
      await store.addChunks(CORPUS.slice(0, 2));
      // Act
      const otherDim = open(createHashEmbedder({ dimension: 16 }), undefined, name);
      const otherModel = open(
        createHashEmbedder({ dimension: 8, modelId: 'other' }),
        undefined,
        name,
      );
      // Assess: both at once, so neither rejection waits unhandled while the other is awaited (on a server the
      // two opens run concurrently and either can settle first)
      await Promise.all([
        expect(otherDim).rejects.toThrow(/dimension|8/),
        expect(otherModel).rejects.toThrow(/other/),
      ]);
      const same = await open(createHashEmbedder({ dimension: 8 }), undefined, name);
      expect((await same.stats()).chunks).toBe(2);
    });

    it('stores text with quotes, braces, backslashes and unicode verbatim', async () => {
      // Prepare
      const store = await open();
      const text = 'He said "hi", {x} \\ back NULL — café ∑ 😀 \'q\'';
      // Act
      await store.addChunks([makeChunk('t', 1, text, { note: 'a "b" {c}' })]);
      // Assess
      const [hit] = await store.getChunksBySequence('t', 1, 1);
      expect(hit?.text).toBe(text);
      expect(hit?.metadata.note).toBe('a "b" {c}');
    });
  });
}
