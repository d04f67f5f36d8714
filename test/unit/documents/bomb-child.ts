/**
 * Child process of `poison.test.ts`: loads the folder given as the first argument with the default
 * bounds (or the `LoadOptions` JSON given as the second) and prints one JSON line: the document
 * keys, the failures as `[key, reason]` and the process's peak RSS in bytes.
 *
 * Run as `node --import tsx test/unit/documents/bomb-child.ts DIR [OPTIONS_JSON]`.
 */
import { loadDocuments } from '#shared/documents/index.js';
import type { LoadOptions } from '#shared/documents/types.js';
import { peakRssBytes } from '#shared/util/peak-rss.js';

const [dir, optionsJson] = process.argv.slice(2);
if (!dir) throw new Error('usage: bomb-child.ts DIR [OPTIONS_JSON]');
const options = optionsJson ? (JSON.parse(optionsJson) as LoadOptions) : undefined;
const result = await loadDocuments([dir], options);
const report = {
  documents: result.documents.map((d) => d.key),
  failures: result.failures.map((f) => [f.key, f.reason]),
  maxRssBytes: peakRssBytes(),
};
process.stdout.write(`${JSON.stringify(report)}\n`);
