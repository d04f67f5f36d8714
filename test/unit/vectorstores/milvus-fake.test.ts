import { createRequire } from 'node:module';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { MilvusClient } from '@zilliz/milvus2-sdk-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MilvusVectorStore } from '../../../shared/src/vectorstores/milvus/milvus-store.js';
import { compileExpr } from '../../support/fake-milvus/expr.js';
import {
  type FakeMilvus,
  fakeTokenize,
  startFakeMilvus,
} from '../../support/fake-milvus/server.js';
import { makeChunk } from './contract.js';
import { createFixedEmbedder } from './fake-embedder.js';

const VECTORS: Record<string, number[]> = {
  quokka: [1, 0, 0],
  'and pears': [1, 0, 0],
  'apples and pears': [1, 0.1, 0],
  'bananas and kiwis': [1, 0.3, 0],
  'cherries and plums': [0.5, 1, 0],
  'the quokka smiles': [0, 0, 1],
};
const TEXTS = Object.keys(VECTORS).filter((t) => t !== 'quokka' && t !== 'and pears');
/** idf of a term found in 1 of 4 documents: ln(1 + (4 − 1 + 0.5) / (1 + 0.5)). */
const IDF_1_OF_4 = Math.log(1 + 3.5 / 1.5);
/** idf of a term found in 3 of 4 documents. */
const IDF_3_OF_4 = Math.log(1 + 1.5 / 3.5);

let fake: FakeMilvus;
let client: MilvusClient;
let store: MilvusVectorStore;
beforeAll(async () => {
  fake = await startFakeMilvus();
  client = new MilvusClient({ address: fake.uri, logLevel: 'error' });
  store = await MilvusVectorStore.create({
    client,
    embedder: createFixedEmbedder(VECTORS, { dimension: 3 }),
    collectionName: 'ai4rag_fake_semantics',
  });
  await store.addChunks(TEXTS.map((t, i) => makeChunk('h', i + 1, t)));
});
afterAll(async () => {
  await store?.close();
  await client?.closeConnection();
  await fake?.close();
});

describe('fake Milvus semantics', () => {
  it('scores BM25 full-text search with Okapi BM25 (k1 1.2, b 0.75) over collection statistics', async () => {
    // Act: every document has 3 tokens, so the length normalization is 1
    const res = await client.search({
      collection_name: 'ai4rag_fake_semantics',
      data: ['and pears'],
      anns_field: 'sparse',
      limit: 10,
      output_fields: ['chunk_id'],
    });
    // Assess
    const rows = res.results as unknown as { chunk_id: string; score: number }[];
    expect(rows.map((r) => r.chunk_id)).toEqual(['h#1', 'h#2', 'h#3']);
    expect(rows[0]?.score).toBeCloseTo(IDF_3_OF_4 + IDF_1_OF_4, 5);
    expect(rows[1]?.score).toBeCloseTo(IDF_3_OF_4, 5);
  });

  it('fuses hybrid search on the server with RRF 1/(k + rank)', async () => {
    // Act
    const hits = await store.search('quokka', {
      k: 2,
      includeScores: true,
      searchMode: 'hybrid',
      rankerStrategy: 'rrf',
      rankerK: 10,
    });
    // Assess: dense ranks h#1..h#4 as 1..4; only h#4 matches the keyword
    expect(hits.map((h) => h.id)).toEqual(['h#4', 'h#1']);
    expect(hits[0]?.score).toBeCloseTo(1 / 14 + 1 / 11, 6);
    expect(hits[1]?.score).toBeCloseTo(1 / 11, 6);
  });

  it('fuses weighted hybrid search with per-metric normalization (COSINE (1+s)/2, BM25 2·atan(s)/π)', async () => {
    // Act
    const hits = await store.search('quokka', {
      k: 2,
      includeScores: true,
      searchMode: 'hybrid',
      rankerStrategy: 'weighted',
      rankerAlpha: 0.5,
    });
    // Assess
    expect(hits.map((h) => h.id)).toEqual(['h#4', 'h#1']);
    expect(hits[0]?.score).toBeCloseTo(
      0.5 * 0.5 + 0.5 * ((2 * Math.atan(IDF_1_OF_4)) / Math.PI),
      5,
    );
    expect(hits[1]?.score).toBeCloseTo((0.5 * (1 + 1 / Math.sqrt(1.01))) / 2, 5);
  });

  it('keeps BM25 statistics in step with deletes and upserts', async () => {
    // Prepare
    const before = await client.search({
      collection_name: 'ai4rag_fake_semantics',
      data: ['quokka'],
      anns_field: 'sparse',
      limit: 10,
    });
    // Act: remove a document without "quokka", then store it again
    await store.deleteByFilter({ sequence_number: 1 });
    const during = await client.search({
      collection_name: 'ai4rag_fake_semantics',
      data: ['quokka'],
      anns_field: 'sparse',
      limit: 10,
    });
    await store.addChunks([makeChunk('h', 1, 'apples and pears')]);
    const after = await client.search({
      collection_name: 'ai4rag_fake_semantics',
      data: ['quokka'],
      anns_field: 'sparse',
      limit: 10,
    });
    // Assess: N 4 → 3 changes the idf, and returns when the document is back
    const score = (r: typeof before) => (r.results as unknown as { score: number }[])[0]?.score;
    expect(score(before)).toBeCloseTo(IDF_1_OF_4, 5);
    expect(score(during)).toBeCloseTo(Math.log(1 + 2.5 / 1.5), 5);
    expect(score(after)).toBeCloseTo(IDF_1_OF_4, 5);
  });

  it('answers UNIMPLEMENTED for RPCs it does not serve', async () => {
    // Prepare: a raw gRPC client (the SDK turns some failures into empty results)
    const require = createRequire(import.meta.url);
    const json = require('@zilliz/milvus2-sdk-node/dist/milvus/proto-json/milvus.js').default;
    const pkg = grpc.loadPackageDefinition(
      protoLoader.fromJSON(json, {
        keepCase: true,
        longs: String,
        enums: String,
        defaults: true,
        oneofs: true,
      }),
    ) as unknown as {
      milvus: { proto: { milvus: { MilvusService: grpc.ServiceClientConstructor } } };
    };
    const raw = new pkg.milvus.proto.milvus.MilvusService(
      fake.address,
      grpc.credentials.createInsecure(),
    );
    try {
      // Act
      const error = await new Promise<grpc.ServiceError | null>((resolve) => {
        const createPartition = raw.CreatePartition as (
          req: unknown,
          cb: (err: grpc.ServiceError | null) => void,
        ) => void;
        createPartition.call(
          raw,
          { collection_name: 'ai4rag_fake_semantics', partition_name: 'p1' },
          (err: grpc.ServiceError | null) => resolve(err),
        );
      });
      // Assess
      expect(error?.code).toBe(grpc.status.UNIMPLEMENTED);
      expect(error?.details).toBe('fake Milvus does not implement CreatePartition');
    } finally {
      raw.close();
    }
  });

  it('tokenizes like a lower-casing word analyzer', () => {
    // Act / Assess
    expect(fakeTokenize('The Quokka, café-au-lait 42!')).toEqual([
      'the',
      'quokka',
      'café',
      'au',
      'lait',
      '42',
    ]);
  });
});

describe('fake Milvus filter expressions', () => {
  const row = {
    chunk_id: 'a"b',
    sequence_number: 3,
    chunk_content: { lang: 'en', n: 2, ok: true },
  };

  it('evaluates comparisons, lists, json access, and/or/not and parentheses', () => {
    // Act / Assess
    const cases: [string, boolean][] = [
      ['chunk_id == "a\\"b"', true],
      ["chunk_id == 'a\"b'", true],
      ['sequence_number >= 2 and sequence_number <= 3', true],
      ['sequence_number in [1, 2]', false],
      ['chunk_id not in ["x", "y"]', true],
      ['chunk_content["lang"] == "en" and chunk_content["ok"] == true', true],
      ['chunk_content["n"] == "2"', false],
      ['chunk_content["missing"] == 1', false],
      ['(sequence_number == 1 or sequence_number == 3) and not (chunk_content["n"] != 2)', true],
      ['sequence_number == -3 or sequence_number > 3', false],
      ['', true],
    ];
    for (const [expr, expected] of cases)
      expect([expr, compileExpr(expr)(row)]).toEqual([expr, expected]);
  });

  it('rejects malformed expressions', () => {
    // Act / Assess
    expect(() => compileExpr('chunk_id == "open')).toThrow(/unterminated/);
    expect(() => compileExpr('chunk_id == 1 1')).toThrow(/unexpected token/);
    expect(() => compileExpr('chunk_id ~ 1')).toThrow(/unexpected character/);
    expect(() => compileExpr('chunk_id in [1')).toThrow(/expected a literal|expected , or \]/);
  });
});
