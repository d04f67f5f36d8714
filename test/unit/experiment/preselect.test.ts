import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadDocuments } from '../../../shared/src/documents/load.js';
import type { LoadedDocument } from '../../../shared/src/documents/types.js';
import { FeatureHashEmbedder } from '../../../shared/src/embeddings/feature-hash.js';
import type { BenchmarkQuestion } from '../../../shared/src/evaluation/benchmark.js';
import { preselectModels } from '../../../shared/src/experiment/preselect.js';
import { LocalExtractiveModel } from '../../../shared/src/generation/local-extractive.js';
import type { FoundationModel } from '../../../shared/src/generation/types.js';
import { PreSelectionError } from '../../../shared/src/optimizer/preselection.js';
import {
  createTestExperimentDeps,
  type TestExperimentDeps,
} from '../../support/experiment-deps.js';

const DOCS = fileURLToPath(new URL('../../../examples/docs', import.meta.url));

/** A model that always answers the same words, whatever the context. */
function fixedModel(modelId: string, text: string): FoundationModel {
  return {
    modelId,
    chat: async () => ({ content: text }),
    async *chatStream() {
      yield text;
    },
  };
}

describe('preselectModels', () => {
  let deps: TestExperimentDeps;
  let documents: LoadedDocument[];
  let questions: BenchmarkQuestion[];
  const messages: string[] = [];

  beforeAll(async () => {
    deps = await createTestExperimentDeps(DOCS);
    documents = (await loadDocuments([DOCS])).documents;
    const key = documents[0]?.key as string;
    const sentence = (documents[0]?.text.split(/(?<=\.)\s/)[0] ?? '').trim();
    questions = [0, 1, 2, 3, 4, 5].map((i) => ({
      questionId: `q${i}`,
      question: sentence,
      correctAnswers: [sentence],
      documentKeys: [key],
    }));
    deps.model = async (id) =>
      id === 'good' ? new LocalExtractiveModel() : fixedModel(id, 'zebra umbrella');
    deps.embedder = async (id) => {
      if (id === 'broken') throw new Error('endpoint down');
      return new FeatureHashEmbedder({ dimension: id === 'small' ? 64 : 128 });
    };
  });
  afterAll(async () => {
    await deps?.close();
  });

  it('keeps the models of the best pairs and drops an embedding model that cannot index', async () => {
    // Act
    const selected = await preselectModels({
      deps,
      experimentId: 'mps1',
      documents,
      questions,
      foundationModels: ['bad1', 'good', 'bad2', 'bad3'],
      embeddingModels: ['broken', 'small', 'large'],
      nFoundation: 1,
      nEmbedding: 2,
      log: (_level, message) => messages.push(message),
    });

    // Assess
    expect(selected.foundationModels).toEqual(['good']);
    expect([...selected.embeddingModels].sort()).toEqual(['large', 'small']);
    expect(messages.some((m) => m.includes("'broken' dropped"))).toBe(true);
  });

  it('fails with PreSelectionError when no pair can be scored', async () => {
    // Act
    const run = preselectModels({
      deps,
      experimentId: 'mps2',
      documents,
      questions,
      foundationModels: ['good'],
      embeddingModels: ['broken'],
      nFoundation: 1,
      nEmbedding: 1,
      log: () => undefined,
    });

    // Assess
    await expect(run).rejects.toBeInstanceOf(PreSelectionError);
  });
});
