/**
 * The runtime of one machine (the CLI, `ai4rag serve`, tests): files instead of S3, in-process queues instead of
 * SQS, PGlite instead of RDS. PGlite is loaded when the first store opens (`loadLocalStore`), so importing this
 * module costs little and a Lambda bundle, which never builds this runtime, carries no PGlite.
 */
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseEndpoints } from '../../shared/src/endpoints.js';
import { NotFoundError } from '../../shared/src/errors.js';
import { FsObjectStore } from '../../shared/src/ports/object-store.js';
import { InProcessQueue } from '../../shared/src/ports/queue.js';
import type { SqlClient } from '../../shared/src/vectorstores/sql-client.js';
import type { VectorStore } from '../../shared/src/vectorstores/types.js';
import { loadLocalStore } from './bundle.js';
import { type EnvRecord, parseFunctionEnv } from './env.js';
import {
  type ApiKeySource,
  embedderFactory,
  endpointKeys,
  inProcessLocalModel,
  keyedMemo,
  memo,
  modelFactory,
  type QueueName,
  type Runtime,
  RuntimeClosedError,
  rerankerFactory,
  runtimeConfig,
} from './runtime-common.js';

/** Options of {@link createLocalRuntime}. */
export interface LocalRuntimeOptions {
  /** Root of the local data: `<dataDir>/artifacts`, `<dataDir>/documents`, PGlite in `<dataDir>/pglite`. */
  dataDir: string;
  /** Folder of the documents (instead of `<dataDir>/documents`). */
  documentsDir?: string;
  /** Environment record (collection, models, OPENAI_*). @default {} */
  env?: EnvRecord;
  /** Keep the vector store in memory (tests). @default false */
  inMemory?: boolean;
  /**
   * Where collections live: PGlite in `<dataDir>/pglite` (default), a PostgreSQL server with pgvector
   * (`PGVECTOR_*` in `env`) or Milvus (`MILVUS_*` in `env`); each server collection is opened with its own
   * connection, owned by the store.
   * @default 'pglite'
   */
  store?: 'pglite' | 'pgvector' | 'milvus';
  /** Wraps the embedded database's client when it opens (`ai4rag serve` yields to its event loop per statement). */
  wrapSqlClient?: (client: SqlClient) => SqlClient;
}

/** The local runtime, with its in-process queues exposed so the caller binds them to the local handlers. */
export interface LocalRuntime extends Runtime {
  readonly queues: Readonly<Record<QueueName, InProcessQueue>>;
}

/**
 * The runtime of one machine: files instead of S3, in-process queues instead of SQS, PGlite (with pgvector) in
 * `<dataDir>/pglite` shared by every collection. Bind the queues to the handlers (`bindLocalQueues`) to run the
 * whole knowledge-base flow in process.
 * @example const runtime = createLocalRuntime({ dataDir: '.ai4rag' });
 */
export function createLocalRuntime(options: LocalRuntimeOptions): LocalRuntime {
  const env = options.env ?? {};
  const kind = options.store ?? 'pglite';
  const fenv = parseFunctionEnv({ ...env, AI4RAG_STORE: kind });
  const config = runtimeConfig(fenv);
  const dataDir = resolve(options.dataDir);
  const apiKey: ApiKeySource = async () => fenv.openaiApiKey;
  const endpoints = parseEndpoints(env);
  const keyOf = endpointKeys(env, apiKey);
  const client = memo<SqlClient>(async () => {
    const { openPglite } = await loadLocalStore();
    const wrap = options.wrapSqlClient ?? ((c: SqlClient) => c);
    if (options.inMemory) return wrap(await openPglite({}));
    mkdirSync(join(dataDir, 'pglite'), { recursive: true });
    return wrap(await openPglite({ dataDir: join(dataDir, 'pglite') }));
  });
  const stores = keyedMemo<VectorStore>();
  const openedStores: VectorStore[] = [];
  let closed = false;
  const queues = {
    ingest: new InProcessQueue('ingest'),
    chunk: new InProcessQueue('chunk'),
    embed: new InProcessQueue('embed'),
  };
  return {
    objectStore: new FsObjectStore(join(dataDir, 'artifacts')),
    documents: new FsObjectStore(options.documentsDir ?? join(dataDir, 'documents')),
    queues,
    queue: (name) => queues[name],
    embedder: embedderFactory(config, endpoints, keyOf, env),
    model: modelFactory(fenv, endpoints, keyOf),
    localModel: inProcessLocalModel,
    reranker: rerankerFactory(env, async () => fenv.rerankApiKey),
    openStore(collection, embedder, openOptions = {}) {
      if (closed) return Promise.reject(new RuntimeClosedError());
      const createIfMissing = openOptions.createIfMissing ?? false;
      const open = () =>
        stores(`${collection}\u0000${embedder.modelId}`, async () => {
          const { PgVectorStore, openServerStore } = await loadLocalStore();
          const store =
            kind === 'pglite'
              ? await PgVectorStore.create({
                  client: await client(),
                  embedder,
                  collectionName: collection,
                  createIfMissing,
                })
              : await openServerStore({
                  kind,
                  env,
                  embedder,
                  collectionName: collection,
                  createIfMissing,
                });
          openedStores.push(store);
          return store;
        });
      // A reader's open of a missing collection may be in flight when a writer asks (both share the cache
      // entry): the writer then creates it rather than failing with the reader's NotFoundError.
      return createIfMissing
        ? open().catch((error: unknown) => {
            if (error instanceof NotFoundError) return open();
            throw error;
          })
        : open();
    },
    config,
    async close() {
      closed = true;
      for (const store of openedStores.splice(0)) await store.close();
      await (await client.peek()?.catch(() => undefined))?.close();
    },
  };
}
