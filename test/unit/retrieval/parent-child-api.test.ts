/**
 * Parent–child retrieval through the serving path: a deployment whose pattern.json says `hierarchical` ingests
 * documents into children (the knowledge-base flow, PGlite in memory), and POST /search answers with distinct parent
 * texts, without `parent_text` in the metadata it returns.
 */

import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bindLocalQueues, s3Notification } from '../../../functions/_shared/local.js';
import { createLocalRuntime, type LocalRuntime } from '../../../functions/_shared/runtime.js';
import { createSearchHandler } from '../../../functions/search/handler.js';
import { context, getTestEvent } from '../functions/helpers.js';

type Handler = (event: APIGatewayProxyEvent, ctx: typeof context) => Promise<APIGatewayProxyResult>;

/** Four sections of about 700 characters: parents of 256 tokens hold one section, children of 128 tokens half. */
const SECTIONS = ['Annual leave', 'Sick leave', 'Parental leave', 'Unpaid leave'].map(
  (title, i) =>
    `${title} rules. ` +
    Array.from(
      { length: 12 },
      (_, j) =>
        `Rule ${i + 1}.${j + 1} of ${title.toLowerCase()} applies to every employee of the cooperative.`,
    ).join(' '),
);
const DOC = SECTIONS.join('\n\n');

const PATTERN = {
  chunking: {
    method: 'hierarchical',
    chunk_size: 128,
    chunk_overlap: 16,
    include_metadata: false,
    parent_chunk_size: 256,
  },
  retrieval: { method: 'simple', number_of_chunks: 3, search_mode: 'vector' },
};

describe('POST /search on a hierarchical deployment', () => {
  let rt: LocalRuntime;
  let search: Handler;

  beforeAll(async () => {
    rt = createLocalRuntime({
      dataDir: mkdtempSync(join(tmpdir(), 'ai4rag-pc-api-')),
      inMemory: true,
      env: { AI4RAG_COLLECTION: 'ai4rag_pc_api', AI4RAG_SERVING_PATTERN: JSON.stringify(PATTERN) },
    });
    await bindLocalQueues(rt);
    await rt.documents.put('leave.txt', new TextEncoder().encode(DOC));
    await rt.queue('ingest').send([s3Notification('ObjectCreated:Put', 'local', 'leave.txt')]);
    search = createSearchHandler(rt) as unknown as Handler;
  });
  afterAll(async () => {
    await rt?.close();
  });

  it('ingests children with their parent and answers with k distinct parents, parent_text stripped', async () => {
    // Prepare
    const event = getTestEvent<APIGatewayProxyEvent>('apigw-search');
    event.body = JSON.stringify({ query: 'parental leave rules', k: 3 });
    const store = await rt.openStore('ai4rag_pc_api', await rt.embedder());
    const children = await store.getChunksBySequence('leave.txt', 1, 1000);
    // Act
    const out = await search(event, context);
    // Assess: every stored chunk is a child naming its parent, and parents hold two or more children
    expect(rt.config.chunking).toEqual({
      method: 'hierarchical',
      chunkSize: 128,
      chunkOverlap: 16,
      parentChunkSize: 256,
    });
    expect(children.every((c) => typeof c.metadata.parent_id === 'string')).toBe(true);
    const parents = new Map(children.map((c) => [c.metadata.parent_id, c.metadata.parent_text]));
    expect(parents.size).toBeGreaterThan(1);
    expect(children.length).toBeGreaterThan(parents.size);
    expect(out.statusCode).toBe(200);
    const body = JSON.parse(out.body) as {
      results: { text: string; metadata: Record<string, unknown> }[];
    };
    expect(body.results).toHaveLength(3);
    const ids = body.results.map((r) => r.metadata.parent_id);
    expect(new Set(ids).size).toBe(3);
    for (const r of body.results) {
      expect(r.text).toBe(parents.get(r.metadata.parent_id as string));
      expect(r.metadata).not.toHaveProperty('parent_text');
      expect(DOC.slice(r.metadata.parent_start_index as number).startsWith(r.text)).toBe(true);
    }
    expect(body.results[0]?.text).toContain('Parental leave rules.');
  });
});
