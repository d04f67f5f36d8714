// A Milvus server that cannot be reached fails the open with a clear error, and nothing else: the SDK's own
// connection promise must not surface as an unhandled rejection (which kills a Lambda container).
import { createServer } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createEmbedder } from '../../../shared/src/embeddings/factory.js';
import { VectorStoreError } from '../../../shared/src/vectorstores/errors.js';
import { MilvusVectorStore } from '../../../shared/src/vectorstores/milvus/milvus-store.js';

/** A port nothing listens on (bound, then released). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return typeof address === 'object' && address !== null ? address.port : 1;
}

describe('MilvusVectorStore against an unreachable server', () => {
  const unhandled: unknown[] = [];
  const listener = (reason: unknown) => unhandled.push(reason);
  afterEach(() => {
    process.off('unhandledRejection', listener);
  });

  it('rejects the open with a VectorStoreError naming the collection and leaves no unhandled rejection', async () => {
    process.on('unhandledRejection', listener);
    const port = await closedPort();
    const embedder = await createEmbedder('local/feature-hash-v1-384');
    const open = MilvusVectorStore.create({
      config: { uri: `http://127.0.0.1:${port}` },
      embedder,
      collectionName: 'ai4rag_unreachable',
    });
    await expect(open).rejects.toThrow(VectorStoreError);
    await expect(open).rejects.toThrow(/ai4rag_unreachable/);
    // The SDK's connection attempt settles in the background; give it time to surface.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(unhandled).toEqual([]);
  });
});
