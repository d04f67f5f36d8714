/**
 * `ai4rag ingest --chunking fixed|semantic|hierarchical` and their flags: bad values exit 2 naming the flag before
 * any store opens; semantic chunking reports what it cost.
 */
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../../bin/cli/main.js';

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (l: string) => out.push(l), err: (l: string) => err.push(l) }, out, err };
}

const POLICY = [
  '# Travel',
  '',
  'Expenses above 500 EUR need the approval of a director. Receipts are kept for seven years. ' +
    'Taxis are refunded after ten at night.',
  '',
  '# Leave',
  '',
  'Employees receive 27 days of annual leave. Unused leave days carry over to March. ' +
    'Parental leave follows the national law.',
  '',
].join('\n');

describe('ingest with the chunking methods', () => {
  let dir: string;
  let docs: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ai4rag-cli-chunking-'));
    docs = join(dir, 'docs');
    await mkdir(docs, { recursive: true });
    await writeFile(join(docs, 'policy.md'), POLICY);
    await writeFile(join(docs, 'copy.md'), POLICY);
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it.each([
    [
      ['--chunking', 'llm'],
      '--chunking must be one of recursive, hybrid, fixed, semantic, hierarchical; got "llm"',
    ],
    [
      ['--chunking', 'semantic', '--chunk-overlap', '16'],
      '--chunking semantic does not support overlap: --chunk-overlap must be 0, got 16.',
    ],
    [
      ['--chunking', 'hierarchical', '--chunk-size', '256', '--parent-chunk-size', '256'],
      '--parent-chunk-size 256 is invalid; it must be an integer in 257..8192 (tokens; greater than --chunk-size 256).',
    ],
    [
      ['--chunking', 'hierarchical', '--parent-chunk-size', 'big'],
      '--parent-chunk-size must be an integer, got "big"',
    ],
    [
      ['--chunking', 'semantic', '--breakpoint', 'iqr'],
      '--breakpoint must be one of percentile, standard_deviation, gradient; got "iqr"',
    ],
    [
      ['--chunking', 'semantic', '--breakpoint', 'standard_deviation', '--breakpoint-amount', '12'],
      "--breakpoint-amount 12 is invalid; for --breakpoint 'standard_deviation' it must be a number in 0..10 (standard deviations).",
    ],
    [
      ['--chunking', 'semantic', '--buffer-size', '11'],
      '--buffer-size 11 is invalid; it must be an integer in 0..10 (sentences on each side).',
    ],
    [
      ['--chunking', 'semantic', '--min-chunk-size', '300'],
      '--min-chunk-size 300 is invalid; it must be an integer in 0..256 (tokens; at most half of --chunk-size 512).',
    ],
    [
      ['--chunking', 'fixed', '--buffer-size', '2'],
      '--buffer-size 2 does not apply to fixed chunking; it takes only --chunk-size and --chunk-overlap.',
    ],
    [
      ['--parent-chunk-size', '2048'],
      '--parent-chunk-size 2048 does not apply to recursive chunking; it takes only --chunk-size and --chunk-overlap.',
    ],
  ])('ingest %j: exit 2 naming the flag before any store opens', async (args, message) => {
    const c = capture();
    const where = join(dir, 'refused');
    expect(await main(['ingest', docs, '--data-dir', where, ...args], c.io)).toBe(2);
    expect(c.err).toEqual([`ai4rag ingest: ${message}`]);
    expect(existsSync(where)).toBe(false);
  });

  it('semantic: reports the sentence groups embedded, once per distinct group', async () => {
    // Prepare
    const c = capture();
    const args = ['ingest', docs, '--data-dir', join(dir, 'semantic'), '--chunking', 'semantic'];

    // Act
    const code = await main([...args, '--chunk-size', '128', '--json'], c.io);

    // Assess: 8 sentences per document (two headings, each its own sentence at a blank line, and six sentences);
    // the copy's groups all come from the cache.
    expect(code).toBe(0);
    const r = JSON.parse(c.out[0] ?? '{}');
    expect(r).toMatchObject({ indexed: 2, failed: 0 });
    expect(r.chunking_cost).toMatchObject({ groups: 16, embedded: 8, cache_hits: 8 });
    expect(r.chunking_cost.tokens).toBeGreaterThan(0);

    // Act: the text report names the cost.
    const t = capture();
    expect(
      await main(
        ['ingest', docs, '--data-dir', join(dir, 'semantic2'), '--chunking', 'semantic'],
        t.io,
      ),
    ).toBe(0);
    expect(t.out[0]).toMatch(
      /; semantic chunking embedded 8 sentence groups \(8 cached, \d+ tokens\) in \d+\.\d\ds$/,
    );
  });

  it('hierarchical and fixed: ingest with their defaults', async () => {
    // Act / Assess
    for (const method of ['hierarchical', 'fixed']) {
      const c = capture();
      const where = join(dir, method);
      expect(
        await main(['ingest', docs, '--data-dir', where, '--chunking', method, '--json'], c.io),
      ).toBe(0);
      expect(JSON.parse(c.out[0] ?? '{}')).toMatchObject({
        indexed: 2,
        failed: 0,
        chunks_embedded: 2,
      });
      expect(JSON.parse(c.out[0] ?? '{}').chunking_cost).toBeUndefined();
    }
  });
});
