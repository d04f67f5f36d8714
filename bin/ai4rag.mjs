#!/usr/bin/env node
// Entry of the `ai4rag` command: loads the TypeScript CLI through tsx, so `npx ai4rag …` works right after
// `npm ci` with no build step.
import { readFileSync } from 'node:fs';

const argv = process.argv.slice(2);
if (argv.length === 1 && ['--version', '-V', 'version'].includes(argv[0])) {
  // Answered before tsx and the CLI's modules load (0.92–1.54 s here, against 0.10–0.15 s for this): the same
  // line `main` prints for these arguments.
  const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  process.stdout.write(`ai4rag-serverless ${version}\n`);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  const { main } = await import('./cli/main.ts');
  process.exitCode = await main(argv);
}
