// Runs the ai4rag CLI and writes the process's peak resident set size (bytes) to the file named by the first
// argument on exit, so the chaos suite can check the memory bound of a run from outside.
import { writeFileSync } from 'node:fs';
import { register } from 'tsx/esm/api';

const [rssFile, ...args] = process.argv.slice(2);
register();
const { peakRssBytes } = await import('../../shared/src/util/peak-rss.ts');
process.on('exit', () => {
  writeFileSync(rssFile, String(peakRssBytes()));
});
const { main } = await import('../../bin/cli/main.ts');
process.exitCode = await main(args);
