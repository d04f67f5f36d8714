import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../../bin/cli/main.js';

const DOCS = join(import.meta.dirname, '../../../examples/docs');

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (l: string) => out.push(l), err: (l: string) => err.push(l) }, out, err };
}

describe('ai4rag search, ask and eval-retrieval with --query-transform', () => {
  let dir: string;
  let data: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ai4rag-cli-qt-'));
    data = join(dir, 'data');
    expect(await main(['ingest', DOCS, '--data-dir', data, '--json'], capture().io)).toBe(0);
  }, 120_000);
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('search --query-transform rm3 reports the expansion and fuses it with the query', async () => {
    // Act
    const s = capture();
    const code = await main(
      [
        'search',
        'annual leave days',
        '--search-mode',
        'hybrid',
        '--query-transform',
        'rm3',
        '--rm3-fb-docs',
        '3',
        '--k',
        '3',
        '--data-dir',
        data,
        '--json',
      ],
      s.io,
    );
    // Assess
    expect(code).toBe(0);
    const out = JSON.parse(s.out[0] ?? '{}') as {
      results: unknown[];
      query_transform: { type: string; expansion: { term: string; weight: number }[] };
    };
    expect(out.results).toHaveLength(3);
    expect(out.query_transform.type).toBe('rm3');
    // λ 0.5 keeps the query terms on top: 'annual', 'leav', 'dai' have at least 0.5 / 3 each
    const terms = out.query_transform.expansion.map((t) => t.term);
    expect(terms).toEqual(expect.arrayContaining(['annual', 'leav', 'dai']));
    expect(out.query_transform.expansion.reduce((n, t) => n + t.weight, 0)).toBeCloseTo(1, 9);
  });

  it('ask --query-transform rm3 prints the transform line before the timing line', async () => {
    // Act
    const a = capture();
    const code = await main(
      [
        'ask',
        'How many days of annual leave do employees get?',
        '--search-mode',
        'hybrid',
        '--query-transform',
        'rm3',
        '--data-dir',
        data,
      ],
      a.io,
    );
    // Assess: no chat call, so no tokens on the transform line
    expect(code).toBe(0);
    expect(a.out.at(-2)).toMatch(/^query transform: rm3 \d+\.\d ms$/);
    expect(a.out.at(-1)).toMatch(/^retrieve /);
  });

  it.each([
    [
      ['--query-transform', 'rm4'],
      '--query-transform must be one of none, multi_query, hyde, rm3; got "rm4"',
    ],
    [
      ['--query-transform', 'rm3', '--search-mode', 'vector'],
      '--query-transform rm3 needs a keyword leg: use --search-mode hybrid',
    ],
    [
      ['--query-transform', 'multi_query', '--search-mode', 'vector'],
      "--query-transform multi_query needs a chat model: give --model with an OpenAI-compatible endpoint (the local model 'local/extractive-v1' cannot write queries)",
    ],
    [
      ['--query-transform', 'hyde'],
      "--query-transform hyde needs a chat model: give --model with an OpenAI-compatible endpoint (the local model 'local/extractive-v1' cannot write a passage)",
    ],
    [['--multi-queries', '2'], '--multi-queries applies only to --query-transform multi_query'],
    [
      ['--query-transform', 'multi_query', '--rm3-fb-docs', '5'],
      '--rm3-fb-docs applies only to --query-transform rm3',
    ],
    [
      ['--query-transform', 'rm3', '--search-mode', 'hybrid', '--rm3-weight', '1.5'],
      '--rm3-weight must be in [0, 1], got 1.5',
    ],
    [
      ['--query-transform', 'rm3', '--search-mode', 'hybrid', '--rm3-fb-terms', '0'],
      '--rm3-fb-terms must be an integer ≥ 1, got 0',
    ],
    [
      ['--query-transform', 'multi_query', '--multi-queries', '11'],
      '--multi-queries must be an integer in 1..10, got 11',
    ],
  ])('rejects %j with exit code 2 naming the flag', async (flags, message) => {
    // Act
    const s = capture();
    const a = capture();
    const searchCode = await main(['search', 'leave', ...flags, '--data-dir', data], s.io);
    const askCode = await main(['ask', 'leave', ...flags, '--data-dir', data], a.io);
    // Assess
    expect([searchCode, askCode]).toEqual([2, 2]);
    expect(s.err).toEqual([`ai4rag search: ${message}`]);
    expect(a.err).toEqual([`ai4rag ask: ${message}`]);
  });
});
