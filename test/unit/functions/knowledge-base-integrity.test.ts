/**
 * Integrity of the Lambda knowledge-base flow (ingest → chunk → embed-batch) under what SQS and S3 really do:
 * duplicate deliveries, events out of order (S3 sequencer), a delete while a version is being ingested, and a
 * poison batch among good ones.
 */
import { createHash } from 'node:crypto';
import { GetObjectCommand, NoSuchKey, S3Client } from '@aws-sdk/client-s3';
import { SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createChunkHandler } from '../../../functions/chunk/handler.js';
import { createEmbedBatchHandler } from '../../../functions/embed-batch/handler.js';
import { createIngestHandler } from '../../../functions/ingest/handler.js';
import { readChunkBatch } from '../../../shared/src/ingest/batches.js';
import { readStatus, removeDocument } from '../../../shared/src/ingest/knowledge-base.js';
import { putJson } from '../../../shared/src/ports/object-store.js';
import {
  COLLECTION,
  context,
  createTestRuntime,
  FAQ,
  LEAVE_POLICY,
  s3Body,
  sentBodies,
  sqsEvent,
  type TestRuntime,
} from './helpers.js';

const s3Mock = mockClient(S3Client);
const sqsMock = mockClient(SQSClient);
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** An SQS message carrying one S3 notification record. */
function s3Event(
  eventName: 'ObjectCreated:Put' | 'ObjectRemoved:Delete',
  key: string,
  sequencer: string,
): SQSEvent {
  const body = JSON.stringify({
    Records: [
      {
        eventVersion: '2.1',
        eventSource: 'aws:s3',
        eventName,
        s3: { bucket: { name: 'ai4rag-documents' }, object: { key, sequencer } },
      },
    ],
  });
  return sqsEvent([body], 'ai4rag-ingest');
}

describe('knowledge-base flow integrity', () => {
  let rt: TestRuntime;
  let ingest: ReturnType<typeof createIngestHandler>;
  let chunk: ReturnType<typeof createChunkHandler>;
  let embed: ReturnType<typeof createEmbedBatchHandler>;
  const objects = new Map<string, string>();

  beforeEach(() => {
    rt = createTestRuntime();
    ingest = createIngestHandler(rt);
    chunk = createChunkHandler(rt);
    embed = createEmbedBatchHandler(rt);
    s3Mock.reset();
    sqsMock.reset();
    objects.clear();
    sqsMock.on(SendMessageBatchCommand).resolves({ Successful: [], Failed: [] });
    s3Mock.on(GetObjectCommand).callsFake((input: { Key: string }) => {
      const text = objects.get(input.Key);
      if (text === undefined) {
        throw new NoSuchKey({ message: 'gone', $metadata: { httpStatusCode: 404 } });
      }
      return { Body: s3Body(text) };
    });
  });
  afterEach(async () => {
    await rt.close();
  });

  /** Runs ingest and chunk; returns the embed messages (not yet delivered). */
  async function upToEmbed(event: SQSEvent): Promise<string[]> {
    sqsMock.resetHistory();
    const out = await ingest(event, context);
    expect(out).toEqual({ batchItemFailures: [] });
    const requests = sentBodies(sqsMock, 'chunk');
    sqsMock.resetHistory();
    await chunk(sqsEvent(requests), context);
    const batches = sentBodies(sqsMock, 'embed');
    sqsMock.resetHistory();
    return batches;
  }

  async function deliver(batches: string[]): Promise<SQSBatchResponse> {
    return (await embed(sqsEvent(batches), context)) as SQSBatchResponse;
  }

  const store = async () => rt.openStore(COLLECTION, await rt.embedder());

  it('ignores duplicate deliveries of every message, before and after the commit', async () => {
    // Prepare
    objects.set('leave.md', LEAVE_POLICY);
    const created = s3Event('ObjectCreated:Put', 'leave.md', '00A1');
    const batches = await upToEmbed(created);
    // Act: the embed messages twice, then the whole flow again (SQS at-least-once)
    await deliver(batches);
    await deliver(batches);
    const again = await upToEmbed(created);
    await deliver(batches);
    // Assess
    expect(again).toEqual([]);
    const s = await store();
    const record = await s.getDocument('leave.md');
    expect(record?.contentHash).toBe(sha256(LEAVE_POLICY));
    expect((await s.getChunksBySequence('leave.md', 0, 1000)).length).toBe(record?.chunkCount);
    expect(await s.checkIntegrity()).toMatchObject({
      clean: true,
      orphanChunks: 0,
      liveWrites: [],
    });
    expect((await readStatus(rt.objectStore, COLLECTION, 'leave.md'))?.status).toBe('indexed');
  });

  it('keeps a document deleted when its ObjectRemoved overtakes the upload still being embedded', async () => {
    // Prepare: the upload (sequencer 0B) is chunked; its batches wait in the queue
    objects.set('leave.md', LEAVE_POLICY);
    const batches = await upToEmbed(s3Event('ObjectCreated:Put', 'leave.md', '00B0'));
    objects.delete('leave.md');
    // Act: the removal (0C) is handled first, then the upload's batches arrive
    await ingest(s3Event('ObjectRemoved:Delete', 'leave.md', '00C0'), context);
    const out = await deliver(batches);
    // Assess
    expect(out.batchItemFailures).toEqual([]);
    const s = await store();
    expect(await s.getDocument('leave.md')).toBeUndefined();
    expect(await s.getChunksBySequence('leave.md', 0, 1000)).toEqual([]);
    expect((await s.stats()).chunks).toBe(0);
    expect(await readStatus(rt.objectStore, COLLECTION, 'leave.md')).toBeUndefined();
    expect(await s.checkIntegrity()).toMatchObject({ clean: true, orphanChunks: 0 });
  });

  it('ignores a late ObjectRemoved older than the re-upload it would delete', async () => {
    // Prepare: upload 0D committed
    objects.set('leave.md', LEAVE_POLICY);
    await deliver(await upToEmbed(s3Event('ObjectCreated:Put', 'leave.md', '00D0')));
    // Act: a removal from before that upload (0C) arrives late
    await ingest(s3Event('ObjectRemoved:Delete', 'leave.md', '00C0'), context);
    // Assess
    const s = await store();
    expect((await s.getDocument('leave.md'))?.contentHash).toBe(sha256(LEAVE_POLICY));
    expect((await readStatus(rt.objectStore, COLLECTION, 'leave.md'))?.status).toBe('indexed');
  });

  it('refuses an older upload that finishes after a newer one: the newer version stays, whole', async () => {
    // Prepare: two uploads of one key in flight; the object holds the newer text when each is read
    objects.set('faq.txt', FAQ);
    const older = await upToEmbed(s3Event('ObjectCreated:Put', 'faq.txt', '0E10'));
    const newerText = `${FAQ}\nClaims are paid monthly.\n`;
    objects.set('faq.txt', newerText);
    const newer = await upToEmbed(s3Event('ObjectCreated:Put', 'faq.txt', '0E20'));
    // Act: the newer finishes first
    await deliver(newer);
    await deliver(older);
    // Assess
    const s = await store();
    const record = await s.getDocument('faq.txt');
    expect(record?.contentHash).toBe(sha256(newerText));
    const texts = (await s.getChunksBySequence('faq.txt', 0, 1000)).map((h) => h.text).join(' ');
    expect(texts).toContain('paid monthly');
    expect(record?.chunkCount).toBe((await s.getChunksBySequence('faq.txt', 0, 1000)).length);
    expect(await readStatus(rt.objectStore, COLLECTION, 'faq.txt')).toMatchObject({
      status: 'indexed',
      contentHash: sha256(newerText),
      sequencer: '0E20',
    });
    expect(await s.checkIntegrity()).toMatchObject({
      clean: true,
      orphanChunks: 0,
      liveWrites: [],
    });
  });

  it('keeps a document deleted through the API while its upload is still being embedded', async () => {
    // Prepare
    objects.set('leave.md', LEAVE_POLICY);
    const batches = await upToEmbed(s3Event('ObjectCreated:Put', 'leave.md', '0F00'));
    // Act: DELETE /documents/{id} (no sequencer) before the batches are embedded
    await removeDocument(rt, 'leave.md');
    await deliver(batches);
    // Assess
    const s = await store();
    expect(await s.getDocument('leave.md')).toBeUndefined();
    expect((await s.stats()).chunks).toBe(0);
  });

  it('marks a poison batch failed without retrying it, and commits the good documents of the same delivery', async () => {
    // Prepare: two documents chunked; one batch object is then corrupted with text PostgreSQL cannot store
    objects.set('leave.md', LEAVE_POLICY);
    objects.set('faq.txt', FAQ);
    const good = await upToEmbed(s3Event('ObjectCreated:Put', 'faq.txt', '1000'));
    const bad = await upToEmbed(s3Event('ObjectCreated:Put', 'leave.md', '1001'));
    const badKey = JSON.parse(bad[0] ?? '').batchKey as string;
    const batch = await readChunkBatch(rt.objectStore, badKey);
    (batch.chunks[0] as { text: string }).text = 'poison \u0000 byte';
    await putJson(rt.objectStore, badKey, batch);
    // Act
    const out = await deliver([...bad, ...good]);
    // Assess
    expect(out.batchItemFailures).toEqual([]);
    expect(await readStatus(rt.objectStore, COLLECTION, 'leave.md')).toMatchObject({
      status: 'failed',
      error: expect.stringMatching(/SQLSTATE 22/),
    });
    expect((await readStatus(rt.objectStore, COLLECTION, 'faq.txt'))?.status).toBe('indexed');
    const s = await store();
    expect(await s.getDocument('leave.md')).toBeUndefined();
    expect((await s.getDocument('faq.txt'))?.contentHash).toBe(sha256(FAQ));
    expect(await s.checkIntegrity()).toMatchObject({
      clean: true,
      orphanChunks: 0,
      liveWrites: [],
    });
  });

  it('removing a .jsonl object removes every document its records created', async () => {
    // Prepare
    const corpus = [
      JSON.stringify({
        id: 'rec-1',
        title: 'One',
        text: 'The first record is about annual leave days.',
      }),
      JSON.stringify({
        id: 'rec-2',
        title: 'Two',
        text: 'The second record is about expense approval.',
      }),
    ].join('\n');
    objects.set('corpus.jsonl', corpus);
    await deliver(await upToEmbed(s3Event('ObjectCreated:Put', 'corpus.jsonl', '2000')));
    const s = await store();
    expect((await s.listDocuments()).map((d) => d.documentId).sort()).toEqual(['rec-1', 'rec-2']);
    // Act
    objects.delete('corpus.jsonl');
    await ingest(s3Event('ObjectRemoved:Delete', 'corpus.jsonl', '2001'), context);
    // Assess
    expect(await s.listDocuments()).toEqual([]);
    expect((await s.stats()).chunks).toBe(0);
    expect(await readStatus(rt.objectStore, COLLECTION, 'rec-1')).toBeUndefined();
  });
  it('marks a document failed, not pending, when its batches arrive after its write was swept', async () => {
    // Prepare: the version's write ends before its batches are embedded (what a sweep does after the lease)
    objects.set('leave.md', LEAVE_POLICY);
    const batches = await upToEmbed(s3Event('ObjectCreated:Put', 'leave.md', '3000'));
    const s = await store();
    const version = (await readChunkBatch(rt.objectStore, JSON.parse(batches[0] ?? '').batchKey))
      .version;
    await s.abortWrite(version as string);
    // Act: a late redrive
    const out = await deliver(batches);
    // Assess
    expect(out.batchItemFailures).toEqual([]);
    expect(await readStatus(rt.objectStore, COLLECTION, 'leave.md')).toMatchObject({
      status: 'failed',
      error: expect.stringContaining('upload the object again'),
    });
    expect(await s.getDocument('leave.md')).toBeUndefined();
    expect(await s.checkIntegrity()).toMatchObject({ clean: true, orphanChunks: 0 });
  });
  it('re-weights BM25 when a commit moves the average chunk length, so no search has to', async () => {
    // Prepare: a short document fixes the collection's average length; a long one moves it far past the 10 %
    // tolerance (an upload service's first documents, one at a time)
    objects.set('short.txt', 'Parking permits are renewed every year.');
    objects.set(
      'long.txt',
      `Travel expenses. ${'Economy class is the default for flights under six hours, and receipts are kept for audit. '.repeat(4)}`,
    );
    await deliver(await upToEmbed(s3Event('ObjectCreated:Put', 'short.txt', '4000')));
    // Act
    const out = await embed(
      sqsEvent(await upToEmbed(s3Event('ObjectCreated:Put', 'long.txt', '4001'))),
      context,
    );
    // Assess: the commit re-weighted every row; the statistics are current before any search
    expect(out).toEqual({ batchItemFailures: [] });
    const s = await store();
    expect(await s.refreshStatistics?.()).toEqual({ reweighted: false, deferred: false });
    const hits = await s.search('economy flights receipts', {
      k: 2,
      searchMode: 'hybrid',
      rankerStrategy: 'rrf',
    });
    expect(hits[0]?.metadata.document_id).toBe('long.txt');
  });
});
