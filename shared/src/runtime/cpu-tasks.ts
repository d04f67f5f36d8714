/**
 * The CPU-bound work a worker thread of the {@link CpuPool} runs (see `cpu-pool.ts`): local embeddings and the
 * local extractive model's answers, computed by the very classes the main thread would use, so the results are
 * the same bytes. Errors are returned as data (name, message): a class such as `ValidationError` does not survive
 * the structured clone between threads, and the pool rebuilds it on the calling side.
 */
import { createOfflineEmbedder } from '../embeddings/local.js';
import type { Embedder } from '../embeddings/types.js';
import {
  LocalExtractiveModel,
  type LocalExtractiveModelOptions,
} from '../generation/local-extractive.js';
import type { PromptTemplates } from '../generation/templates.js';
import { termStatsFromCounts } from '../generation/term-stats.js';
import type { ChatMessage, ChatResult } from '../generation/types.js';

/**
 * Corpus term statistics in a form that crosses threads: the number of texts and each analyzed term's document
 * frequency (what `buildTermStats` counts). A term absent from `df` occurs in no text.
 */
export interface TermCounts {
  documents: number;
  df: ReadonlyMap<string, number>;
}

/** The settings of a local extractive model built in a worker (its constructor options, counts for stats). */
export interface ExtractiveSpec {
  templates?: PromptTemplates;
  maxCompletionTokens?: number;
  minCoverage?: number;
  minDocumentCoverage?: number;
  termCounts?: TermCounts;
}

/** One unit of work for a worker. */
export type CpuTask =
  | { kind: 'embed'; model: string; texts: string[] }
  | {
      kind: 'chat';
      model: ExtractiveSpec;
      messages: ChatMessage[];
      options: { maxCompletionTokens?: number; temperature?: number };
    };

/** An error thrown by a task, as data. */
export interface TaskError {
  name: string;
  message: string;
}

/** What a worker answers: the embeddings as one flat Float64Array (row-major), or the chat result. */
export type CpuTaskResult =
  | { ok: true; kind: 'embed'; dimension: number; vectors: Float64Array }
  | { ok: true; kind: 'chat'; result: ChatResult }
  | { ok: false; error: TaskError };

const embedders = new Map<string, Embedder>();

/** The model of a spec; the model is rebuilt per task (its construction is cheap next to an answer). */
function modelOf(spec: ExtractiveSpec): LocalExtractiveModel {
  const counts = spec.termCounts;
  const options: LocalExtractiveModelOptions = {
    ...(spec.templates !== undefined && { templates: spec.templates }),
    ...(spec.maxCompletionTokens !== undefined && {
      maxCompletionTokens: spec.maxCompletionTokens,
    }),
    ...(spec.minCoverage !== undefined && { minCoverage: spec.minCoverage }),
    ...(spec.minDocumentCoverage !== undefined && {
      minDocumentCoverage: spec.minDocumentCoverage,
    }),
    ...(counts !== undefined && {
      termStats: termStatsFromCounts(counts.documents, (term) => counts.df.get(term) ?? 0),
    }),
  };
  return new LocalExtractiveModel(options);
}

/**
 * Runs one task (the worker's entry point, also callable in process).
 * @example await runCpuTask({ kind: 'embed', model: 'local', texts: ['a b'] })
 */
export async function runCpuTask(task: CpuTask): Promise<CpuTaskResult> {
  try {
    if (task.kind === 'embed') {
      let embedder = embedders.get(task.model);
      if (embedder === undefined) {
        embedder = createOfflineEmbedder(task.model);
        embedders.set(task.model, embedder);
      }
      const rows = await embedder.embedDocuments(task.texts);
      const vectors = new Float64Array(rows.length * embedder.dimension);
      rows.forEach((row, i) => {
        vectors.set(row, i * embedder.dimension);
      });
      return { ok: true, kind: 'embed', dimension: embedder.dimension, vectors };
    }
    if (task.kind === 'chat') {
      const result = await modelOf(task.model).chat(task.messages, task.options);
      return { ok: true, kind: 'chat', result };
    }
    return {
      ok: false,
      error: { name: 'Error', message: `unknown task ${JSON.stringify(task)}` },
    };
  } catch (error) {
    const e = error instanceof Error ? error : new Error(String(error));
    return { ok: false, error: { name: e.name, message: e.message } };
  }
}

export default runCpuTask;
