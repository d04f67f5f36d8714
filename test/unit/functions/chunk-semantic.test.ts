/**
 * The deployed chunk function with `semantic` chunking: it embeds the sentence groups with its runtime's embedder
 * (the one the embed function uses), an embedder outage is retried (the record fails, the document does not), and
 * invalid semantic options mark the document failed.
 */
import { createHash } from 'node:crypto';
import { SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createChunkHandler } from '../../../functions/chunk/handler.js';
import { type ChunkingOptions, createChunker } from '../../../shared/src/chunking/index.js';
import type { LoadedDocument } from '../../../shared/src/documents/types.js';
import { DEFAULT_EMBEDDING_MODEL } from '../../../shared/src/embeddings/factory.js';
import type { Embedder } from '../../../shared/src/embeddings/types.js';
import { readChunkBatch } from '../../../shared/src/ingest/batches.js';
import { readStatus } from '../../../shared/src/ingest/knowledge-base.js';
import { getJson } from '../../../shared/src/ports/object-store.js';
import {
  COLLECTION,
  context,
  createTestRuntime,
  LEAVE_POLICY,
  sentBodies,
  sqsEvent,
  type TestRuntime,
} from './helpers.js';

const sqsMock = mockClient(SQSClient);
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const SEMANTIC: ChunkingOptions = {
  method: 'semantic',
  chunkSize: 128,
  chunkOverlap: 0,
  breakpointAmount: 50,
};

function leaveDoc(key: string): LoadedDocument {
  return {
    key,
    text: LEAVE_POLICY,
    blocks: [],
    contentHash: sha256(LEAVE_POLICY),
    format: 'md',
    title: 'Leave policy',
  };
}

function request(doc: LoadedDocument, chunking: ChunkingOptions): string {
  return JSON.stringify({
    collection: COLLECTION,
    embeddingModel: DEFAULT_EMBEDDING_MODEL,
    chunking,
    documentId: doc.key,
    contentHash: doc.contentHash,
    sourceKey: doc.key,
    document: doc,
  });
}

describe('chunk function with semantic chunking', () => {
  let rt: TestRuntime;

  beforeAll(() => {
    rt = createTestRuntime();
  });
  afterAll(async () => {
    await rt.close();
  });
  beforeEach(() => {
    sqsMock.reset();
    sqsMock.on(SendMessageBatchCommand).resolves({ Successful: [], Failed: [] });
  });

  it('chunks with the runtime embedder, as the CLI would', async () => {
    // Prepare
    const doc = leaveDoc('semantic/leave.md');
    const expected = await createChunker(SEMANTIC, { embedder: await rt.embedder() }).chunk(doc);

    // Act
    const out = await createChunkHandler(rt)(sqsEvent([request(doc, SEMANTIC)]), context);

    // Assess
    expect(out).toEqual({ batchItemFailures: [] });
    const [message] = sentBodies(sqsMock, 'embed');
    const batch = await readChunkBatch(rt.objectStore, JSON.parse(message ?? '{}').batchKey);
    expect(batch.chunking).toEqual(SEMANTIC);
    expect(batch.chunks.map((c) => c.text)).toEqual(expected.map((c) => c.text));
    expect(expected.length).toBeGreaterThan(1);
    // The document record (committed once embedded) says what semantic chunking cost.
    const manifest = await getJson<{ record: { metadata: Record<string, unknown> } }>(
      rt.objectStore,
      batch.manifestKey ?? '',
    );
    const sentences = 6; // three headings and three sentences
    expect(manifest.record.metadata.chunking_cost).toMatchObject({
      groups: sentences,
      embedded: sentences,
      cache_hits: 0,
    });
  });

  it('retries an embedder outage instead of failing the document', async () => {
    // Prepare
    const doc = leaveDoc('semantic/outage.md');
    const real = await rt.embedder();
    const down: Embedder = {
      modelId: real.modelId,
      dimension: real.dimension,
      contextLength: real.contextLength,
      embedDocuments: async () => {
        throw new Error('connect ECONNREFUSED 127.0.0.1:9');
      },
      embedQuery: (t) => real.embedQuery(t),
    };

    // Act
    const out = await createChunkHandler({ ...rt, embedder: async () => down })(
      sqsEvent([request(doc, SEMANTIC)]),
      context,
    );

    // Assess
    expect(out).toEqual({ batchItemFailures: [{ itemIdentifier: 'm1' }] });
    expect((await readStatus(rt.objectStore, COLLECTION, doc.key))?.status).not.toBe('failed');
    expect(sentBodies(sqsMock, 'embed')).toEqual([]);
  });

  it('marks the document failed when the semantic options are invalid', async () => {
    // Prepare
    const doc = leaveDoc('semantic/invalid.md');

    // Act
    const out = await createChunkHandler(rt)(
      sqsEvent([request(doc, { ...SEMANTIC, chunkOverlap: 16 })]),
      context,
    );

    // Assess
    expect(out).toEqual({ batchItemFailures: [] });
    const status = await readStatus(rt.objectStore, COLLECTION, doc.key);
    expect(status).toMatchObject({
      status: 'failed',
      error: 'Semantic chunking does not support overlap: chunkOverlap must be 0, got 16.',
    });
  });
});
