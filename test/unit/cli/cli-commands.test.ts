/**
 * The CLI's conversation and management commands against a real PGlite data directory: `chat` over a pipe (the
 * generate handler's /chat route, history kept, /reset, /exit), `search --filter`, `collections list|drop`,
 * `documents delete`, `ask --pattern`, and the `ai4rag.config.json` options file.
 */
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../../bin/cli/main.js';

const REPO = resolve(import.meta.dirname, '../../..');

function capture(input?: string) {
  const out: string[] = [];
  const err: string[] = [];
  return {
    io: {
      out: (l: string) => out.push(l),
      err: (l: string) => err.push(l),
      ...(input !== undefined && { input: Readable.from([input]) }),
    },
    out,
    err,
  };
}

/** Runs `node bin/ai4rag.mjs …` with `stdin` piped in; resolves with the exit code and the output. */
function runPiped(
  args: readonly string[],
  stdin: string,
  cwd = REPO,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, [join(REPO, 'bin/ai4rag.mjs'), ...args], {
      cwd,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (b: Buffer) => {
      stdout += b.toString();
    });
    child.stderr.on('data', (b: Buffer) => {
      stderr += b.toString();
    });
    child.on('error', reject);
    child.on('close', (code) => resolvePromise({ code, stdout, stderr }));
    child.stdin.end(stdin);
  });
}

interface ChatLine {
  answer: string;
  reference_documents: { document_key: string }[];
  conversation: { role: string; content: string }[];
}

describe('CLI commands', () => {
  let dir: string;
  let docs: string;
  let data: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ai4rag-cli-commands-'));
    docs = join(dir, 'docs');
    data = join(dir, 'data');
    await mkdir(join(docs, 'people'), { recursive: true });
    await mkdir(join(docs, 'fleet'), { recursive: true });
    await writeFile(
      join(docs, 'people', 'leave.md'),
      '# Leave\n\nEmployees receive 27 days of annual leave per calendar year.\n\nUp to 5 unused days carry over to March.\n',
    );
    await writeFile(
      join(docs, 'fleet', 'ferry.md'),
      '# Ferries\n\nThe ferry Aurora carries 140 passengers at 18 knots.\n',
    );
    const c = capture();
    expect(await main(['ingest', docs, '--data-dir', data, '--json'], c.io)).toBe(0);
    const other = capture();
    expect(
      await main(
        ['ingest', join(docs, 'fleet'), '--data-dir', data, '--collection', 'ai4rag_fleet'],
        other.io,
      ),
    ).toBe(0);
  }, 60_000);

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('chats over a pipe: each turn answered with the history, /reset forgets it, /exit stops', async () => {
    // Arrange
    const turns = [
      'How many days of annual leave do employees get?',
      'How many passengers does the Aurora carry?',
      '/reset',
      'How many unused days carry over?',
      '/exit',
      'never read',
    ].join('\n');

    // Act
    const run = await runPiped(['chat', '--data-dir', data, '--k', '1', '--json'], `${turns}\n`);

    // Assess
    expect(run.code, run.stderr).toBe(0);
    const lines = run.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as ChatLine);
    expect(lines).toHaveLength(3);
    expect(lines[0]?.answer).toContain('27 days');
    expect(lines[0]?.reference_documents.map((d) => d.document_key)).toEqual(['people/leave.md']);
    // The second turn was sent with the first question and answer: 4 messages after it.
    expect(lines[1]?.answer).toContain('140 passengers');
    expect(lines[1]?.conversation.map((m) => m.role)).toEqual([
      'user',
      'assistant',
      'user',
      'assistant',
    ]);
    expect(lines[1]?.conversation[0]?.content).toBe(
      'How many days of annual leave do employees get?',
    );
    // After /reset the conversation starts again.
    expect(lines[2]?.conversation.map((m) => m.role)).toEqual(['user', 'assistant']);
    expect(lines[2]?.answer).toContain('5 unused days');
  }, 60_000);

  it('prints chat answers for people, and reports a refused turn with exit 1 without ending the chat', async () => {
    // Arrange
    const long = 'x'.repeat(100_001);
    const c = capture(`${long}\nHow many days of annual leave?\n`);

    // Act
    const code = await main(['chat', '--data-dir', data, '--k', '1'], c.io);

    // Assess
    expect(code).toBe(1);
    expect(c.err[0]).toMatch(/^error: .*messages/);
    expect(c.out[0]).toContain('27 days');
    expect(c.out).toContain('Sources:');
    expect(c.out.find((l) => l.startsWith('  [1] '))).toMatch(
      /^ {2}\[1\] people\/leave\.md #\d+ {2}score \d\.\d{4}$/,
    );
    expect(c.out.find((l) => l.startsWith('tokens: '))).toMatch(
      /^tokens: prompt \d+, completion \d+, cost \$0$/,
    );
  }, 60_000);

  it.each([
    [['--k', '0'], '--k must be an integer in 1..100, got 0'],
    [
      ['--filter', '{"user.x":{"after":1}}'],
      '--filter: filter.user.x.after: unknown operator "after"',
    ],
    [['question'], 'chat reads its questions from stdin'],
  ])('chat %j: exit 2 before reading anything', async (args, message) => {
    const c = capture('never read\n');
    expect(await main(['chat', '--data-dir', data, ...args], c.io)).toBe(2);
    expect(c.err.join('\n')).toContain(message);
    expect(c.out).toEqual([]);
  });

  it('filters search results by metadata, and refuses a bad filter naming the operator', async () => {
    // Arrange
    const c = capture();
    const bad = capture();

    // Act
    const code = await main(
      [
        'search',
        'days passengers',
        '--data-dir',
        data,
        '--filter',
        '{"document_id": {"startsWith": "fleet/"}}',
        '--json',
      ],
      c.io,
    );
    const badCode = await main(
      ['search', 'x', '--data-dir', data, '--filter', '{"document_id": {"begins": "f"}}'],
      bad.io,
    );

    // Assess
    expect(code).toBe(0);
    const results = (
      JSON.parse(c.out.at(-1) ?? '{}') as { results: { metadata: { document_id: string } }[] }
    ).results;
    expect(results.map((r) => r.metadata.document_id)).toEqual(['fleet/ferry.md']);
    expect(badCode).toBe(2);
    expect(bad.err[0]).toMatch(
      /^ai4rag search: --filter: filter\.document_id\.begins: unknown operator "begins"/,
    );
  });

  it('lists collections, deletes a document and drops a collection (with --yes)', async () => {
    // Arrange
    const list = capture();
    const del = capture();
    const refused = capture();
    const drop = capture();
    const after = capture();

    // Act
    await main(['collections', 'list', '--data-dir', data, '--json'], list.io);
    const refusedCode = await main(
      ['collections', 'drop', 'ai4rag_fleet', '--data-dir', data],
      refused.io,
    );
    const delCode = await main(
      ['documents', 'delete', 'people/leave.md', '--data-dir', data, '--yes'],
      del.io,
    );
    const dropCode = await main(
      ['collections', 'drop', 'ai4rag_fleet', '--data-dir', data, '--yes'],
      drop.io,
    );
    await main(['collections', 'list', '--data-dir', data, '--json'], after.io);

    // Assess
    expect(JSON.parse(list.out.at(-1) ?? '[]')).toEqual([
      {
        collection: 'ai4rag_default',
        embedding_model: 'local/feature-hash-v1-384',
        dimension: 384,
        documents: 2,
      },
      {
        collection: 'ai4rag_fleet',
        embedding_model: 'local/feature-hash-v1-384',
        dimension: 384,
        documents: 1,
      },
    ]);
    expect(refusedCode).toBe(2);
    expect(refused.err).toEqual([
      'ai4rag collections: Drop collection ai4rag_fleet (1 documents): give --yes to confirm (stdin is not a terminal)',
    ]);
    expect(delCode).toBe(0);
    expect(del.out).toEqual(['deleted people/leave.md from ai4rag_default (1 chunks)']);
    expect(dropCode).toBe(0);
    expect(drop.out).toEqual(['dropped ai4rag_fleet (1 documents)']);
    expect(JSON.parse(after.out.at(-1) ?? '[]')).toEqual([
      {
        collection: 'ai4rag_default',
        embedding_model: 'local/feature-hash-v1-384',
        dimension: 384,
        documents: 1,
      },
    ]);
    // The document is gone from search as well.
    const s = capture();
    await main(['search', 'annual leave', '--data-dir', data, '--json'], s.io);
    const keys = (
      JSON.parse(s.out.at(-1) ?? '{}') as { results: { metadata: { document_id: string } }[] }
    ).results.map((r) => r.metadata.document_id);
    expect(keys).not.toContain('people/leave.md');
  });

  it.each([
    [['collections'], 'give list or drop <name>'],
    [
      ['collections', 'drop', 'ai4rag_nope', '--yes'],
      'collection ai4rag_nope does not exist (collections: ',
    ],
    [['documents', 'delete'], 'give one document key to delete'],
    [['documents', 'delete', 'leave.md', '--yes'], 'no document "leave.md" in ai4rag_default'],
    [
      ['collections', 'list', '--store', 'milvus'],
      '--store milvus: collections list|drop read the PostgreSQL registry',
    ],
  ])('%j fails with a clear message', async (args, message) => {
    const c = capture();
    const code = await main([...args, '--data-dir', data], c.io);
    expect(code).toBe(
      message.includes('does not exist') || message.includes('no document') ? 1 : 2,
    );
    expect(c.err.join('\n')).toContain(message);
  });

  it('answers ask --pattern through the generate handler with the pattern’s settings', async () => {
    // Arrange: a pattern over this collection that retrieves one chunk by vector search
    const pattern = join(dir, 'pattern.json');
    await writeFile(
      pattern,
      JSON.stringify({
        name: 'Pattern1',
        settings: {
          vector_store_binding: { provider_type: 'pgvector', collection_name: 'ai4rag_default' },
          retrieval: { method: 'simple', number_of_chunks: 1, search_mode: 'vector' },
        },
      }),
    );
    const c = capture();
    const bad = capture();

    // Act
    const code = await main(
      [
        'ask',
        'How many passengers does the Aurora carry?',
        '--pattern',
        pattern,
        '--data-dir',
        data,
        '--json',
      ],
      c.io,
    );
    const badCode = await main(
      ['ask', 'x', '--pattern', pattern, '--rerank', 'm', '--data-dir', data],
      bad.io,
    );

    // Assess
    expect(code, c.err.join('\n')).toBe(0);
    const answer = JSON.parse(c.out.at(-1) ?? '{}') as {
      answer: string;
      reference_documents: unknown[];
    };
    expect(answer.answer).toContain('140 passengers');
    expect(answer.reference_documents).toHaveLength(1);
    expect(badCode).toBe(2);
    expect(bad.err[0]).toContain('--rerank cannot be combined with --pattern');
  });

  describe('ai4rag.config.json', () => {
    it('reads options from the current directory; a flag overrides them', async () => {
      // Arrange
      const cwd = join(dir, 'project');
      await mkdir(cwd, { recursive: true });
      const own = join(dir, 'data-config');
      await writeFile(
        join(cwd, 'ai4rag.config.json'),
        JSON.stringify({ 'data-dir': own, k: 1, 'chunk-size': 256 }),
      );

      // Act
      const ingest = await runPiped(['ingest', docs, '--json'], '', cwd);
      const fromFile = await runPiped(['search', 'ferry passengers', '--json'], '', cwd);
      const overridden = await runPiped(
        ['search', 'ferry passengers', '--k', '2', '--json'],
        '',
        cwd,
      );

      // Assess: ingest took the data directory from the file; search took k and left chunk-size to ingest
      expect(ingest.code, ingest.stderr).toBe(0);
      expect(JSON.parse(ingest.stdout)).toMatchObject({ indexed: 2 });
      expect(fromFile.code, fromFile.stderr).toBe(0);
      expect((JSON.parse(fromFile.stdout) as { results: unknown[] }).results).toHaveLength(1);
      expect(overridden.code, overridden.stderr).toBe(0);
      expect((JSON.parse(overridden.stdout) as { results: unknown[] }).results).toHaveLength(2);
    }, 60_000);

    it.each([
      [
        { colection: 'ai4rag_x' },
        'unknown option "colection"; keys are the long flag names, e.g. "data-dir"',
      ],
      [
        { '--k': 3 },
        'unknown option "--k" (write it without the dashes: "k"); keys are the long flag names, e.g. "data-dir"',
      ],
      [{ json: 'yes' }, '"json" must be true or false'],
      [{ k: [1, [2]] }, '"k" must be a string, a number or a list of them (A,B)'],
    ])('refuses %j with exit 2 naming the key and the file', async (config, message) => {
      // Arrange
      const file = join(dir, 'bad-config.json');
      await writeFile(file, JSON.stringify(config));
      const c = capture();

      // Act
      const code = await main(['search', 'x', '--config', file], c.io);

      // Assess
      expect(code).toBe(2);
      expect(c.err).toEqual([`ai4rag search: config file ${file}: ${message}`]);
    });

    it('refuses a missing --config file', async () => {
      const c = capture();
      expect(await main(['stats', '--config', join(dir, 'none.json')], c.io)).toBe(2);
      expect(c.err[0]).toContain(`cannot read --config "${join(dir, 'none.json')}"`);
    });
  });
});
