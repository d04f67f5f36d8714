/**
 * A PostgreSQL + pgvector server for the benchmarks: the one PGVECTOR_* names, or one started with
 * ../shared/tools/pg-with-pgvector when running as root (stopped and removed by `stop`).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { ENV } from '../shared/src/config.js';

const ROOT = resolve(import.meta.dirname, '..');

/** Starts (or reuses) a server; undefined when neither is possible. `env` holds the PGVECTOR_* it started. */
export function startPostgres(
  port = '55439',
): { env: Record<string, string>; stop: () => void } | undefined {
  if (ENV.PGVECTOR_HOST) return { env: {}, stop: () => {} };
  const tool = resolve(ROOT, '../shared/tools/pg-with-pgvector');
  if (!existsSync(tool) || process.getuid?.() !== 0) return undefined;
  const dir = mkdtempSync(join(tmpdir(), 'ai4rag-bench-pg-'));
  try {
    const out = execFileSync(tool, [port, dir], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    const env: Record<string, string> = {};
    for (const m of out.matchAll(/(PGVECTOR_[A-Z]+)=(\S*)/g)) env[m[1] as string] = m[2] as string;
    return {
      env,
      stop: () => {
        try {
          execFileSync(
            'su',
            [
              'postgres',
              '-s',
              '/bin/sh',
              '-c',
              `/usr/lib/postgresql/15/bin/pg_ctl -D '${dir}' -m fast stop`,
            ],
            { stdio: 'ignore' },
          );
        } finally {
          rmSync(dir, { recursive: true, force: true });
        }
      },
    };
  } catch {
    rmSync(dir, { recursive: true, force: true });
    return undefined;
  }
}
