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

/** How a benchmark key resolved: the document key it names, or the keys it might have meant. */
export interface KeyResolution {
  match?: string;
  /** Several documents share the bare file name the benchmark gave. */
  ambiguous?: boolean;
  /** Keys the benchmark may have meant (same file name in another folder, or several with this name). */
  candidates: string[];
}

function baseVariants(key: string): string[] {
  const base = key.slice(key.lastIndexOf('/') + 1);
  return documentKeyVariants(base);
}

/**
 * Resolves a benchmark key as {@link matchDocumentKey} does and, failing that, as ai4rag's benchmarks name
 * documents: by bare file name (`travel-and-expenses.md` for `policies/travel-and-expenses.md`, with or without
 * the extension) when exactly one document has that name. Otherwise returns the candidates to suggest: every
 * document with that file name.
 * @param index from {@link buildKeyIndex} over `keys`
 * @example
 * resolveDocumentKey('travel.md', buildKeyIndex(keys), keys); // { match: 'policies/travel.md', candidates: [] }
 */
export function resolveDocumentKey(
  benchmarkKey: string,
  index: ReadonlyMap<string, string>,
  keys: readonly string[],
): KeyResolution {
  const direct = index.get(benchmarkKey);
  if (direct !== undefined) return { match: direct, candidates: [] };
  const wanted = new Set(baseVariants(benchmarkKey));
  const candidates = keys.filter((k) => baseVariants(k).some((v) => wanted.has(v)));
  if (!benchmarkKey.includes('/') && candidates.length === 1) {
    return { match: candidates[0] as string, candidates: [] };
  }
  return {
    candidates,
    ...(!benchmarkKey.includes('/') && candidates.length > 1 && { ambiguous: true }),
  };
}

/** The error text for a benchmark key that {@link resolveDocumentKey} could not resolve. */
export function unmatchedKeyMessage(benchmarkKey: string, resolution: KeyResolution): string {
  const shown = resolution.candidates.slice(0, 5).map((k) => `"${k}"`);
  const more = resolution.candidates.length > 5 ? `, … (${resolution.candidates.length})` : '';
  if (resolution.ambiguous) {
    return `gold document "${benchmarkKey}" matches several documents: ${shown.join(', ')}${more}; give the full key`;
  }
  return `gold document "${benchmarkKey}" matches no document${shown.length > 0 ? ` (did you mean ${shown.join(', ')}${more}?)` : ''}`;
}
