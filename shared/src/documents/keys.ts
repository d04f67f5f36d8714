/** Extensions stripped when matching a benchmark key to a document key. */
const MATCHABLE_EXTENSIONS = /\.(?:txt|md|markdown|html|htm|pdf|docx|json)$/i;

/**
 * The forms under which a benchmark may name a document: its key, and the key without its file
 * extension (benchmarks often cite `guide/intro` for `guide/intro.md`). Only known document
 * extensions are stripped, so a jsonl id such as `St._Louis` is not cut at its dot.
 *
 * @example
 * documentKeyVariants('guide/intro.md'); // ['guide/intro.md', 'guide/intro']
 */
export function documentKeyVariants(key: string): string[] {
  const slash = key.lastIndexOf('/');
  const base = key.slice(slash + 1);
  const stripped = base.replace(MATCHABLE_EXTENSIONS, '');
  if (stripped === base || stripped === '') return [key];
  return [key, key.slice(0, slash + 1) + stripped];
}

/**
 * Maps every variant of every key to its key, for O(1) benchmark look-ups. An exact key always
 * wins over another key's extension-less variant; a variant shared by two keys (`a.md`, `a.txt`
 * both giving `a`) is left out, because guessing would silently corrupt retrieval metrics.
 */
export function buildKeyIndex(keys: Iterable<string>): Map<string, string> {
  const exact = new Set(keys);
  const index = new Map<string, string>();
  const ambiguous = new Set<string>();
  for (const key of exact) {
    for (const variant of documentKeyVariants(key).slice(1)) {
      if (exact.has(variant) || ambiguous.has(variant)) continue;
      if (index.has(variant)) {
        index.delete(variant);
        ambiguous.add(variant);
      } else {
        index.set(variant, key);
      }
    }
  }
  for (const key of exact) index.set(key, key);
  return index;
}

/**
 * Resolves a benchmark's document key against loaded document keys (exact match first, then with
 * or without the extension). Returns undefined when nothing or more than one key matches.
 *
 * @example
 * matchDocumentKey('guide/intro', ['guide/intro.md', 'faq.md']); // 'guide/intro.md'
 */
export function matchDocumentKey(benchmarkKey: string, keys: Iterable<string>): string | undefined {
  return buildKeyIndex(keys).get(benchmarkKey);
}
