import { MilvusClient } from '@zilliz/milvus2-sdk-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NotFoundError, ValidationError } from '../../../shared/src/errors.js';
import { VectorStoreConfigError } from '../../../shared/src/vectorstores/errors.js';
import {
  milvusConfigFromEnv,
  parseMilvusConfig,
} from '../../../shared/src/vectorstores/milvus/config.js';
import {
  andExpr,
  metadataFilterExpr,
  milvusList,
  milvusLiteral,
} from '../../../shared/src/vectorstores/milvus/filter-expr.js';
import { MilvusVectorStore } from '../../../shared/src/vectorstores/milvus/milvus-store.js';
import { compileExpr } from '../../support/fake-milvus/expr.js';
import { type FakeMilvus, startFakeMilvus } from '../../support/fake-milvus/server.js';
import { makeChunk, runVectorStoreContract } from './contract.js';
import { createHashEmbedder } from './fake-embedder.js';
import { runStagedWriteContract } from './staged-contract.js';

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

runVectorStoreContract(
  'Milvus (fake server)',
  (opts) => MilvusVectorStore.create({ client, ...opts }),
  undefined,
  { unsupportedDistances: ['l1'] },
);

runStagedWriteContract('Milvus (fake server)', (opts) =>
  MilvusVectorStore.create({ client, ...opts }),
);

describe('parseMilvusConfig', () => {
  it('accepts http and https URIs with a token and a PEM certificate', () => {
    // Act
    const plain = parseMilvusConfig({ uri: 'http://localhost:19530' });
    const cloud = parseMilvusConfig({
      uri: ' https://in03-abc.zillizcloud.com ',
      token: 'key',
      serverCert: '-----BEGIN CERTIFICATE-----\nMII\n-----END CERTIFICATE-----',
    });
    // Assess
    expect(plain).toEqual({ uri: 'http://localhost:19530' });
    expect(cloud).toEqual({
      uri: 'https://in03-abc.zillizcloud.com',
      token: 'key',
      serverCert: '-----BEGIN CERTIFICATE-----\nMII\n-----END CERTIFICATE-----',
    });
  });

  it('rejects a URI without an http(s) scheme with a clear message', () => {
    // Act / Assess
    for (const uri of ['localhost:19530', 'grpc://localhost:19530', 'tcp://h:1']) {
      expect(() => parseMilvusConfig({ uri })).toThrow(
        `Milvus uri must start with http:// or https:// and name a host, got ${JSON.stringify(uri)}`,
      );
    }
    expect(() => parseMilvusConfig({ uri: '' })).toThrow(/Milvus uri is required/);
    expect(() => parseMilvusConfig({})).toThrow(VectorStoreConfigError);
    expect(() => parseMilvusConfig(null)).toThrow(ValidationError);
    expect(() => parseMilvusConfig({ uri: 'http://h:1', token: 5 })).toThrow(/token/);
  });

  it('reads MILVUS_URI, MILVUS_TOKEN and MILVUS_SERVER_CERT (or MILVUS_CA_CERT) from an env map', () => {
    // Act
    const full = milvusConfigFromEnv({
      MILVUS_URI: 'https://db.example:443',
      MILVUS_TOKEN: 'user:pw',
      MILVUS_SERVER_CERT: 'PEM',
    });
    const ca = milvusConfigFromEnv({ MILVUS_URI: 'http://db:19530', MILVUS_CA_CERT: 'CA' });
    // Assess
    expect(full).toEqual({ uri: 'https://db.example:443', token: 'user:pw', serverCert: 'PEM' });
    expect(ca).toEqual({ uri: 'http://db:19530', serverCert: 'CA' });
    expect(() => milvusConfigFromEnv({})).toThrow(/Milvus uri is required/);
  });
});

describe('Milvus filter expressions', () => {
  it('escapes hostile string values so they stay one literal', () => {
    // Prepare
    const hostile = 'x" or chunk_id != "y\\" or 1 == 1 or "\n';
    // Act
    const lit = milvusLiteral(hostile);
    const expr = metadataFilterExpr({ 'user.note': hostile });
    const pred = compileExpr(expr);
    // Assess
    expect(lit).toBe('"x\\" or chunk_id != \\"y\\\\\\" or 1 == 1 or \\"\\n"');
    expect(expr).toBe(`chunk_content["user"]["note"] == ${lit}`);
    expect(pred({ chunk_id: 'a', chunk_content: { user: { note: 'other' } } })).toBe(false);
    expect(pred({ chunk_id: 'a', chunk_content: { user: { note: hostile } } })).toBe(true);
  });

  it('maps document_id and sequence_number to scalar fields only for values of their type', () => {
    // Act
    const expr = metadataFilterExpr({
      document_id: 'd1',
      sequence_number: 2,
      'user.lang': 'en',
      'user.n': 1.5,
    });
    const typed = metadataFilterExpr({ sequence_number: '2', document_id: 7, 'user.flag': true });
    // Assess
    expect(expr).toBe(
      '(document_id == "d1") and (sequence_number == 2) and (chunk_content["user"]["lang"] == "en") and (chunk_content["user"]["n"] == 1.5)',
    );
    expect(typed).toBe(
      '(chunk_content["sequence_number"] == "2") and (chunk_content["document_id"] == 7) and (chunk_content["user"]["flag"] == true)',
    );
    expect(metadataFilterExpr(undefined)).toBe('');
  });

  it('rejects bad keys and empty filters where a filter is required', () => {
    // Act / Assess
    expect(() => metadataFilterExpr({ 'a"] or 1==1 or x["': 1 })).toThrow(/unknown field/);
    expect(() => metadataFilterExpr({}, { nonEmpty: true })).toThrow(/must not be empty/);
    expect(() => milvusLiteral(Number.NaN)).toThrow(TypeError);
  });

  it('compiles every operator to real-Milvus syntax', () => {
    // Act
    const expr = metadataFilterExpr({
      or: [
        { 'user.year': { gte: 2020, lt: 2024 } },
        { not: { document_id: { in: ['a', 'b'] } } },
        { 'user.tag': { ne: 'x', nin: ['y'], startsWith: '50%_off\\' } },
      ],
    });
    // Assess
    expect(expr).toBe(
      '((chunk_content["user"]["year"] >= 2020) and (chunk_content["user"]["year"] < 2024)) or (not (document_id in ["a", "b"])) or ((not (chunk_content["user"]["tag"] == "x")) and (not (chunk_content["user"]["tag"] in ["y"])) and (chunk_content["user"]["tag"] like "50\\\\%\\\\_off\\\\\\\\%"))',
    );
    const pred = compileExpr(expr);
    expect(pred({ chunk_content: { user: { tag: '50%_off\\ today' } }, document_id: 'a' })).toBe(
      true,
    );
    expect(pred({ chunk_content: { user: { tag: '50%Xoff\\' } }, document_id: 'a' })).toBe(false);
    expect(pred({ chunk_content: { user: { year: 2021 } }, document_id: 'a' })).toBe(true);
    expect(pred({ chunk_content: {}, document_id: 'c' })).toBe(true);
  });

  it('builds lists and conjunctions', () => {
    // Act / Assess
    expect(milvusList(['a"b', 'c\\'])).toBe('["a\\"b", "c\\\\"]');
    expect(andExpr('a == 1', '', 'b == 2')).toBe('(a == 1) and (b == 2)');
    expect(andExpr('', 'a == 1')).toBe('a == 1');
  });
});

describe('MilvusVectorStore options', () => {
  it('rejects the l1 distance, which Milvus does not support', async () => {
    // Act
    const act = MilvusVectorStore.create({
      client,
      embedder: createHashEmbedder(),
      collectionName: 'ai4rag_l1',
      distance: 'l1',
    });
    // Assess
    await expect(act).rejects.toBeInstanceOf(VectorStoreConfigError);
    await expect(act).rejects.toThrow(/not supported by Milvus/);
  });

  it('refuses to create a missing collection when createIfMissing is false', async () => {
    // Act
    const act = MilvusVectorStore.create({
      client,
      embedder: createHashEmbedder(),
      collectionName: 'ai4rag_never_created',
      createIfMissing: false,
    });
    // Assess
    await expect(act).rejects.toBeInstanceOf(NotFoundError);
    expect((await client.hasCollection({ collection_name: 'ai4rag_never_created' })).value).toBe(
      false,
    );
  });

  it('connects from a config, records the model and owns (closes) its client', async () => {
    // Prepare
    const embedder = createHashEmbedder({ modelId: 'model-a' });
    const store = await MilvusVectorStore.create({
      config: parseMilvusConfig({ uri: fake.uri }),
      embedder,
      collectionName: 'ai4rag_from_config',
    });
    // Act
    await store.addChunks([makeChunk('c', 1, 'configured client works')]);
    const hits = await store.search('configured client works', { k: 1 });
    const described = await client.describeCollection({ collection_name: 'ai4rag_from_config' });
    await store.drop();
    // Assess
    expect(hits.map((h) => h.id)).toEqual(['c#1']);
    expect(JSON.parse(described.schema.description)).toEqual({
      ai4rag: 'chunks',
      embedding_model: 'model-a',
      distance: 'cosine',
      schema: 2,
    });
    expect((await client.hasCollection({ collection_name: 'ai4rag_from_config' })).value).toBe(
      false,
    );
  });
});
