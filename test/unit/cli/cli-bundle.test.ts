/**
 * The bundled CLI (scripts/build-cli.ts, bin/cli-bundle.mjs): `bin/ai4rag.mjs` runs it only while it is current,
 * the sources through tsx otherwise, and both give the same output.
 */
import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BUNDLE_DIR, bundleStale, MANIFEST } from '../../../bin/cli-bundle.mjs';

const BIN = fileURLToPath(new URL('../../../bin/ai4rag.mjs', import.meta.url));

describe('which code the ai4rag entry runs', () => {
  let root: string;
  const dir = () => join(root, 'dist', 'cli');
  const manifest = (startedAt: number, inputs: string[]) =>
    writeFile(join(dir(), MANIFEST), JSON.stringify({ startedAt, inputs }));

  beforeEach(async () => {
    // A repository of two sources, last changed at t = 1,000 s, and a bundle folder
    root = await mkdtemp(join(tmpdir(), 'ai4rag-bundle-'));
    await mkdir(join(root, 'src'), { recursive: true });
    await mkdir(dir(), { recursive: true });
    for (const name of ['src/a.ts', 'src/b.ts']) {
      await writeFile(join(root, name), 'export {};\n');
      await utimes(join(root, name), 1_000, 1_000);
    }
  });
  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('takes the bundle built after every one of its sources last changed', async () => {
    // Arrange
    await manifest(2_000_000, ['src/a.ts', 'src/b.ts']);

    // Act
    const reason = bundleStale({}, dir(), root);

    // Assess
    expect(reason).toBeUndefined();
  });

  it('takes the sources once one changed after the build started, and names it', async () => {
    // Arrange
    await manifest(2_000_000, ['src/a.ts', 'src/b.ts']);
    await utimes(join(root, 'src/b.ts'), 3_000, 3_000);

    // Act
    const reason = bundleStale({}, dir(), root);

    // Assess
    expect(reason).toBe('src/b.ts changed');
  });

  it('takes the sources when a source is gone, the bundle was never built, or the manifest is not one', async () => {
    // Arrange
    await manifest(2_000_000, ['src/a.ts', 'src/c.ts']);
    const gone = bundleStale({}, dir(), root);
    await writeFile(join(dir(), MANIFEST), '{"inputs": "src/a.ts"}');
    const malformed = bundleStale({}, dir(), root);
    await rm(join(dir(), MANIFEST));

    // Act
    const missing = bundleStale({}, dir(), root);

    // Assess
    expect(gone).toBe('src/c.ts is gone');
    expect(malformed).toBe('no manifest');
    expect(missing).toBe('no bundle');
  });

  it('takes the sources when AI4RAG_CLI_BUNDLE=off, whatever the bundle', async () => {
    // Arrange
    await manifest(2_000_000, ['src/a.ts']);

    // Act
    const reasons = ['off', ' OFF '].map((v) => bundleStale({ AI4RAG_CLI_BUNDLE: v }, dir(), root));

    // Assess
    expect(reasons).toEqual(['AI4RAG_CLI_BUNDLE=off', 'AI4RAG_CLI_BUNDLE=off']);
    expect(bundleStale({ AI4RAG_CLI_BUNDLE: 'on' }, dir(), root)).toBeUndefined();
  });
});

describe('the bundle this checkout runs', () => {
  it('is current (npm ci or the test setup built it from these sources)', () => {
    // Act
    const reason = bundleStale({});

    // Assess
    expect(reason).toBeUndefined();
    expect(BUNDLE_DIR.endsWith('/dist/cli/')).toBe(true);
  });

  it.each([
    [['--help']],
    [['search', '--help']],
    [['search', 'q', '--top-k', 'many']],
    [['no-such-command']],
  ])('answers %j from the bundle exactly as from the sources', (args) => {
    // Act
    const [bundled, sources] = ['on', 'off'].map((mode) =>
      spawnSync(process.execPath, [BIN, ...args], {
        encoding: 'utf8',
        env: { PATH: process.env.PATH, AI4RAG_CLI_BUNDLE: mode },
      }),
    );

    // Assess
    expect(bundled?.status).toBe(sources?.status);
    expect(bundled?.stdout).toBe(sources?.stdout);
    expect(bundled?.stderr).toBe(sources?.stderr);
  });
});
