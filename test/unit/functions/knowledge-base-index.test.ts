// The knowledge-base flow builds the ANN index at ingest time, once the collection passes the store's threshold,
// never in a search; a failed build fails nothing (the document stays committed and searchable).
import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createChunkHandler } from '../../../functions/chunk/handler.js';
import { createEmbedBatchHandler } from '../../../functions/embed-batch/handler.js';
import { createIngestHandler } from '../../../functions/ingest/handler.js';
import {
  embedBatch,
  ensureIndex,
  refreshAfterCommit,
} from '../../../shared/src/ingest/knowledge-base.js';
import { PgVectorStore } from '../../../shared/src/vectorstores/pgvector/pgvector-store.js';
import { openPglite, type SqlClient } from '../../../shared/src/vectorstores/sql-client.js';
import type { VectorStore } from '../../../shared/src/vectorstores/types.js';
import {
  context,
  createTestRuntime,
  getTestEvent,
  LEAVE_POLICY,
  s3Body,
  sentBodies,
  sqsEvent,
  type TestRuntime,
} from './helpers.js';

const s3Mock = mockClient(S3Client);
const sqsMock = mockClient(SQSClient);

describe('the ANN index in the knowledge-base flow', () => {
  let rt: TestRuntime;
  let client: SqlClient;
  let opened: PgVectorStore[];

  beforeEach(async () => {
    s3Mock.reset();
    sqsMock.reset();
    sqsMock.on(SendMessageBatchCommand).resolves({ Successful: [], Failed: [] });
    // Only the uploaded object exists (its sidecar `<key>.metadata.json` does not).
    s3Mock
      .on(GetObjectCommand, { Key: 'guides/leave policy.md' })
      .resolves({ Body: s3Body(LEAVE_POLICY) });
    client = await openPglite({});
    opened = [];
    rt = createTestRuntime();
    // The deployed stores, with a threshold a test can cross (the default is 20,000 rows).
    rt.openStore = async (collection, embedder, options = {}) => {
      const store = await PgVectorStore.create({
        client,
        embedder,
        collectionName: collection,
        createIfMissing: options.createIfMissing ?? false,
        annMinRows: 1,
      });
      opened.push(store);
      return store;
    };
  });
  afterEach(async () => {
    for (const s of opened) await s.close();
    await client.close();
    await rt.close();
  });

  async function ingestToEmbedMessages(): Promise<string[]> {
    await createIngestHandler(rt)(getTestEvent<SQSEvent>('sqs-s3-object-created'), context);
    const requests = sentBodies(sqsMock, 'chunk');
    sqsMock.resetHistory();
    await createChunkHandler(rt)(sqsEvent(requests), context);
    return sentBodies(sqsMock, 'embed');
  }

  it('builds the index when the commit takes the collection past the threshold', async () => {
    const messages = await ingestToEmbedMessages();
    const keys = messages.map((m) => JSON.parse(m).batchKey as string);
    const results = [];
    for (const key of keys) results.push(await embedBatch(rt, key));
    const last = results.at(-1);
    expect(last?.committed).toBe(true);
    expect(last?.index).toMatchObject({ built: true, reason: 'built' });
    // Batches that did not commit do not try.
    for (const r of results.slice(0, -1)) expect(r.index).toBeUndefined();
    const store = opened.at(-1) as PgVectorStore;
    expect((await store.stats()).annIndex).toBe(true);
  });

  it('commits the document even when the build fails, and says why', async () => {
    const failing = {
      buildIndex: async () => {
        throw new Error('canceling statement due to lock timeout');
      },
    } as unknown as VectorStore;
    expect(await ensureIndex(failing)).toEqual({
      built: false,
      error: 'canceling statement due to lock timeout',
    });
    // Through the handler: the record succeeds, the document is indexed.
    const messages = await ingestToEmbedMessages();
    const open = rt.openStore;
    rt.openStore = async (...args) => {
      const store = await open(...args);
      (store as { buildIndex?: unknown }).buildIndex = failing.buildIndex;
      return store;
    };
    const out = (await createEmbedBatchHandler(rt)(
      sqsEvent(messages),
      context,
    )) as SQSBatchResponse;
    expect(out.batchItemFailures).toEqual([]);
    const store = opened.at(-1) as PgVectorStore;
    expect((await store.listDocuments()).map((d) => d.documentId)).toEqual([
      'guides/leave policy.md',
    ]);
  });
  it('commits the document even when the statistics step fails, and says why', async () => {
    const failing = {
      refreshStatistics: async () => {
        throw new Error('canceling statement due to lock timeout');
      },
    } as unknown as VectorStore;
    expect(await refreshAfterCommit(failing)).toEqual({
      error: 'canceling statement due to lock timeout',
    });
    expect(await refreshAfterCommit({} as VectorStore)).toBeUndefined();
    // Through embedBatch: the document is committed and indexed; the outcome names the failure
    const messages = await ingestToEmbedMessages();
    const open = rt.openStore;
    rt.openStore = async (...args) => {
      const store = await open(...args);
      (store as { refreshStatistics?: unknown }).refreshStatistics = failing.refreshStatistics;
      return store;
    };
    const results = [];
    for (const m of messages) results.push(await embedBatch(rt, JSON.parse(m).batchKey as string));
    expect(results.at(-1)).toMatchObject({
      committed: true,
      statistics: { error: 'canceling statement due to lock timeout' },
      index: { built: true },
    });
    const store = opened.at(-1) as PgVectorStore;
    expect((await store.listDocuments()).map((d) => d.documentId)).toEqual([
      'guides/leave policy.md',
    ]);
  });
});
