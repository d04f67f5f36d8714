/** `maintenance_work_mem` of an HNSW build (`ai4rag index --memory`): validated before it reaches the SET. */
import { describe, expect, it } from 'vitest';
import { main } from '../../../bin/cli/main.js';
import { VectorStoreConfigError } from '../../../shared/src/vectorstores/errors.js';
import { buildMemory } from '../../../shared/src/vectorstores/pgvector/ann-index.js';

describe('index build memory', () => {
  it('keeps 256MB by default and accepts whole kB, MB or GB from 64MB to 64GB', () => {
    expect(buildMemory(undefined)).toBe('256MB');
    for (const ok of ['64MB', '65536kB', '2GB', '4096MB', '64GB']) expect(buildMemory(ok)).toBe(ok);
  });

  it('refuses anything else, naming the value', () => {
    for (const bad of [
      '63MB',
      '65GB',
      '2 GB',
      '2gb',
      '1.5GB',
      '2TB',
      "1GB'; DROP TABLE x; --",
      '',
    ]) {
      expect(() => buildMemory(bad)).toThrow(VectorStoreConfigError);
      expect(() => buildMemory(bad)).toThrow(`got "${bad}"`);
    }
  });

  it('ai4rag index --memory: exit 2 before opening anything, naming the flag', async () => {
    const err: string[] = [];
    const code = await main(
      ['index', '--memory', '2TB', '--data-dir', '/nonexistent/never-created'],
      {
        out: () => {},
        err: (l) => err.push(l),
      },
    );
    expect(code).toBe(2);
    expect(err).toEqual([
      'ai4rag index: --memory: index build memory must be a whole number of kB, MB or GB from 64MB to 64GB (e.g. 2GB), got "2TB"',
    ]);
  });
});
