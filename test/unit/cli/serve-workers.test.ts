import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { workersOption } from '../../../bin/cli/cpu-runtime.js';
import { runServe, startServer } from '../../../bin/cli/serve.js';
import { yieldingClient } from '../../../bin/cli/serve-gate.js';
import { FeatureHashEmbedder } from '../../../shared/src/embeddings/feature-hash.js';
import { createOfflineEmbedder } from '../../../shared/src/embeddings/local.js';
import { ValidationError } from '../../../shared/src/errors.js';
import { LocalExtractiveModel } from '../../../shared/src/generation/local-extractive.js';
import {
  PoolClosedError,
  PooledEmbedder,
  PooledExtractiveModel,
} from '../../../shared/src/runtime/cpu-pool.js';
import { openPglite } from '../../../shared/src/vectorstores/sql-client.js';

const BIN = join(import.meta.dirname, '..', '..', '..', 'bin', 'ai4rag.mjs');
const dirs: string[] = [];
async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'ai4rag-serve-workers-'));
  dirs.push(dir);
  return dir;
}
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

describe('yieldingClient', () => {
  it('lets the event loop turn before each statement, in and out of transactions, with the same rows', async () => {
    const raw = await openPglite({});
    const client = yieldingClient(raw);
    try {
      let fired = -1;
      let done = 0;
      setImmediate(() => {
        fired = done;
      });
      // Back-to-back statements: the immediate queued before them runs before the second one starts.
      for (let i = 0; i < 5; i += 1) {
        expect((await client.query<{ n: number }>('SELECT $1::int AS n', [i])).rows).toEqual([
          { n: i },
        ]);
        done += 1;
      }
      expect(fired).toBe(0);
      fired = -1;
      done = 0;
      const sum = await client.transaction(async (tx) => {
        setImmediate(() => {
          fired = done;
        });
        await tx.query('CREATE TEMP TABLE t (n int)');
        done += 1;
        await tx.query('INSERT INTO t VALUES (1), (2)');
        done += 1;
        return (await tx.query<{ s: number }>('SELECT sum(n)::int AS s FROM t')).rows[0]?.s;
      });
      expect(sum).toBe(3);
      expect(fired).toBe(0);
      expect(client.dialect).toBe('pglite');
      expect(client.db).toBe(raw.db);
    } finally {
      await client.close();
    }
    expect(raw.db.closed).toBe(true);
  });
});

describe('serve --workers', () => {
  it('answers with pooled local models, the same vectors, and closes the pool with the server', async () => {
    const running = await startServer({
      dataDir: await tempDir(),
      inMemory: true,
      port: 0,
      token: 't',
      workers: 2,
    });
    const embedder = await running.runtime.embedder();
    let closed = false;
    try {
      expect(embedder).toBeInstanceOf(PooledEmbedder);
      expect(await running.runtime.embedder()).toBe(embedder); // one adapter per model
      expect(await running.runtime.model()).toBeInstanceOf(PooledExtractiveModel);
      expect(await embedder.embedQuery('lock gate')).toEqual(
        await createOfflineEmbedder('local').embedQuery('lock gate'),
      );
      const health = await fetch(`${running.url}/health`);
      expect(health.status).toBe(200);
      await running.close();
      closed = true;
      await expect(embedder.embedQuery('lock gate')).rejects.toThrow(PoolClosedError);
    } finally {
      if (!closed) await running.close();
    }
  });

  it('keeps the models on the main thread with --workers 0', async () => {
    const running = await startServer({
      dataDir: await tempDir(),
      inMemory: true,
      port: 0,
      token: 't',
      workers: 0,
    });
    try {
      expect(await running.runtime.embedder()).toBeInstanceOf(FeatureHashEmbedder);
      expect(await running.runtime.model()).toBeInstanceOf(LocalExtractiveModel);
    } finally {
      await running.close();
    }
  });

  it('refuses a bad --workers value, naming it, with exit code 2', async () => {
    const err: string[] = [];
    const code = await runServe(['--workers', 'two'], { out: () => {}, err: (l) => err.push(l) });
    expect(code).toBe(2);
    expect(err).toEqual(['ai4rag serve: --workers must be an integer from 0 to 64, got "two"']);
    expect(() => workersOption('65')).toThrow(
      new ValidationError('--workers must be an integer from 0 to 64, got "65"'),
    );
    expect(workersOption('0')).toBe(0);
    expect(workersOption(undefined)).toBeUndefined();
  });

  it('stops on SIGTERM after using its workers: the process exits by itself with code 0', async () => {
    const child = spawn(
      process.execPath,
      [
        BIN,
        'serve',
        '--port',
        '0',
        '--token',
        't',
        '--workers',
        '2',
        '--data-dir',
        await tempDir(),
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    let err = '';
    child.stderr.on('data', (c: Buffer) => {
      err += c.toString('utf8');
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    try {
      const url = await new Promise<string>((resolve, reject) => {
        child.stdout.on('data', (c: Buffer) => {
          out += c.toString('utf8');
          const found = /ai4rag API on (http:\/\/\S+)/.exec(out);
          if (found) resolve(found[1] as string);
        });
        child.once('exit', (code) => reject(new Error(`serve exited with ${code}: ${err}`)));
      });
      // A search embeds its question in a worker (the collection is empty: no hits).
      const search = await fetch(`${url}/search`, {
        method: 'POST',
        headers: { authorization: 'Bearer t', 'content-type': 'application/json' },
        body: JSON.stringify({ query: 'lock gate', k: 3 }),
      });
      expect([200, 404]).toContain(search.status);
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
      expect(out.trim().split('\n').at(-1)).toBe('stopped');
    } finally {
      // A failed assertion must not leave the server running.
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
  });
});
