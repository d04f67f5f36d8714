/**
 * Every example command in README.md's code blocks (`npx ai4rag …`, `ai4rag …`, `node bin/ai4rag.mjs …`, and the
 * `curl` to a local `ai4rag serve`) runs as written, in README order, in a fresh directory that holds the
 * repository's examples — or is on the allow-list below, which says why it cannot run here and where it is tested.
 */
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../bin/cli/main.js';
import { startServer } from '../../bin/cli/serve.js';

const REPO = resolve(import.meta.dirname, '../..');

/** Commands that cannot run in a test, each with the reason and where its behaviour is tested instead. */
const NOT_RUN: ReadonlyArray<readonly [RegExp, string]> = [
  [
    /--store (pgvector|milvus)/,
    'needs a PostgreSQL or Milvus server (PGVECTOR_* / MILVUS_*): test/unit/cli/cli-milvus.test.ts, serve-stores.test.ts and the vector-store contract suite',
  ],
  [
    /text-embedding-3-small|gpt-4o-mini|@ollama|BAAI\/bge|rerank-english|meta-llama\//,
    'needs a hosted model account or a model server: the same flags against a fake OpenAI/TEI server in cli-usage, cli-rerank and real-model-recipes tests',
  ],
  [
    /\.\.\/shared\/data\//,
    'reads the benchmark data sets outside the repository (../shared/data), a long measured run: test/unit/experiment/clapnq-experiment.test.ts',
  ],
  [/<id>|…|"\.\.\."/, 'a placeholder the reader fills in (<id>, …, "...")'],
  [
    /^npx ai4rag serve\b/,
    'a long-running server: started in-process below for the local curl example; test/unit/cli/serve-*.test.ts',
  ],
  [
    /experiments remove exp-/,
    "names an experiment id of the author's run: test/unit/experiment/catalog.test.ts removes real ones",
  ],
  [
    /--scores scores\.json/,
    'reads the scores.json the `experiment … --record-table` placeholder writes',
  ],
  [/^curl "\$\{SIGN/, 'the deployed API on AWS (SigV4): test/deployed/deployed-stack.test.ts'],
  [/^curl -N --aws-sigv4/, 'the deployed API on AWS (SigV4): test/deployed/deployed-stack.test.ts'],
];

/** Splits a shell command line into words (quotes, backslashes), dropping a trailing `# comment`. */
function shellWords(line: string): string[] {
  const words: string[] = [];
  let word: string | undefined;
  let i = 0;
  const push = () => {
    if (word !== undefined) words.push(word);
    word = undefined;
  };
  while (i < line.length) {
    const c = line[i] as string;
    if (c === "'") {
      const end = line.indexOf("'", i + 1);
      word = (word ?? '') + line.slice(i + 1, end);
      i = end + 1;
    } else if (c === '"') {
      let j = i + 1;
      let text = '';
      while (line[j] !== '"') {
        if (line[j] === '\\' && ['"', '\\', '$'].includes(line[j + 1] as string)) j++;
        text += line[j];
        j++;
      }
      word = (word ?? '') + text;
      i = j + 1;
    } else if (c === '\\') {
      word = (word ?? '') + (line[i + 1] ?? '');
      i += 2;
    } else if (c === ' ' || c === '\t') {
      push();
      i++;
    } else if (c === '#' && word === undefined) {
      break;
    } else if (c === '|' && word === undefined) {
      words.push('|');
      i++;
    } else {
      word = (word ?? '') + c;
      i++;
    }
  }
  push();
  return words;
}

/** The example command lines of the README's shell code blocks, continuation lines joined. */
function readmeCommands(markdown: string): string[] {
  const out: string[] = [];
  let fence: string | undefined;
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const raw = lines[i] as string;
    const open = /^```(\w*)\s*$/.exec(raw);
    if (open !== null) {
      fence = fence === undefined ? (open[1] as string) : undefined;
      continue;
    }
    if (fence === undefined || !['', 'sh', 'bash', 'shell'].includes(fence)) continue;
    let line = raw.trim();
    while (line.endsWith('\\') && i + 1 < lines.length) {
      i++;
      line = `${line.slice(0, -1).trim()} ${(lines[i] as string).trim()}`;
    }
    if (/^(npx ai4rag|ai4rag|node bin\/ai4rag\.mjs) /.test(line) || /\| npx ai4rag /.test(line)) {
      out.push(line);
    } else if (/^curl /.test(line)) out.push(line);
  }
  return out;
}

function capture(input?: string) {
  const out: string[] = [];
  const err: string[] = [];
  return {
    io: {
      out: (l: string) => out.push(l),
      err: (l: string) => err.push(l),
      input: Readable.from(input === undefined ? [] : [input]),
    },
    out,
    err,
  };
}

describe('README examples', () => {
  let dir: string;
  let cwd: string;
  let commands: string[];

  beforeAll(async () => {
    commands = readmeCommands(await readFile(join(REPO, 'README.md'), 'utf8'));
    dir = await mkdtemp(join(tmpdir(), 'ai4rag-readme-'));
    // The reader's checkout: the examples and test fixtures the commands name, nothing else.
    await symlink(join(REPO, 'examples'), join(dir, 'examples'));
    await mkdir(join(dir, 'test'));
    await symlink(join(REPO, 'test/fixtures'), join(dir, 'test/fixtures'));
    // The reader's own answers file that `score --input answers.json` scores.
    await writeFile(
      join(dir, 'answers.json'),
      JSON.stringify([
        {
          question: 'What is the capital of France?',
          answer: 'Paris is the capital.',
          contexts: ['Paris is the capital and largest city of France.'],
          context_ids: ['doc_a'],
          ground_truths: ['The capital is Paris.'],
          ground_truths_context_ids: ['doc_a'],
        },
        {
          question: 'Which river flows through Paris?',
          answer: 'The Loire.',
          contexts: ['The Seine flows through Paris.'],
          context_ids: ['doc_b'],
          ground_truths: ['The Seine.'],
          ground_truths_context_ids: ['doc_b'],
        },
      ]),
    );
    cwd = process.cwd();
    process.chdir(dir);
  });

  afterAll(async () => {
    process.chdir(cwd);
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('finds the examples, and every one it does not run is on the allow-list with its reason', () => {
    const skipped = commands.filter((c) => NOT_RUN.some(([re]) => re.test(c)));
    expect(commands.length).toBeGreaterThan(40);
    // Each allow-list entry is still needed (it matches a command the README has).
    for (const [re] of NOT_RUN)
      expect(
        commands.some((c) => re.test(c)),
        String(re),
      ).toBe(true);
    expect(commands.length - skipped.length).toBeGreaterThan(20);
  });

  it('runs every other example as written, in README order, with exit code 0', async () => {
    const token = 'readme-token';
    const ran: string[] = [];
    for (const line of commands) {
      if (NOT_RUN.some(([re]) => re.test(line))) continue;
      const words = shellWords(line);
      if (words[0] === 'curl') {
        // The local API example: a server on the same data directory, the request as the README writes it.
        const server = await startServer({ dataDir: join(dir, '.ai4rag'), port: 0, token });
        try {
          const headers: Record<string, string> = {};
          let body: string | undefined;
          let url = '';
          for (let i = 1; i < words.length; i++) {
            const w = words[i] as string;
            if (w === '-H') {
              const [name, ...value] = (words[++i] as string).split(':');
              headers[name as string] = value.join(':').trim().replace('$TOKEN', token);
            } else if (w === '-d') body = words[++i];
            else url = w;
          }
          const res = await fetch(url.replace(/^http:\/\/127\.0\.0\.1:\d+/, server.url), {
            method: body === undefined ? 'GET' : 'POST',
            headers,
            ...(body !== undefined && { body }),
          });
          expect(res.status, `${line}\n${await res.clone().text()}`).toBe(200);
          expect((await res.json()) as object).toHaveProperty('results');
        } finally {
          await server.close();
        }
        ran.push(line);
        continue;
      }
      // `printf '…' | npx ai4rag …`: the printf text is the command's stdin.
      let input: string | undefined;
      let argv = words;
      const pipe = words.indexOf('|');
      if (pipe !== -1) {
        expect(words[0], line).toBe('printf');
        input = (words[1] as string).replace(/\\n/g, '\n');
        argv = words.slice(pipe + 1);
      }
      const start = argv[0] === 'npx' ? 2 : argv[0] === 'node' ? 2 : 1;
      const c = capture(input);
      const code = await main(argv.slice(start), c.io);
      expect(code, `${line}\nstdout: ${c.out.join('\n')}\nstderr: ${c.err.join('\n')}`).toBe(0);
      // Every example prints something, but chat on an empty stdin (it reads a terminal's lines).
      if (input !== undefined || argv[start] !== 'chat')
        expect(c.out.join('\n'), line).not.toBe('');
      ran.push(line);
    }
    // The ones this test exists for.
    expect(ran).toEqual(
      expect.arrayContaining([
        'npx ai4rag ask "What is the approval limit for expenses?"     # the collection ingest examples/docs made',
        'curl -H "Authorization: Bearer $TOKEN" -H \'content-type: application/json\' -d \'{"query":"lock opening hours"}\' http://127.0.0.1:8080/search',
      ]),
    );
  }, 300_000);
});
