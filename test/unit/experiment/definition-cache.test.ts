/**
 * The experiment definition cache (`bin/cli/definition-cache.ts`): synthesized once, then read back identical;
 * keyed by the context; a corrupt, foreign or world-writable file is synthesized again; `cache: false` writes nothing.
 */
import { chmod, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { definitionKey, experimentDefinition } from '../../../bin/cli/definition-cache.js';
import { synthExperimentDefinition } from '../../../lib/local-definition.js';

describe('experiment definition cache', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ai4rag-sfn-cache-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('synthesizes once per context, then reads the same definition back', async () => {
    const first = await experimentDefinition({ dir });
    const second = await experimentDefinition({ dir });
    const other = await experimentDefinition({ dir, context: { trialConcurrency: 3 } });
    const direct = synthExperimentDefinition({});

    expect([first.origin, second.origin, other.origin]).toEqual(['synth', 'cache', 'synth']);
    expect(second.definition).toEqual(direct.definition);
    expect(second.functionIds).toEqual(direct.functionIds);
    expect(other.definition).toEqual(
      synthExperimentDefinition({ context: { trialConcurrency: 3 } }).definition,
    );
    expect(other.definition).not.toEqual(first.definition);
    expect((await readdir(dir)).filter((f) => f.endsWith('.json'))).toHaveLength(2);
    expect(await definitionKey({ a: 1, b: 2 })).toBe(await definitionKey({ b: 2, a: 1 }));
    // Nested values count too (two contexts differing only below the top level get two files).
    expect(await definitionKey({ a: { x: 1 } })).not.toBe(await definitionKey({ a: { x: 2 } }));
  });

  it('synthesizes again over a corrupt or world-writable file, and writes nothing with cache: false', async () => {
    const key = await definitionKey({});
    const path = join(dir, `ai4rag-sfn-${process.getuid?.() ?? 'user'}-${key}.json`);
    await writeFile(path, '{"definition": {"StartAt": 1}}');
    expect((await experimentDefinition({ dir })).origin).toBe('synth');
    expect((await experimentDefinition({ dir })).origin).toBe('cache');
    await chmod(path, 0o666);
    expect((await experimentDefinition({ dir })).origin).toBe('synth');

    const empty = await mkdtemp(join(tmpdir(), 'ai4rag-sfn-none-'));
    try {
      expect((await experimentDefinition({ dir: empty, cache: false })).origin).toBe('synth');
      expect(await readdir(empty)).toEqual([]);
    } finally {
      await rm(empty, { recursive: true, force: true });
    }
  });
});
