import { ValidationError } from '../errors.js';

function assertPositiveInteger(value: number, name: string): void {
  if (!Number.isInteger(value) || value < 1) {
    throw new ValidationError(`${name} must be a positive integer, got ${String(value)}`);
  }
}

/**
 * Maps over `items` with at most `limit` calls of `fn` in flight, so user-sized arrays never turn into an
 * unbounded `Promise.all` (sockets, memory, provider rate limits). Results keep the input order. After the first
 * rejection no new call is started and the returned promise rejects with that error at once; calls already in
 * flight run to completion and their outcomes are ignored.
 * @throws {ValidationError} when `limit` is not a positive integer.
 * @example
 * const vectors = await mapLimit(batches, 4, (batch) => embedder.embedDocuments(batch));
 */
export function mapLimit<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  assertPositiveInteger(limit, 'limit');
  const results = new Array<R>(items.length);
  if (items.length === 0) return Promise.resolve(results);
  return new Promise<R[]>((resolve, reject) => {
    let next = 0;
    let settled = 0;
    let failed = false;
    const startNext = (): void => {
      if (failed || next >= items.length) return;
      const index = next++;
      let pending: Promise<R>;
      try {
        pending = Promise.resolve(fn(items[index] as T, index));
      } catch (error) {
        pending = Promise.reject(error);
      }
      pending.then(
        (value) => {
          results[index] = value;
          settled++;
          if (settled === items.length) resolve(results);
          else startNext();
        },
        (error: unknown) => {
          if (failed) return;
          failed = true;
          reject(error);
        },
      );
    };
    for (let k = 0; k < Math.min(limit, items.length); k++) startNext();
  });
}

/**
 * A limiter shared by independent call sites (e.g. all requests to one provider): at most `limit` wrapped
 * functions run at once, the others wait in FIFO order. The slot is released in a `finally`, so a throwing
 * function never leaks capacity.
 * @throws {ValidationError} when `limit` is not a positive integer.
 * @example
 * const limit = createLimiter(2);
 * const answers = await Promise.all(questions.map((q) => limit(() => ask(q))));
 */
export function createLimiter(limit: number): <R>(fn: () => Promise<R>) => Promise<R> {
  assertPositiveInteger(limit, 'limit');
  let active = 0;
  const waiting: Array<() => void> = [];
  const release = (): void => {
    const wake = waiting.shift();
    if (wake) wake();
    else active--;
  };
  return async <R>(fn: () => Promise<R>): Promise<R> => {
    if (active < limit) active++;
    else await new Promise<void>((resolve) => waiting.push(resolve));
    try {
      return await fn();
    } finally {
      release();
    }
  };
}

/**
 * Splits `items` into consecutive slices of at most `size` elements (the last may be shorter), e.g. to respect a
 * provider's maximum inputs per request.
 * @throws {ValidationError} when `size` is not a positive integer.
 * @example batches([1, 2, 3, 4, 5], 2) // [[1, 2], [3, 4], [5]]
 */
export function batches<T>(items: readonly T[], size: number): T[][] {
  assertPositiveInteger(size, 'size');
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}
