/**
 * ai4rag's models pre-selection (spec 3.4), run by the prepare step when more than 3 foundation or 2 embedding
 * models are given: every pair answers 5 sampled questions (seed 17) with one fixed pattern (recursive 512/128,
 * simple vector retrieval of 3 chunks) over the documents those questions cite, and the models of the best pairs
 * are kept.
 */
import { chunkDocument } from '../chunking/chunker.js';
import type { AI4RAGChunk } from '../chunking/types.js';
import type { LoadedDocument } from '../documents/types.js';
import type { Embedder } from '../embeddings/types.js';
import type { BenchmarkQuestion } from '../evaluation/benchmark.js';
import { scoreEvaluationData } from '../evaluation/score.js';
import { SimpleRAG } from '../generation/rag-template.js';
import {
  type ModelSelection,
  type PairScore,
  PreSelectionError,
  sampleQuestions,
  selectModels,
} from '../optimizer/preselection.js';
import { Retriever } from '../retrieval/retriever.js';
import { mapLimit } from '../util/concurrency.js';
import type { VectorStore } from '../vectorstores/types.js';
import { evaluationItem, sha256Hex } from './params.js';
import type { ExperimentDeps } from './steps.js';

/** The fixed pattern of pre-selection (ai4rag's MPS constants). */
export const PRESELECTION_PATTERN = Object.freeze({
  chunking: Object.freeze({ method: 'recursive' as const, chunkSize: 512, chunkOverlap: 128 }),
  numberOfChunks: 3,
  questionConcurrency: 10,
});

/** Options of {@link preselectModels}. */
export interface PreselectOptions {
  deps: ExperimentDeps;
  experimentId: string;
  documents: readonly LoadedDocument[];
  questions: readonly BenchmarkQuestion[];
  foundationModels: readonly string[];
  embeddingModels: readonly string[];
  nFoundation: number;
  nEmbedding: number;
  /** Status messages (warnings for dropped models). */
  log: (level: 'info' | 'warning', message: string) => void;
}

/**
 * Scores every foundation × embedding pair on the fixed pattern and keeps the models of the best pairs. An
 * embedding model whose index cannot be built (after one retry) is dropped; a foundation model that fails with an
 * embedding model scores nothing for that pair.
 * @throws {PreSelectionError} when no pair could be scored.
 */
export async function preselectModels(options: PreselectOptions): Promise<ModelSelection> {
  const { deps, log } = options;
  const sample = sampleQuestions(options.questions);
  const cited = new Set(sample.flatMap((q) => q.documentKeys));
  const docs = options.documents.filter((d) => cited.has(d.key));
  const unmatched = [...cited].filter((k) => !options.documents.some((d) => d.key === k));
  if (unmatched.length > 0) {
    log('warning', `Pre-selection: benchmark keys with no document: ${unmatched.join(', ')}.`);
  }
  const corpus = docs.length > 0 ? docs : options.documents;
  const chunks: AI4RAGChunk[] = corpus.flatMap((d) =>
    chunkDocument(d, PRESELECTION_PATTERN.chunking),
  );
  const pairs: PairScore[] = [];
  for (const [i, embeddingModel] of options.embeddingModels.entries()) {
    let store: VectorStore | undefined;
    let embedder: Embedder | undefined;
    const collection = `ai4rag_mps_${sha256Hex(`${options.experimentId}|${i}|${embeddingModel}`).slice(0, 16)}`;
    for (let attempt = 0; attempt < 2 && store === undefined; attempt++) {
      try {
        embedder = await deps.embedder(embeddingModel);
        const s = await deps.openStore(collection, embedder, { createIfMissing: true });
        await s.addChunks(chunks);
        store = s;
      } catch (error) {
        if (attempt === 1) {
          log(
            'warning',
            `Pre-selection: embedding model '${embeddingModel}' dropped, indexing failed: ${(error as Error).message}`,
          );
        }
      }
    }
    if (store === undefined) continue;
    try {
      for (const foundationModel of options.foundationModels) {
        try {
          const rag = new SimpleRAG({
            retriever: new Retriever(store, {
              numberOfChunks: PRESELECTION_PATTERN.numberOfChunks,
              searchMode: 'vector',
            }),
            model: await deps.model(foundationModel),
          });
          const answers = await mapLimit(sample, PRESELECTION_PATTERN.questionConcurrency, (q) =>
            rag.generate(q.question),
          );
          const scored = scoreEvaluationData(
            answers.map((a, qi) =>
              evaluationItem(sample[qi] as BenchmarkQuestion, a.answer, a.referenceDocuments),
            ),
          );
          const overall = scored.metrics.find((m) => m.name === 'overall_score');
          pairs.push({ foundationModel, embeddingModel, score: overall?.scores.mean ?? null });
        } catch (error) {
          pairs.push({ foundationModel, embeddingModel, score: null });
          log(
            'warning',
            `Pre-selection: '${foundationModel}' failed with '${embeddingModel}': ${(error as Error).message}`,
          );
        }
      }
    } finally {
      await store.drop().catch(() => undefined);
    }
  }
  if (!pairs.some((p) => p.score !== null)) {
    throw new PreSelectionError(
      'Models pre-selection failed: no foundation/embedding model pair could be evaluated.',
    );
  }
  return selectModels(pairs, options.nFoundation, options.nEmbedding);
}
