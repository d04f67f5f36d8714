import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../../bin/cli/main.js';

const STORY = resolve(import.meta.dirname, '../../../../shared/data/ai4rag_story');

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (l: string) => out.push(l), err: (l: string) => err.push(l) }, out, err };
}

describe('ai4rag CLI', () => {
  let dir: string;
  let docs: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ai4rag-cli-'));
    docs = join(dir, 'docs');
    await import('node:fs/promises').then((fs) => fs.mkdir(join(docs, 'sub'), { recursive: true }));
    await writeFile(
      join(docs, 'leave.md'),
      '# Leave policy\n\nEmployees receive 27 days of annual leave per calendar year.\n\n## Carry over\n\nUp to 5 unused days carry over to March.\n',
    );
    await writeFile(
      join(docs, 'sub', 'boats.txt'),
      'The ferry Aurora carries 140 passengers at 18 knots.\n',
    );
    await writeFile(join(docs, 'broken.pdf'), 'this is not a pdf');
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('ingests a folder, reports the bad file, and finds the relevant chunk', async () => {
    // Prepare
    const ingest = capture();
    // Act
    const code = await main(['ingest', docs, '--data-dir', join(dir, 'data'), '--json'], ingest.io);
    // Assess: the good documents are committed, and the broken file makes the run fail
    expect(code).toBe(1);
    const summary = JSON.parse(ingest.out.at(-1) ?? '{}');
    expect(summary).toMatchObject({ documents: 2, indexed: 2, unchanged: 0, failed: 1 });
    expect(summary.failures[0]).toMatchObject({ document_key: 'broken.pdf', reason: 'corrupt' });

    const search = capture();
    expect(
      await main(
        [
          'search',
          'how many passengers does the ferry carry',
          '--data-dir',
          join(dir, 'data'),
          '--json',
        ],
        search.io,
      ),
    ).toBe(0);
    const result = JSON.parse(search.out.at(-1) ?? '{}');
    expect(result.results[0].document_key).toBe('sub/boats.txt');
  });

  it('does no embedding work when re-run over unchanged files', async () => {
    const again = capture();
    // Still 1: broken.pdf is still there and still fails.
    expect(await main(['ingest', docs, '--data-dir', join(dir, 'data'), '--json'], again.io)).toBe(
      1,
    );
    const summary = JSON.parse(again.out.at(-1) ?? '{}');
    expect(summary).toMatchObject({ indexed: 0, unchanged: 2, chunks_embedded: 0 });
  });

  it('reports a missing collection instead of creating it', async () => {
    const c = capture();
    expect(
      await main(
        ['search', 'ferry', '--collection', 'ai4rag_nope', '--data-dir', join(dir, 'data')],
        c.io,
      ),
    ).toBe(1);
    expect(c.err.join('\n')).toContain('collection ai4rag_nope does not exist');
    const stats = capture();
    expect(
      await main(
        ['stats', '--collection', 'ai4rag_nope', '--data-dir', join(dir, 'data')],
        stats.io,
      ),
    ).toBe(1);
  });

  it('runs the demo: ingests examples/docs, answers the sample searches, and skips unchanged files on a re-run', async () => {
    // Act
    const first = capture();
    expect(await main(['demo', '--data-dir', join(dir, 'demo')], first.io)).toBe(0);
    const second = capture();
    expect(await main(['demo', '--data-dir', join(dir, 'demo')], second.io)).toBe(0);
    // Assess
    const out = first.out.join('\n');
    expect(out).toMatch(/17 indexed, 0 unchanged, 0 failed/);
    expect(out).toContain('Q: How many days of annual leave do employees get?');
    expect(out).toContain('1. people/leave-and-holidays.html');
    expect(second.out.join('\n')).toMatch(/0 indexed, 17 unchanged, 0 failed; 0 chunks embedded/);
  });

  it('answers a question with cited sources and per-step timing', async () => {
    // Act
    const c = capture();
    const code = await main(
      [
        'ask',
        'How many passengers does the ferry Aurora carry?',
        '--data-dir',
        join(dir, 'data'),
        '--json',
      ],
      c.io,
    );
    // Assess
    expect(code).toBe(0);
    const answer = JSON.parse(c.out.at(-1) ?? '{}');
    expect(answer.model).toBe('local/extractive-v1');
    expect(answer.answer).toContain('140 passengers');
    expect(answer.reference_documents[0].document_key).toBe('sub/boats.txt');
    expect(answer.timing.total_ms).toBeGreaterThanOrEqual(answer.timing.retrieve_ms);
  });

  it('prints help for a command with --help', async () => {
    const c = capture();
    expect(await main(['search', '--help'], c.io)).toBe(0);
    expect(c.out.join('\n')).toContain('\nRetrieval:\n  --k N ');
  });

  it('prunes removed files but keeps a document whose file failed to load', async () => {
    // Prepare: a folder with two documents, ingested
    const folder = join(dir, 'prune');
    const fs = await import('node:fs/promises');
    await fs.mkdir(folder, { recursive: true });
    await writeFile(join(folder, 'a.txt'), 'Alpha document about river locks.');
    await writeFile(join(folder, 'b.txt'), 'Beta document about cargo barges.');
    const data = join(dir, 'data-prune');
    expect(await main(['ingest', folder, '--data-dir', data, '--json'], capture().io)).toBe(0);
    // Act: a.txt deleted, b.txt now unreadable (invalid UTF-8)
    await fs.rm(join(folder, 'a.txt'));
    await writeFile(join(folder, 'b.txt'), Buffer.from([0xff, 0xfe, 0x41]));
    const run = capture();
    // Exit code 1: the only file present failed to load.
    expect(await main(['ingest', folder, '--prune', '--data-dir', data, '--json'], run.io)).toBe(1);
    // Assess
    expect(JSON.parse(run.out.at(-1) ?? '{}').pruned).toEqual(['a.txt']);
    const docs = capture();
    await main(['documents', '--data-dir', data, '--json'], docs.io);
    expect(
      JSON.parse(docs.out.at(-1) ?? '[]').map((d: { document_key: string }) => d.document_key),
    ).toEqual(['b.txt']);
  });

  it('refuses --prune with a file argument', async () => {
    const c = capture();
    expect(
      await main(
        ['ingest', join(docs, 'leave.md'), '--prune', '--data-dir', join(dir, 'data3')],
        c.io,
      ),
    ).toBe(2);
    expect(c.err.join('\n')).toContain('--prune needs folders');
  });

  it.each([
    [['ingest'], 'give at least one file or folder'],
    [['search', 'x', '--search-mode', 'bogus'], '--search-mode must be one of vector, hybrid'],
    [['search', 'x', '--k', 'ten'], '--k must be an integer'],
    [['ingest', '/nonexistent/path'], '/nonexistent/path'],
    [['ingest', 'x', '--chunk-size', '64'], 'chunk'],
    [
      ['search', 'x', '--search-mode', 'vector', '--ranker-k', '60'],
      'applies only to --search-mode hybrid',
    ],
    [['search', 'x', '--unknown-flag'], 'unknown-flag'],
  ])('rejects bad input %j with exit code 2 and a clear message', async (args, message) => {
    const c = capture();
    expect(await main([...args, '--data-dir', join(dir, 'data2')], c.io)).toBe(2);
    expect(c.err.join('\n')).toContain(message);
  });

  it.skipIf(!existsSync(STORY))(
    'evaluates retrieval on a corpus and prints the metrics as the last line',
    async () => {
      const c = capture();
      const code = await main(
        [
          'eval-retrieval',
          '--corpus',
          join(STORY, 'documents'),
          '--benchmark',
          join(STORY, 'benchmark_data.json'),
          '--json',
        ],
        c.io,
      );
      expect(code).toBe(0);
      const metrics = JSON.parse(c.out.at(-1) ?? '{}');
      expect(Object.keys(metrics)).toEqual([
        'questions',
        'recall@1',
        'recall@5',
        'recall@10',
        'mrr@10',
        'ndcg@10',
      ]);
      expect(metrics.questions).toBe(6);
      // One document: every question's gold document is the first.
      expect(metrics['recall@1']).toBe(1);
    },
  );
});
