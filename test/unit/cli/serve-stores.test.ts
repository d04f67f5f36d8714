// `ai4rag serve` serves the store it is given (--store, else AI4RAG_STORE), not always the embedded one: a
// document uploaded through the server lands in the PostgreSQL server or in Milvus, and is found there.
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runServe, startServer } from '../../../bin/cli/serve.js';
import { createEmbedder } from '../../../shared/src/embeddings/factory.js';
import { DEFAULT_EMBEDDING_MODEL } from '../../../shared/src/embeddings/local.js';
import { openStore, type StoreKind } from '../../../shared/src/runtime/open-store.js';
import { type FakeMilvus, startFakeMilvus } from '../../support/fake-milvus/server.js';
import { probePgServer } from '../../support/pg.js';

const TOKEN = 'serve-stores-token';
const LEAVE =
  '# Leave policy\n\nEvery employee receives 27 days of paid annual leave per calendar year.\n';
const pgServer = await probePgServer();

async function serveAndSearch(
  store: StoreKind,
  env: Record<string, string | undefined>,
  collection: string,
) {
  const dataDir = mkdtempSync(join(tmpdir(), 'ai4rag-serve-stores-'));
  const server = await startServer({
    dataDir,
    port: 0,
    token: TOKEN,
    store,
    env: { ...env, AI4RAG_COLLECTION: collection },
  });
  const call = (path: string, init: RequestInit = {}) =>
    fetch(`${server.url}${path}`, {
      ...init,
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    });
  try {
    const up = await call('/uploads', {
      method: 'POST',
      body: JSON.stringify({ key: 'policies/leave.md' }),
    });
    const { url } = (await up.json()) as { url: string };
    expect((await fetch(url, { method: 'PUT', body: LEAVE })).status).toBe(200);
    const res = await call('/search', {
      method: 'POST',
      body: JSON.stringify({ query: 'days of annual leave' }),
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { results: { document_key: string; text: string }[] };
    expect(body.results[0]?.document_key).toBe('policies/leave.md');
    expect(body.results[0]?.text).toContain('27 days');
    // Nothing went to the embedded store.
    expect(existsSync(join(dataDir, 'pglite'))).toBe(false);
  } finally {
    await server.close();
  }
  // The collection is on the server, readable by any other client.
  const embedder = await createEmbedder(DEFAULT_EMBEDDING_MODEL);
  const direct = await openStore({
    kind: store,
    env,
    embedder,
    collectionName: collection,
    createIfMissing: false,
  });
  try {
    expect((await direct.stats()).chunks).toBe(1);
    expect((await direct.listDocuments()).map((d) => d.documentId)).toEqual(['policies/leave.md']);
  } finally {
    await direct.drop();
    await direct.close();
  }
}

describe('ai4rag serve --store', () => {
  let milvus: FakeMilvus;
  beforeAll(async () => {
    milvus = await startFakeMilvus();
  });
  afterAll(async () => {
    await milvus?.close();
  });

  it.skipIf(pgServer === undefined)(
    'serves a collection on the PostgreSQL server (--store pgvector)',
    async () => {
      await serveAndSearch(
        'pgvector',
        { ...process.env },
        `ai4rag_serve_pg_${Date.now().toString(36)}`,
      );
    },
  );

  it('serves a collection on Milvus (--store milvus)', async () => {
    await serveAndSearch(
      'milvus',
      { MILVUS_URI: milvus.uri },
      `ai4rag_serve_mv_${Date.now().toString(36)}`,
    );
  });

  it('refuses an unknown store before starting, naming the flag (exit 2)', async () => {
    const err: string[] = [];
    const code = await runServe(['--store', 'sqlite', '--port', '0'], {
      out: () => undefined,
      err: (l) => err.push(l),
    });
    expect(code).toBe(2);
    expect(err).toEqual([
      'ai4rag serve: --store must be one of pglite, pgvector, milvus; got "sqlite"',
    ]);
  });
});
