import { describe, expect, it } from 'vitest';
import { parseStorageArgs } from '../../../bench/storage.js';

describe('bench --storage arguments', () => {
  it('reads --rounds, --stores and --docs, with their defaults', () => {
    expect(parseStorageArgs(['--storage'])).toEqual({
      rounds: 2,
      stores: ['pglite', 'pgvector'],
      docs: 3000,
    });
    expect(
      parseStorageArgs(['--storage', '--rounds', '4', '--stores', 'pgvector', '--docs', '500']),
    ).toEqual({ rounds: 4, stores: ['pgvector'], docs: 500 });
  });

  it('refuses a value out of range or a store it does not know, naming what was typed', () => {
    expect(() => parseStorageArgs(['--rounds', '0'])).toThrow(
      '--rounds must be an integer from 1 to 10, got "0"',
    );
    expect(() => parseStorageArgs(['--docs', 'many'])).toThrow(
      '--docs must be an integer from 100 to 5183, got "many"',
    );
    expect(() => parseStorageArgs(['--stores', 'pgvector,milvus'])).toThrow(
      '--stores takes pglite and/or pgvector, got "milvus"',
    );
  });
});
