import { stemmer } from 'stemmer';

/**
 * English stopwords removed before keyword scoring. A moderate list (function words only): content words such as
 * "not" are kept on purpose because claims and questions often hinge on them.
 */
export const STOPWORDS: ReadonlySet<string> = new Set(
  (
    'a an and are as at be been being but by can could did do does doing for from had has have having he her hers ' +
    'him his how i if in into is it its itself me my of on or our ours she should so such than that the their ' +
    'theirs them then there these they this those to too was we were what when where which while who whom why ' +
    'will with would you your yours about above after again against all am any because before below between both ' +
    'during each few further here just more most nor only other own same some through under until up very off over ' +
    'out once also'
  ).split(' '),
);

const SPLIT = /[^\p{L}\p{N}]+/u;
const ASCII_SPLIT = /[^a-z0-9]+/;
const DIACRITICS = /\p{M}+/gu;
// biome-ignore lint/suspicious/noControlCharactersInRegex: the ASCII range test needs \x00.
const NON_ASCII = /[^\x00-\x7f]/;

/**
 * Analyzed form of recently seen words (`null` for a stopword); bounded so memory stays flat on large corpora
 * (cleared when full). Results never depend on the cache's state.
 */
const TOKEN_CACHE = new Map<string, string | null>();
const TOKEN_CACHE_MAX = 200_000;

function analyzeWord(word: string): string | null {
  let token = TOKEN_CACHE.get(word);
  if (token === undefined) {
    token = STOPWORDS.has(word) ? null : word.length > 2 && !/\d/.test(word) ? stemmer(word) : word;
    if (TOKEN_CACHE.size >= TOKEN_CACHE_MAX) TOKEN_CACHE.clear();
    TOKEN_CACHE.set(word, token);
  }
  return token;
}

/**
 * `words()` of the most recent texts: ingestion analyzes each chunk twice (the local embedder's features, then
 * BM25), and the second call is a lookup. Callers must not mutate the returned arrays.
 */
const WORDS_CACHE = new Map<string, string[]>();
const WORDS_CACHE_MAX = 2048;

/**
 * Normalizes and splits text into lowercase word tokens: Unicode NFKD with diacritics removed, split on anything
 * that is not a letter or a digit. No stopword removal, no stemming.
 * @example words('Café-au-lait, 2 cups') // ['cafe', 'au', 'lait', '2', 'cups']
 */
export function words(text: string): string[] {
  const cached = WORDS_CACHE.get(text);
  if (cached !== undefined) return cached;
  const out: string[] = [];
  // ASCII text needs no Unicode normalization; the fast path gives the same tokens.
  const tokens = NON_ASCII.test(text)
    ? text.normalize('NFKD').replace(DIACRITICS, '').toLowerCase().split(SPLIT)
    : text.toLowerCase().split(ASCII_SPLIT);
  for (const token of tokens) {
    if (token.length > 0) out.push(token);
  }
  if (WORDS_CACHE.size >= WORDS_CACHE_MAX) WORDS_CACHE.clear();
  WORDS_CACHE.set(text, out);
  return out;
}

/**
 * The keyword analyzer used by BM25 (and the local embedder's word features): {@link words}, minus
 * {@link STOPWORDS}, Porter-stemmed. Pure and deterministic; the same analyzer runs at index and query time.
 * @example analyze('The proteins were binding') // ['protein', 'bind']
 */
export function analyze(text: string): string[] {
  const out: string[] = [];
  for (const w of words(text)) {
    const token = analyzeWord(w);
    if (token !== null) out.push(token);
  }
  return out;
}

/**
 * Like {@link analyze}, but keeps each token's surface word (its {@link words} form): `[word, term]` pairs in text
 * order. Query expansion (RM3) writes expansion terms back as surface words, because `analyze(word)` gives exactly
 * `[term]` while re-analyzing a stem need not give the stem back.
 * @example analyzeWithWords('The proteins') // [['proteins', 'protein']]
 */
export function analyzeWithWords(text: string): [string, string][] {
  const out: [string, string][] = [];
  for (const w of words(text)) {
    const token = analyzeWord(w);
    if (token !== null) out.push([w, token]);
  }
  return out;
}

/** Version tag of the analyzer; stored with a collection so a changed analyzer triggers a re-weighting. */
export const ANALYZER_VERSION = 'en-porter-v1';
