/**
 * `npm run bench -- --trials [--max-evals 4] [--rounds 3] [--stores pglite,pgvector]`: does `ai4rag experiment`
 * get faster with `--trial-concurrency 2` than with 1 on this machine? Measured side by side in one run.
 *
 * Each run is a fresh `ai4rag experiment` process on the same documents and questions (ClapNQ dev from
 * ../shared/data when present, else the sample corpus), so every run indexes and evaluates every trial: nothing is
 * reused from an earlier run. On PGlite every run gets a copy of one initialized data directory (PGlite's first
 * start, initdb, is paid once, before the timed runs); on the PostgreSQL server every run gets its own database,
 * dropped afterwards. The two concurrencies alternate (1, 2, then 2, 1, …) so drift in the machine's load falls on
 * both. Prints each run's wall time, the median per concurrency and the ratio (median at 1 / median at 2; the goal
 * on 2 cores is ≥ 1.6).
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { cp, mkdtemp, rm } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { ENV } from '../shared/src/config.js';
import { pgVectorConfigFromEnv } from '../shared/src/vectorstores/config.js';
import { intFlag, storesFlag } from './args.js';
import { percentile } from './measure.js';
import { startPostgres } from './postgres.js';
import { childrenCpuSeconds, serverCpuSeconds } from './proc-cpu.js';

const ROOT = resolve(import.meta.dirname, '..');
const DATA = resolve(ROOT, '../shared/data');
const CLI = join(ROOT, 'bin/ai4rag.mjs');

/** Options of {@link runTrials}, from the command line. */
export interface TrialsOptions {
  maxEvals: number;
  rounds: number;
  stores: ('pglite' | 'pgvector')[];
}

/** Parses `--max-evals` (2–72, default 4), `--rounds` (1–10, default 3), `--stores` (default pglite,pgvector). */
export function parseTrialsArgs(argv: readonly string[]): TrialsOptions {
  return {
    maxEvals: intFlag(argv, '--max-evals', 4, 2, 72),
    rounds: intFlag(argv, '--rounds', 3, 1, 10),
    stores: storesFlag(argv),
  };
}

function corpus(): { name: string; docs: string; benchmark: string } {
  const clapnq = join(DATA, 'clapnq');
  if (existsSync(join(clapnq, 'corpus.jsonl'))) {
    return {
      name: 'ClapNQ dev (1,292 passages, 180 questions)',
      docs: join(clapnq, 'corpus.jsonl'),
      benchmark: join(clapnq, 'benchmark.dev.json'),
    };
  }
  return {
    name: 'examples/docs (../shared/data absent)',
    docs: join(ROOT, 'examples/docs'),
    benchmark: join(ROOT, 'examples/benchmark.json'),
  };
}

/** Runs the CLI; resolves with the wall time in seconds, rejects with its stderr when it fails. */
function runCli(args: string[], env: NodeJS.ProcessEnv): Promise<number> {
  const started = performance.now();
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      env,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let err = '';
    child.stderr.on('data', (b: Buffer) => {
      err = (err + b.toString()).slice(-4000);
    });
    child.on('error', fail);
    child.on('close', (code) => {
      if (code === 0) done((performance.now() - started) / 1000);
      else fail(new Error(`ai4rag ${args[0]} exited ${code}: ${err.trim()}`));
    });
  });
}

/** The order of the concurrencies in round `r`: 1, 2 then 2, 1, … */
const order = (r: number): (1 | 2)[] => (r % 2 === 0 ? [1, 2] : [2, 1]);

const f = (x: number, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : 'n/a');

export async function runTrials(argv: readonly string[]): Promise<void> {
  const options = parseTrialsArgs(argv);
  const c = corpus();
  const root = await mkdtemp(join(tmpdir(), 'ai4rag-bench-trials-'));
  const server = options.stores.includes('pgvector') ? startPostgres('55441') : undefined;
  const summary: string[] = [];
  process.stdout.write(
    `trials  ${c.name}, --max-evals ${options.maxEvals}, ${options.rounds} round(s) per concurrency\n`,
  );
  try {
    for (const store of options.stores) {
      if (store === 'pgvector' && server === undefined) {
        process.stdout.write(
          'trials  PostgreSQL: skipped (no server: set PGVECTOR_* or run as root)\n',
        );
        continue;
      }
      const label = store === 'pglite' ? 'PGlite' : 'PostgreSQL';
      const template = join(root, 'template');
      const baseEnv: NodeJS.ProcessEnv = { ...ENV, ...(server?.env ?? {}) };
      if (store === 'pglite') {
        // initdb once: `stats` opens the data directory and exits 1 on the missing collection.
        await runCli(
          ['stats', '--data-dir', template, '--collection', 'ai4rag_none'],
          baseEnv,
        ).catch(() => undefined);
      }
      const cfg =
        store === 'pgvector' ? pgVectorConfigFromEnv({ ...ENV, ...server?.env }) : undefined;
      const admin =
        cfg === undefined
          ? undefined
          : new pg.Client({
              host: cfg.host,
              port: cfg.port,
              database: cfg.database,
              user: cfg.user,
              ...(cfg.password !== undefined && { password: cfg.password }),
            });
      await admin?.connect();
      const times: Record<1 | 2, number[]> = { 1: [], 2: [] };
      // Cores the runs kept busy on average (CPU seconds / wall seconds), from /proc when it is there.
      const busy: Record<1 | 2, number[]> = { 1: [], 2: [] };
      const serverDir = server?.env.PGVECTOR_DATADIR ?? ENV.PGVECTOR_DATADIR;
      let n = 0;
      try {
        for (let r = 0; r < options.rounds; r++) {
          for (const tc of order(r)) {
            n += 1;
            const dataDir = join(root, `run-${store}-${n}`);
            const env = { ...baseEnv };
            let database: string | undefined;
            if (store === 'pglite') await cp(template, dataDir, { recursive: true });
            else {
              database = `ai4rag_bench_trials_${process.pid}_${n}`;
              await admin?.query(`CREATE DATABASE ${database}`);
              await (async () => {
                const c2 = new pg.Client({
                  host: cfg?.host,
                  port: cfg?.port,
                  database,
                  user: cfg?.user,
                  ...(cfg?.password !== undefined && { password: cfg.password }),
                });
                await c2.connect();
                await c2.query('CREATE EXTENSION IF NOT EXISTS vector');
                await c2.end();
              })();
              env.PGVECTOR_DB = database;
            }
            try {
              const client0 = childrenCpuSeconds();
              const server0 = store === 'pgvector' ? serverCpuSeconds(serverDir) : 0;
              const seconds = await runCli(
                [
                  'experiment',
                  '--docs',
                  c.docs,
                  '--benchmark',
                  c.benchmark,
                  '--max-evals',
                  String(options.maxEvals),
                  '--trial-concurrency',
                  String(tc),
                  '--data-dir',
                  dataDir,
                  '--store',
                  store,
                  '--quiet',
                ],
                env,
              );
              times[tc].push(seconds);
              // The server's backends of the run's connections are reaped a moment after the CLI exits.
              if (store === 'pgvector') await new Promise((r) => setTimeout(r, 300));
              const client1 = childrenCpuSeconds();
              const server1 = store === 'pgvector' ? serverCpuSeconds(serverDir) : 0;
              const cpu =
                client0 === undefined ||
                client1 === undefined ||
                server0 === undefined ||
                server1 === undefined
                  ? undefined
                  : { client: client1 - client0, server: server1 - server0 };
              if (cpu !== undefined) busy[tc].push((cpu.client + cpu.server) / seconds);
              const cpuText =
                cpu === undefined
                  ? ''
                  : `, CPU ${f(cpu.client + cpu.server, 1)} s (${store === 'pgvector' ? `ai4rag ${f(cpu.client, 1)} + server ${f(cpu.server, 1)}` : 'ai4rag'}): ${f((cpu.client + cpu.server) / seconds)} cores busy`;
              process.stdout.write(
                `trials  ${label.padEnd(10)} run ${n}: --trial-concurrency ${tc}  ${f(seconds, 1)} s${cpuText}\n`,
              );
            } finally {
              await rm(dataDir, { recursive: true, force: true });
              if (database !== undefined)
                await admin?.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
            }
          }
        }
      } finally {
        await admin?.end();
      }
      const m1 = percentile(
        [...times[1]].sort((a, b) => a - b),
        50,
      );
      const m2 = percentile(
        [...times[2]].sort((a, b) => a - b),
        50,
      );
      const cores = availableParallelism();
      const busy1 =
        busy[1].length === 0 ? undefined : busy[1].reduce((a, b) => a + b, 0) / busy[1].length;
      summary.push(
        `trials  ${label.padEnd(10)} median wall: ${f(m1, 1)} s at 1, ${f(m2, 1)} s at 2 → ×${f(m1 / m2)} with --trial-concurrency 2 (goal ≥ 1.6 on 2 cores)` +
          (busy1 === undefined
            ? ''
            : `; at 1 the runs already kept ${f(busy1)} cores busy, so ${cores} cores allow at most ×${f(cores / busy1)} from concurrency`),
      );
    }
  } finally {
    server?.stop();
    await rm(root, { recursive: true, force: true });
  }
  for (const line of summary) process.stdout.write(`${line}\n`);
}
