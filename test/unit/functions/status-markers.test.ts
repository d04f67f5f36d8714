import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bindLocalQueues, s3Notification } from '../../../functions/_shared/local.js';
import { createLocalRuntime, type LocalRuntime } from '../../../functions/_shared/runtime.js';
import { createDocumentsHandler } from '../../../functions/documents/handler.js';
import {
  readStatus,
  removeDocument,
  statusMarkerPrefix,
} from '../../../shared/src/ingest/knowledge-base.js';
import { COLLECTION, context, FAQ, getTestEvent } from './helpers.js';

type Handler = (event: APIGatewayProxyEvent, ctx: Context) => Promise<APIGatewayProxyResult>;

let rt: LocalRuntime;
let documents: Handler;

async function markers(): Promise<Record<string, string[]>> {
  return {
    pending: await rt.objectStore.list(statusMarkerPrefix(COLLECTION, 'pending')),
    failed: await rt.objectStore.list(statusMarkerPrefix(COLLECTION, 'failed')),
  };
}

async function stats(): Promise<Record<string, unknown>> {
  const event = getTestEvent<APIGatewayProxyEvent>('apigw-list-documents');
  Object.assign(event, { resource: '/stats', path: '/stats', queryStringParameters: null });
  return JSON.parse((await documents(event, context)).body) as Record<string, unknown>;
}

beforeAll(async () => {
  rt = createLocalRuntime({
    dataDir: mkdtempSync(join(tmpdir(), 'ai4rag-markers-')),
    inMemory: true,
    env: { AI4RAG_COLLECTION: COLLECTION },
  });
  await bindLocalQueues(rt);
  documents = createDocumentsHandler(rt) as unknown as Handler;
});
afterAll(async () => {
  await rt.close();
});

describe('status markers behind GET /stats', () => {
  it('leaves no marker for an indexed document', async () => {
    // Prepare
    await rt.documents.put('faq.txt', FAQ);

    // Act
    await rt.queue('ingest').send([s3Notification('ObjectCreated:Put', 'local', 'faq.txt')]);

    // Assess
    expect(await readStatus(rt.objectStore, COLLECTION, 'faq.txt')).toMatchObject({
      status: 'indexed',
    });
    expect(await markers()).toEqual({ pending: [], failed: [] });
    expect(await stats()).toMatchObject({
      documents: 1,
      by_status: { pending: 0, indexed: 1, failed: 0 },
    });
  });

  it('keeps one failed marker for a failed upload, counted by /stats', async () => {
    // Prepare
    await rt.documents.put('tool.exe', 'MZ');

    // Act
    await rt.queue('ingest').send([s3Notification('ObjectCreated:Put', 'local', 'tool.exe')]);

    // Assess
    expect(await markers()).toEqual({
      pending: [],
      failed: [`${statusMarkerPrefix(COLLECTION, 'failed')}tool.exe`],
    });
    expect(await stats()).toMatchObject({ by_status: { pending: 0, indexed: 1, failed: 1 } });
  });

  it('removes the markers with the document', async () => {
    // Act
    await removeDocument(rt, 'tool.exe');

    // Assess
    expect(await markers()).toEqual({ pending: [], failed: [] });
    expect(await stats()).toMatchObject({ by_status: { pending: 0, indexed: 1, failed: 0 } });
  });
});
