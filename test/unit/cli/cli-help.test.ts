/**
 * Per-command help (`ai4rag <cmd> --help`, `ai4rag help <cmd>`), the global help's command list, and the global
 * options: each command takes or refuses each one, never silently ignores it.
 */
import { spawnSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { COMMAND_HELP, documentedOptions, OPTION_HELP } from '../../../bin/cli/help.js';
import { COMMAND_OPTIONS, main } from '../../../bin/cli/main.js';

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (l: string) => out.push(l), err: (l: string) => err.push(l) }, out, err };
}

const COMMANDS = Object.keys(COMMAND_HELP);

describe('CLI help', () => {
  it.each([['--version'], ['-V'], ['version']])(
    'prints the package version for %s, exit 0, and lists the flag in the global help',
    async (flagName) => {
      // Arrange
      const c = capture();
      const { version } = JSON.parse(
        await readFile(new URL('../../../package.json', import.meta.url), 'utf8'),
      ) as { version: string };

      // Act
      const code = await main([flagName], c.io);
      const help = capture();
      await main(['--help'], help.io);

      // Assess
      expect(code).toBe(0);
      expect(c.out).toEqual([`ai4rag-serverless ${version}`]);
      expect(c.err).toEqual([]);
      expect(help.out.join('\n')).toMatch(/^ {2}-V, --version {2,}/m);
    },
  );

  it('the installed command answers --version, -V and version with the same line as main', async () => {
    // Arrange: the real entry point, which answers these before loading tsx and the CLI.
    const bin = fileURLToPath(new URL('../../../bin/ai4rag.mjs', import.meta.url));
    const expected = capture();
    await main(['--version'], expected.io);

    // Act
    const runs = ['--version', '-V', 'version'].map((a) =>
      spawnSync(process.execPath, [bin, a], { encoding: 'utf8', env: { PATH: process.env.PATH } }),
    );

    // Assess
    for (const r of runs) {
      expect(r.status).toBe(0);
      expect(r.stdout).toBe(`${expected.out.join('\n')}\n`);
      expect(r.stderr).toBe('');
    }
  });

  it('lists every command in the global help', async () => {
    // Arrange
    const c = capture();

    // Act
    const code = await main(['--help'], c.io);

    // Assess
    expect(code).toBe(0);
    const text = c.out.join('\n');
    for (const name of [...COMMANDS, 'experiments'])
      expect(text).toMatch(new RegExp(`^  ${name} `, 'm'));
    expect(COMMANDS).toEqual([
      'ingest',
      'search',
      'ask',
      'chat',
      'eval-retrieval',
      'documents',
      'collections',
      'stats',
      'index',
      'check',
      'score',
      'experiment',
      'optimizer-sim',
      'serve',
      'demo',
    ]);
  });

  it.each(COMMANDS)('prints the own usage, options and an example of %s', async (command) => {
    // Arrange
    const viaFlag = capture();
    const viaHelp = capture();

    // Act
    const codes = [
      await main([command, '--help'], viaFlag.io),
      await main(['help', command], viaHelp.io),
    ];

    // Assess
    expect(codes).toEqual([0, 0]);
    const text = viaFlag.out.join('\n');
    expect(viaHelp.out.join('\n')).toBe(text);
    expect(text.split('\n')[0]).toBe(`ai4rag ${command} — ${COMMAND_HELP[command]?.summary}`);
    expect(text).toContain(`Usage: ai4rag ${COMMAND_HELP[command]?.usage}`);
    expect(text).toMatch(/\nExamples?:\n {2}ai4rag /);
    // Each option of the command, with its description, and no option of another command.
    for (const option of documentedOptions(command)) {
      expect(text).toContain(`--${option}`);
      expect(text).toContain(OPTION_HELP[option]?.text);
    }
    const own = new Set([...documentedOptions(command), ...(COMMAND_HELP[command]?.globals ?? [])]);
    const listed = [...text.matchAll(/^ {2}--([a-z0-9-]+)/gm)].map((m) => m[1]);
    expect(listed.filter((o) => !own.has(o as string))).toEqual([]);
  });

  it.each(COMMANDS)('documents exactly the options %s parses', (command) => {
    // Act
    const parsed = Object.keys(COMMAND_OPTIONS[command] ?? {}).sort();
    const documented = [...new Set(documentedOptions(command))].sort();

    // Assess
    expect(documented).toEqual(parsed);
    for (const o of documented) expect(OPTION_HELP[o]?.text, o).toMatch(/\S/);
  });

  it('prints the experiments command’s own help', async () => {
    const c = capture();
    expect(await main(['help', 'experiments'], c.io)).toBe(0);
    expect(c.out.join('\n')).toContain('Usage: ai4rag experiments list');
  });

  it('refuses help for an unknown command and a bare invocation with exit 2', async () => {
    const a = capture();
    const b = capture();
    const d = capture();
    expect(await main(['help', 'frobnicate'], a.io)).toBe(2);
    expect(a.err).toEqual(['ai4rag help: no command "frobnicate"; run "ai4rag --help"']);
    expect(await main(['frobnicate', '--help'], b.io)).toBe(2);
    expect(b.err).toEqual(['ai4rag: unknown command "frobnicate". Run "ai4rag --help".']);
    expect(await main([], d.io)).toBe(2);
    expect(d.out.join('\n')).toContain('Commands:');
  });
});

describe('global options', () => {
  it.each([
    [
      ['score', '--input', 'x.json', '--store', 'pgvector'],
      '--store does not apply to score: it reads only the given file',
    ],
    [['score', '--input', 'x.json', '--data-dir', 'd'], '--data-dir does not apply to score'],
    [
      ['optimizer-sim', '--scores', 'x.json', '--store', 'milvus'],
      '--store does not apply to optimizer-sim',
    ],
    [
      ['optimizer-sim', '--scores', 'x.json', '--data-dir', 'd'],
      '--data-dir does not apply to optimizer-sim',
    ],
    [
      ['eval-retrieval', '--corpus', 'c', '--benchmark', 'b', '--data-dir', 'd'],
      '--data-dir does not apply to eval-retrieval: it indexes in memory',
    ],
    [['demo', '--json'], '--json does not apply to demo'],
    [['serve', '--json'], '--json does not apply to serve: it has no JSON output'],
  ])('%j refuses a global option the command would ignore, with exit 2', async (args, message) => {
    // Arrange
    const c = capture();

    // Act
    const code = await main(args, c.io);

    // Assess
    expect(code).toBe(2);
    expect(c.err.join('\n')).toContain(message);
  });

  it.each([
    [
      ['search', 'x', '--chunk-size', '256'],
      'unknown option --chunk-size for search (ai4rag search --help lists its options)',
    ],
    [['stats', '--prune'], 'unknown option --prune for stats'],
    [['ask', 'x', '--depth', '3'], 'unknown option --depth for ask'],
  ])('%j refuses an option of another command with exit 2', async (args, message) => {
    const c = capture();
    expect(await main(args, c.io)).toBe(2);
    expect(c.err.join('\n')).toContain(message);
  });

  it('lists in each command’s help the global options it takes, and only those', () => {
    expect(COMMAND_HELP.score?.globals).toEqual(['json', 'config']);
    expect(COMMAND_HELP.experiment?.globals).toEqual(['store', 'data-dir', 'json', 'config']);
    expect(COMMAND_HELP.serve?.globals).toEqual(['store', 'data-dir', 'config']);
  });
});
