/**
 * Tokens and cost on the command line: `ai4rag ask` with `--prices FILE` / AI4RAG_PRICES_FILE against the fake
 * OpenAI server, and the local model's counted tokens.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runServe } from '../../../bin/cli/serve.js';
import { lastJson, runCli } from '../../chaos/harness.js';
import { type FakeOpenAI, startFakeOpenAI } from '../../support/fake-openai-server.js';

interface AskJson {
  answer: string;
  model: string;
  usage?: { promptTokens: number; completionTokens: number };
  costUsd?: number;
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
      usage: { promptTokens: 174, completionTokens: 10 },
      costUsd: 0.000672,
    });
    expect(text.stdout).toContain('tokens: prompt 174, completion 10, cost $0.000672');
  }, 60_000);

  it('reads the table AI4RAG_PRICES_FILE names, and reports tokens only for an unpriced model', async () => {
    // Act
    const priced = await ask(['--model', 'fake-chat', '--json'], { AI4RAG_PRICES_FILE: prices });
    const unpriced = await ask(['--model', 'other-chat', '--json'], { AI4RAG_PRICES_FILE: prices });

    // Assess
    expect(lastJson<AskJson>(priced).costUsd).toBe(0.000672);
    const other = lastJson<AskJson>(unpriced);
    expect(other.usage).toEqual({ promptTokens: 174, completionTokens: 10 });
    expect('costUsd' in other).toBe(false);
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
      usage: { promptTokens: 174, completionTokens: 10 },
      costUsd: 0,
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
