import { afterEach, describe, expect, it } from 'vitest';
import { Ai4ragError, ValidationError } from '../../../shared/src/errors.js';
import {
  defaultRerankCandidates,
  RerankError,
  type Reranker,
  rerankCandidatesProblem,
  rerankChunks,
  rerankFailureWarning,
  rerankOrKeepOrder,
  TeiReranker,
} from '../../../shared/src/retrieval/rerank.js';
import { type FakeTei, startFakeTei } from '../../support/fake-tei-server.js';

let server: FakeTei | undefined;

afterEach(async () => {
  await server?.close();
  server = undefined;
});

const noSleep = (delays: number[] = []) => ({
  sleep: async (ms: number) => {
    delays.push(ms);
  },
  random: () => 0.5,
});

/** A fetch that answers every call with `body` (a string sent as-is) and counts calls. */
function stubFetch(body: string, status = 200): { fetch: typeof fetch; calls: () => number } {
  let calls = 0;
  const fn = (async () => {
    calls++;
    return new Response(body, { status, headers: { 'content-type': 'application/json' } });
  }) as typeof fetch;
  return { fetch: fn, calls: () => calls };
}

const QUERY = 'annual leave days';
const DOCS = [
  'The office opens at nine.', // 0 of 3 query words, 5 words -> 0
  'Annual leave is twenty days per year.', // 3 / (1 + 7) = 0.375
  'Leave requests go to HR.', // 1 / (1 + 5)
  'Annual leave days', // 3 / (1 + 3) = 0.75
];

describe('TeiReranker', () => {
  it('returns scores aligned with the input order although the server answers sorted by score', async () => {
    // Prepare
    server = await startFakeTei();
    const reranker = new TeiReranker({ baseURL: `${server.baseURL}/`, model: 'bge-reranker' });
    // Act
    const scores = await reranker.rerank(QUERY, DOCS);
    // Assess
    expect(scores).toEqual([0, 0.375, 1 / 6, 0.75]);
    expect(reranker.modelId).toBe('bge-reranker');
    expect(server.requests).toHaveLength(1);
    expect(server.requests[0]?.path).toBe('/rerank');
    expect(server.requests[0]?.body).toEqual({
      query: QUERY,
      texts: DOCS,
      raw_scores: false,
      truncate: true,
    });
  });

  it('sends the API key as a bearer token, and none without one', async () => {
    // Prepare
    server = await startFakeTei({ apiKey: 'tei-secret' });
    const keyed = new TeiReranker({ baseURL: server.baseURL, apiKey: 'tei-secret' });
    const anonymous = new TeiReranker({ baseURL: server.baseURL, ...noSleep() });
    // Act
    const scores = await keyed.rerank(QUERY, DOCS);
    const refused = await anonymous.rerank(QUERY, DOCS).catch((e: unknown) => e);
    // Assess
    expect(scores).toEqual([0, 0.375, 1 / 6, 0.75]);
    expect(server.requests.map((r) => [r.authorization, r.status])).toEqual([
      ['Bearer tei-secret', 200],
      [undefined, 401],
    ]);
    expect(refused).toMatchObject({ name: 'RerankError', status: 401, retryable: false });
    expect(keyed.endpoint).toBe(server.baseURL);
  });

  it('reorders chunks end to end through the fake TEI server', async () => {
    // Prepare
    server = await startFakeTei();
    const reranker = new TeiReranker({ baseURL: server.baseURL });
    const chunks = DOCS.map((text, i) => ({ id: `c${i}`, text, score: 1 - i / 10 }));
    // Act
    const top = await rerankChunks(reranker, QUERY, chunks, 3);
    // Assess
    expect(top.map((c) => [c.id, c.score, c.retrievalScore])).toEqual([
      ['c3', 0.75, 0.7],
      ['c1', 0.375, 0.9],
      ['c2', 1 / 6, 0.8],
    ]);
    expect(reranker.modelId).toBe('tei');
  });

  it('splits 150 texts into 3 requests of at most 64 and keeps the alignment', async () => {
    // Prepare: text i scores 1 / (2 + i % 5) for the query "alpha"
    server = await startFakeTei();
    const texts = Array.from({ length: 150 }, (_, i) => `alpha${' x'.repeat(i % 5)}`);
    const reranker = new TeiReranker({ baseURL: server.baseURL });
    // Act
    const scores = await reranker.rerank('alpha', texts);
    // Assess
    const sizes = server.requests.map((r) => (r.body as { texts: string[] }).texts.length);
    expect(sizes.sort((a, b) => b - a)).toEqual([64, 64, 22]);
    expect(scores).toEqual(texts.map((_, i) => 1 / (2 + (i % 5))));
  });

  it('retries a 503 after a jittered backoff and then succeeds', async () => {
    // Prepare
    server = await startFakeTei({ failNext: { status: 503, count: 1 } });
    const delays: number[] = [];
    const reranker = new TeiReranker({ baseURL: server.baseURL, ...noSleep(delays) });
    // Act
    const scores = await reranker.rerank(QUERY, DOCS);
    // Assess
    expect(scores).toEqual([0, 0.375, 1 / 6, 0.75]);
    expect(server.requests.map((r) => r.status)).toEqual([503, 200]);
    expect(delays).toEqual([250]); // 0.5 * 500 ms * 2^0
  });

  it('gives up with the last 503 once maxRetries is exhausted', async () => {
    // Prepare
    server = await startFakeTei();
    server.failNext(503, 10);
    const reranker = new TeiReranker({ baseURL: server.baseURL, maxRetries: 2, ...noSleep() });
    // Act
    const outcome = reranker.rerank(QUERY, DOCS);
    // Assess
    await expect(outcome).rejects.toMatchObject({ name: 'RerankError', status: 503 });
    expect(server.requests).toHaveLength(3);
  });

  it('does not retry a 400 and reports it as a RerankError with a cause', async () => {
    // Prepare
    server = await startFakeTei({ failNext: { status: 400, count: 1 } });
    const reranker = new TeiReranker({ baseURL: server.baseURL, ...noSleep() });
    // Act
    const error = await reranker.rerank(QUERY, DOCS).catch((e: unknown) => e);
    // Assess
    expect(error).toBeInstanceOf(RerankError);
    expect(error).toBeInstanceOf(Ai4ragError);
    const rerankError = error as RerankError;
    expect(rerankError.status).toBe(400);
    expect(rerankError.retryable).toBe(false);
    expect(rerankError.message).toBe(
      'TEI /rerank answered HTTP 400: {"error":"injected failure 400","error_type":"fake"}',
    );
    expect(rerankError.cause).toBeInstanceOf(Error);
    expect((rerankError.cause as Error).message).toContain('HTTP 400');
    expect(server.requests).toHaveLength(1);
  });

  it('retries a connection error and wraps it with its cause when retries run out', async () => {
    // Prepare: a port that was just closed refuses connections
    const closed = await startFakeTei();
    const baseURL = closed.baseURL;
    await closed.close();
    const delays: number[] = [];
    const reranker = new TeiReranker({ baseURL, maxRetries: 1, ...noSleep(delays) });
    // Act
    const error = await reranker.rerank(QUERY, DOCS).catch((e: unknown) => e);
    // Assess
    expect(error).toBeInstanceOf(RerankError);
    expect((error as RerankError).message).toMatch(/^TEI \/rerank request failed: /);
    expect((error as RerankError).cause).toBeInstanceOf(TypeError);
    expect(delays).toHaveLength(1);
  });

  it('retries a per-attempt timeout', async () => {
    // Prepare: the first call hangs until its timeout signal fires, the second answers
    let calls = 0;
    const fetchStub = ((_url: string, init?: RequestInit) => {
      calls++;
      if (calls === 1) {
        return new Promise<Response>((_, reject) => {
          init?.signal?.addEventListener('abort', () => reject(init.signal?.reason));
        });
      }
      return Promise.resolve(new Response('[{"index":0,"score":0.5}]'));
    }) as typeof fetch;
    const delays: number[] = [];
    const reranker = new TeiReranker({
      baseURL: 'http://127.0.0.1:9',
      timeoutMs: 20,
      fetch: fetchStub,
      ...noSleep(delays),
    });
    // Act
    const scores = await reranker.rerank('q', ['only']);
    // Assess
    expect(scores).toEqual([0.5]);
    expect(calls).toBe(2);
    expect(delays).toEqual([250]);
  });

  it('scores texts missing from the answer as -Infinity', async () => {
    // Prepare
    const stub = stubFetch('[{"index":2,"score":0.9},{"index":0,"score":0.1}]');
    const reranker = new TeiReranker({ baseURL: 'http://127.0.0.1:9', fetch: stub.fetch });
    // Act
    const scores = await reranker.rerank('q', ['a', 'b', 'c']);
    // Assess
    expect(scores).toEqual([0.1, Number.NEGATIVE_INFINITY, 0.9]);
  });

  it.each([
    ['{"error":"nope"}', 'TEI /rerank answered object, expected an array of { index, score }'],
    ['[{"index":3,"score":0.1}]', 'TEI /rerank entry 0 has index 3, expected an integer in 0..2'],
    [
      '[{"index":1.5,"score":0.1}]',
      'TEI /rerank entry 0 has index 1.5, expected an integer in 0..2',
    ],
    [
      '[{"index":0,"score":0.2},{"index":1,"score":"high"}]',
      'TEI /rerank entry 1 has score "high", expected a finite number',
    ],
    ['[{"index":0,"score":0.2},{"index":0,"score":0.1}]', 'TEI /rerank answered index 0 twice'],
    ['[{"index":0,"score":0.2}', 'TEI /rerank answered invalid JSON: [{"index":0,"score":0.2}'],
  ])('rejects the malformed answer %s without retrying', async (body, message) => {
    // Prepare
    const stub = stubFetch(body);
    const reranker = new TeiReranker({
      baseURL: 'http://127.0.0.1:9',
      fetch: stub.fetch,
      ...noSleep(),
    });
    // Act
    const outcome = reranker.rerank('q', ['a', 'b', 'c']);
    // Assess
    await expect(outcome).rejects.toThrow(new RerankError(message));
    await expect(outcome).rejects.toBeInstanceOf(RerankError);
    expect(stub.calls()).toBe(1);
  });

  it('returns [] for no documents without a request', async () => {
    // Prepare
    const stub = stubFetch('[]');
    const reranker = new TeiReranker({ baseURL: 'http://127.0.0.1:9', fetch: stub.fetch });
    // Act
    const scores = await reranker.rerank('q', []);
    // Assess
    expect(scores).toEqual([]);
    expect(stub.calls()).toBe(0);
  });

  it('rejects invalid options', () => {
    // Assess
    expect(() => new TeiReranker({ baseURL: ' ' })).toThrow(ValidationError);
    expect(() => new TeiReranker({ baseURL: 'http://x', batchSize: 0 })).toThrow(
      'batchSize must be a positive integer, got 0',
    );
    expect(() => new TeiReranker({ baseURL: 'http://x', maxRetries: -1 })).toThrow(
      'maxRetries must be a non-negative integer, got -1',
    );
    expect(() => new TeiReranker({ baseURL: 'http://x', timeoutMs: 0 })).toThrow(
      'timeoutMs must be a positive number, got 0',
    );
  });
});

/** A reranker that answers fixed scores and records its calls. */
function fixedReranker(scores: number[]): Reranker & { calls: string[][] } {
  const calls: string[][] = [];
  return {
    modelId: 'fixed',
    calls,
    rerank: async (_query, documents) => {
      calls.push([...documents]);
      return scores.slice(0, documents.length);
    },
  };
}

describe('rerankChunks', () => {
  it('keeps the top k by rerank score, ties in retrieval order, and keeps the retrieval score', async () => {
    // Prepare
    const chunks = [
      { id: 'a', text: 'A', score: 0.9 },
      { id: 'b', text: 'B', score: 0.8 },
      { id: 'c', text: 'C', score: 0.7 },
      { id: 'd', text: 'D', score: 0.6 },
      { id: 'e', text: 'E', score: 0.5 },
    ];
    const reranker = fixedReranker([0.2, 0.9, 0.2, 0.5, 0.9]);
    // Act
    const top = await rerankChunks(reranker, 'q', chunks, 4);
    // Assess
    expect(top).toEqual([
      { id: 'b', text: 'B', score: 0.9, rerankScore: 0.9, retrievalScore: 0.8 },
      { id: 'e', text: 'E', score: 0.9, rerankScore: 0.9, retrievalScore: 0.5 },
      { id: 'd', text: 'D', score: 0.5, rerankScore: 0.5, retrievalScore: 0.6 },
      { id: 'a', text: 'A', score: 0.2, rerankScore: 0.2, retrievalScore: 0.9 },
    ]);
    expect(reranker.calls).toEqual([['A', 'B', 'C', 'D', 'E']]);
    expect(chunks[1]?.score).toBe(0.8);
  });

  it('returns all candidates when k exceeds their number, and omits retrievalScore when there was none', async () => {
    // Prepare
    const reranker = fixedReranker([0.1, 0.3]);
    // Act
    const top = await rerankChunks(reranker, 'q', [{ text: 'x' }, { text: 'y' }], 10);
    // Assess
    expect(top).toEqual([
      { text: 'y', score: 0.3, rerankScore: 0.3 },
      { text: 'x', score: 0.1, rerankScore: 0.1 },
    ]);
  });

  it('returns [] for an empty list without calling the reranker', async () => {
    // Prepare
    const reranker = fixedReranker([]);
    // Act
    const top = await rerankChunks(reranker, 'q', [], 3);
    // Assess
    expect(top).toEqual([]);
    expect(reranker.calls).toHaveLength(0);
  });

  it('rejects a reranker that returns the wrong number of scores', async () => {
    // Prepare
    const reranker = fixedReranker([0.1]);
    // Act
    const outcome = rerankChunks(reranker, 'q', [{ text: 'x' }, { text: 'y' }], 1);
    // Assess
    await expect(outcome).rejects.toThrow(
      new RerankError('reranker fixed returned 1 scores for 2 documents'),
    );
  });

  it('rejects a negative or fractional k', async () => {
    // Prepare
    const reranker = fixedReranker([0.1]);
    // Act & Assess
    await expect(rerankChunks(reranker, 'q', [{ text: 'x' }], -1)).rejects.toThrow(
      'k must be a non-negative integer, got -1',
    );
    await expect(rerankChunks(reranker, 'q', [{ text: 'x' }], 1.5)).rejects.toThrow(
      ValidationError,
    );
  });
});

describe('rerank candidates', () => {
  it.each([
    [1, 20],
    [3, 20],
    [5, 20],
    [6, 24],
    [10, 40],
    [50, 200],
    [100, 200],
  ])('defaults to max(20, 4k) capped at 200: k %i → %i', (k, expected) => {
    // Act / Assess
    expect(defaultRerankCandidates(k)).toBe(expected);
  });

  it.each([
    [20, 5, undefined],
    [5, 5, undefined],
    [200, 5, undefined],
    [4, 5, 'must be an integer in 5..200 (at least k), got 4'],
    [201, 5, 'must be an integer in 5..200 (at least k), got 201'],
    [7.5, 5, 'must be an integer in 5..200 (at least k), got 7.5'],
    [250, 250, 'cannot rerank down to k 250: at most 200 candidates are reranked'],
  ])('checks %s candidates for k %i', (candidates, k, expected) => {
    // Act / Assess
    expect(rerankCandidatesProblem(candidates, k)).toBe(expected);
  });
});

describe('rerankOrKeepOrder', () => {
  const chunks = DOCS.map((text, i) => ({ id: `c${i}`, text, score: 1 - i / 10 }));

  it('keeps the top k by rerank score when the reranker answers', async () => {
    // Prepare
    server = await startFakeTei();
    const reranker = new TeiReranker({ baseURL: server.baseURL, model: 'bge' });
    // Act
    const out = await rerankOrKeepOrder(reranker, QUERY, chunks, 2);
    // Assess
    expect(out.warning).toBeUndefined();
    expect(out.chunks.map((c) => [c.id, c.score])).toEqual([
      ['c3', 0.75],
      ['c1', 0.375],
    ]);
  });

  it('keeps the first k in retrieval order with a warning when the reranker keeps failing', async () => {
    // Prepare: a 503 storm outlasting the retries
    server = await startFakeTei({ failNext: { status: 503, count: 100 } });
    const reranker = new TeiReranker({
      baseURL: server.baseURL,
      model: 'bge',
      maxRetries: 1,
      ...noSleep(),
    });
    // Act
    const out = await rerankOrKeepOrder(reranker, QUERY, chunks, 2);
    // Assess
    expect(out.chunks).toEqual([chunks[0], chunks[1]]);
    expect(out.warning).toBe(
      `reranker bge at ${server.baseURL}: TEI /rerank answered HTTP 503: {"error":"injected failure 503","error_type":"fake"}; results in retrieval order, not reranked`,
    );
    expect(server.requests.map((r) => r.status)).toEqual([503, 503]);
  });

  it('keeps the retrieval order when the reranker answers the wrong number of scores', async () => {
    // Prepare
    const reranker = fixedReranker([0.5]);
    // Act
    const out = await rerankOrKeepOrder(reranker, QUERY, chunks, 3);
    // Assess
    expect(out.chunks.map((c) => c.id)).toEqual(['c0', 'c1', 'c2']);
    expect(out.warning).toBe(
      'reranker fixed: reranker fixed returned 1 scores for 4 documents; results in retrieval order, not reranked',
    );
  });

  it('names the cause of a wrapped failure in the warning', () => {
    // Prepare
    const wrapped = new Error('reranker x failed', { cause: new Error('socket hang up') });
    wrapped.name = 'RagTemplateError';
    // Act / Assess
    expect(rerankFailureWarning({ modelId: 'x', endpoint: 'http://h:1' }, wrapped)).toBe(
      'reranker x at http://h:1: socket hang up; results in retrieval order, not reranked',
    );
  });
});
