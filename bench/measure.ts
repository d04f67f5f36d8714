/**
 * Measuring helpers shared by the benches: a SqlClient that records the statements a search issues, so they can
 * be replayed alone (the raw-SQL baseline), and search latency percentiles of ours against that replay.
 */
import type { SqlClient } from '../shared/src/vectorstores/sql-client.js';

interface Recorded {
  text: string;
  params: unknown[] | undefined;
}

/** A SqlClient recording every statement while `on` is true (inside transactions too). */
export interface RecordingClient extends SqlClient {
  /** Statements issued while `on` is true. */
  readonly log: Recorded[];
  on: boolean;
}

/** Wraps a SqlClient and records every statement while `on` is true (inside transactions too). */
export function recording(inner: SqlClient): RecordingClient {
  const log: Recorded[] = [];
  const wrap = (c: SqlClient, rec: { on: boolean }): SqlClient => ({
    dialect: c.dialect,
    async query<R>(text: string, params?: unknown[]) {
      if (rec.on) log.push({ text, params });
      return c.query<R>(text, params);
    },
    transaction: <T>(fn: (tx: SqlClient) => Promise<T>) => c.transaction((tx) => fn(wrap(tx, rec))),
    ...(c.session !== undefined && { session: c.session }),
    close: () => c.close(),
  });
  const client = { log, on: false } as RecordingClient;
  return Object.assign(client, wrap(inner, client));
}

/** The p-th percentile (nearest rank) of sorted values. */
export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const idx = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[idx] as number;
}

/** Latency percentiles of ours and of the raw SQL replay, in ms. */
export interface SearchTiming {
  p50: number;
  p95: number;
  rawP50: number;
  rawP95: number;
}

/**
 * Times `search` (e.g. `(q) => store.search(q, params)`) for each query (after 5 warm-up queries), `rounds`
 * times, against the floor: the query's embedding (`embed`, the model work any search needs, as the ingest floor
 * includes the embedding) and the statements the search issued, replayed alone on the same connection (ours / raw =
 * our overhead beyond the model and the SQL).
 *
 * Both sides see the same cache state: each query first runs once untimed (which records its statements and reads
 * the pages they touch into the server's buffers), then ours and the replay are timed back to back, ours first on
 * even queries and the replay first on odd ones. Timing ours on a query's first run and the replay right after it
 * charged ours for every page the replay then found cached: at 100k chunks, with the collection larger than
 * `shared_buffers`, the same store read ×1.20 / ×1.37 / ×2.11 (keyword / hybrid / vector) that way against ×1.08 /
 * ×1.03 / ×1.04 warm (see the README's "Growth with the collection").
 */
export async function timeSearch(
  search: (query: string) => Promise<unknown>,
  rec: RecordingClient,
  queries: string[],
  rounds = 3,
  embed?: (query: string) => Promise<unknown>,
): Promise<SearchTiming> {
  const ours: number[] = [];
  const raw: number[] = [];
  const timeOurs = async (q: string) => {
    const t0 = performance.now();
    await search(q);
    ours.push(performance.now() - t0);
  };
  const timeRaw = async (q: string, statements: readonly Recorded[]) => {
    const t0 = performance.now();
    if (embed !== undefined) await embed(q);
    for (const s of statements) await rec.query(s.text, s.params);
    raw.push(performance.now() - t0);
  };
  for (const q of queries.slice(0, 5)) await search(q);
  for (let round = 0; round < rounds; round += 1) {
    for (const [i, q] of queries.entries()) {
      rec.log.length = 0;
      rec.on = true;
      await search(q);
      rec.on = false;
      const statements = [...rec.log];
      if (i % 2 === 0) {
        await timeOurs(q);
        await timeRaw(q, statements);
      } else {
        await timeRaw(q, statements);
        await timeOurs(q);
      }
    }
  }
  ours.sort((a, b) => a - b);
  raw.sort((a, b) => a - b);
  return {
    p50: percentile(ours, 50),
    p95: percentile(ours, 95),
    rawP50: percentile(raw, 50),
    rawP95: percentile(raw, 95),
  };
}

/** The server settings that bound a measurement's cache (quoted with every server figure). */
export const SERVER_SETTINGS = [
  'shared_buffers',
  'effective_cache_size',
  'maintenance_work_mem',
  'max_wal_size',
] as const;

/**
 * One line naming the server a figure was measured on: its version, pgvector's, and {@link SERVER_SETTINGS}
 * (`shared_buffers` decides whether a large collection's probes copy pages from the OS cache; RDS sets it to a
 * quarter of the instance's memory, PostgreSQL's own default is 128 MB).
 * @example "PostgreSQL 15.10, pgvector 0.8.0, shared_buffers 6GB, effective_cache_size 12GB, …"
 */
export async function serverSettingsLine(client: SqlClient): Promise<string> {
  const res = await client.query<{ name: string; value: string }>(
    `SELECT name, current_setting(name) AS value FROM unnest($1::text[]) WITH ORDINALITY AS s(name, i)
     UNION ALL SELECT 'server_version', current_setting('server_version')
     UNION ALL SELECT 'pgvector', COALESCE((SELECT extversion FROM pg_extension WHERE extname = 'vector'), 'absent')`,
    [[...SERVER_SETTINGS]],
  );
  const v = new Map(res.rows.map((r) => [r.name, r.value]));
  const version = (v.get('server_version') ?? '').split(' ')[0];
  return `PostgreSQL ${version}, pgvector ${v.get('pgvector')}, ${SERVER_SETTINGS.map((s) => `${s} ${v.get(s)}`).join(', ')}`;
}
