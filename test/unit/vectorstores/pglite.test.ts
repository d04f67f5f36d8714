import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DataDirInUseError } from '../../../shared/src/vectorstores/errors.js';
import { PgVectorStore } from '../../../shared/src/vectorstores/pgvector/pgvector-store.js';
import { openPglite, type PgliteSqlClient } from '../../../shared/src/vectorstores/sql-client.js';
import { makeChunk, runVectorStoreContract } from './contract.js';
import { createHashEmbedder } from './fake-embedder.js';
import { runKeywordIndexSuite } from './keyword-index-suite.js';
import { runPgVectorSuite } from './pgvector-suite.js';
import { runStagedWriteContract } from './staged-contract.js';

let client: PgliteSqlClient;
beforeAll(async () => {
  client = await openPglite();
});
afterAll(async () => {
  await client.close();
});

runVectorStoreContract('pgvector on in-memory PGlite', (opts) =>
  PgVectorStore.create({ client, ...opts }),
);
runStagedWriteContract('pgvector on in-memory PGlite', (opts) =>
  PgVectorStore.create({ client, ...opts }),
);
runPgVectorSuite('in-memory PGlite', () => client);

describe('PGlite data directory', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ai4rag-pglite-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('persists a collection across close and reopen', async () => {
    // Prepare
    const dataDir = join(dir, 'persist');
    const embedder = createHashEmbedder();
    const first = await PgVectorStore.create({
      client: await openPglite({ dataDir }),
      embedder,
      collectionName: 'ai4rag_persist',
      ownsClient: true,
    });
    await first.addChunks([
      makeChunk('p', 1, 'persistent proteins'),
      makeChunk('p', 2, 'durable data'),
    ]);
    await first.close();
    // Act
    const second = await PgVectorStore.create({
      client: await openPglite({ dataDir }),
      embedder,
      collectionName: 'ai4rag_persist',
      ownsClient: true,
    });
    try {
      const hits = await second.search('durable data', { k: 1 });
      const stats = await second.stats();
      // Assess
      expect(hits.map((h) => h.id)).toEqual(['p#2']);
      expect(stats.chunks).toBe(2);
    } finally {
      await second.close();
    }
  });

  it('refuses a data directory held by a live process and releases it on close', async () => {
    // Prepare
    const dataDir = join(dir, 'locked');
    const holder = await openPglite({ dataDir });
    // Act
    const second = openPglite({ dataDir });
    // Assess
    await expect(second).rejects.toBeInstanceOf(DataDirInUseError);
    await expect(openPglite({ dataDir })).rejects.toThrow(
      `data directory ${dataDir} is in use by process ${process.pid}`,
    );
    expect(await readFile(`${dataDir}.lock`, 'utf8')).toBe(String(process.pid));
    await holder.close();
    const reopened = await openPglite({ dataDir });
    await reopened.close();
  });

  it('takes over a stale lock left by a dead process', async () => {
    // Prepare: 4,206,649 is above Linux's largest possible pid_max (2^22), so no such process exists
    const dataDir = join(dir, 'stale');
    await writeFile(`${dataDir}.lock`, String(4_206_649));
    // Act
    const db = await openPglite({ dataDir });
    // Assess
    expect(await readFile(`${dataDir}.lock`, 'utf8')).toBe(String(process.pid));
    await db.close();
    await expect(readFile(`${dataDir}.lock`, 'utf8')).rejects.toThrow(/ENOENT/);
  });
});

runKeywordIndexSuite('in-memory PGlite', () => client);
