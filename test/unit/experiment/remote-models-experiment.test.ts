import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runLocalExperiment } from '../../../bin/cli/local-state-machine.js';
import { createLocalRuntime, type LocalRuntime } from '../../../functions/_shared/runtime.js';
import type { ExperimentArtefacts } from '../../../shared/src/experiment/steps.js';
import type { PatternPayload } from '../../../shared/src/experiment/types.js';
import { getJson, putJson } from '../../../shared/src/ports/object-store.js';
import { type FakeOpenAI, startFakeOpenAI } from '../../support/fake-openai-server.js';

const DOCS = fileURLToPath(new URL('../../../examples/docs', import.meta.url));

describe('an experiment with OpenAI-compatible models (real openai SDK, local fake server)', () => {
  let fake: FakeOpenAI;
  let dir: string;
  let runtime: LocalRuntime;
  let artefacts: ExperimentArtefacts;

  beforeAll(async () => {
    fake = await startFakeOpenAI({
      dimension: 32,
      chatResponder: (message) => {
        if (message.includes('## Response to evaluate'))
          return '{"score": 5, "rationale": "on topic"}';
        return message.includes('Mongolia')
          ? 'I cannot answer this question based on the provided documents.'
          : 'The cooperative operates on the Halvorsen river.';
      },
    });
    dir = mkdtempSync(join(tmpdir(), 'ai4rag-remote-'));
    runtime = createLocalRuntime({
      dataDir: dir,
      documentsDir: DOCS,
      inMemory: true,
      env: { OPENAI_BASE_URL: fake.baseURL, OPENAI_API_KEY: 'test-key' },
    });
    await putJson(runtime.objectStore, 'experiments/remote/input/benchmark.json', [
      {
        question: 'Which river does the cooperative operate on?',
        correct_answers: ['the Halvorsen river'],
        correct_answer_document_keys: ['about/company-overview.md'],
      },
      {
        question: 'What is the capital of Mongolia?',
        correct_answers: [],
        correct_answer_document_keys: [],
      },
    ]);
    const result = await runLocalExperiment({
      runtime,
      input: {
        experimentId: 'remote',
        benchmarkKey: 'experiments/remote/input/benchmark.json',
        maxEvals: 2,
        foundationModels: ['fake-chat'],
        embeddingModels: ['fake-embed'],
        judgeModel: 'fake-judge',
        searchSpace: { chunk_size: [512], chunk_overlap: [128], number_of_chunks: [3] },
      },
    });
    artefacts = (result.output as { artefacts: ExperimentArtefacts }).artefacts;
  }, 240_000);
  afterAll(async () => {
    await runtime?.close();
    await fake?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('embeds, answers and judges through the endpoint, and records the models in the pattern', async () => {
    // Prepare
    const pattern = await getJson<PatternPayload>(
      runtime.objectStore,
      artefacts.patternKey as string,
    );
    const paths = new Set(fake.requests.map((r) => r.path));

    // Assess
    expect(artefacts.failed).toBe(0);
    expect(paths.has('/v1/embeddings')).toBe(true);
    expect(paths.has('/v1/chat/completions')).toBe(true);
    expect(pattern.settings.embedding).toMatchObject({
      model_id: 'fake-embed',
      embedding_params: { embedding_dimension: 32 },
    });
    expect(pattern.settings.generation.model_id).toBe('fake-chat');
    expect(pattern.evaluation.metrics.find((m) => m.name === 'answer_relevance')).toMatchObject({
      evaluator: 'judge',
      model_id: 'fake-judge',
      scores: { mean: 1 },
    });
    expect(
      pattern.evaluation.metrics.find((m) => m.name === 'abstention_accuracy')?.scores.mean,
    ).toBe(1);
  });
});
