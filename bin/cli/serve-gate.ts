/**
 * Admission control for `ai4rag serve`: at most `limit` API requests run at once, the rest wait their turn in
 * arrival order. The embedded store runs one statement at a time, so requests admitted beyond a few only
 * interleave their statements (each waits behind every other's), which stretches every latency and starves new
 * connections; first come, first served keeps the tail near the median and the health check prompt.
 */

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
