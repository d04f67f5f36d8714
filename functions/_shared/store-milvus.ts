/**
 * The deployed functions' Milvus / Zilliz Cloud store. Loaded through `loadMilvusOpener` (`bundle.ts`), so only
 * the Zilliz variant's bundles carry the Milvus SDK and its gRPC stack.
 */
import type { Embedder } from '../../shared/src/embeddings/types.js';
import { milvusConfigFromEnv } from '../../shared/src/vectorstores/milvus/config.js';
import { MilvusVectorStore } from '../../shared/src/vectorstores/milvus/milvus-store.js';
import type { VectorStore } from '../../shared/src/vectorstores/types.js';
import type { EnvRecord } from './env.js';

/**
 * Opens a collection at MILVUS_URI, authenticated with `token` (from its secret) when given, else MILVUS_TOKEN.
 * @throws {VectorStoreConfigError} (rejects) for invalid MILVUS_* settings.
 */
export function openMilvusStore(
  env: EnvRecord,
  token: string | undefined,
  options: { embedder: Embedder; collectionName: string; createIfMissing: boolean },
): Promise<VectorStore> {
  return MilvusVectorStore.create({
    config: milvusConfigFromEnv({ ...env, ...(token !== undefined && { MILVUS_TOKEN: token }) }),
    ...options,
  });
}
