import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../../shared/src/errors.js';
import { batches, createLimiter, mapLimit } from '../../../shared/src/util/concurrency.js';

const tick = (ms = 1): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('mapLimit', () => {
  it('keeps the input order when calls finish out of order', async () => {
    // Prepare
    const delays = [30, 5, 20, 1, 10];

    // Act
    const result = await mapLimit(delays, 3, async (ms, index) => {
      await tick(ms);
      return `${index}:${ms}`;
    });

    // Assess
    expect(result).toEqual(['0:30', '1:5', '2:20', '3:1', '4:10']);
  });

  it('never has more than limit calls in flight and does use the limit', async () => {
    // Prepare
    let active = 0;
    let peak = 0;

    // Act
    await mapLimit(
      Array.from({ length: 20 }, (_, i) => i),
      3,
      async () => {
        active++;
        peak = Math.max(peak, active);
        await tick(2);
        active--;
      },
    );

    // Assess
    expect(peak).toBe(3);
  });

  it('rejects with the first error and starts no new work after it', async () => {
    // Prepare
    const started: number[] = [];
    const boom = new Error('item 2 failed');

    // Act
    const outcome = mapLimit([0, 1, 2, 3, 4, 5, 6, 7], 2, async (item) => {
      started.push(item);
      await tick(5);
      if (item === 2) throw boom;
      return item;
    });

    // Assess
    await expect(outcome).rejects.toBe(boom);
    await tick(30);
    expect(started).toEqual([0, 1, 2, 3]);
  });

  it('treats a synchronous throw of fn as a rejection', async () => {
    // Prepare
    const boom = new Error('sync');

    // Act
    const outcome = mapLimit([1], 1, () => {
      throw boom;
    });

    // Assess
    await expect(outcome).rejects.toBe(boom);
  });

  it('returns an empty array for no items without calling fn', async () => {
    // Prepare
    let calls = 0;

    // Act
    const result = await mapLimit([], 4, async () => {
      calls++;
    });

    // Assess
    expect(result).toEqual([]);
    expect(calls).toBe(0);
  });

  it('rejects a limit that is not a positive integer', () => {
    // Act / Assess
    expect(() => mapLimit([1], 0, async (x) => x)).toThrow(ValidationError);
    expect(() => mapLimit([1], 1.5, async (x) => x)).toThrow(ValidationError);
  });
});

describe('createLimiter', () => {
  it('bounds concurrency across independent callers, in FIFO order', async () => {
    // Prepare
    const limit = createLimiter(2);
    let active = 0;
    let peak = 0;
    const order: number[] = [];
    const task = (id: number) => async () => {
      active++;
      peak = Math.max(peak, active);
      order.push(id);
      await tick(3);
      active--;
      return id;
    };

    // Act
    const results = await Promise.all([1, 2, 3, 4, 5].map((id) => limit(task(id))));

    // Assess
    expect(results).toEqual([1, 2, 3, 4, 5]);
    expect(peak).toBe(2);
    expect(order).toEqual([1, 2, 3, 4, 5]);
  });

  it('releases the slot when the function throws', async () => {
    // Prepare
    const limit = createLimiter(1);

    // Act
    const failed = limit(async () => {
      throw new Error('first fails');
    });
    const next = limit(async () => 'second runs');

    // Assess
    await expect(failed).rejects.toThrow('first fails');
    await expect(next).resolves.toBe('second runs');
  });

  it('rejects a limit that is not a positive integer', () => {
    // Act / Assess
    expect(() => createLimiter(0)).toThrow(ValidationError);
  });
});

describe('batches', () => {
  it('splits into slices of at most size, the last one shorter', () => {
    // Act / Assess
    expect(batches([1, 2, 3, 4, 5], 2)).toEqual([[1, 2], [3, 4], [5]]);
    expect(batches([1, 2, 3, 4], 2)).toEqual([
      [1, 2],
      [3, 4],
    ]);
    expect(batches([], 3)).toEqual([]);
  });

  it('rejects a size that is not a positive integer', () => {
    // Act / Assess
    expect(() => batches([1], 0)).toThrow(ValidationError);
  });
});
