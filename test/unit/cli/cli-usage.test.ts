/**
 * Tokens and cost on the command line: `ai4rag ask` with `--prices FILE` / AI4RAG_PRICES_FILE against the fake
 * OpenAI server, and the local model's counted tokens.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../../bin/cli/main.js';
import { runServe } from '../../../bin/cli/serve.js';
import { lastJson, runCli } from '../../chaos/harness.js';
import { type FakeOpenAI, startFakeOpenAI } from '../../support/fake-openai-server.js';

interface AskJson {
  answer: string;
  model: string;
  usage?: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
  cost_usd?: number;
}

const QUESTION = 'How many passengers does the Aurora carry?';
/** 38 characters: ceil(38 / 4) = 10 completion tokens at the fake. */
const ANSWER = 'The Aurora carries 140 passengers [1].';

describe('ai4rag ask reports tokens and cost', () => {
  let root: string;
  let data: string;
  let prices: string;
  let fake: FakeOpenAI;
  let env: Record<string, string>;

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'ai4rag-cli-usage-'));
    const docs = join(root, 'docs');
    data = join(root, 'data');
    await mkdir(docs, { recursive: true });
    await writeFile(
      join(docs, 'ferry.md'),
      '# Ferries\n\nThe ferry Aurora carries 140 passengers.\n',
    );
    prices = join(root, 'prices.json');
    await writeFile(prices, JSON.stringify({ 'fake-chat': { input: 3, output: 15 } }));
    fake = await startFakeOpenAI({ chatResponder: () => ANSWER });
    env = { OPENAI_BASE_URL: fake.baseURL, OPENAI_API_KEY: 'k' };
    const ingest = await runCli(['ingest', docs, '--data-dir', data, '--json'], { env });
    expect(ingest.code, ingest.stderr).toBe(0);
  }, 60_000);
  afterAll(async () => {
    await fake?.close();
    if (root) await rm(root, { recursive: true, force: true });
  });

  const ask = (args: string[], extra: Record<string, string> = {}) =>
    runCli(['ask', QUESTION, '--data-dir', data, '--k', '1', ...args], {
      env: { ...env, ...extra },
    });

  it('prints the model usage and its cost with --prices FILE', async () => {
    // Act
    const json = await ask(['--model', 'fake-chat', '--prices', prices, '--json']);
    const text = await ask(['--model', 'fake-chat', '--prices', prices]);

    // Assess
    expect(json.code, json.stderr).toBe(0);
    const chats = fake.requests.filter((r) => r.path === '/v1/chat/completions');
    const sent = chats.map((r) =>
      (r.body as { messages: { content: string }[] }).messages.reduce(
        (n, m) => n + m.content.length,
        0,
      ),
    );
    // The prompt is 693 characters (the default templates around the one chunk): ceil(693 / 4) = 174 tokens.
    expect(sent).toEqual([693, 693]);
    // (174 × 3 + 10 × 15) / 1e6 USD
    expect(lastJson<AskJson>(json)).toMatchObject({
      answer: ANSWER,
      model: 'fake-chat',
      usage: { prompt_tokens: 174, completion_tokens: 10, total_tokens: 184 },
      cost_usd: 0.000672,
    });
    expect(text.stdout).toContain('tokens: prompt 174, completion 10, cost $0.000672');
  }, 60_000);

  it('reads the table AI4RAG_PRICES_FILE names, and reports tokens only for an unpriced model', async () => {
    // Act
    const priced = await ask(['--model', 'fake-chat', '--json'], { AI4RAG_PRICES_FILE: prices });
    const unpriced = await ask(['--model', 'other-chat', '--json'], { AI4RAG_PRICES_FILE: prices });

    // Assess
    expect(lastJson<AskJson>(priced).cost_usd).toBe(0.000672);
    const other = lastJson<AskJson>(unpriced);
    expect(other.usage).toEqual({ prompt_tokens: 174, completion_tokens: 10, total_tokens: 184 });
    expect('cost_usd' in other).toBe(false);
  }, 60_000);

  it('counts the local model tokens, at no cost', async () => {
    // Act
    const run = await ask(['--json']);

    // Assess
    expect(run.code, run.stderr).toBe(0);
    // The same 174-token prompt; the answer 'The ferry Aurora carries 140 passengers.' is 40 characters: 10 tokens.
    expect(lastJson<AskJson>(run)).toMatchObject({
      answer: 'The ferry Aurora carries 140 passengers.',
      model: 'local/extractive-v1',
      usage: { prompt_tokens: 174, completion_tokens: 10, total_tokens: 184 },
      cost_usd: 0,
    });
  }, 60_000);

  it('fails with exit 2 naming a bad price file', async () => {
    // Prepare
    const bad = join(root, 'bad-prices.json');
    await writeFile(bad, '{"fake-chat": {"input": -1}}');
    // Act
    const run = await ask(['--prices', bad]);
    // Assess
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(`--prices "${bad}": expected`);
  }, 60_000);

  it('ai4rag serve refuses a bad --prices FILE before it starts (exit 2)', async () => {
    // Prepare
    const errors: string[] = [];
    // Act
    const code = await runServe(['--prices', join(root, 'missing.json'), '--port', '0'], {
      out: () => undefined,
      err: (line) => errors.push(line),
    });
    // Assess
    expect(code).toBe(2);
    expect(errors).toEqual([
      expect.stringMatching(/^ai4rag serve: cannot read --prices ".*missing\.json": ENOENT/),
    ]);
  });
});

describe('ai4rag experiment --dry-run', () => {
  let root: string;
  let fake: FakeOpenAI;

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'ai4rag-dry-run-'));
    await mkdir(join(root, 'docs'), { recursive: true });
    // 100 × 43 characters, the last space trimmed by the loader: 4299 characters, ceil(4299 / 4) = 1075 tokens.
    await writeFile(
      join(root, 'docs', 'leave.txt'),
      'Employees receive 27 days of annual leave. '.repeat(100),
    );
    await writeFile(
      join(root, 'bench.json'),
      JSON.stringify([
        {
          question: 'How many days of annual leave?',
          correct_answers: ['27 days'],
          correct_answer_document_keys: ['leave.txt'],
        },
      ]),
    );
    await writeFile(
      join(root, 'space.json'),
      JSON.stringify({
        chunk_size: [512],
        chunk_overlap: [128],
        number_of_chunks: [3],
        search_mode: ['vector'],
      }),
    );
    await writeFile(
      join(root, 'prices.json'),
      JSON.stringify({
        'fake-chat': { input: 2, output: 10 },
        'fake-embed': { input: 0.5 },
        'fake-judge': { input: 1, output: 4 },
      }),
    );
    fake = await startFakeOpenAI({});
  });
  afterAll(async () => {
    await fake?.close();
    if (root) await rm(root, { recursive: true, force: true });
  });

  const dryRun = (extra: string[]) =>
    runCli(
      [
        'experiment',
        '--dry-run',
        '--docs',
        join(root, 'docs'),
        '--benchmark',
        join(root, 'bench.json'),
        '--search-space',
        join(root, 'space.json'),
        '--foundation-models',
        'fake-chat',
        '--embedding-models',
        'fake-embed',
        '--judge-model',
        'fake-judge',
        '--prices',
        join(root, 'prices.json'),
        '--data-dir',
        join(root, 'data'),
        ...extra,
      ],
      { env: { OPENAI_BASE_URL: fake.baseURL, OPENAI_API_KEY: 'k' } },
    );

  it('estimates the run by hand-checkable numbers and calls no model', async () => {
    // Act
    const json = await dryRun(['--json']);
    const text = await dryRun([]);

    // Assess
    expect(json.code, json.stderr).toBe(0);
    expect(text.code, text.stderr).toBe(0);
    expect(fake.requests).toEqual([]);
    const estimate = lastJson<{
      dry_run: true;
      corpus_tokens: number;
      trials: number;
      exhaustive: boolean;
      total: unknown;
    }>(json);
    // One configuration (recursive 512/128, vector, k 3): index ceil(1075 × 512 / 384) = 1434 tokens; the
    // question (30 characters) embeds as 8. The default templates around it and 3 empty passages are 660
    // characters (165 tokens), plus 3 × 512 passage tokens capped at the whole index, 1434: 1599; the completion
    // is 1024. The judge prompt is
    // 616 + 30 characters (162 tokens) plus the 1024-token answer, its reply 256.
    expect([
      estimate.dry_run,
      estimate.corpus_tokens,
      estimate.trials,
      estimate.exhaustive,
    ]).toEqual([true, 1075, 1, true]);
    expect(estimate.total).toEqual({
      models: [
        {
          model_id: 'fake-chat',
          role: 'generation',
          calls: 1,
          prompt_tokens: 1599,
          completion_tokens: 1024,
          // (1599 × 2 + 1024 × 10) / 1e6
          cost_usd: 0.013438,
        },
        {
          model_id: 'fake-judge',
          role: 'judge',
          calls: 1,
          prompt_tokens: 1186,
          completion_tokens: 256,
          // (1186 + 256 × 4) / 1e6
          cost_usd: 0.00221,
        },
        {
          model_id: 'fake-embed',
          role: 'embedding',
          calls: 2,
          prompt_tokens: 1442,
          completion_tokens: 0,
          approximate: true,
          // 1442 × 0.5 / 1e6
          cost_usd: 0.000721,
        },
      ],
      prompt_tokens: 4227,
      completion_tokens: 1280,
      cost_usd: 0.016369,
    });
    expect(text.stdout).toContain(
      'Dry run: an ESTIMATE of the tokens (and cost) this experiment would use. No model was called.',
    );
    expect(text.stdout).toMatch(/^ {2}all +4,227 +1,280 +\$0\.016369$/m);
    expect(text.stdout).toContain('Assumptions:');
  }, 60_000);

  it('a real run prints the tokens it spent, and their cost with --prices', async () => {
    // Prepare
    const out: string[] = [];
    const io = { out: (l: string) => out.push(l), err: () => undefined };
    const args = [
      'experiment',
      '--docs',
      join(root, 'docs'),
      '--benchmark',
      join(root, 'bench.json'),
      '--search-space',
      join(root, 'space.json'),
      '--max-evals',
      '1',
      '--prices',
      join(root, 'prices.json'),
      '--data-dir',
      join(root, 'data'),
    ];
    // Act
    const code = await main([...args, '--experiment-id', 'cli-usage-text'], io);
    const jsonCode = await main([...args, '--experiment-id', 'cli-usage-json', '--json'], io);
    // Assess
    expect([code, jsonCode]).toEqual([0, 0]);
    // The local models cost nothing; the second run is answered from the result cache.
    expect(out).toContainEqual(
      expect.stringMatching(
        /^Tokens spent: [\d,]+ tokens \([\d,]+ prompt \+ [\d,]+ completion\), \$0$/,
      ),
    );
    const json = JSON.parse(out.at(-1) ?? '{}') as {
      usage: { spent: unknown; cached: { cost_usd: number } };
    };
    expect(json.usage.spent).toEqual({
      models: [],
      prompt_tokens: 0,
      completion_tokens: 0,
      cost_usd: 0,
    });
    expect(json.usage.cached.cost_usd).toBe(0);
  }, 120_000);
});
