import { MilvusClient } from '@zilliz/milvus2-sdk-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chunkDocument } from '../../../shared/src/chunking/chunker.js';
import type { AI4RAGChunk, ChunkingOptions } from '../../../shared/src/chunking/types.js';
import type { LoadedDocument } from '../../../shared/src/documents/types.js';
import { ValidationError } from '../../../shared/src/errors.js';
import { ingestDocuments } from '../../../shared/src/ingest/pipeline.js';
import {
  checkMetadataSize,
  MILVUS_JSON_MAX_BYTES,
  MilvusVectorStore,
} from '../../../shared/src/vectorstores/milvus/milvus-store.js';
import {
  FAKE_JSON_MAX_LENGTH,
  type FakeMilvus,
  startFakeMilvus,
} from '../../support/fake-milvus/server.js';
import { makeChunk } from './contract.js';
import { createHashEmbedder } from './fake-embedder.js';

let fake: FakeMilvus;
let client: MilvusClient;
beforeAll(async () => {
  fake = await startFakeMilvus();
  client = new MilvusClient({ address: fake.uri, logLevel: 'error' });
  await client.connectPromise;
});
afterAll(async () => {
  await client?.closeConnection();
  await fake?.close();
});

/** Bytes the SDK sends for a chunk's metadata (`JSON.stringify`, UTF-8). */
const jsonBytes = (chunk: AI4RAGChunk): number =>
  Buffer.byteLength(JSON.stringify(chunk.metadata), 'utf8');

/** A child chunk of document `doc` whose metadata serializes to exactly `bytes` bytes (`parent_text` of 'ж', 2 bytes). */
function childOfSize(doc: string, sequence: number, bytes: number): AI4RAGChunk {
  const base = makeChunk(doc, sequence, `child ${sequence} of ${doc}`, {
    parent_id: `${doc}#p1`,
    parent_start_index: 0,
    parent_text: '',
  });
  const room = bytes - jsonBytes(base);
  // 'ж' is 2 UTF-8 bytes; an odd remainder gets one ASCII letter.
  const parent = 'ж'.repeat(Math.floor(room / 2)) + (room % 2 === 1 ? 'a' : '');
  const chunk = { ...base, metadata: { ...base.metadata, parent_text: parent } };
  expect(jsonBytes(chunk)).toBe(bytes);
  return chunk;
}

async function rowCount(collection: string): Promise<number> {
  const res = await client.query({
    collection_name: collection,
    filter: '',
    output_fields: ['count(*)'],
  });
  return Number((res.data[0] as Record<string, unknown>)['count(*)']);
}

describe('Milvus JSON metadata limit', () => {
  it('uses the real server limit: 65,536 bytes of serialized JSON', () => {
    expect(MILVUS_JSON_MAX_BYTES).toBe(65_536);
    expect(FAKE_JSON_MAX_LENGTH).toBe(65_536);
  });

  it('accepts metadata of exactly the limit and refuses one byte more, naming document, size and limit', () => {
    // Arrange
    const atLimit = childOfSize('manual.md', 1, 65_536);
    const over = childOfSize('manual.md', 2, 65_537);
    // Act / Assess: the count is in UTF-8 bytes (the parent holds ~32,700 characters, well under 65,536)
    expect(() => checkMetadataSize([atLimit])).not.toThrow();
    expect((over.metadata.parent_text as string).length).toBeLessThan(33_000);
    expect(() => checkMetadataSize([atLimit, over])).toThrow(ValidationError);
    expect(() => checkMetadataSize([over])).toThrow(
      `document "manual.md": chunk manual.md#2 has 65537 bytes of metadata as JSON, over Milvus' 65536-byte JSON field limit; its parent_text is ${Buffer.byteLength(over.metadata.parent_text as string)} bytes; use a smaller parent chunk size (--parent-chunk-size, parent_chunk_size)`,
    );
  });

  it('refuses oversize metadata without a parent with a hint about the metadata', () => {
    const chunk = makeChunk('big.json', 1, 'text', { user: { blob: 'x'.repeat(70_000) } });
    expect(() => checkMetadataSize([chunk])).toThrow(
      `document "big.json": chunk big.json#1 has ${jsonBytes(chunk)} bytes of metadata as JSON, over Milvus' 65536-byte JSON field limit; store less metadata per chunk`,
    );
  });

  it('addChunks and upsert refuse the whole call before embedding or writing anything', async () => {
    // Arrange
    const embedder = createHashEmbedder({ dimension: 4 });
    const store = await MilvusVectorStore.create({
      client,
      embedder,
      collectionName: 'ai4rag_json_limit_store',
    });
    const fine = childOfSize('a.md', 1, 1_000);
    const atLimit = childOfSize('a.md', 2, 65_536);
    const over = childOfSize('b.md', 1, 65_537);
    try {
      // Act
      const added = store.addChunks([fine, atLimit, over]);
      const upserted = store.upsert([
        { chunk: fine, vector: [1, 0, 0, 0] },
        { chunk: over, vector: [0, 1, 0, 0] },
      ]);
      // Assess
      await expect(added).rejects.toThrow(ValidationError);
      await expect(added).rejects.toThrow(/^document "b\.md": chunk b\.md#1 has 65537 bytes/);
      await expect(upserted).rejects.toThrow(/^document "b\.md": chunk b\.md#1 has 65537 bytes/);
      expect(embedder.calls.documents).toBe(0);
      expect(await rowCount('ai4rag_json_limit_store')).toBe(0);
      // The rows within the limit are stored (and the fake accepts exactly 65,536 bytes).
      expect(await store.addChunks([fine, atLimit])).toBe(2);
      expect(await rowCount('ai4rag_json_limit_store')).toBe(2);
    } finally {
      await store.drop();
      await store.close();
    }
  });

  it('ingest fails only the document whose hierarchical parent is too large, with nothing of it stored', async () => {
    // Arrange: an 8,192-token parent (~32,768 characters) of Chinese text, 3 bytes a character, is ~98 KB
    const store = await MilvusVectorStore.create({
      client,
      embedder: createHashEmbedder({ dimension: 4 }),
      collectionName: 'ai4rag_json_limit_ingest',
    });
    const chunking: ChunkingOptions = {
      method: 'hierarchical',
      chunkSize: 256,
      chunkOverlap: 32,
      parentChunkSize: 8192,
    };
    const doc = (key: string, text: string): LoadedDocument => ({
      key,
      text,
      blocks: [],
      contentHash: key.repeat(4),
      format: 'txt',
    });
    const small = doc('small.txt', 'Locks open at dawn. '.repeat(200));
    const large = doc('large.txt', '船闸在黎明时开放，日落时关闭。\n'.repeat(2_500));
    const largest = Math.max(...chunkDocument(large, chunking).map(jsonBytes));
    expect(largest).toBeGreaterThan(MILVUS_JSON_MAX_BYTES);
    try {
      // Act
      const summary = await ingestDocuments([small, large], {
        store,
        chunking,
        chunk: (d) => chunkDocument(d, chunking),
        buildIndex: false,
      });
      // Assess
      const byId = new Map(summary.documents.map((d) => [d.documentId, d]));
      expect(byId.get('small.txt')?.status).toBe('indexed');
      expect(byId.get('large.txt')?.status).toBe('failed');
      expect(byId.get('large.txt')?.error).toMatch(
        /^document "large\.txt": chunk \S+ has \d+ bytes of metadata as JSON, over Milvus' 65536-byte JSON field limit; its parent_text is \d+ bytes; use a smaller parent chunk size \(--parent-chunk-size, parent_chunk_size\)$/,
      );
      const stored = await client.query({
        collection_name: 'ai4rag_json_limit_ingest',
        filter: 'document_id == "large.txt"',
        output_fields: ['count(*)'],
      });
      expect(Number((stored.data[0] as Record<string, unknown>)['count(*)'])).toBe(0);
      expect(await store.getDocument('large.txt')).toBeUndefined();
      expect((await store.getDocument('small.txt'))?.chunkCount).toBe(
        chunkDocument(small, chunking).length,
      );
    } finally {
      await store.drop();
      await store.close();
    }
  });
});

describe('fake Milvus JSON limit (the store check bypassed)', () => {
  it('refuses a write with a JSON value over 65,536 bytes with the real status, writing none of its rows', async () => {
    // Arrange: the store creates the collection; the SDK writes directly, as an unchecked store would
    const store = await MilvusVectorStore.create({
      client,
      embedder: createHashEmbedder({ dimension: 4 }),
      collectionName: 'ai4rag_json_limit_fake',
    });
    const row = (chunk: AI4RAGChunk, vector: number[]) => ({
      pk: `|${chunk.id}`,
      chunk_id: chunk.id,
      version: '',
      content: chunk.text,
      document_id: chunk.metadata.document_id,
      sequence_number: chunk.metadata.sequence_number,
      chunk_content: chunk.metadata,
      vector,
    });
    const fine = childOfSize('c.md', 1, 65_536);
    const over = childOfSize('c.md', 2, 65_537);
    try {
      // Act
      const refused = await client.upsert({
        collection_name: 'ai4rag_json_limit_fake',
        data: [row(fine, [1, 0, 0, 0]), row(over, [0, 1, 0, 0])],
      });
      const accepted = await client.upsert({
        collection_name: 'ai4rag_json_limit_fake',
        data: [row(fine, [1, 0, 0, 0])],
      });
      // Assess
      const reason =
        'the length (65537) of json field (chunk_content) exceeds max length (65536): invalid parameter[expected=valid length json string][actual=length exceeds max length]';
      expect(refused.status).toMatchObject({
        error_code: 'IllegalArgument',
        code: 1100,
        reason,
        retriable: false,
        detail: reason,
      });
      expect(accepted.status).toMatchObject({ error_code: 'Success', code: 0 });
      expect(await rowCount('ai4rag_json_limit_fake')).toBe(1);
    } finally {
      await store.drop();
      await store.close();
    }
  });
});
