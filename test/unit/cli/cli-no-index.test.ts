/**
 * `ai4rag ingest --no-index`: a bulk load leaves the ANN index to `ai4rag index`. Without the flag the ingestion
 * asks the store to build it at the end (the store declines below its threshold); with it, never.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
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

  it('ai4rag index --force builds a segment, a second --force the newest chunks, --merge --force one segment of all', async () => {
    // Prepare: a collection of two documents, then a third added
    const data = join(dir, 'data-merge');
    const run = async (args: string[]) => {
      const c = capture();
      const code = await main([...args, '--data-dir', data, '--collection', 'ai4rag_m'], c.io);
      return { code, out: c.out, err: c.err };
    };
    expect((await run(['ingest', dir, '--no-index'])).code).toBe(0);
    // Act
    const first = await run(['index', '--force', '--json']);
    await writeFile(join(dir, 'c.md'), '# Ships\n\nThe ship Borealis carries 90 cars.\n');
    expect((await run(['ingest', dir, '--no-index'])).code).toBe(0);
    const second = await run(['index', '--force']);
    const merged = await run(['index', '--merge', '--force']);
    const again = await run(['index', '--merge', '--force']);
    // Assess
    expect(first.code).toBe(0);
    expect(JSON.parse(first.out.at(-1) as string)).toMatchObject({
      collection: 'ai4rag_m',
      built: true,
      reason: 'built',
      rows: 2,
      indexed: 2,
      segments: 1,
    });
    expect(second.out.at(-1)).toMatch(
      /^ai4rag_m: HNSW index built: 1 of 3 chunks indexed in [\d.]+s, 2 segment\(s\)$/,
    );
    expect(merged.out.at(-1)).toMatch(
      /^ai4rag_m: HNSW index merged: 3 of 3 chunks indexed in [\d.]+s, 1 segment\(s\)$/,
    );
    expect(again.out.at(-1)).toBe('ai4rag_m: no index built — exists');
  });
  it('ai4rag index re-weights BM25 that an ingestion left stale, once, before its build', async () => {
    // Prepare: a short document fixes the average length; a long one, ingested while the end-of-ingest refresh is
    // held off (as when the process dies before it), moves it far past the tolerance
    const docs = join(dir, 'drift');
    await mkdir(docs);
    await writeFile(join(docs, 'a.md'), 'Parking permits renew yearly.\n');
    const data = join(dir, 'data-drift');
    const run = async (args: string[]) => {
      const c = capture();
      const code = await main([...args, '--data-dir', data, '--collection', 'ai4rag_d'], c.io);
      return { code, out: c.out };
    };
    expect((await run(['ingest', docs])).code).toBe(0);
    await writeFile(
      join(docs, 'b.md'),
      `# Travel\n\n${'Economy class is the default for flights under six hours, and receipts are kept for audit. '.repeat(4)}\n`,
    );
    const held = vi
      .spyOn(PgVectorStore.prototype, 'refreshStatistics')
      .mockResolvedValue({ reweighted: false, deferred: false });
    expect((await run(['ingest', docs])).code).toBe(0);
    held.mockRestore();
    // Act
    const first = await run(['index']);
    const second = await run(['index', '--json']);
    // Assess
    expect(first.code).toBe(0);
    expect(first.out).toEqual([
      'ai4rag_d: BM25 weights recomputed (the average chunk length had drifted)',
      expect.stringMatching(/^ai4rag_d: no index built — below threshold/),
    ]);
    expect(second.out).toHaveLength(1);
    expect(JSON.parse(second.out[0] as string)).not.toHaveProperty('bm25Reweighted');
  });
});
