import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parse } from '../../../bin/cli/args.js';
import { main } from '../../../bin/cli/main.js';
import { experimentRerank, RERANK_OPTIONS, serveRerankEnv } from '../../../bin/cli/rerank.js';
import { runServe } from '../../../bin/cli/serve.js';
import { type FakeTei, startFakeTei } from '../../support/fake-tei-server.js';
import { FUSED_ORDER, RERANK_DOCS, RERANK_QUERY, RERANKED } from '../../support/rerank-corpus.js';

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (l: string) => out.push(l), err: (l: string) => err.push(l) }, out, err };
}

describe('ai4rag search and ask with --rerank', () => {
  let dir: string;
  let data: string;
  let tei: FakeTei;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ai4rag-cli-rerank-'));
    const docs = join(dir, 'docs');
    for (const [key, text] of Object.entries(RERANK_DOCS)) {
      await mkdir(dirname(join(docs, key)), { recursive: true });
      await writeFile(join(docs, key), text);
    }
    data = join(dir, 'data');
    expect(await main(['ingest', docs, '--data-dir', data, '--json'], capture().io)).toBe(0);
    tei = await startFakeTei();
  });
  afterAll(async () => {
    await tei.close();
    await rm(dir, { recursive: true, force: true });
  });
  afterEach(() => {
    tei.failNext(0, 0);
    tei.requests.length = 0;
  });

  const rerank = () => ['--rerank', 'fake-bge', '--rerank-url', tei.baseURL];

  it('search --rerank reorders the fused candidates and keeps k', async () => {
    // Act
    const plain = capture();
    const reranked = capture();
    const a = await main(
      ['search', RERANK_QUERY, '--k', '3', '--data-dir', data, '--json'],
      plain.io,
    );
    const b = await main(
      ['search', RERANK_QUERY, '--k', '3', ...rerank(), '--data-dir', data, '--json'],
      reranked.io,
    );

    // Assess
    expect([a, b]).toEqual([0, 0]);
    type Out = { results: { metadata: { document_id: string }; score: number }[] };
    const fused = JSON.parse(plain.out.at(-1) ?? '{}') as Out;
    const out = JSON.parse(reranked.out.at(-1) ?? '{}') as Out;
    expect(fused.results.map((h) => h.metadata.document_id)).toEqual(FUSED_ORDER.slice(0, 3));
    expect(out.results.map((h) => [h.metadata.document_id, h.score])).toEqual(RERANKED.slice(0, 3));
    expect(tei.requests).toHaveLength(1);
    expect((tei.requests[0]?.body as { texts: string[] } | undefined)?.texts).toHaveLength(4);
  });

  it('ask --rerank answers from the reranked passages and reports the rerank time', async () => {
    // Act
    const json = capture();
    const text = capture();
    const a = await main(
      ['ask', RERANK_QUERY, '--k', '2', ...rerank(), '--data-dir', data, '--json'],
      json.io,
    );
    const b = await main(
      ['ask', RERANK_QUERY, '--k', '2', ...rerank(), '--data-dir', data],
      text.io,
    );

    // Assess
    expect([a, b]).toEqual([0, 0]);
    const answer = JSON.parse(json.out.at(-1) ?? '{}') as {
      reference_documents: { document_key: string; score: number }[];
      timing: { rerank_ms: number };
      warnings?: string[];
    };
    expect(answer.reference_documents.map((d) => [d.document_key, d.score])).toEqual(
      RERANKED.slice(0, 2),
    );
    expect(answer.timing.rerank_ms).toBeGreaterThan(0);
    expect(answer.warnings).toBeUndefined();
    const sources = text.out.filter((l) => l.startsWith('  ['));
    expect(sources).toEqual([
      `  [1] ferry/aurora.txt #1  score ${(4 / 16).toFixed(4)}`,
      `  [2] ferry/faq.txt #1  score ${(6 / 33).toFixed(4)}`,
    ]);
    const timing = text.out.at(-1) ?? '';
    expect(timing).toMatch(/^retrieve \d+\.\d ms, rerank \d+\.\d ms, generate \d+\.\d ms, total /);
    expect(Number(/rerank (\d+\.\d) ms/.exec(timing)?.[1])).toBeGreaterThan(0);
  });

  it('ask and search degrade to the fused order with a warning when the reranker is down', async () => {
    // Prepare
    tei.failNext(503, 100);
    const warning = `warning: reranker fake-bge at ${tei.baseURL}: TEI /rerank answered HTTP 503: {"error":"injected failure 503","error_type":"fake"}; results in retrieval order, not reranked`;

    // Act
    const asked = capture();
    const searched = capture();
    const a = await main(
      ['ask', RERANK_QUERY, '--k', '2', ...rerank(), '--data-dir', data, '--json'],
      asked.io,
    );
    const b = await main(
      ['search', RERANK_QUERY, '--k', '2', ...rerank(), '--data-dir', data, '--json'],
      searched.io,
    );

    // Assess
    expect([a, b]).toEqual([0, 0]);
    const answer = JSON.parse(asked.out.at(-1) ?? '{}') as {
      reference_documents: { document_key: string }[];
      warnings: string[];
    };
    expect(answer.reference_documents.map((d) => d.document_key)).toEqual(FUSED_ORDER.slice(0, 2));
    expect(answer.warnings).toEqual([warning.slice('warning: '.length)]);
    expect(asked.err).toEqual([warning]);
    expect(searched.err).toEqual([warning]);
    // Three attempts each (the CLI retries twice).
    expect(tei.requests.map((r) => r.status)).toEqual([503, 503, 503, 503, 503, 503]);
  }, 20_000);

  it.each([
    [
      [
        '--k',
        '3',
        '--rerank',
        'bge',
        '--rerank-url',
        'http://127.0.0.1:9',
        '--rerank-candidates',
        '2',
      ],
      '--rerank-candidates must be an integer in 3..200 (at least k), got 2',
    ],
    [
      ['--rerank', 'bge', '--rerank-url', 'http://127.0.0.1:9', '--rerank-candidates', 'many'],
      '--rerank-candidates must be an integer, got "many"',
    ],
    [['--rerank-url', 'http://127.0.0.1:9'], '--rerank-url applies only with --rerank MODEL'],
    [['--rerank-candidates', '30'], '--rerank-candidates applies only with --rerank MODEL'],
    [
      ['--rerank', 'bge'],
      '--rerank bge: the rerank model "bge" needs an endpoint: set AI4RAG_RERANK_BASE_URL, or name one with "bge@<endpoint>" (or give --rerank-url URL)',
    ],
    [
      ['--rerank', 'bge', '--rerank-url', 'ftp://tei'],
      '--rerank-url must be an http(s) URL, got "ftp://tei"',
    ],
  ])('rejects %j with exit code 2 naming the flag', async (flags, message) => {
    // Act
    const s = capture();
    const a = capture();
    const searchCode = await main(['search', 'ferry', ...flags, '--data-dir', data], s.io);
    const askCode = await main(['ask', 'ferry', ...flags, '--data-dir', data], a.io);

    // Assess
    expect([searchCode, askCode]).toEqual([2, 2]);
    expect(s.err).toEqual([`ai4rag search: ${message}`]);
    expect(a.err).toEqual([`ai4rag ask: ${message}`]);
    expect(tei.requests).toHaveLength(0);
  });
});

describe('ai4rag experiment --rerank', () => {
  let dir: string;
  let tei: FakeTei;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ai4rag-cli-rerank-exp-'));
    tei = await startFakeTei();
  });
  afterAll(async () => {
    await tei.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('adds the reranker to the search space and reaches the endpoint from the trials', async () => {
    // Prepare
    const benchmark = join(dir, 'benchmark.json');
    const space = join(dir, 'space.json');
    await writeFile(
      benchmark,
      JSON.stringify([
        {
          question: 'Which river does the cooperative operate on?',
          correct_answers: ['the Halvorsen river'],
          correct_answer_document_keys: ['about/company-overview.md'],
        },
      ]),
    );
    await writeFile(
      space,
      JSON.stringify({
        chunking_method: ['recursive'],
        chunk_size: [512],
        chunk_overlap: [128],
        number_of_chunks: [3],
        search_mode: ['vector'],
      }),
    );
    const c = capture();

    // Act
    const code = await main(
      [
        'experiment',
        '--docs',
        join(import.meta.dirname, '../../../examples/docs'),
        '--benchmark',
        benchmark,
        '--search-space',
        space,
        '--rerank',
        'fake-bge',
        '--rerank-candidates',
        '12',
        '--rerank-url',
        tei.baseURL,
        '--max-evals',
        '2',
        '--data-dir',
        join(dir, 'data'),
        '--json',
      ],
      c.io,
    );

    // Assess
    expect(code).toBe(0);
    expect(JSON.parse(c.out.at(-1) ?? '{}')).toMatchObject({ trials: 2, failed: 0 });
    expect(tei.requests.map((r) => (r.body as { texts: string[] }).texts.length)).toEqual([12]);
  }, 120_000);
});

describe('serve and experiment reranking flags', () => {
  const flags = (argv: string[]) => parse(argv, RERANK_OPTIONS);

  it('serve: the endpoint, the default model and candidates become the runtime environment', () => {
    // Act
    const env = serveRerankEnv(
      flags([
        '--rerank',
        'BAAI/bge-reranker-base',
        '--rerank-url',
        'http://tei:8080',
        '--rerank-candidates',
        '30',
      ]),
    );
    const availableOnly = serveRerankEnv(flags(['--rerank-url', 'http://tei:8080']));

    // Assess
    expect(env).toEqual({
      AI4RAG_RERANK_BASE_URL: 'http://tei:8080',
      AI4RAG_RERANK_MODEL: 'BAAI/bge-reranker-base',
      AI4RAG_RERANK_CANDIDATES: '30',
    });
    expect(availableOnly).toEqual({ AI4RAG_RERANK_BASE_URL: 'http://tei:8080' });
  });

  it('serve: exits 2 naming the flag for bad reranking flags', async () => {
    // Act
    const c = capture();
    const code = await runServe(['--rerank', 'bge', '--rerank-candidates', '0'], c.io);

    // Assess
    expect(code).toBe(2);
    expect(c.err).toEqual([
      'ai4rag serve: --rerank-candidates must be an integer in 1..200, got 0',
    ]);
  });

  it('experiment: --rerank adds none and the model to the search space', () => {
    // Act
    const fixed = experimentRerank(
      flags(['--rerank', 'bge', '--rerank-candidates', '30', '--rerank-url', 'http://tei:8080']),
      { chunk_size: [512] },
    );
    const perK = experimentRerank(flags(['--rerank', 'bge']), undefined);
    const none = experimentRerank(flags([]), undefined);

    // Assess
    expect(fixed).toEqual({
      overrides: { reranker: ['none', 'bge'], rerank_candidates: [0, 30] },
      env: { AI4RAG_RERANK_BASE_URL: 'http://tei:8080' },
    });
    expect(perK).toEqual({ overrides: { reranker: ['none', 'bge'] }, env: {} });
    expect(none).toEqual({ env: {} });
  });

  it('experiment: refuses --rerank when the search space file lists reranker too', () => {
    // Act / Assess
    expect(() =>
      experimentRerank(flags(['--rerank', 'bge']), { reranker: ['none', 'other'] }),
    ).toThrow(
      '--rerank: the --search-space file already lists "reranker"; give the rerankers in one place',
    );
  });
});
