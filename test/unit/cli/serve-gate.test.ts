import { describe, expect, it } from 'vitest';
import { createGate } from '../../../bin/cli/serve-gate.js';

describe('serve admission gate', () => {
  it('runs at most `limit` at once and admits the rest in arrival order', async () => {
    // Prepare: six tasks that each wait for an explicit release
    const gate = createGate(2);
    const started: number[] = [];
    const releases: (() => void)[] = [];
    const tasks = Array.from({ length: 6 }, (_, i) =>
      gate.run(async () => {
        started.push(i);
        await new Promise<void>((r) => releases.push(r));
        return i * 10;
      }),
    );
    await new Promise((r) => setImmediate(r));
    // Act / Assess: two run, four wait
    expect(started).toEqual([0, 1]);
    expect(gate.load).toEqual({ running: 2, waiting: 4 });
    // Act: release the second, then the first; the next ones start in arrival order
    releases[1]?.();
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
    releases[0]?.();
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
    expect(started).toEqual([0, 1, 2, 3]);
    for (let i = 2; i < 6; i += 1) {
      releases[i]?.();
      await new Promise((r) => setImmediate(r));
      await new Promise((r) => setImmediate(r));
    }
    // Assess
    expect(await Promise.all(tasks)).toEqual([0, 10, 20, 30, 40, 50]);
    expect(started).toEqual([0, 1, 2, 3, 4, 5]);
    expect(gate.load).toEqual({ running: 0, waiting: 0 });
  });

  it('frees its slot when a task throws, and refuses a limit below 1', async () => {
    const gate = createGate(1);
    await expect(gate.run(() => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(await gate.run(async () => 'next')).toBe('next');
    expect(() => createGate(0)).toThrow('gate limit must be ≥ 1, got 0');
  });
});
