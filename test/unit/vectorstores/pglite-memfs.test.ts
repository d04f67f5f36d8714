/**
 * The amortized MEMFS growth an in-memory PGlite runs with (shared/src/vectorstores/pglite-memfs.ts): capacities,
 * contents kept and zeros exposed, and a real in-memory database that grows, truncates and grows again.
 */
import { describe, expect, it } from 'vitest';
import {
  amortizeMemfsGrowth,
  expandFileStorage,
  type MemfsNode,
  resizeFileStorage,
} from '../../../shared/src/vectorstores/pglite-memfs.js';
import { openPglite } from '../../../shared/src/vectorstores/sql-client.js';

const MiB = 1024 * 1024;

function node(bytes: number[], capacity = bytes.length): MemfsNode {
  const contents = new Uint8Array(capacity);
  contents.set(bytes);
  return { contents, usedBytes: bytes.length };
}

describe('amortized MEMFS growth', () => {
  it('doubles the capacity up to 256 MiB and grows by half beyond, never below what is asked', () => {
    // Arrange
    const small = node([1, 2, 3], 4);
    const large = { contents: new Uint8Array(256 * MiB), usedBytes: 256 * MiB };
    const empty: MemfsNode = { contents: null, usedBytes: 0 };

    // Act
    expandFileStorage(small, 5);
    expandFileStorage(large, 256 * MiB + 1);
    expandFileStorage(empty, 10);
    const asked = node([9], 8);
    expandFileStorage(asked, 100);
    const roomy = node([7], 64);
    expandFileStorage(roomy, 64);

    // Assess
    expect(small.contents?.length).toBe(256);
    expect([...(small.contents?.subarray(0, 4) ?? [])]).toEqual([1, 2, 3, 0]);
    expect(large.contents.length).toBe(384 * MiB);
    expect(empty.contents?.length).toBe(256);
    expect(asked.contents?.length).toBe(256);
    expect(roomy.contents?.length).toBe(64);
  });

  it('zeros the bytes a shrink drops, so growing again shows zeros; a big shrink gives the memory back', () => {
    // Arrange
    const n = node([1, 2, 3, 4, 5, 6, 7, 8], 16);
    const big = { contents: new Uint8Array(4096).fill(9), usedBytes: 4096 };

    // Act
    resizeFileStorage(n, 6);
    resizeFileStorage(n, 3);
    resizeFileStorage(n, 10);
    resizeFileStorage(big, 100);

    // Assess
    expect(n.usedBytes).toBe(10);
    expect([...(n.contents?.subarray(0, 10) ?? [])]).toEqual([1, 2, 3, 0, 0, 0, 0, 0, 0, 0]);
    expect(big.contents.length).toBe(100);
    expect(big.usedBytes).toBe(100);
    expect(big.contents.every((b) => b === 9)).toBe(true);
  });

  it('grows a file by resize past its capacity with zeros after its bytes', () => {
    // Arrange
    const n = node([5, 6], 2);

    // Act
    resizeFileStorage(n, 300);

    // Assess
    expect(n.usedBytes).toBe(300);
    expect(n.contents?.length).toBe(300);
    expect(n.contents?.[0]).toBe(5);
    expect(n.contents?.subarray(2).every((b) => b === 0)).toBe(true);
  });

  it('leaves a module without MEMFS where it expects it alone', () => {
    // Act
    const results = [undefined, {}, { Module: { FS: { filesystems: {} } } }].map(
      amortizeMemfsGrowth,
    );

    // Assess
    expect(results).toEqual([false, false, false]);
  });
});

describe('an in-memory PGlite with amortized growth', () => {
  it('installs it, and keeps every row through growth, TRUNCATE, regrowth and VACUUM FULL', async () => {
    // Arrange
    const client = await openPglite({ template: false });
    const memfs = (
      client.db as unknown as {
        Module: { FS: { filesystems: { MEMFS: Record<string, unknown> } } };
      }
    ).Module.FS.filesystems.MEMFS;
    const sum = async () =>
      (
        await client.query<{ n: string; s: string }>(
          'SELECT count(*)::text AS n, coalesce(sum(length(t)), 0)::text AS s FROM grow',
        )
      ).rows[0];

    try {
      // Act
      await client.query('CREATE TABLE grow (id int PRIMARY KEY, t text)');
      await client.query(
        'INSERT INTO grow SELECT i, repeat(md5(i::text), 20) FROM generate_series(1, 20000) i',
      );
      const first = await sum();
      await client.query('TRUNCATE grow');
      const truncated = await sum();
      await client.query(
        'INSERT INTO grow SELECT i, repeat(md5(i::text), 10) FROM generate_series(1, 30000) i',
      );
      await client.query('DELETE FROM grow WHERE id % 2 = 0');
      await client.query('VACUUM FULL grow');
      const last = await sum();
      const check = await client.query<{ bad: string }>(
        'SELECT count(*)::text AS bad FROM grow WHERE t <> repeat(md5(id::text), 10) OR id % 2 = 0',
      );

      // Assess
      expect(memfs.expandFileStorage).toBe(expandFileStorage);
      expect(memfs.resizeFileStorage).toBe(resizeFileStorage);
      expect(first).toEqual({ n: '20000', s: String(20000 * 640) });
      expect(truncated).toEqual({ n: '0', s: '0' });
      expect(last).toEqual({ n: '15000', s: String(15000 * 320) });
      expect(check.rows[0]?.bad).toBe('0');
    } finally {
      await client.close();
    }
  }, 60_000);

  it('is not installed with amortizedGrowth: false, whose MEMFS copies a growing file several times over', async () => {
    // Arrange: MEMFS's own functions, from a database left as PGlite makes it
    const client = await openPglite({ template: false, amortizedGrowth: false });
    let stock: { expandFileStorage(node: MemfsNode, wanted: number): void };
    try {
      stock = (
        client.db as unknown as {
          Module: { FS: { filesystems: { MEMFS: typeof stock } } };
        }
      ).Module.FS.filesystems.MEMFS;
      expect(stock.expandFileStorage).not.toBe(expandFileStorage);
    } finally {
      await client.close();
    }
    /** Bytes copied while a file grows page by page to 64 MiB with `grow`. */
    const copiedBy = (grow: (node: MemfsNode, wanted: number) => void) => {
      const n: MemfsNode = { contents: new Uint8Array(0), usedBytes: 0 };
      let copied = 0;
      for (let size = 8192; size <= 64 * MiB; size += 8192) {
        const before = n.contents;
        grow(n, size);
        if (n.contents !== before) copied += n.usedBytes;
        n.usedBytes = size;
      }
      return copied;
    };

    // Act
    const ours = copiedBy(expandFileStorage);
    const theirs = copiedBy((n, w) => stock.expandFileStorage(n, w));

    // Assess: doubling copies less than the final size; MEMFS's 1.125× several times it
    expect(ours).toBeLessThan(64 * MiB);
    expect(theirs).toBeGreaterThan(5 * 64 * MiB);
  }, 60_000);
});
