#!/usr/bin/env node
// Entry of the `ai4rag` command. It runs the CLI bundled in dist/cli (built by `npm ci`, see
// scripts/build-cli.ts) while none of its sources changed since, and otherwise loads the TypeScript sources
// through tsx, so `npx ai4rag …` works right after `npm ci` and right after an edit, with no build step.
// `AI4RAG_CLI_BUNDLE=off` always takes the sources.
import { readFileSync } from 'node:fs';
import { BUNDLE_DIR, bundleStale } from './cli-bundle.mjs';

const argv = process.argv.slice(2);
if (argv.length === 1 && ['--version', '-V', 'version'].includes(argv[0])) {
  // Answered before any CLI module loads (0.10–0.15 s): the same line `main` prints for these arguments.
  const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  process.stdout.write(`ai4rag-serverless ${version}\n`);
} else if (bundleStale() === undefined) {
  // Stack traces name the TypeScript sources (the bundle's source maps), as they do through tsx.
  process.setSourceMapsEnabled(true);
  const { main } = await import(`${BUNDLE_DIR}main.js`);
  process.exitCode = await main(argv);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  const { main } = await import('./cli/main.ts');
  process.exitCode = await main(argv);
}
