/**
 * Usage and input-validation errors of the CLI: exit code 2, reported before any work starts, naming the flag or
 * the field the user typed (not the internal camelCase names).
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../../bin/cli/main.js';
import { buildKeyIndex, resolveDocumentKey } from '../../../shared/src/documents/keys.js';

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (l: string) => out.push(l), err: (l: string) => err.push(l) }, out, err };
}

describe('CLI validation errors', () => {
  let dir: string;
  let docs: string;
  let data: string;
  let benchmark: string;

  const write = async (name: string, value: unknown) => {
    const path = join(dir, name);
    await writeFile(path, typeof value === 'string' ? value : JSON.stringify(value));
    return path;
  };

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ai4rag-cli-validation-'));
    docs = join(dir, 'docs');
    data = join(dir, 'data');
    await mkdir(join(docs, 'policies'), { recursive: true });
    await mkdir(join(docs, 'people'), { recursive: true });
    await writeFile(
      join(docs, 'policies', 'travel-and-expenses.md'),
      '# Travel\n\nExpenses above 500 EUR need the approval of a director.\n',
    );
    await writeFile(
      join(docs, 'people', 'leave.md'),
      '# Leave\n\nEmployees receive 27 days of annual leave.\n',
    );
    await writeFile(
      join(docs, 'policies', 'leave.md'),
      '# Leave policy\n\nUnused leave days carry over to March.\n',
    );
    benchmark = await write('benchmark.json', [
      {
        question: 'Who approves expenses above 500 EUR?',
        correct_answers: ['a director'],
        correct_answer_document_keys: ['policies/travel-and-expenses.md'],
      },
    ]);
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const experiment = (...args: string[]) => [
    'experiment',
    '--docs',
    docs,
    '--data-dir',
    data,
    '--quiet',
    ...args,
  ];

  it.each([
    [['--max-evals', '0'], '--max-evals: Too small: expected number to be >=1 (got 0)'],
    [['--max-evals', '1001'], '--max-evals: Too big: expected number to be <=1000 (got 1001)'],
    [['--trial-concurrency', '11'], '--trial-concurrency: Too big'],
    [['--sample-questions=-1'], '--sample-questions: Too small'],
    [['--metric', 'speed'], '--metric: Invalid option'],
    [['--metric', 'answer_relevance'], '--metric answer_relevance needs --judge-model ID'],
    [['--optimizer', 'annealing'], '--optimizer must be one of'],
    [['--experiment-id', 'a/b'], '--experiment-id "a/b": letters, digits'],
  ])('experiment %j: exit 2 before the state machine starts', async (args, message) => {
    // Arrange
    const c = capture();

    // Act
    const code = await main([...experiment('--benchmark', benchmark), ...args], c.io);

    // Assess
    expect(code, c.err.join('\n')).toBe(2);
    expect(c.err.join('\n')).toContain(message);
    expect(c.err.join('\n')).not.toMatch(/maxEvals|trialConcurrency|optimizationMetric|judgeModel/);
    // Nothing was started: no experiment folder in the data directory.
    expect(existsSync(join(data, 'artifacts'))).toBe(false);
  });

  it.each([
    [{ chunk_size: [5] }, "'chunk_size' value 5 must be an integer in 128..2048"],
    [{ chunk_sizes: [512] }, "unknown parameter 'chunk_sizes'"],
    [{ ranker_k: ['x'] }, "'ranker_k' value 'x' must be an integer in 1..100"],
    [{ chunk_size: 512 }, 'chunk_size: expected array'],
    [{ foundation_model: ['m'] }, 'give the models with --foundation-models / --embedding-models'],
    [
      { retrieval_method: ['simple'], window_size: [2] },
      'no configuration satisfies the search-space rules',
    ],
  ])(
    'an invalid --search-space %j is refused with exit 2, naming the file and key',
    async (space, message) => {
      // Arrange
      const file = await write('space.json', space);
      const c = capture();

      // Act
      const code = await main(
        experiment('--benchmark', benchmark, '--search-space', file, '--max-evals', '1'),
        c.io,
      );

      // Assess
      expect(code).toBe(2);
      expect(c.err.join('\n')).toContain(`ai4rag experiment: --search-space ${file}`);
      expect(c.err.join('\n')).toContain(message);
      expect(existsSync(join(data, 'artifacts'))).toBe(false);
    },
  );

  it.each([
    [[], '--benchmark FILE: the benchmark has no questions'],
    [[{ q: 'x' }], '--benchmark FILE[0]: unknown field(s) q'],
    [[{ question: '' }], '--benchmark FILE[0]: "question" must be a non-empty string'],
  ])(
    'a bad benchmark %j is refused with exit 2, naming the file and item',
    async (items, message) => {
      // Arrange
      const file = await write('bad-benchmark.json', items);
      const c = capture();

      // Act
      const code = await main(experiment('--benchmark', `${benchmark},${file}`), c.io);

      // Assess
      expect(code).toBe(2);
      expect(c.err.join('\n')).toContain(message.replace('FILE', file));
    },
  );

  it.each([
    [['ingest', 'DOCS'], 'FILE/sub'],
    [['search', 'leave'], 'FILE'],
    [['documents'], 'FILE/sub'],
    [['collections', 'list'], 'FILE'],
  ])(
    '%j refuses a --data-dir a file is in the way of with exit 2, naming what was typed',
    async (args, typed) => {
      // Arrange: a regular file where the data directory (or one of its parents) would be
      const file = await write('not-a-folder', 'x');
      const given = typed.replace('FILE', file);
      const c = capture();

      // Act
      const code = await main(
        [...args.map((a) => (a === 'DOCS' ? docs : a)), '--data-dir', given],
        c.io,
      );

      // Assess
      expect(code).toBe(2);
      expect(c.err).toEqual([
        `ai4rag ${args[0]}: --data-dir ${given}: not a usable directory: a file is in the way`,
      ]);
      expect(c.out).toEqual([]);
    },
  );

  it('names the folder a relative --data-dir resolved to (the installed command, run in another folder)', async () => {
    // Arrange
    await write('in-the-way', 'x');
    const bin = fileURLToPath(new URL('../../../bin/ai4rag.mjs', import.meta.url));

    // Act
    const run = spawnSync(process.execPath, [bin, 'stats', '--data-dir', 'in-the-way'], {
      cwd: dir,
      encoding: 'utf8',
      env: { PATH: process.env.PATH },
    });

    // Assess
    expect(run.status).toBe(2);
    expect(run.stderr).toBe(
      `ai4rag stats: --data-dir in-the-way: not a usable directory (${join(dir, 'in-the-way')}): a file is in the way\n`,
    );
    expect(run.stdout).toBe('');
  });

  it('refuses a --docs folder without files with exit 2', async () => {
    // Arrange
    const empty = join(dir, 'empty');
    await mkdir(join(empty, 'sub'), { recursive: true });
    const c = capture();

    // Act
    const code = await main(
      ['experiment', '--docs', empty, '--benchmark', benchmark, '--data-dir', data],
      c.io,
    );

    // Assess
    expect(code).toBe(2);
    expect(c.err.join('\n')).toContain(`--docs "${empty}" holds no files`);
  });

  it('refuses, with exit 2 in the prepare step, a gold key that names no document, suggesting candidates', async () => {
    // Arrange: one key in the wrong folder, one bare name two documents share
    const file = await write('gold.json', [
      { question: 'a?', correct_answers: ['x'], correct_answer_document_keys: ['hr/leave.md'] },
      { question: 'b?', correct_answers: ['x'], correct_answer_document_keys: ['leave'] },
      { question: 'c?', correct_answers: ['x'], correct_answer_document_keys: ['nothing.md'] },
    ]);
    const c = capture();
    const gold = join(dir, 'data-gold');

    // Act
    const code = await main(
      ['experiment', '--docs', docs, '--benchmark', file, '--data-dir', gold, '--quiet'],
      c.io,
    );

    // Assess
    expect(code).toBe(2);
    const text = c.err.join('\n');
    expect(text).toContain('3 benchmark gold document key(s) name no single document');
    expect(text).toContain(
      'gold document "hr/leave.md" matches no document (did you mean "people/leave.md", "policies/leave.md"?)',
    );
    expect(text).toContain(
      'gold document "leave" matches several documents: "people/leave.md", "policies/leave.md"; give the full key',
    );
    expect(text).toContain('gold document "nothing.md" matches no document');
    expect(text).not.toContain('experiments/');
    // The prepare step wrote no ledger: no trial ran.
    const experiments = join(gold, 'artifacts', 'experiments');
    const ids = existsSync(experiments) ? await readdir(experiments) : [];
    for (const id of ids) expect(existsSync(join(experiments, id, 'state.json'))).toBe(false);
  });

  it('matches an ai4rag-style bare file name in eval-retrieval, and errors on an ambiguous one', async () => {
    // Arrange
    const bare = await write('bare.json', [
      {
        question: 'Who approves expenses above 500 EUR?',
        correct_answers: ['a director'],
        correct_answer_document_keys: ['travel-and-expenses.md'],
      },
    ]);
    const ambiguous = await write('ambiguous.json', [
      {
        question: 'How many leave days?',
        correct_answers: ['27'],
        correct_answer_document_keys: ['leave.md'],
      },
    ]);
    const ok = capture();
    const bad = capture();

    // Act
    const okCode = await main(
      ['eval-retrieval', '--corpus', docs, '--benchmark', bare, '--json'],
      ok.io,
    );
    const badCode = await main(
      ['eval-retrieval', '--corpus', docs, '--benchmark', ambiguous, '--json'],
      bad.io,
    );

    // Assess
    expect(okCode, ok.err.join('\n')).toBe(0);
    expect(JSON.parse(ok.out.at(-1) ?? '{}')).toMatchObject({ questions: 1, 'recall@5': 1 });
    expect(badCode).toBe(2);
    expect(bad.err.join('\n')).toContain(
      'q0: gold document "leave.md" matches several documents: "people/leave.md", "policies/leave.md"; give the full key',
    );
  });

  it('resolves bare names only when unambiguous, and never overrides an exact key', () => {
    // Arrange
    const keys = ['policies/travel.md', 'a/faq.md', 'b/faq.md', 'faq'];
    const index = buildKeyIndex(keys);

    // Act + Assess
    expect(resolveDocumentKey('travel.md', index, keys)).toEqual({
      match: 'policies/travel.md',
      candidates: [],
    });
    expect(resolveDocumentKey('travel', index, keys).match).toBe('policies/travel.md');
    expect(resolveDocumentKey('faq', index, keys)).toEqual({ match: 'faq', candidates: [] });
    expect(resolveDocumentKey('faq.md', index, keys)).toEqual({
      ambiguous: true,
      candidates: ['a/faq.md', 'b/faq.md', 'faq'],
    });
    expect(resolveDocumentKey('x/travel.md', index, keys)).toEqual({
      candidates: ['policies/travel.md'],
    });
  });

  it.each([
    [['--k', '0'], '--k must be a positive integer, got 0'],
    [
      ['--window-size', '2'],
      '--window-size 2 needs --retrieval-method window (simple takes no neighbours)',
    ],
    [
      ['--retrieval-method', 'window', '--window-size', '0'],
      '--retrieval-method window needs --window-size 1..4 (0 means simple)',
    ],
    [
      ['--retrieval-method', 'window', '--window-size', '9'],
      '--window-size must be an integer in 0..4, got 9',
    ],
    [
      ['--ranker-k', '10'],
      '--ranker-k applies only to --ranker-strategy rrf; the strategy is weighted (the default with this embedding model)',
    ],
    [
      ['--ranker-strategy', 'rrf', '--ranker-k', '0'],
      '--ranker-k must be an integer in 1..100, got 0',
    ],
    [
      ['--ranker-strategy', 'rrf', '--ranker-alpha', '0.3'],
      '--ranker-alpha applies only to --ranker-strategy weighted; the strategy is rrf',
    ],
    [
      ['--ranker-strategy', 'weighted', '--ranker-alpha', '1'],
      '--ranker-alpha must be in [0, 1), got 1',
    ],
  ])('search %j: exit 2 naming the flag', async (args, message) => {
    // Arrange
    const c = capture();

    // Act
    const code = await main(['search', 'leave', '--data-dir', join(dir, 'none'), ...args], c.io);

    // Assess
    expect(code).toBe(2);
    expect(c.err).toEqual([`ai4rag search: ${message}`]);
    // Refused before the store opened: no data directory was made.
    expect(existsSync(join(dir, 'none'))).toBe(false);
  });

  it('names --depth for eval-retrieval', async () => {
    const c = capture();
    expect(
      await main(
        ['eval-retrieval', '--corpus', docs, '--benchmark', benchmark, '--depth', '0'],
        c.io,
      ),
    ).toBe(2);
    expect(c.err).toEqual(['ai4rag eval-retrieval: --depth must be a positive integer, got 0']);
  });

  it.each([
    ['ai4rag_日本', 'would be stored as "ai4rag___"'],
    [`ai4rag_${'x'.repeat(300)}`, `would be cut to "ai4rag_${'x'.repeat(56)}"`],
  ])('refuses --collection %s with exit 2 before opening any store', async (name, message) => {
    // Arrange
    const c = capture();
    const where = join(dir, 'collision');

    // Act
    const codes = [
      await main(['ingest', docs, '--collection', name, '--data-dir', where], c.io),
      await main(['stats', '--collection', name, '--data-dir', where], c.io),
    ];

    // Assess
    expect(codes).toEqual([2, 2]);
    expect(c.err[0]).toContain(`ai4rag ingest: --collection: collection name "`);
    expect(c.err[0]).toContain(message);
    expect(c.err[1]).toContain('ai4rag stats: --collection: ');
    expect(existsSync(where)).toBe(false);
  });

  it.each([
    [
      ['search', 'x', '--k', '--json'],
      '--k needs a value; a value starting with "-" is written --k=-1',
    ],
    [
      ['experiment', '--seed', '-1'],
      '--seed needs a value; a value starting with "-" is written --seed=-1',
    ],
    [['search', 'x', '--k'], '--k needs a value (ai4rag search --help)'],
  ])('%j: a flag without its value is refused naming it', async (args, message) => {
    const c = capture();
    expect(await main(args, c.io)).toBe(2);
    expect(c.err).toEqual([`ai4rag ${args[0]}: ${message}`]);
  });

  it.each(['max-evals', 'seeds', 'batch-size'])(
    'optimizer-sim --%s 0 is refused naming the flag',
    async (flag) => {
      const c = capture();
      const scores = join(import.meta.dirname, '../../fixtures/optimizer/clapnq-dev-scores.json');
      expect(await main(['optimizer-sim', '--scores', scores, `--${flag}`, '0'], c.io)).toBe(2);
      expect(c.err).toEqual([`ai4rag optimizer-sim: --${flag} must be an integer ≥ 1, got 0`]);
    },
  );

  it.each([
    [
      ['--chunk-size', '5000'],
      '--chunk-size 5000 is invalid; it must be an integer in 128..2048 (tokens).',
    ],
    [
      ['--chunking', 'hybrid', '--chunk-overlap', '10'],
      '--chunking hybrid does not support overlap: --chunk-overlap must be 0, got 10.',
    ],
    [['--writers', '0'], '--writers must be an integer from 1 to 8, got "0"'],
    [['--writers', '9'], '--writers must be an integer from 1 to 8, got "9"'],
    [
      ['--writers', '2', '--store', 'milvus'],
      '--writers 2 needs --store pgvector or pglite; Milvus writes one at a time',
    ],
  ])('ingest %j: refused with the flag names before any store opens', async (args, message) => {
    const c = capture();
    const where = join(dir, 'chunking');
    expect(await main(['ingest', docs, '--data-dir', where, ...args], c.io)).toBe(2);
    expect(c.err).toEqual([`ai4rag ingest: ${message}`]);
    expect(existsSync(where)).toBe(false);
  });

  it('refuses --embedding-prefixes with the local embedder, which takes none', async () => {
    const c = capture();
    expect(
      await main(
        ['search', 'x', '--embedding-prefixes', '{"query": "q: "}', '--data-dir', join(dir, 'p')],
        c.io,
      ),
    ).toBe(2);
    expect(c.err).toEqual([
      'ai4rag search: --embedding-prefixes applies to OpenAI-compatible embedding models; local/feature-hash-v1-384 takes no instruction prefixes',
    ]);
  });
});
