/**
 * `ai4rag serve` stopping while it works: the first SIGTERM lets the requests in flight finish (an upload's whole
 * ingestion runs inside its request) before the store closes; a second one stops at once and says what was cut
 * short. The embedding server (a fake OpenAI-compatible one) holds a document's embeddings request, so the upload
 * is in flight, deterministically, when the signal arrives.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { runServe } from '../../../bin/cli/serve.js';
import { type CliRun, lastJson, runCli } from '../../chaos/harness.js';
import { type FakeOpenAI, startFakeOpenAI } from '../../support/fake-openai-server.js';

const DOC = '# Locks\n\nThe Brannvik lock opens every 40 minutes between 06:00 and 22:00.\n';

describe('ai4rag serve on SIGTERM', () => {
  let fake: FakeOpenAI;
  let root: string;
  /** Set while a test holds the document's embeddings request: resolves it. */
  let release: (() => void) | undefined;
  let held: (() => void) | undefined;
  const env = () => ({
    OPENAI_BASE_URL: fake.baseURL,
    OPENAI_API_KEY: 'sk-test',
    AI4RAG_EMBEDDING_MODEL: 'text-embedding-3-small',
  });

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'ai4rag-serve-stop-'));
    fake = await startFakeOpenAI({
      dimension: 16,
      onEmbeddingRequest: async () => {
        const body = fake.requests.at(-1)?.body as { input?: unknown } | undefined;
        if (held === undefined || !JSON.stringify(body?.input ?? '').includes('Brannvik')) return;
        const gate = new Promise<void>((r) => {
          release = r;
        });
        held();
        held = undefined;
        await gate;
      },
    });
  });
  afterEach(() => {
    release?.();
    release = undefined;
  });
  afterAll(async () => {
    release?.();
    await fake?.close();
    if (root) await rm(root, { recursive: true, force: true });
  });

  /** Starts serve on a new data folder; resolves once it printed its URL. */
  async function serve(dataDir: string) {
    let child: ChildProcess | undefined;
    let out = '';
    let err = '';
    const exited: Promise<CliRun> = runCli(
      ['serve', '--port', '0', '--token', 't', '--workers', '0', '--data-dir', dataDir],
      {
        env: env(),
        timeoutMs: 50_000,
        onSpawn: (c) => {
          child = c;
          c.stdout?.on('data', (b: Buffer) => {
            out += b.toString('utf8');
          });
          c.stderr?.on('data', (b: Buffer) => {
            err += b.toString('utf8');
          });
        },
      },
    );
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setInterval(() => {
        const found = /ai4rag API on (http:\/\/\S+)/.exec(out);
        if (found) {
          clearInterval(timer);
          resolve(found[1] as string);
        }
      }, 20);
      exited.then((r) => {
        clearInterval(timer);
        reject(new Error(`serve exited with ${r.code}: ${r.stderr}`));
      }, reject);
    });
    const stderrHas = (text: string) =>
      new Promise<void>((resolve) => {
        const timer = setInterval(() => {
          if (err.includes(text)) {
            clearInterval(timer);
            resolve();
          }
        }, 20);
      });
    return { child: child as ChildProcess, url, exited, stderrHas };
  }

  /** Starts an upload of DOC and resolves once its embeddings request is held (the upload is in flight). */
  async function holdUpload(url: string, key: string) {
    const signed = (await (
      await fetch(`${url}/uploads`, {
        method: 'POST',
        headers: { authorization: 'Bearer t', 'content-type': 'application/json' },
        body: JSON.stringify({ key }),
      })
    ).json()) as { url: string };
    const isHeld = new Promise<void>((r) => {
      held = r;
    });
    const put = fetch(signed.url, { method: 'PUT', body: DOC }).then(
      async (r) => ({ status: r.status, body: (await r.json()) as Record<string, unknown> }),
      (error: unknown) => ({ status: 0, body: { error: String(error) } }),
    );
    await isHeld;
    // In an object: an async function returning the promise itself would wait for it.
    return { put };
  }

  it('finishes the upload in flight, refuses new connections meanwhile, then exits 0 with the document indexed', async () => {
    // Prepare
    const dataDir = join(root, 'drain');
    const server = await serve(dataDir);
    const { put } = await holdUpload(server.url, 'locks.md');

    // Act
    server.child.kill('SIGTERM');
    await server.stderrHas('stopping: waiting up to 30 s for 1 request (Ctrl+C again to stop now)');
    const during = await fetch(`${server.url}/health`).then(
      (r) => r.status,
      (error: unknown) => (error as { cause?: { code?: string } }).cause?.code,
    );
    release?.();
    const upload = await put;
    const run = await server.exited;
    const documents = await runCli(
      ['documents', '--embedding', 'text-embedding-3-small', '--data-dir', dataDir, '--json'],
      { env: env() },
    );

    // Assess
    expect(during).toBe('ECONNREFUSED');
    expect(upload).toEqual({
      status: 200,
      body: { key: 'locks.md', ingested: true, status: 'indexed', chunks: 1 },
    });
    expect(run.code).toBe(0);
    expect(run.stdout.trim().split('\n').at(-1)).toBe('stopped');
    expect(run.stderr).not.toMatch(/closed|failed|error/i);
    expect(
      lastJson<{ document_key: string; chunk_count: number }[]>(documents).map((d) => [
        d.document_key,
        d.chunk_count,
      ]),
    ).toEqual([['locks.md', 1]]);
  });

  it('stops at once on a second SIGTERM, exits 1 and names what it cut short; the store stays readable', async () => {
    // Prepare
    const dataDir = join(root, 'force');
    const server = await serve(dataDir);
    const { put } = await holdUpload(server.url, 'cut.md');

    // Act
    server.child.kill('SIGTERM');
    await server.stderrHas('stopping: waiting up to 30 s for 1 request');
    server.child.kill('SIGTERM');
    const run = await server.exited;
    release?.();
    const upload = await put;
    const stats = await runCli(
      ['stats', '--embedding', 'text-embedding-3-small', '--data-dir', dataDir, '--json'],
      { env: env() },
    );

    // Assess
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('stopping now');
    expect(run.stderr).toContain('stopped before 1 request finished');
    expect(run.stderr).toContain('an upload among them keeps its previous version served');
    expect(upload.status).toBe(0); // the connection was closed under it
    expect(stats.code).toBe(0);
    expect(lastJson<{ documents: number; chunks: number }>(stats)).toMatchObject({
      documents: 0,
      chunks: 0,
    });
  });

  it('refuses a bad --stop-timeout, naming it, with exit code 2', async () => {
    for (const given of ['soon', '-1', '3601', '1.5']) {
      const err: string[] = [];
      const code = await runServe([`--stop-timeout=${given}`], {
        out: () => {},
        err: (l) => err.push(l),
      });
      expect(code).toBe(2);
      expect(err).toEqual([
        `ai4rag serve: --stop-timeout must be a whole number of seconds from 0 to 3600, got "${given}"`,
      ]);
    }
  });
});
