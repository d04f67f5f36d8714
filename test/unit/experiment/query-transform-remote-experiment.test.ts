import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runLocalExperiment } from '../../../bin/cli/local-state-machine.js';
import { createLocalRuntime, type LocalRuntime } from '../../../functions/_shared/runtime.js';
import { ledgerKeys, readState } from '../../../shared/src/experiment/ledger.js';
import type { LeaderboardEntry } from '../../../shared/src/experiment/types.js';
import { getJson, putJson } from '../../../shared/src/ports/object-store.js';
import { type FakeOpenAI, startFakeOpenAI } from '../../support/fake-openai-server.js';

const ANSWER = 'The cooperative operates on the Halvorsen river.';
const REWRITES = 'river of the cooperative\nwhere the barges sail';
const PASSAGE = 'The cooperative sails its barges on the Halvorsen river.';

describe('an experiment with multi_query and hyde through a chat model (local state machine)', () => {
  let fake: FakeOpenAI;
  let dir: string;
  let runtime: LocalRuntime;

  beforeAll(async () => {
    fake = await startFakeOpenAI({
      dimension: 16,
      chatResponder: (m) =>
        m.startsWith('Please write a passage')
          ? PASSAGE
          : m.startsWith('Write ')
            ? REWRITES
            : ANSWER,
    });
    dir = mkdtempSync(join(tmpdir(), 'ai4rag-qt-remote-exp-'));
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
    await putJson(runtime.objectStore, 'experiments/qt-remote/input/benchmark.json', [
      {
        question: 'Which river does the cooperative operate on?',
        correct_answers: ['the Halvorsen river'],
        correct_answer_document_keys: ['company.md'],
      },
    ]);
    await runLocalExperiment({
      runtime,
      input: {
        experimentId: 'qt-remote',
        benchmarkKey: 'experiments/qt-remote/input/benchmark.json',
        maxEvals: 3,
        foundationModels: ['fake-chat'],
        embeddingModels: ['fake-embed'],
        searchSpace: {
          chunk_size: [512],
          chunk_overlap: [128],
          number_of_chunks: [1],
          search_mode: ['vector'],
          query_transform: ['none', 'multi_query', 'hyde'],
        },
      },
    });
  }, 240_000);
  afterAll(async () => {
    await runtime?.close();
    await fake?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('asks the trial model for rewrites and a passage, and counts their tokens in a query_transform role', async () => {
    // Prepare
    const state = await readState(runtime.objectStore, 'experiments/qt-remote/');
    const board = await getJson<LeaderboardEntry[]>(
      runtime.objectStore,
      ledgerKeys('experiments/qt-remote/').leaderboard,
    );
    const chats = fake.requests
      .filter((r) => r.path === '/v1/chat/completions')
      .map((r) => (r.body as { messages: { content: string }[] }).messages.at(-1)?.content ?? '');
    // Assess
    expect(state.trials.map((t) => t.config.query_transform).sort()).toEqual([
      'hyde',
      'multi_query',
      'none',
    ]);
    expect(state.trials.every((t) => t.error === undefined)).toBe(true);
    expect(chats.filter((c) => c.startsWith('Write 3 different versions'))).toHaveLength(1);
    expect(chats.filter((c) => c.startsWith('Please write a passage'))).toHaveLength(1);
    const roles = (t: string) =>
      board
        .find((e) => (e.pattern.settings.retrieval.query_transform ?? 'none') === t)
        ?.usage?.models.map((m) => [m.role, m.model_id, m.calls]);
    // 'river of the cooperative\nwhere the barges sail' is 46 characters: 12 completion tokens
    expect(roles('multi_query')).toContainEqual(['query_transform', 'fake-chat', 1]);
    expect(
      board
        .find((e) => e.pattern.settings.retrieval.query_transform === 'multi_query')
        ?.usage?.models.find((m) => m.role === 'query_transform')?.completion_tokens,
    ).toBe(12);
    expect(roles('hyde')).toContainEqual(['query_transform', 'fake-chat', 1]);
    expect(roles('none')?.map((r) => r[0])).not.toContain('query_transform');
  });
});
