import { afterEach, describe, expect, it } from 'vitest';
import { OpenAIFoundationModel } from '../../../shared/src/generation/openai-model.js';
import { SimpleRAG } from '../../../shared/src/generation/rag-template.js';
import { parseRewrites } from '../../../shared/src/retrieval/query-transform.js';
import { Retriever, RetrieverError } from '../../../shared/src/retrieval/retriever.js';
import type {
  MetadataFilter,
  SearchHit,
  SearchParams,
} from '../../../shared/src/vectorstores/types.js';
import { type FakeOpenAI, startFakeOpenAI } from '../../support/fake-openai-server.js';
import { MemoryStore, testChunk } from '../../support/memory-store.js';

const QUESTION = 'How many leave days?';
const REWRITES =
  '1. leave days per year\n- annual leave\nHow many leave days?\n\nvacation policy\nextra';
const PASSAGE = 'Employees may carry over unused vacation days.';
const MULTI_SYSTEM = 'You rewrite questions into search queries for a document retrieval system.';
const MULTI_USER =
  'Write 3 different versions of the following question to retrieve relevant documents from a search index. ' +
  'Give one version per line, with no numbering and no other text.\n\nQuestion: How many leave days?';
const HYDE_USER =
  'Please write a passage to answer the question.\nQuestion: How many leave days?\nPassage:';

/** MemoryStore (ranks by query words contained) that records its searches. */
class RecordingStore extends MemoryStore {
  readonly searches: { query: string; params: SearchParams }[] = [];
  override async search(query: string, params: SearchParams): Promise<SearchHit[]> {
    this.searches.push({ query, params });
    return super.search(query, params);
  }
}

/** A store with a BM25-only search, as the pgvector store (here: the same word-count ranking). */
class KeywordStore extends RecordingStore {
  readonly keywordQueries: { query: string; k: number }[] = [];
  async keywordSearch(
    query: string,
    options: { k: number; filter?: MetadataFilter },
  ): Promise<SearchHit[]> {
    this.keywordQueries.push({ query, k: options.k });
    return super.search(query, { k: options.k, includeScores: true });
  }
}

async function corpus<T extends MemoryStore>(store: T): Promise<T> {
  await store.addChunks([
    testChunk('a', 1, 'annual leave is 25 days'),
    testChunk('b', 1, 'vacation policy allows carry over'),
    testChunk('c', 1, 'leave days per year are fixed'),
    testChunk('d', 1, 'sick days'),
  ]);
  return store;
}

function ticks(): () => number {
  let t = 0;
  return () => {
    t += 10;
    return t;
  };
}

const tokens = (...texts: string[]) => Math.ceil(texts.join('').length / 4);

describe('query transforms', () => {
  let fake: FakeOpenAI | undefined;
  afterEach(async () => {
    await fake?.close();
    fake = undefined;
  });

  async function chatModel() {
    fake = await startFakeOpenAI({
      chatResponder: (last) => (last.startsWith('Please write a passage') ? PASSAGE : REWRITES),
    });
    return new OpenAIFoundationModel({ baseURL: fake.baseURL, apiKey: 'k', model: 'fake-chat' });
  }

  it('multi_query searches each rewrite and fuses them with the original by RRF', async () => {
    // Prepare
    const store = await corpus(new RecordingStore());
    const model = await chatModel();
    const retriever = new Retriever(store, {
      numberOfChunks: 4,
      queryTransform: { kind: 'multi_query', model, now: ticks() },
    });
    // Act
    const { chunks, queryTransform } = await retriever.retrieveWithReport(QUESTION);
    // Assess: the exact prompt sent
    const chat = fake?.requests.find((r) => r.path === '/v1/chat/completions');
    expect((chat?.body as { messages: unknown } | undefined)?.messages).toEqual([
      { role: 'system', content: MULTI_SYSTEM },
      { role: 'user', content: MULTI_USER },
    ]);
    expect(
      (chat?.body as { max_completion_tokens: number } | undefined)?.max_completion_tokens,
    ).toBe(256);
    // the original, then 3 rewrites (numbering stripped, the question itself and extras dropped)
    expect(store.searches.map((s) => s.query)).toEqual([
      QUESTION,
      'leave days per year',
      'annual leave',
      'vacation policy',
    ]);
    // original a, c, d; 'leave days per year' c, a, d; 'annual leave' a, c; 'vacation policy' b:
    // a 2/61 + 1/62, c 1/61 + 2/62, d 2/63, b 1/61
    expect(chunks.map((c) => [c.id, Number(c.score?.toFixed(6))])).toEqual([
      ['a#1', Number((2 / 61 + 1 / 62).toFixed(6))],
      ['c#1', Number((1 / 61 + 2 / 62).toFixed(6))],
      ['d#1', Number((2 / 63).toFixed(6))],
      ['b#1', Number((1 / 61).toFixed(6))],
    ]);
    expect(queryTransform).toEqual({
      kind: 'multi_query',
      ms: 10,
      usage: { promptTokens: tokens(MULTI_SYSTEM, MULTI_USER), completionTokens: tokens(REWRITES) },
      queries: ['leave days per year', 'annual leave', 'vacation policy'],
    });
  });

  it('hyde embeds the hypothetical passage for a dense search fused with the original', async () => {
    // Prepare
    const store = await corpus(new RecordingStore());
    const model = await chatModel();
    const retriever = new Retriever(store, {
      numberOfChunks: 4,
      searchMode: 'hybrid',
      rankerStrategy: 'rrf',
      rankerK: 60,
      queryTransform: { kind: 'hyde', model, now: ticks() },
    });
    // Act
    const { chunks, queryTransform } = await retriever.retrieveWithReport(QUESTION);
    // Assess
    const chat = fake?.requests.find((r) => r.path === '/v1/chat/completions');
    expect((chat?.body as { messages: unknown } | undefined)?.messages).toEqual([
      { role: 'user', content: HYDE_USER },
    ]);
    expect(store.searches.map((s) => [s.query, s.params.searchMode])).toEqual([
      [QUESTION, 'hybrid'],
      [PASSAGE, 'vector'],
    ]);
    // original a, c, d; passage b (3 words), a, c, d (1 each, by id): a 1/61 + 1/62, c 1/62 + 1/63,
    // d 1/63 + 1/64, b 1/61
    expect(chunks.map((c) => c.id)).toEqual(['a#1', 'c#1', 'd#1', 'b#1']);
    expect(chunks[0]?.score).toBeCloseTo(1 / 61 + 1 / 62, 12);
    expect(queryTransform).toEqual({
      kind: 'hyde',
      ms: 10,
      usage: { promptTokens: tokens(HYDE_USER), completionTokens: tokens(PASSAGE) },
      passage: PASSAGE,
    });
  });

  it('rm3 expands the query from the keyword hits and runs it as a keyword query', async () => {
    // Prepare
    const store = await corpus(new KeywordStore());
    const retriever = new Retriever(store, {
      numberOfChunks: 3,
      searchMode: 'hybrid',
      rankerStrategy: 'rrf',
      rankerK: 60,
      queryTransform: { kind: 'rm3', rm3: { fbDocs: 2, fbTerms: 2 }, now: ticks() },
    });
    // Act
    const { chunks, queryTransform } = await retriever.retrieveWithReport('annual leave');
    // Assess: feedback = the keyword hits a (score 2), c (1); every tf is 1, so each document keeps its first 2
    // terms by term order: a '25', 'annual'; c 'dai', 'fix'. rm: 25 = annual = 1/2·2, dai = fix = 1/2·1;
    // pruned to 2: 25, annual (1/2 each). 0.5·q (annual, leav 1/2 each) + 0.5·rm:
    expect(store.keywordQueries[0]).toEqual({ query: 'annual leave', k: 2 });
    expect(queryTransform?.kind).toBe('rm3');
    expect(queryTransform?.ms).toBe(10);
    expect(queryTransform?.expansion?.map((t) => [t.term, Number(t.weight.toFixed(6))])).toEqual([
      ['annual', 0.5],
      ['25', 0.25],
      ['leav', 0.25],
    ]);
    // 'annual' × 20, '25' × 10, 'leave' × 10
    expect(store.keywordQueries[1]).toEqual({
      query: [
        ...Array(20).fill('annual'),
        ...Array(10).fill('25'),
        ...Array(10).fill('leave'),
      ].join(' '),
      k: 3,
    });
    expect(chunks.map((c) => c.id)).toEqual(['a#1', 'c#1']);
  });

  it('refuses a chat transform without a model and rm3 without a keyword leg', () => {
    const store = new MemoryStore();
    expect(
      () => new Retriever(store, { numberOfChunks: 3, queryTransform: { kind: 'hyde' } }),
    ).toThrow(new RetrieverError('query transform hyde needs a chat model'));
    expect(
      () => new Retriever(store, { numberOfChunks: 3, queryTransform: { kind: 'rm3' } }),
    ).toThrow(
      new RetrieverError(
        'query transform rm3 needs a keyword leg (search mode hybrid), got search mode vector',
      ),
    );
  });

  it('SimpleRAG reports the transform time inside the retrieval time, and its tokens apart', async () => {
    // Prepare
    const store = await corpus(new RecordingStore());
    const model = await chatModel();
    const rag = new SimpleRAG({
      retriever: new Retriever(store, {
        numberOfChunks: 2,
        queryTransform: { kind: 'hyde', model, now: () => 0 },
      }),
      model,
      now: ticks(),
    });
    // Act
    const answer = await rag.generate(QUESTION);
    // Assess
    expect(answer.timing).toEqual({
      retrieveMs: 10,
      rerankMs: 0,
      generateMs: 10,
      totalMs: 20,
      transformMs: 0,
    });
    expect(answer.queryTransform?.usage).toEqual({
      promptTokens: tokens(HYDE_USER),
      completionTokens: tokens(PASSAGE),
    });
  });
});

describe('parseRewrites', () => {
  it.each([
    ['1) a\n2) b', 3, ['a', 'b']],
    ['* a\n• A\nb\nc\nd', 2, ['a', 'b']],
    ['q\n\n', 3, []],
  ])('parses %j', (answer, n, expected) => {
    expect(parseRewrites(answer, 'Q', n)).toEqual(expected);
  });
});
