/**
 * `npm run bench -- --serve [--connections 50] [--seconds 10] [--route generate|search] [--concurrency N]
 * [--workers N] [--profile DIR]`: `ai4rag serve` under load on 127.0.0.1. One server on the embedded store with
 * 1,000 synthetic documents (one chunk each), uploaded through its own API; then `--connections` keep-alive clients
 * send requests back to back for `--seconds`, while a prober in another process opens a NEW connection every
 * 250 ms for `GET /health` (what a load balancer's health check does).
 *
 * Without `--workers`, runs twice, side by side: `serve` with its worker pool (default size), then `--workers 0`
 * (everything on the main thread). `--concurrency` is passed to `serve` (its default gate otherwise). Prints
 * requests/s, p50 / p95 / p99 latency and p99 / p50, the slowest request and when in the load it started, and the
 * health check's p50 / p99 / max latency under load; then a table of the runs. `--profile DIR` writes the server's
 * CPU profiles (`node --cpu-prof`, one per thread) to DIR.
 */

import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mulberry32 } from '../shared/src/util/random.js';
import { percentile } from './measure.js';

/** Options of {@link runServeLoad}, from the command line. */
export interface ServeLoadOptions {
  connections: number;
  /** `serve --concurrency` (its default when absent). */
  concurrency?: number;
  /** `serve --workers` (both the default pool and 0 when absent). */
  workers?: number;
  seconds: number;
  route: 'generate' | 'search';
  /** Folder for a CPU profile of the server (`node --cpu-prof`), written when it stops. */
  profileDir?: string;
}

/** Parses `--connections` (1–200, default 50), `--seconds` (1–120, default 10), `--route` (default generate). */
export function parseServeLoadArgs(argv: readonly string[]): ServeLoadOptions {
  const value = (flag: string) => {
    const i = argv.indexOf(flag);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const connections = Number(value('--connections') ?? 50);
  const seconds = Number(value('--seconds') ?? 10);
  const route = value('--route') ?? 'generate';
  if (!Number.isInteger(connections) || connections < 1 || connections > 200) {
    throw new Error(
      `--connections must be an integer from 1 to 200, got "${value('--connections')}"`,
    );
  }
  if (!Number.isInteger(seconds) || seconds < 1 || seconds > 120) {
    throw new Error(`--seconds must be an integer from 1 to 120, got "${value('--seconds')}"`);
  }
  if (route !== 'generate' && route !== 'search') {
    throw new Error(`--route must be generate or search, got "${route}"`);
  }
  const concurrency = value('--concurrency');
  if (concurrency !== undefined && !/^[1-9][0-9]*$/.test(concurrency)) {
    throw new Error(`--concurrency must be a positive integer, got "${concurrency}"`);
  }
  const workers = value('--workers');
  if (workers !== undefined && !/^[0-9]+$/.test(workers)) {
    throw new Error(`--workers must be an integer ≥ 0, got "${workers}"`);
  }
  const profileDir = value('--profile');
  return {
    connections,
    seconds,
    route,
    ...(profileDir !== undefined && { profileDir }),
    ...(workers !== undefined && { workers: Number(workers) }),
    ...(concurrency !== undefined && { concurrency: Number(concurrency) }),
  };
}

const WORDS = Array.from({ length: 2000 }, (_, i) => `term${i.toString(36)}`);

function request(
  agent: http.Agent | false,
  url: URL,
  method: string,
  token: string,
  body?: string,
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      {
        method,
        agent,
        headers: {
          authorization: `Bearer ${token}`,
          ...(body !== undefined && {
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(body),
          }),
        },
      },
      (res) => {
        const parts: Buffer[] = [];
        res.on('data', (c: Buffer) => parts.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, text: Buffer.concat(parts).toString('utf8') }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    if (body !== undefined) req.write(body);
    req.end();
  });
}

/**
 * Uploads `count` one-chunk documents through `POST /uploads` (then PUT to the URL it gives), one after another, and
 * waits until `/stats` counts them; resolves with each upload's milliseconds (POST + PUT, which answers once the
 * document is indexed).
 */
async function seed(server: { url: string }, token: string, count: number): Promise<number[]> {
  const uploads: number[] = [];
  const random = mulberry32(7);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
  for (let d = 0; d < count; d += 1) {
    const text = Array.from(
      { length: 80 + Math.floor(random() * 60) },
      () => WORDS[Math.floor(random() ** 2 * WORDS.length)],
    ).join(' ');
    const key = `load/doc-${String(d).padStart(5, '0')}.txt`;
    const t0 = performance.now();
    const presigned = await request(
      agent,
      new URL('/uploads', server.url),
      'POST',
      token,
      JSON.stringify({ key }),
    );
    if (presigned.status !== 200) {
      throw new Error(`POST /uploads answered ${presigned.status}: ${presigned.text}`);
    }
    const { url } = JSON.parse(presigned.text) as { url: string };
    const res = await request(agent, new URL(url, server.url), 'PUT', token, text);
    if (res.status >= 300) throw new Error(`upload ${d} answered ${res.status}: ${res.text}`);
    uploads.push(performance.now() - t0);
  }
  for (let waited = 0; ; waited += 1) {
    const res = await request(agent, new URL('/stats', server.url), 'GET', token);
    const stats = JSON.parse(res.text) as { documents?: number };
    if ((stats.documents ?? 0) >= count) break;
    if (waited > 600) throw new Error(`only ${stats.documents} of ${count} documents indexed`);
    await new Promise((r) => setTimeout(r, 500));
  }
  agent.destroy();
  return uploads;
}

/**
 * One line on the seeding: its wall time, the upload p50 and slowest, and the p50 of the first and the last 100
 * documents (an upload whose cost grows with what the store holds shows as a last p50 above the first).
 */
function describeSeeding(uploads: readonly number[], seconds: number): string {
  const p50 = (xs: readonly number[]) =>
    percentile(
      [...xs].sort((a, b) => a - b),
      50,
    ).toFixed(1);
  const n = Math.min(100, uploads.length);
  return `serve  seeded ${uploads.length} uploads one after another in ${seconds.toFixed(1)} s: upload p50 ${p50(uploads)} ms, slowest ${Math.max(...uploads).toFixed(1)} ms; documents 1–${n}: ${p50(uploads.slice(0, n))} ms, the last ${n}: ${p50(uploads.slice(-n))} ms`;
}

/** Runs the load and prints one line of results. */
export async function runServeLoad(argv: readonly string[]): Promise<void> {
  const options = parseServeLoadArgs(argv);
  // Side by side: the worker pool on (serve's default size) and off, unless --workers picks one.
  const settings = options.workers !== undefined ? [options.workers] : [undefined, 0];
  const rows: LoadResult[] = [];
  for (const workers of settings) {
    rows.push(await loadOnce({ ...options, ...(workers !== undefined && { workers }) }));
  }
  const f = (x: number) => x.toFixed(0).padStart(6);
  console.log(
    `\n| serve --workers | requests/s | p50 ms | p99 ms | p99/p50 | health p50 ms | health p99 ms | health max ms |`,
  );
  console.log('|---|---|---|---|---|---|---|---|');
  for (const r of rows) {
    console.log(
      `| ${r.workers} | ${r.rps.toFixed(1)} | ${f(r.p50)} | ${f(r.p99)} | ${(r.p99 / r.p50).toFixed(2)} | ${f(r.healthP50)} | ${f(r.healthP99)} | ${f(r.healthMax)} |`,
    );
  }
}

/** One run's figures. */
interface LoadResult {
  workers: string;
  rps: number;
  p50: number;
  p99: number;
  healthP50: number;
  healthP99: number;
  healthMax: number;
}

async function loadOnce(options: ServeLoadOptions): Promise<LoadResult> {
  const dir = await mkdtemp(join(tmpdir(), 'ai4rag-serve-load-'));
  const token = 'bench-token';
  // The server in its own process, as users run it (the load generator must not share its event loop).
  const port = await freePort();
  const child = spawn(
    process.execPath,
    [
      ...(options.profileDir !== undefined
        ? ['--cpu-prof', '--cpu-prof-dir', options.profileDir]
        : []),
      join(import.meta.dirname, '..', 'bin', 'ai4rag.mjs'),
      'serve',
      '--port',
      String(port),
      '--token',
      token,
      '--data-dir',
      dir,
      ...(options.concurrency !== undefined ? ['--concurrency', String(options.concurrency)] : []),
      ...(options.workers !== undefined ? ['--workers', String(options.workers)] : []),
    ],
    { stdio: ['ignore', 'ignore', 'inherit'] },
  );
  const server = { url: `http://127.0.0.1:${port}` };
  try {
    await waitForHealth(server.url, child);
    const s0 = performance.now();
    const uploads = await seed(server, token, 1000);
    console.log(describeSeeding(uploads, (performance.now() - s0) / 1000));
    // POST /search takes a `query`, /generate a `question`.
    const field = options.route === 'search' ? 'query' : 'question';
    const random = mulberry32(11);
    const queries = Array.from({ length: 200 }, () =>
      Array.from({ length: 3 }, () => WORDS[Math.floor(random() ** 2 * 400)]).join(' '),
    );
    // The first query after an ingest folds the statistics log (and may re-weight BM25): timed apart, not load.
    const w0 = performance.now();
    await request(
      false,
      new URL(`/${options.route}`, server.url),
      'POST',
      token,
      JSON.stringify({ [field]: queries[0], k: 5 }),
    );
    const firstMs = performance.now() - w0;
    const agent = new http.Agent({ keepAlive: true, maxSockets: options.connections });
    const target = new URL(`/${options.route}`, server.url);
    const latencies: number[] = [];
    const health: number[] = [];
    let errors = 0;
    // The slowest request, and when (seconds into the load) it was sent: a stall shows as one outlier.
    let slowest = { ms: 0, at: 0 };
    let slowestProbe = { ms: 0, at: 0 };
    const client = async (c: number) => {
      for (let i = c; performance.now() < deadline; i += options.connections) {
        const body = JSON.stringify({ [field]: queries[i % queries.length], k: 5 });
        const t0 = performance.now();
        const res = await request(agent, target, 'POST', token, body);
        if (res.status !== 200) errors += 1;
        const ms = performance.now() - t0;
        latencies.push(ms);
        if (ms > slowest.ms) slowest = { ms, at: (t0 - loadStart) / 1000 };
      }
    };
    // The prober in a process of its own, as a load balancer is: this process's event loop is busy with the load.
    // It warms up (its own first request pays for loading http and a cold JIT) and says so before the load starts.
    const script = `const http = require('node:http');
      const once = () => new Promise((ok) => { const t0 = performance.now();
        http.get(${JSON.stringify(`${server.url}/health`)}, { agent: false }, (res) => {
          res.resume(); res.on('end', () => ok(performance.now() - t0)); }).on('error', () => ok(null)); });
      (async () => {
        await once(); process.stdout.write('ready\\n');
        await new Promise((go) => process.stdin.once('data', go));
        const start = Date.now(); const end = start + ${options.seconds * 1000}; const out = [];
        while (Date.now() < end) { const at = (Date.now() - start) / 1000; out.push([at, await once()]);
          await new Promise((r) => setTimeout(r, 250)); }
        process.stdout.write(JSON.stringify(out)); process.exit(0); })();`;
    const probe = spawn(process.execPath, ['-e', script], { stdio: ['pipe', 'pipe', 'inherit'] });
    let text = '';
    await new Promise<void>((ready, fail) => {
      probe.stdout.on('data', (c: Buffer) => {
        text += c.toString('utf8');
        if (text.startsWith('ready\n')) {
          text = text.slice('ready\n'.length);
          ready();
        }
      });
      probe.once('exit', (code) => fail(new Error(`the health prober exited with ${code}`)));
    });
    const prober = async () => {
      await new Promise((r) => probe.once('exit', r));
      for (const [at, ms] of JSON.parse(text || '[]') as [number, number | null][]) {
        health.push(ms ?? Number.NaN);
        if (ms !== null && ms > slowestProbe.ms) slowestProbe = { ms, at };
      }
    };
    const loadStart = performance.now();
    const deadline = loadStart + options.seconds * 1000;
    probe.stdin.write('go\n');
    const started = performance.now();
    await Promise.all([
      ...Array.from({ length: options.connections }, (_, c) => client(c)),
      prober(),
    ]);
    const seconds = (performance.now() - started) / 1000;
    agent.destroy();
    latencies.sort((a, b) => a - b);
    health.sort((a, b) => a - b);
    const p = (q: number) => percentile(latencies, q);
    const f = (x: number) => x.toFixed(1);
    const workers =
      options.workers !== undefined ? String(options.workers) : 'default (one per core)';
    console.log(
      `serve  --workers ${workers}, --concurrency ${options.concurrency ?? 'default (4)'}, ${options.connections} connections, POST /${options.route} on 1,000 chunks (PGlite): ${f(latencies.length / seconds)} requests/s, ` +
        `p50 ${f(p(50))} / p95 ${f(p(95))} / p99 ${f(p(99))} ms (p99/p50 ${(p(99) / p(50)).toFixed(2)}), slowest ${f(slowest.ms)} ms (sent ${slowest.at.toFixed(1)} s in), ${errors} errors; ` +
        `first query after ingest ${f(firstMs)} ms; health check on a new connection: p50 ${f(percentile(health, 50))} / p99 ${f(percentile(health, 99))} / max ${f(health.at(-1) ?? Number.NaN)} ms (sent ${slowestProbe.at.toFixed(1)} s in; ${health.length} probes)`,
    );
    return {
      workers: options.workers !== undefined ? String(options.workers) : 'default',
      rps: latencies.length / seconds,
      p50: p(50),
      p99: p(99),
      healthP50: percentile(health, 50),
      healthP99: percentile(health, 99),
      healthMax: health.at(-1) ?? Number.NaN,
    };
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    await rm(dir, { recursive: true, force: true });
  }
}

/** A free TCP port on 127.0.0.1. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

/** Waits (≤ 60 s) until the server answers /health; fails when the process exits first. */
async function waitForHealth(url: string, child: ChildProcess): Promise<void> {
  for (let i = 0; i < 240; i += 1) {
    if (child.exitCode !== null) throw new Error(`ai4rag serve exited with ${child.exitCode}`);
    try {
      const res = await request(false, new URL('/health', url), 'GET', '');
      if (res.status === 200) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error('ai4rag serve did not answer /health within 60 s');
}
