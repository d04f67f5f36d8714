/**
 * Local experiment dependencies for tests: one in-memory PGlite shared by every collection, the local embedder
 * and extractive model, an in-memory artifacts store and a folder of documents.
 */
import { createEmbedder } from '../../shared/src/embeddings/factory.js';
import type { Embedder } from '../../shared/src/embeddings/types.js';
import type { ExperimentDeps } from '../../shared/src/experiment/steps.js';
import { LocalExtractiveModel } from '../../shared/src/generation/local-extractive.js';
import { readChunkBatch } from '../../shared/src/ingest/batches.js';
import { FsObjectStore, MemoryObjectStore } from '../../shared/src/ports/object-store.js';
import { PgVectorStore } from '../../shared/src/vectorstores/pgvector/pgvector-store.js';
import { openPglite, type PgliteSqlClient } from '../../shared/src/vectorstores/sql-client.js';
import type { VectorStore } from '../../shared/src/vectorstores/types.js';

export interface TestExperimentDeps extends ExperimentDeps {
  artifacts: MemoryObjectStore;
  embedBatch(input: { collection: string; batchKey: string }): Promise<number>;
  close(): Promise<void>;
}

export async function createTestExperimentDeps(documentsRoot: string): Promise<TestExperimentDeps> {
  const client: PgliteSqlClient = await openPglite({});
  const stores = new Map<string, VectorStore>();
  const embedders = new Map<string, Embedder>();
  const artifacts = new MemoryObjectStore();
  const embedder = async (id: string): Promise<Embedder> => {
    let e = embedders.get(id);
    if (!e) {
      e = await createEmbedder(id);
      embedders.set(id, e);
    }
    return e;
  };
  const openStore: ExperimentDeps['openStore'] = async (collection, emb, options = {}) => {
    const key = `${collection}|${emb.modelId}`;
    let s = stores.get(key);
    if (!s) {
      s = await PgVectorStore.create({
        client,
        embedder: emb,
        collectionName: collection,
        ...(options.createIfMissing !== undefined && { createIfMissing: options.createIfMissing }),
      });
      stores.set(key, s);
    }
    return s;
  };
  return {
    artifacts,
    documents: new FsObjectStore(documentsRoot),
    storeKind: 'pglite',
    embedder,
    model: async () => new LocalExtractiveModel(),
    openStore,
    async embedBatch({ collection, batchKey }) {
      const batch = await readChunkBatch(artifacts, batchKey);
      const store = await openStore(collection, await embedder(batch.embeddingModel));
      return store.addChunks(batch.chunks);
    },
    async close() {
      for (const s of stores.values()) await s.close();
      await client.close();
    },
  };
}
