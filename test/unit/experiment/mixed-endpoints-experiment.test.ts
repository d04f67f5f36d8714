import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runLocalExperiment } from '../../../bin/cli/local-state-machine.js';
import { createLocalRuntime, type LocalRuntime } from '../../../functions/_shared/runtime.js';
import { ledgerKeys } from '../../../shared/src/experiment/ledger.js';
import type { ExperimentArtefacts } from '../../../shared/src/experiment/steps.js';
import type { LeaderboardEntry } from '../../../shared/src/experiment/types.js';
import { getJson, putJson } from '../../../shared/src/ports/object-store.js';
import { type FakeOpenAI, startFakeOpenAI } from '../../support/fake-openai-server.js';

const DOCS = fileURLToPath(new URL('../../../examples/docs', import.meta.url));

/**
 * Embeddings on an Ollama-like server, chat on a vLLM-like one, the judge on a third named with `model@name`:
 * every request reaches its own server with its own key.
 */
describe('an experiment whose models live on different endpoints', () => {
  let embeddings: FakeOpenAI;
  let chat: FakeOpenAI;
  let judge: FakeOpenAI;
  let dir: string;
  let runtime: LocalRuntime;
  let artefacts: ExperimentArtefacts;
  let board: LeaderboardEntry[];

  beforeAll(async () => {
    embeddings = await startFakeOpenAI({ flavor: 'ollama', dimension: 48 });
    chat = await startFakeOpenAI({
      flavor: 'vllm',
      chatResponder: () => 'The cooperative operates on the Halvorsen river.',
    });
    judge = await startFakeOpenAI({ chatResponder: () => '{"score": 4, "rationale": "relevant"}' });
    dir = mkdtempSync(join(tmpdir(), 'ai4rag-mixed-'));
    runtime = createLocalRuntime({
      dataDir: dir,
      documentsDir: DOCS,
      inMemory: true,
      env: {
        AI4RAG_EMBEDDING_BASE_URL: embeddings.baseURL,
        AI4RAG_CHAT_BASE_URL: chat.baseURL,
        AI4RAG_CHAT_API_KEY: 'chat-key',
        AI4RAG_ENDPOINT_GRADER_BASE_URL: judge.baseURL,
        AI4RAG_ENDPOINT_GRADER_API_KEY: 'grader-key',
      },
    });
    await putJson(runtime.objectStore, 'experiments/mixed/input/benchmark.json', [
      {
        question: 'Which river does the cooperative operate on?',
        correct_answers: ['the Halvorsen river'],
        correct_answer_document_keys: ['about/company-overview.md'],
      },
    ]);
    const result = await runLocalExperiment({
      runtime,
      input: {
        experimentId: 'mixed',
        benchmarkKey: 'experiments/mixed/input/benchmark.json',
        maxEvals: 1,
        foundationModels: ['served-llama'],
        embeddingModels: ['nomic-like-embed'],
        judgeModel: 'grader-7b@grader',
        prices: {
          'served-llama': { input: 1, output: 2 },
          'grader-7b': { input: 0.5, output: 1 },
          'nomic-like-embed': { input: 0.1 },
        },
        searchSpace: { chunk_size: [512], chunk_overlap: [128], number_of_chunks: [3] },
      },
    });
    artefacts = (result.output as { artefacts: ExperimentArtefacts }).artefacts;
    board = await getJson<LeaderboardEntry[]>(
      runtime.objectStore,
      ledgerKeys('experiments/mixed/').leaderboard,
    );
  }, 240_000);
  afterAll(async () => {
    await runtime?.close();
    for (const f of [embeddings, chat, judge]) await f?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('embeds on the embedding endpoint, answers on the chat endpoint and judges on the named one', () => {
    // Assess
    expect(artefacts.failed).toBe(0);
    const paths = (f: FakeOpenAI) => new Set(f.requests.map((r) => r.path));
    expect(paths(embeddings)).toEqual(new Set(['/v1/embeddings']));
    expect(paths(chat)).toEqual(new Set(['/v1/chat/completions']));
    expect(paths(judge)).toEqual(new Set(['/v1/chat/completions']));
    const models = (f: FakeOpenAI) =>
      new Set(f.requests.map((r) => (r.body as { model?: string } | undefined)?.model));
    expect(models(embeddings)).toEqual(new Set(['nomic-like-embed']));
    expect(models(chat)).toEqual(new Set(['served-llama']));
    expect(models(judge)).toEqual(new Set(['grader-7b']));
    const auth = (f: FakeOpenAI) => new Set(f.requests.map((r) => r.headers.authorization));
    expect(auth(chat)).toEqual(new Set(['Bearer chat-key']));
    expect(auth(judge)).toEqual(new Set(['Bearer grader-key']));
  });

  it('reports the trial’s tokens and cost per model (a model@endpoint priced as its bare id)', () => {
    // Assess
    const usage = board[0]?.usage;
    const byModel = new Map((usage?.models ?? []).map((m) => [m.model_id, m]));
    expect([...byModel.keys()].sort()).toEqual([
      'grader-7b@grader',
      'nomic-like-embed',
      'served-llama',
    ]);
    for (const m of byModel.values()) {
      expect(m.prompt_tokens).toBeGreaterThan(0);
      expect(m.cost_usd).toBeGreaterThan(0);
    }
    const chatTokens = byModel.get('served-llama');
    const expected =
      Math.round(
        (((chatTokens?.prompt_tokens ?? 0) * 1 + (chatTokens?.completion_tokens ?? 0) * 2) / 1e6) *
          1e6,
      ) / 1e6;
    expect(chatTokens?.cost_usd).toBe(expected);
    expect(usage?.cost_usd).toBeGreaterThan(0);
  });
});
