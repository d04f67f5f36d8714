/**
 * Tokens and cost of an experiment, end to end through the local state machine with OpenAI-compatible models
 * behind the fake server (whose usage is ceil(characters / 4) of what it receives and answers): per trial in
 * leaderboard.json and report.html, totals in report-data.json, cached trials marked with their original cost.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runLocalExperiment } from '../../../bin/cli/local-state-machine.js';
import { createLocalRuntime, type LocalRuntime } from '../../../functions/_shared/runtime.js';
import { ledgerKeys } from '../../../shared/src/experiment/ledger.js';
import type { LeaderboardEntry, ReportData } from '../../../shared/src/experiment/types.js';
import { getJson, putJson } from '../../../shared/src/ports/object-store.js';
import { type FakeOpenAI, startFakeOpenAI } from '../../support/fake-openai-server.js';

/** USD per million tokens: round numbers so the costs are exact by hand. */
const PRICES = {
  'fake-chat': { input: 2, output: 10 },
  'fake-judge': { input: 1, output: 4 },
  'fake-embed': { input: 0.5 },
};
const ANSWER = 'The cooperative operates on the Halvorsen river.';
const VERDICT = '{"score": 5, "rationale": "on topic"}';

interface Body {
  model: string;
  messages: { content: string }[];
}

describe('experiment tokens and cost (fake OpenAI-compatible models)', () => {
  let fake: FakeOpenAI;
  let dir: string;
  let runtime: LocalRuntime;
  let first: { board: LeaderboardEntry[]; data: ReportData; html: string };
  let second: { board: LeaderboardEntry[]; data: ReportData; html: string };
  let chatRequestsAfterFirst: number;

  const run = async (experimentId: string) => {
    await runLocalExperiment({
      runtime,
      input: {
        experimentId,
        benchmarkKey: 'experiments/usage-bench/input/benchmark.json',
        maxEvals: 2,
        foundationModels: ['fake-chat'],
        embeddingModels: ['fake-embed'],
        judgeModel: 'fake-judge',
        prices: PRICES,
        searchSpace: { chunk_size: [512], chunk_overlap: [128], number_of_chunks: [1, 2] },
      },
    });
    const keys = ledgerKeys(`experiments/${experimentId}/`);
    return {
      board: await getJson<LeaderboardEntry[]>(runtime.objectStore, keys.leaderboard),
      data: await getJson<ReportData>(runtime.objectStore, keys.reportData),
      html: Buffer.from(await runtime.objectStore.get(keys.report)).toString('utf8'),
    };
  };

  beforeAll(async () => {
    fake = await startFakeOpenAI({
      dimension: 16,
      chatResponder: (message) => (message.includes('## Response to evaluate') ? VERDICT : ANSWER),
    });
    dir = mkdtempSync(join(tmpdir(), 'ai4rag-usage-exp-'));
    const docs = join(dir, 'docs');
    mkdirSync(docs);
    writeFileSync(
      join(docs, 'company.md'),
      '# Company\n\nThe cooperative operates on the Halvorsen river with nine barges.\n',
    );
    writeFileSync(
      join(docs, 'leave.md'),
      '# Leave\n\nEmployees receive 27 days of annual leave.\n',
    );
    runtime = createLocalRuntime({
      dataDir: dir,
      documentsDir: docs,
      inMemory: true,
      env: { OPENAI_BASE_URL: fake.baseURL, OPENAI_API_KEY: 'k' },
    });
    await putJson(runtime.objectStore, 'experiments/usage-bench/input/benchmark.json', [
      {
        question: 'Which river does the cooperative operate on?',
        correct_answers: ['the Halvorsen river'],
        correct_answer_document_keys: ['company.md'],
      },
      {
        question: 'How many days of annual leave?',
        correct_answers: ['27 days'],
        correct_answer_document_keys: ['leave.md'],
      },
    ]);
    first = await run('usage-first');
    chatRequestsAfterFirst = fake.requests.filter((r) => r.path === '/v1/chat/completions').length;
    second = await run('usage-second');
  }, 240_000);
  afterAll(async () => {
    await runtime?.close();
    await fake?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('records each trial’s tokens per model and role, as the fake server counted them', () => {
    // Prepare
    const chats = fake.requests
      .filter((r) => r.path === '/v1/chat/completions')
      .map((r) => r.body as Body);
    const charged = (model: string) =>
      chats
        .filter((b) => b.model === model)
        .reduce(
          (n, b) => n + Math.ceil(b.messages.reduce((c, m) => c + m.content.length, 0) / 4),
          0,
        );

    // Assess
    // 2 trials × 2 questions: 4 answers of ANSWER (48 characters, 12 tokens) and 4 verdicts (37 characters, 10).
    expect(chats).toHaveLength(8);
    const rows = first.board
      .flatMap((e) => e.usage?.models ?? [])
      .filter((m) => m.role !== 'embedding');
    const prompt = (role: string) =>
      rows.filter((m) => m.role === role).reduce((n, m) => n + m.prompt_tokens, 0);
    expect(prompt('generation')).toBe(charged('fake-chat'));
    expect(prompt('judge')).toBe(charged('fake-judge'));
    // Costs (USD per million): chat (390 × 2 + 24 × 10), judge (351 × 1 + 20 × 4), embeddings 51 × 0.5 → 25.5,
    // each rounded to a millionth of a dollar. Embeddings: the chunks (76 and 51 characters: 19 + 13 tokens) when
    // Pattern1 built the index, and the questions (44 and 30 characters: 11 + 8) in every trial.
    expect(first.board.map((e) => [e.pattern_name, e.cached, e.usage])).toEqual([
      [
        'Pattern1',
        undefined,
        {
          models: [
            {
              model_id: 'fake-chat',
              role: 'generation',
              calls: 2,
              prompt_tokens: 390,
              completion_tokens: 24,
              cost_usd: 0.00102,
            },
            {
              model_id: 'fake-judge',
              role: 'judge',
              calls: 2,
              prompt_tokens: 351,
              completion_tokens: 20,
              cost_usd: 0.000431,
            },
            {
              model_id: 'fake-embed',
              role: 'embedding',
              calls: 4,
              prompt_tokens: 51,
              completion_tokens: 0,
              approximate: true,
              cost_usd: 0.000026,
            },
          ],
          prompt_tokens: 792,
          completion_tokens: 44,
          cost_usd: 0.001477,
        },
      ],
      [
        'Pattern2',
        undefined,
        {
          models: [
            {
              model_id: 'fake-chat',
              role: 'generation',
              calls: 2,
              prompt_tokens: 351,
              completion_tokens: 24,
              cost_usd: 0.000942,
            },
            {
              model_id: 'fake-judge',
              role: 'judge',
              calls: 2,
              prompt_tokens: 351,
              completion_tokens: 20,
              cost_usd: 0.000431,
            },
            // Pattern2 reused Pattern1's index: only its questions were embedded.
            {
              model_id: 'fake-embed',
              role: 'embedding',
              calls: 2,
              prompt_tokens: 19,
              completion_tokens: 0,
              approximate: true,
              cost_usd: 0.00001,
            },
          ],
          prompt_tokens: 721,
          completion_tokens: 44,
          cost_usd: 0.001383,
        },
      ],
    ]);
  });

  it('sums the experiment’s spend in report-data.json and shows it in report.html', () => {
    // Assess
    // The sums of both trials, priced once over the summed tokens (embeddings 70 × 0.5 = 35 millionths).
    expect(first.data.usage).toEqual({
      spent: {
        models: [
          {
            model_id: 'fake-chat',
            role: 'generation',
            calls: 4,
            prompt_tokens: 741,
            completion_tokens: 48,
            cost_usd: 0.001962,
          },
          {
            model_id: 'fake-judge',
            role: 'judge',
            calls: 4,
            prompt_tokens: 702,
            completion_tokens: 40,
            cost_usd: 0.000862,
          },
          {
            model_id: 'fake-embed',
            role: 'embedding',
            calls: 6,
            prompt_tokens: 70,
            completion_tokens: 0,
            approximate: true,
            cost_usd: 0.000035,
          },
        ],
        prompt_tokens: 1513,
        completion_tokens: 88,
        cost_usd: 0.002859,
      },
      cached: { models: [], prompt_tokens: 0, completion_tokens: 0, cost_usd: 0 },
      trials_without_usage: 0,
      priced: true,
    });
    expect(first.html).toContain(
      '<dt>Tokens spent</dt><dd>1,601 (1,513 prompt + 88 completion)</dd>',
    );
    expect(first.html).toContain('<dt>Cost spent (USD)</dt><dd>$0.002859</dd>');
    expect(first.html).toContain(
      '<td class="num" data-v="836">836</td><td class="num" data-v="0.0015">$0.001477</td>',
    );
    expect(first.html).toContain('id="usage-models"');
  });

  it('marks cached trials with the tokens they originally cost, and spends nothing again', () => {
    // Assess
    expect(fake.requests.filter((r) => r.path === '/v1/chat/completions')).toHaveLength(
      chatRequestsAfterFirst,
    );
    expect(second.board.map((e) => [e.cached, e.usage])).toEqual(
      first.board.map((e) => [true, e.usage]),
    );
    expect(second.html).toContain(
      '836 <span class="muted" title="cached: what the original evaluation cost; not spent again">(cached)</span>',
    );
    expect(second.data.usage?.spent).toEqual({
      models: [],
      prompt_tokens: 0,
      completion_tokens: 0,
      cost_usd: 0,
    });
    expect(second.data.usage?.cached).toEqual(first.data.usage?.spent);
  });
});
