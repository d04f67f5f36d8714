#!/usr/bin/env node
// Entry of the `ai4rag` command: loads the TypeScript CLI through tsx, so `npx ai4rag …` works right after
// `npm ci` with no build step.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('./cli/main.ts');
process.exitCode = await main(process.argv.slice(2));
