/**
 * Admission control for `ai4rag serve`: at most `limit` API requests run at once, the rest wait their turn in
 * arrival order. The embedded store runs one statement at a time, so requests admitted beyond a few only
 * interleave their statements (each waits behind every other's), which stretches every latency and starves new
 * connections; first come, first served keeps the tail near the median and the health check prompt.
 */
import type { SqlClient } from '../../shared/src/vectorstores/sql-client.js';

/** A FIFO gate: `run(fn)` runs `fn` once fewer than `limit` others run. */
export interface Gate {
  run<T>(fn: () => Promise<T>): Promise<T>;
  /** Requests running, and waiting. */
  readonly load: { running: number; waiting: number };
}

/** A gate admitting `limit` (≥ 1) at once. */
export function createGate(limit: number): Gate {
  if (!Number.isInteger(limit) || limit < 1)
    throw new RangeError(`gate limit must be ≥ 1, got ${limit}`);
  const waiting: (() => void)[] = [];
  let running = 0;
  const release = () => {
    running -= 1;
    const next = waiting.shift();
    if (next !== undefined) {
      running += 1;
      // Through the macrotask queue: the event loop polls sockets (new connections, health checks) between
      // one request and the next.
      setImmediate(next);
    }
  };
  return {
    get load() {
      return { running, waiting: waiting.length };
    },
    async run<T>(fn: () => Promise<T>): Promise<T> {
      if (running < limit) running += 1;
      else await new Promise<void>((resolve) => waiting.push(resolve));
      try {
        return await fn();
      } finally {
        release();
      }
    },
  };
}

/** One turn of the event loop: the I/O waiting (new connections, health checks, request bodies) runs first. */
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * A SQL client that lets the event loop turn before each statement. The embedded database runs a statement
 * synchronously on the main thread and hands the next queued one over in a microtask, so a few admitted requests
 * keep the microtask queue busy from one statement to the next and the loop never polls its sockets: a new
 * connection (a health check) waited for the whole load to pause. A statement yields first, so it waits at most
 * for the one statement running.
 * @example createLocalRuntime({ dataDir, wrapSqlClient: yieldingClient })
 */
export function yieldingClient<C extends SqlClient>(client: C): C {
  const copyFrom = client.copyFrom;
  const session = client.session;
  return {
    ...client,
    dialect: client.dialect,
    async query<R>(text: string, params?: unknown[]) {
      await turn();
      return client.query<R>(text, params);
    },
    transaction<T>(fn: (tx: SqlClient) => Promise<T>) {
      return client.transaction((tx) => fn(yieldingClient(tx)));
    },
    close: () => client.close(),
    ...(copyFrom !== undefined && {
      async copyFrom(table: string, columns: readonly string[], data: Uint8Array) {
        await turn();
        return copyFrom.call(client, table, columns, data);
      },
    }),
    ...(session !== undefined && {
      session<T>(fn: (c: SqlClient) => Promise<T>) {
        return session.call(client, (c) => fn(yieldingClient(c)));
      },
    }),
  };
}
