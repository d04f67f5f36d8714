/**
 * Puts a runtime's CPU-bound models on a worker pool (`shared/src/runtime/cpu-pool.ts`): its local embedders and
 * the local extractive model answer from worker threads, so the main thread (the HTTP server's event loop, the
 * experiment's trials) stays free. Remote models are left as they are: they wait on the network, not the CPU.
 */
import type { Runtime } from '../../functions/_shared/runtime.js';
import type { Embedder } from '../../shared/src/embeddings/types.js';
import { ValidationError } from '../../shared/src/errors.js';
import {
  extractPrompt,
  LOCAL_EXTRACTIVE_MODEL_ID,
  LocalExtractiveModel,
  type LocalExtractiveModelOptions,
} from '../../shared/src/generation/local-extractive.js';
import { DEFAULT_TEMPLATES } from '../../shared/src/generation/templates.js';
import type {
  ChatMessage,
  ChatOptions,
  ChatResult,
  FoundationModel,
} from '../../shared/src/generation/types.js';
import {
  type CpuPool,
  createCpuPool,
  type ExtractiveSpec,
  PooledEmbedder,
  PooledExtractiveModel,
} from '../../shared/src/runtime/cpu-pool.js';
import { analyze } from '../../shared/src/text/analyzer.js';

/** Whether an embedder is computed in process from its model id (the feature-hash models). */
function isLocalEmbedder(embedder: Embedder): boolean {
  return embedder.modelId === 'local' || embedder.modelId.startsWith('local/');
}

/**
 * The local extractive model of some options (templates, term statistics) answering in the pool, with the answers,
 * usage and errors of `new LocalExtractiveModel(options)`. Term statistics do not cross threads whole (a store's
 * span its whole vocabulary), but the model only weighs the question's terms: each call reads the question back out of
 * the prompt (as the model does) and sends those terms' document frequencies. Statistics without counts
 * (`documentFrequency`) keep the model in process.
 * @throws {ValidationError} for options the in-process model refuses.
 */
export function pooledLocalModel(
  pool: CpuPool,
  options: LocalExtractiveModelOptions = {},
): FoundationModel {
  const stats = options.termStats;
  const df = stats?.documentFrequency?.bind(stats);
  if (stats !== undefined && df === undefined) return new LocalExtractiveModel(options);
  const templates = options.templates ?? DEFAULT_TEMPLATES;
  const base: ExtractiveSpec = {
    templates,
    ...(options.maxCompletionTokens !== undefined && {
      maxCompletionTokens: options.maxCompletionTokens,
    }),
    ...(options.minCoverage !== undefined && { minCoverage: options.minCoverage }),
    ...(options.minDocumentCoverage !== undefined && {
      minDocumentCoverage: options.minDocumentCoverage,
    }),
  };
  // The constructor checks the options once, with the in-process model's errors.
  const plain = new PooledExtractiveModel(pool, base);
  if (stats === undefined || df === undefined) return plain;
  const modelFor = (messages: ChatMessage[]): PooledExtractiveModel => {
    const { question } = extractPrompt(messages, templates);
    const counts = new Map(analyze(question).map((term) => [term, df(term)]));
    return new PooledExtractiveModel(pool, {
      ...base,
      termCounts: { documents: stats.documents, df: counts },
    });
  };
  return {
    modelId: LOCAL_EXTRACTIVE_MODEL_ID,
    chat: (messages: ChatMessage[], chatOptions?: ChatOptions): Promise<ChatResult> =>
      modelFor(messages).chat(messages, chatOptions),
    chatStream: (messages: ChatMessage[], chatOptions?: ChatOptions): AsyncIterable<string> =>
      modelFor(messages).chatStream(messages, chatOptions),
  };
}

/**
 * Replaces `runtime.embedder` and `runtime.model` with factories giving the pooled equivalent of every local
 * model (one adapter per model, so stores cached per embedder keep one instance), and `runtime.localModel` with
 * {@link pooledLocalModel} (the served and the experiments' extractive answers). Returns the runtime.
 * @example usePool(runtime, createCpuPool({ size: 2 }))
 */
export function usePool<R extends Runtime>(runtime: R, pool: CpuPool): R {
  const inner = { embedder: runtime.embedder, model: runtime.model };
  const embedders = new WeakMap<Embedder, Embedder>();
  const models = new WeakMap<FoundationModel, FoundationModel>();
  const pooled: Pick<Runtime, 'embedder' | 'model' | 'localModel'> = {
    async embedder(modelId) {
      const embedder = await inner.embedder(modelId);
      if (!isLocalEmbedder(embedder)) return embedder;
      let adapter = embedders.get(embedder);
      if (adapter === undefined) {
        adapter = new PooledEmbedder(pool, embedder);
        embedders.set(embedder, adapter);
      }
      return adapter;
    },
    async model(modelId, role) {
      const model = await inner.model(modelId, role);
      if (model.modelId !== LOCAL_EXTRACTIVE_MODEL_ID) return model;
      let adapter = models.get(model);
      if (adapter === undefined) {
        adapter = new PooledExtractiveModel(pool);
        models.set(model, adapter);
      }
      return adapter;
    },
    localModel: (options) => pooledLocalModel(pool, options),
  };
  return Object.assign(runtime, pooled);
}

/**
 * `--workers N` as a pool size: `undefined` → one per core (`os.availableParallelism()`), 0 → no pool.
 * @throws {ValidationError} for a value outside 0..64.
 */
export function workersOption(value: string | undefined, flag = '--workers'): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value) || Number(value) > 64) {
    throw new ValidationError(`${flag} must be an integer from 0 to 64, got "${value}"`);
  }
  return Number(value);
}

/** A pool of `workers` threads (default one per core), or none for 0; `keepWarm` for a server (see CpuPoolOptions). */
export function poolFor(
  workers: number | undefined,
  options: { keepWarm?: boolean } = {},
): CpuPool | undefined {
  if (workers === 0) return undefined;
  return createCpuPool({ ...(workers !== undefined && { size: workers }), ...options });
}
