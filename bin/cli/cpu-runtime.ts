/**
 * Puts a runtime's CPU-bound models on a worker pool (`shared/src/runtime/cpu-pool.ts`): its local embedders and
 * the local extractive model answer from worker threads, so the main thread (the HTTP server's event loop, the
 * experiment's trials) stays free. Remote models are left as they are: they wait on the network, not the CPU.
 */
import type { Runtime } from '../../functions/_shared/runtime.js';
import type { Embedder } from '../../shared/src/embeddings/types.js';
import { ValidationError } from '../../shared/src/errors.js';
import { LOCAL_EXTRACTIVE_MODEL_ID } from '../../shared/src/generation/local-extractive.js';
import type { FoundationModel } from '../../shared/src/generation/types.js';
import {
  type CpuPool,
  createCpuPool,
  PooledEmbedder,
  PooledExtractiveModel,
} from '../../shared/src/runtime/cpu-pool.js';

/** Whether an embedder is computed in process from its model id (the feature-hash models). */
function isLocalEmbedder(embedder: Embedder): boolean {
  return embedder.modelId === 'local' || embedder.modelId.startsWith('local/');
}

/**
 * Replaces `runtime.embedder` and `runtime.model` with factories giving the pooled equivalent of every local
 * model (one adapter per model, so stores cached per embedder keep one instance). Returns the runtime.
 * @example usePool(runtime, createCpuPool({ size: 2 }))
 */
export function usePool<R extends Runtime>(runtime: R, pool: CpuPool): R {
  const inner = { embedder: runtime.embedder, model: runtime.model };
  const embedders = new WeakMap<Embedder, Embedder>();
  const models = new WeakMap<FoundationModel, FoundationModel>();
  const pooled: Pick<Runtime, 'embedder' | 'model'> = {
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

/** A pool of `workers` threads (default one per core), or none for 0. */
export function poolFor(workers: number | undefined): CpuPool | undefined {
  return workers === 0 ? undefined : createCpuPool(workers === undefined ? {} : { size: workers });
}
