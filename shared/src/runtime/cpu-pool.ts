/**
 * A pool of worker threads (piscina) for the CPU-bound work of one machine — local embeddings and the local
 * extractive model — and adapters that put it behind the existing ports ({@link Embedder}, {@link FoundationModel}),
 * so callers stay unchanged. Results are the same as in process (the workers run the same classes; vectors cross
 * as Float64Array, which holds every JS number exactly); an error thrown in a worker is rethrown here as the same
 * class (ValidationError, NotFoundError, …) with the same message; a worker that dies fails its task with
 * {@link WorkerCrashError} and is replaced.
 */
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import type { Embedder } from '../embeddings/types.js';
import { Ai4ragError, NotFoundError, ValidationError } from '../errors.js';
import { LOCAL_EXTRACTIVE_MODEL_ID, LocalExtractiveModel } from '../generation/local-extractive.js';
import type { ChatMessage, ChatOptions, ChatResult, FoundationModel } from '../generation/types.js';
import type { CpuTask, CpuTaskResult, ExtractiveSpec, TaskError } from './cpu-tasks.js';

export type { ExtractiveSpec, TermCounts } from './cpu-tasks.js';

/** A worker thread died (or could not start) while running a task; the pool starts another for the next task. */
export class WorkerCrashError extends Ai4ragError {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'WorkerCrashError';
  }
}

/** The pool was closed: it runs no more tasks. */
export class PoolClosedError extends Ai4ragError {
  constructor(message = 'the worker pool is closed') {
    super(message);
    this.name = 'PoolClosedError';
  }
}

/** Options of {@link createCpuPool}. */
export interface CpuPoolOptions {
  /** Worker threads (≥ 1). @default os.availableParallelism() */
  size?: number;
  /** Worker module (tests); it must default-export a task runner like `runCpuTask`. @default the tasks module */
  filename?: string;
  /**
   * Keep every thread running, never stopped when idle (a server: a burst after a quiet minute would otherwise wait
   * for threads to start again). @default false: threads start on demand and stop after a minute idle
   */
  keepWarm?: boolean;
}

/** A running pool. */
export interface CpuPool {
  /** Worker threads at most. */
  readonly size: number;
  /**
   * Runs a task in a worker; rejects with the task's own error, {@link WorkerCrashError}, or
   * {@link PoolClosedError} once closed.
   */
  run(task: CpuTask, signal?: AbortSignal): Promise<CpuTaskResult & { ok: true }>;
  /**
   * Starts every thread and resolves once each has loaded the tasks and run one: a server calls it before it
   * listens, so the first requests do not share the cores with threads loading their modules (~0.5 s each).
   */
  warm(): Promise<void>;
  /** Stops every worker (tasks still queued are rejected). Idempotent. */
  close(): Promise<void>;
}

/** The default worker module: the loader of the TypeScript sources, or the built tasks module. */
function defaultWorkerFile(): string {
  const typescript = import.meta.url.endsWith('.ts');
  return fileURLToPath(
    new URL(typescript ? './cpu-worker.mjs' : './cpu-tasks.js', import.meta.url),
  );
}

const ERROR_CLASSES: Record<string, new (message: string) => Error> = {
  ValidationError,
  NotFoundError,
  Ai4ragError,
  RangeError,
  TypeError,
};

/** The error a task reported, as the class it was thrown as (plain Error for the others, same name and message). */
function rebuild(error: TaskError): Error {
  const Class = ERROR_CLASSES[error.name];
  if (Class !== undefined) return new Class(error.message);
  const e = new Error(error.message);
  e.name = error.name;
  return e;
}

/**
 * Starts a pool of `size` worker threads (started on demand and stopped after a minute idle, or with `keepWarm` kept
 * running).
 * @throws {RangeError} when `size` is not an integer ≥ 1.
 * @example const pool = createCpuPool({ size: 2 }); … await pool.close();
 */
export function createCpuPool(options: CpuPoolOptions = {}): CpuPool {
  const size = options.size ?? availableParallelism();
  if (!Number.isInteger(size) || size < 1) {
    throw new RangeError(`worker pool size must be an integer ≥ 1, got ${size}`);
  }
  const piscina = new Piscina<CpuTask, CpuTaskResult>({
    filename: options.filename ?? defaultWorkerFile(),
    minThreads: options.keepWarm === true ? size : 0,
    maxThreads: size,
    // Workers stay up between bursts of requests (starting one loads the TypeScript sources: ~0.5 s).
    idleTimeout: 60_000,
  });
  let closed: Promise<void> | undefined;
  const pool: CpuPool = {
    size,
    async run(task, signal) {
      if (closed !== undefined) throw new PoolClosedError();
      signal?.throwIfAborted();
      let answer: CpuTaskResult;
      try {
        answer = await piscina.run(task, signal ? { signal } : {});
      } catch (error) {
        if (signal?.aborted) throw signal.reason;
        if (closed !== undefined) throw new PoolClosedError();
        throw new WorkerCrashError(
          `worker thread failed running a ${task.kind} task: ${(error as Error).message}`,
          { cause: error },
        );
      }
      if (!answer.ok) throw rebuild(answer.error);
      return answer;
    },
    async warm() {
      // One task per thread at once: every thread starts (the pool adds threads while tasks queue) and runs one.
      await Promise.all(
        Array.from({ length: size }, () =>
          pool.run({ kind: 'embed', model: 'local', texts: ['warm up'] }),
        ),
      );
      // A task can finish on a thread that started first before the last thread is ready: wait for that one too.
      for (let i = 0; i < WARM_POLLS && piscina.idleThreads < size; i += 1) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
    close() {
      closed ??= piscina.destroy();
      return closed;
    },
  };
  return pool;
}

/** 20 ms polls {@link CpuPool.warm} waits at most for the last thread to start (10 s). */
const WARM_POLLS = 500;

/** Texts per task when a batch is split across workers (smaller slices cost more in messages than they gain). */
const MIN_SLICE = 64;

/**
 * A local embedder whose vectors are computed in the pool: the same `modelId`, `dimension` and vectors as the
 * in-process embedder of that model id; a batch is split across the workers.
 * @example const embedder = new PooledEmbedder(pool, createOfflineEmbedder('local'));
 */
export class PooledEmbedder implements Embedder {
  readonly modelId: string;
  readonly dimension: number;
  readonly contextLength: number;
  readonly #pool: CpuPool;

  /** @param local the in-process embedder (a local model: its `modelId` names it to the workers). */
  constructor(pool: CpuPool, local: Embedder) {
    this.#pool = pool;
    this.modelId = local.modelId;
    this.dimension = local.dimension;
    this.contextLength = local.contextLength;
  }

  async #embed(texts: string[]): Promise<number[][]> {
    const answer = await this.#pool.run({ kind: 'embed', model: this.modelId, texts });
    if (answer.kind !== 'embed') throw new Error(`expected embeddings, got ${answer.kind}`);
    const { dimension, vectors } = answer;
    return Array.from({ length: texts.length }, (_, i) =>
      Array.from(vectors.subarray(i * dimension, (i + 1) * dimension)),
    );
  }

  async embedDocuments(texts: string[]): Promise<number[][]> {
    if (texts.length === 0) return [];
    const slice = Math.max(MIN_SLICE, Math.ceil(texts.length / this.#pool.size));
    const parts: Promise<number[][]>[] = [];
    for (let i = 0; i < texts.length; i += slice)
      parts.push(this.#embed(texts.slice(i, i + slice)));
    return (await Promise.all(parts)).flat();
  }

  async embedQuery(text: string): Promise<number[]> {
    const [vector] = await this.#embed([text]);
    return vector as number[];
  }
}

/**
 * The local extractive model ({@link LocalExtractiveModel}) answering in the pool: the same answers, usage and
 * errors as `new LocalExtractiveModel(options)` given the same options (term statistics as counts).
 * @throws {ValidationError} from the constructor for the options the in-process model refuses.
 * @example const model = new PooledExtractiveModel(pool, { templates });
 */
export class PooledExtractiveModel implements FoundationModel {
  readonly modelId = LOCAL_EXTRACTIVE_MODEL_ID;
  readonly #pool: CpuPool;
  readonly #spec: ExtractiveSpec;

  constructor(pool: CpuPool, spec: ExtractiveSpec = {}) {
    // The same checks, and errors, as the in-process model's constructor.
    new LocalExtractiveModel({
      ...(spec.maxCompletionTokens !== undefined && {
        maxCompletionTokens: spec.maxCompletionTokens,
      }),
      ...(spec.minCoverage !== undefined && { minCoverage: spec.minCoverage }),
      ...(spec.minDocumentCoverage !== undefined && {
        minDocumentCoverage: spec.minDocumentCoverage,
      }),
    });
    this.#pool = pool;
    this.#spec = spec;
  }

  async chat(messages: ChatMessage[], options: ChatOptions = {}): Promise<ChatResult> {
    const answer = await this.#pool.run(
      {
        kind: 'chat',
        model: this.#spec,
        messages,
        options: {
          ...(options.maxCompletionTokens !== undefined && {
            maxCompletionTokens: options.maxCompletionTokens,
          }),
          ...(options.temperature !== undefined && { temperature: options.temperature }),
        },
      },
      options.signal,
    );
    if (answer.kind !== 'chat') throw new Error(`expected an answer, got ${answer.kind}`);
    return answer.result;
  }

  /** The answer of {@link chat} as word chunks, the usage to `options.onUsage` last (as the in-process model). */
  async *chatStream(messages: ChatMessage[], options: ChatOptions = {}): AsyncIterable<string> {
    const { content, usage } = await this.chat(messages, options);
    for (const piece of content.match(/\S+\s*|\s+/g) ?? []) {
      options.signal?.throwIfAborted();
      yield piece;
    }
    if (usage !== undefined) options.onUsage?.(usage);
  }
}
