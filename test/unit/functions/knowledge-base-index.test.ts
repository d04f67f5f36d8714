// The knowledge-base flow builds the ANN index at ingest time, once the collection passes the store's threshold,
// never in a search; a failed build fails nothing (the document stays committed and searchable).
import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createChunkHandler } from '../../../functions/chunk/handler.js';
import { createEmbedBatchHandler } from '../../../functions/embed-batch/handler.js';
import { createIndexBuildHandler } from '../../../functions/index-build/handler.js';
import { createIngestHandler } from '../../../functions/ingest/handler.js';
import {
  embedBatch,
  ensureIndex,
  refreshAfterCommit,
  SCHEDULED_INDEX_ROWS,
} from '../../../shared/src/ingest/knowledge-base.js';
import { PgVectorStore } from '../../../shared/src/vectorstores/pgvector/pgvector-store.js';
import { openPglite, type SqlClient } from '../../../shared/src/vectorstores/sql-client.js';
import type { VectorStore } from '../../../shared/src/vectorstores/types.js';
import { makeChunk } from '../vectorstores/contract.js';
import {
  COLLECTION,
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

  describe('the scheduled index step (IndexBuildFunction)', () => {
    const scheduled = {
      version: '0',
      id: 'c6f2a2f0-0000-4000-8000-000000000000',
      'detail-type': 'Scheduled Event',
      source: 'aws.events',
      account: '123456789012',
      time: '2026-12-07T04:00:00Z',
      region: 'eu-west-1',
      resources: ['arn:aws:events:eu-west-1:123456789012:rule/ai4rag-IndexBuildSchedule'],
      detail: {},
    };

    it("takes up the merges a commit's budget left, within its own", async () => {
      // Prepare: segments 200 | 200 | 100 | 150 | 50, as commits with a budget leave them (no carry fitted)
      const store = await rt.openStore(COLLECTION, await rt.embedder(), { createIfMissing: true });
      const chunks = Array.from({ length: 700 }, (_, i) =>
        makeChunk(`doc${i % 7}`, i, `leave rule ${i} annual days ${i % 13} manager ${i % 29}`),
      );
      await store.addChunks(chunks.slice(0, 500));
      const build = (maxRows: number) =>
        (store as PgVectorStore).buildIndex({ maxRows, force: true });
      await build(200);
      await build(200);
      await build(200);
      await store.addChunks(chunks.slice(500));
      await build(150);
      expect(await build(150)).toMatchObject({ segments: 5 });
      // Act: the rule's event, through the handler
      const run = await createIndexBuildHandler(rt)(scheduled, context);
      // Assess: 100 + 150, then 200 + 250, then 200 + 450 put into graphs, two segments left
      expect(SCHEDULED_INDEX_ROWS).toBeGreaterThanOrEqual(1350);
      expect(run).toMatchObject({
        collection: COLLECTION,
        built: true,
        indexed: 250 + 450 + 650,
        segments: 2,
      });
      expect((await (store as PgVectorStore).stats()).annSegments).toBe(2);
      const hit = await store.search(chunks[321]?.text ?? '', { k: 1, searchMode: 'vector' });
      expect(hit[0]?.id).toBe(chunks[321]?.id);
    });

    it('does nothing before the collection exists', async () => {
      const run = await createIndexBuildHandler(rt)(scheduled, context);
      expect(run).toEqual({
        collection: COLLECTION,
        skipped: 'no collection yet, or a store without an ANN index',
      });
    });

    it('fails the invocation with the reason when the build fails, so the alarm sees it', async () => {
      const open = rt.openStore;
      rt.openStore = async (...args) => {
        const store = await open(...args);
        (store as { buildIndex?: unknown }).buildIndex = async () => {
          throw new Error('canceling statement due to lock timeout');
        };
        return store;
      };
      await (await open(COLLECTION, await rt.embedder(), { createIfMissing: true })).addChunks([
        makeChunk('doc', 0, 'one chunk'),
      ]);
      await expect(createIndexBuildHandler(rt)(scheduled, context)).rejects.toThrow(
        `index build of ${COLLECTION} failed: canceling statement due to lock timeout`,
      );
    });
  });
});
