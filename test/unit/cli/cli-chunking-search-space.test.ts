/**
 * `ai4rag experiment --search-space` with the chunking methods of issue 15: bad values of the new parameters are
 * refused with exit 2 before any work, naming the file and the key as written.
 */
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../../bin/cli/main.js';

const REPO = fileURLToPath(new URL('../../../', import.meta.url));

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (l: string) => out.push(l), err: (l: string) => err.push(l) }, out, err };
}

describe('ai4rag experiment --search-space with chunking methods', () => {
  let dir: string;
  let docs: string;
  let data: string;
  let benchmark: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ai4rag-cli-chunking-space-'));
    docs = join(dir, 'docs');
    data = join(dir, 'data');
    await mkdir(docs, { recursive: true });
    await writeFile(
      join(docs, 'leave.md'),
      '# Leave\n\nEmployees receive 27 days of annual leave.\n',
    );
    benchmark = join(dir, 'benchmark.json');
    await writeFile(
      benchmark,
      JSON.stringify([
        {
          question: 'How many days of leave?',
          correct_answers: ['27 days'],
          correct_answer_document_keys: ['leave.md'],
        },
      ]),
    );
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it.each([
    [
      { chunking_method: ['semantic', 'llm'] },
      "'chunking_method' value 'llm' must be one of 'recursive', 'hybrid', 'fixed', 'semantic', 'hierarchical'",
    ],
    [
      { chunking_method: ['hierarchical'], parent_chunk_size: [100] },
      "'parent_chunk_size' value 100 must be an integer in 129..8192 or the sentinel 0",
    ],
    [
      { chunking_method: ['semantic'], semantic_breakpoint: ['elbow'] },
      "'semantic_breakpoint' value 'elbow' must be one of 'percentile', 'standard_deviation', 'gradient' or the sentinel ''",
    ],
    [
      { chunking_method: ['semantic'], semantic_breakpoint_amount: [150] },
      "'semantic_breakpoint_amount' value 150 must be a number in (0, 100]",
    ],
    [
      { chunking_method: ['semantic'], chunk_overlap: [128] },
      'no configuration satisfies the search-space rules (e.g. window_size 0 needs retrieval_method simple, window_size ≥ 1 needs window; ranker_k applies to rrf, ranker_alpha to weighted; hybrid and semantic chunking need chunk_overlap 0, the other methods > 0; hierarchical needs parent_chunk_size > chunk_size and retrieval_method simple, other methods parent_chunk_size 0)',
    ],
    [
      { chunking_method: ['hierarchical'], chunk_size: [1024], parent_chunk_size: [512] },
      'no configuration satisfies the search-space rules',
    ],
    [
      { chunking_method: ['hierarchical'], retrieval_method: ['window'], window_size: [1] },
      'no configuration satisfies the search-space rules',
    ],
  ])('refuses %j with exit 2, naming the file and key', async (space, message) => {
    // Arrange
    const file = join(dir, 'space.json');
    await writeFile(file, JSON.stringify(space));
    const c = capture();
    // Act
    const code = await main(
      [
        'experiment',
        '--docs',
        docs,
        '--data-dir',
        data,
        '--quiet',
        '--benchmark',
        benchmark,
        '--search-space',
        file,
        '--max-evals',
        '1',
      ],
      c.io,
    );
    // Assess
    expect(code).toBe(2);
    expect(c.err.join('\n')).toContain(`ai4rag experiment: --search-space ${file}`);
    expect(c.err.join('\n')).toContain(message);
    expect(existsSync(join(data, 'artifacts'))).toBe(false);
  });

  it('runs the README experiment over the four methods, printing each pattern with its chunking', async () => {
    // Prepare
    const c = capture();
    // Act
    const code = await main(
      [
        'experiment',
        '--docs',
        join(REPO, 'examples/docs'),
        '--benchmark',
        join(REPO, 'examples/benchmark.json'),
        '--search-space',
        join(REPO, 'test/fixtures/chunking-methods-space.json'),
        '--max-evals',
        '4',
        '--data-dir',
        join(dir, 'experiment-data'),
      ],
      c.io,
    );
    // Assess
    expect(code).toBe(0);
    const leaderboard = c.out
      .filter((l) => /^\s+\d\. Pattern\d/.test(l))
      .map((l) => l.replace(/^.*\d\.\d{4}\s+/, ''));
    expect(leaderboard.sort()).toEqual([
      'fixed 256/32 · hybrid weighted α=0.5 · 3 chunks',
      'hierarchical 256/32 ⊂ 1024 · hybrid weighted α=0.5 · 3 chunks',
      'recursive 256/32 · hybrid weighted α=0.5 · 3 chunks',
      'semantic 256/0 · hybrid weighted α=0.5 · 3 chunks',
    ]);
  }, 300_000);
});
