/**
 * Bundles the CLI (bin/cli/main.ts and the sources it loads, and the CPU pool's worker tasks) with esbuild into
 * dist/cli, the packages left to node_modules and each dynamic import its own chunk, so a command loads only what
 * it runs. Started through tsx, `ai4rag` spends about 0.5 s more per run resolving and loading ~200 TypeScript
 * modules through the loader's thread. Run by `npm ci` (the `prepare` script) and by the test suite's global setup
 * when a source changed; `npm run build:cli` rebuilds it by hand. `bin/ai4rag.mjs` uses the bundle only while
 * none of its sources changed since (see bin/cli-bundle.mjs).
 */
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { BUNDLE_DIR, bundleStale, MANIFEST, ROOT } from '../bin/cli-bundle.mjs';

/** Files the bundle depends on besides its inputs: the build itself and the compiler options. */
const BUILD_FILES = ['scripts/build-cli.ts', 'bin/cli-bundle.mjs', 'tsconfig.json'];

/**
 * Builds the bundle into dist/cli and its manifest (the build's start time and every source that went in).
 * @returns the number of source files bundled
 * @example await buildCli();
 */
export async function buildCli(): Promise<number> {
  const startedAt = Date.now();
  await rm(BUNDLE_DIR, { recursive: true, force: true });
  await mkdir(BUNDLE_DIR, { recursive: true });
  const result = await build({
    absWorkingDir: ROOT,
    entryPoints: {
      main: 'bin/cli/main.ts',
      // The worker threads' module: cpu-pool.ts loads ./cpu-tasks.js beside itself when it is not TypeScript.
      'cpu-tasks': 'shared/src/runtime/cpu-tasks.ts',
    },
    outdir: BUNDLE_DIR,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    packages: 'external',
    sourcemap: 'linked',
    metafile: true,
    logLevel: 'warning',
  });
  const inputs = Object.keys(result.metafile.inputs)
    .map((p) => relative(ROOT, join(ROOT, p)))
    .concat(BUILD_FILES)
    .sort();
  await writeFile(join(BUNDLE_DIR, 'package.json'), '{ "type": "module" }\n');
  await writeFile(join(BUNDLE_DIR, MANIFEST), `${JSON.stringify({ startedAt, inputs })}\n`);
  return inputs.length;
}

/** Builds the bundle unless it is current; returns why it was built, or `undefined`. */
export async function ensureCli(): Promise<string | undefined> {
  const reason = bundleStale({});
  if (reason === undefined) return undefined;
  await buildCli();
  return reason;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const files = await buildCli();
  process.stdout.write(
    `CLI bundled from ${files} files in ${relative(process.cwd(), BUNDLE_DIR)}\n`,
  );
}
