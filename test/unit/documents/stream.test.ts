import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChunker } from '../../../shared/src/chunking/index.js';
import { loadDocuments, streamDocuments } from '../../../shared/src/documents/index.js';
import type { LoadedDocument } from '../../../shared/src/documents/types.js';
import { ingestDocuments } from '../../../shared/src/ingest/pipeline.js';
import { PgVectorStore } from '../../../shared/src/vectorstores/pgvector/pgvector-store.js';
import { openPglite } from '../../../shared/src/vectorstores/sql-client.js';
import { createHashEmbedder } from '../vectorstores/fake-embedder.js';

async function collect(it: AsyncIterable<LoadedDocument>): Promise<LoadedDocument[]> {
  const out: LoadedDocument[] = [];
  for await (const d of it) out.push(d);
  return out;
}

describe('streamDocuments', () => {
  let dir = '';
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ai4rag-stream-'));
    await mkdir(join(dir, 'corpus', 'notes'), { recursive: true });
    await writeFile(join(dir, 'corpus', 'notes', 'a.md'), '# Leave\n\nStaff get 25 days.\n');
    await writeFile(
      join(dir, 'corpus', 'records.jsonl'),
      [
        '\uFEFF{"id":"r1","title":"First","text":"Alpha beta."}',
        '{"id":"r2","text":"Gamma\\r\\ndelta.","metadata":{"lang":"en"}}\r',
        '',
        'not json',
        '{"id":"r3","text":"Ünïcode € text"}',
        '{"id":"r1","text":"a duplicate key"}',
      ].join('\n'),
    );
    await writeFile(join(dir, 'corpus', 'records.jsonl.metadata.json'), '{"source":"test"}');
  });
  afterAll(async () => {
    if (dir !== '') await rm(dir, { recursive: true, force: true });
  });

  it('yields what loadDocuments loads: the same documents, failures and warnings, in the same order', async () => {
    // Act
    const whole = await loadDocuments([join(dir, 'corpus')]);
    const stream = await streamDocuments([join(dir, 'corpus')]);
    const streamed = await collect(stream.documents);
    // Assert
    expect(streamed.map((d) => d.key)).toEqual(['notes/a.md', 'r1', 'r2', 'r3']);
    expect(streamed).toEqual(whole.documents);
    expect(stream.failures.map((f) => [f.key, f.reason])).toEqual([
      ['records.jsonl:4', 'invalid_record'],
      ['r1', 'duplicate_key'],
    ]);
    expect(whole.failures.map((f) => [f.key, f.reason])).toEqual([
      ['records.jsonl:4', 'invalid_record'],
      ['r1', 'duplicate_key'],
    ]);
    expect(stream.warnings).toEqual(whole.warnings ?? []);
  });

  it('reads a .jsonl past maxFileBytes line by line (loadDocuments refuses it), and skips an over-long line', async () => {
    // Prepare: 3,000 records (~150 KB) with a 1 KiB file limit, and one line over the line bound
    const file = join(dir, 'big.jsonl');
    const lines = Array.from(
      { length: 3000 },
      (_, i) => `{"id":"b${i}","text":"record number ${i} of the big corpus"}`,
    );
    const maxTextChars = 1000;
    lines.splice(
      1500,
      0,
      `{"id":"huge","text":"${'x'.repeat(4 * maxTextChars + 1024 * 1024 + 10)}"}`,
    );
    await writeFile(file, lines.join('\n'));
    // Act
    const refused = await loadDocuments([file], { maxFileBytes: 1024, maxTextChars });
    const stream = await streamDocuments([file], { maxFileBytes: 1024, maxTextChars });
    const docs = await collect(stream.documents);
    // Assert
    expect(refused.documents).toEqual([]);
    expect(refused.failures[0]?.reason).toBe('too_large');
    expect(docs).toHaveLength(3000);
    expect(docs[2999]?.key).toBe('b2999');
    expect(stream.failures).toEqual([
      expect.objectContaining({ key: 'big.jsonl:1501', reason: 'too_large' }),
    ]);
  });

  it('feeds ingestDocuments: every record indexed, and prune keeps a file that failed to load', async () => {
    // Prepare
    const client = await openPglite();
    const store = await PgVectorStore.create({
      client,
      embedder: createHashEmbedder({ dimension: 8 }),
      collectionName: 'ai4rag_stream_ingest',
    });
    const chunking = { method: 'recursive', chunkSize: 512, chunkOverlap: 0 } as const;
    const chunker = createChunker(chunking);
    try {
      const first = await streamDocuments([join(dir, 'corpus')]);
      await ingestDocuments(first.documents, { store, chunking, chunk: (d) => chunker.chunk(d) });
      await writeFile(join(dir, 'corpus', 'notes', 'a.md'), Buffer.from([0xff, 0xfe, 0x00]));
      // Act: a.md no longer loads (not UTF-8); prune must keep its stored version
      const second = await streamDocuments([join(dir, 'corpus')]);
      const summary = await ingestDocuments(second.documents, {
        store,
        chunking,
        chunk: (d) => chunker.chunk(d),
        prune: true,
        keep: () => second.failures.map((f) => f.key),
      });
      // Assert
      expect((await store.listDocuments()).map((d) => d.documentId).sort()).toEqual([
        'notes/a.md',
        'r1',
        'r2',
        'r3',
      ]);
      expect(summary.documentsTotal).toBe(3);
      expect(summary.kept.map((k) => k.documentId)).toEqual(['notes/a.md']);
      expect(summary.pruned).toEqual([]);
    } finally {
      await writeFile(join(dir, 'corpus', 'notes', 'a.md'), '# Leave\n\nStaff get 25 days.\n');
      await store.close();
      await client.close();
    }
  });
});
