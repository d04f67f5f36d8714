/**
 * `ai4rag ingest --no-index`: a bulk load leaves the ANN index to `ai4rag index`. Without the flag the ingestion
 * asks the store to build it at the end (the store declines below its threshold); with it, never.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { main } from '../../../bin/cli/main.js';
import { PgVectorStore } from '../../../shared/src/vectorstores/pgvector/pgvector-store.js';

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (l: string) => out.push(l), err: (l: string) => err.push(l) }, out, err };
}

describe('ai4rag ingest --no-index', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ai4rag-cli-no-index-'));
    await writeFile(join(dir, 'a.md'), '# Ferries\n\nThe ferry Aurora carries 140 passengers.\n');
    await writeFile(join(dir, 'b.md'), '# Leave\n\nEmployees receive 27 days of annual leave.\n');
  });
  afterEach(() => {
    vi.restoreAllMocks();
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('asks for the index at the end by default, never with --no-index, and stores the same documents', async () => {
    const build = vi.spyOn(PgVectorStore.prototype, 'buildIndex');
    const data = join(dir, 'data');

    const first = capture();
    expect(
      await main(
        ['ingest', dir, '--data-dir', data, '--json', '--collection', 'ai4rag_a'],
        first.io,
      ),
    ).toBe(0);
    expect(build).toHaveBeenCalledTimes(1);

    const second = capture();
    expect(
      await main(
        ['ingest', dir, '--data-dir', data, '--json', '--collection', 'ai4rag_b', '--no-index'],
        second.io,
      ),
    ).toBe(0);
    expect(build).toHaveBeenCalledTimes(1);
    const [a, b] = [first, second].map((c) => JSON.parse(c.out.at(-1) as string));
    expect(b).toMatchObject({ collection: 'ai4rag_b', documents: 2, indexed: 2, failed: 0 });
    expect(b.chunksEmbedded).toBe(a.chunksEmbedded);
    expect(b.index).toBeUndefined();
  });
});
