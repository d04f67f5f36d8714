/**
 * The three deterministic RAG metrics ai4rag computes through IBM unitxt (v1.26.x catalog
 * `metrics.rag.external_rag.*`), re-implemented exactly, normalization quirks included, so scores are
 * comparable with ai4rag's leaderboards.
 */
import { ValidationError } from '../errors.js';

/** Python's `string.punctuation`: ASCII only, so Unicode punctuation ("—", "’") survives, as in unitxt. */
const PY_PUNCTUATION = new Set('!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~');

/**
 * Python's `re` `\b(a|an|the)\b` on a `str`: word characters are Unicode letters, digits and `_`
 * (JavaScript's `\b` is ASCII-only, so it would wrongly split "éa" around the "a").
 */
const ARTICLES = /(?<![\p{L}\p{N}_])(?:a|an|the)(?![\p{L}\p{N}_])/gu;

/**
 * Python's `str.split()` separators (`str.isspace`), which differ from JavaScript's `\s` (Python adds
 * U+001C–U+001F and U+0085, and excludes U+FEFF).
 */
const PY_WHITESPACE = new Set<number>([
  0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x1c, 0x1d, 0x1e, 0x1f, 0x20, 0x85, 0xa0, 0x1680, 0x2000, 0x2001,
  0x2002, 0x2003, 0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200a, 0x2028, 0x2029, 0x202f,
  0x205f, 0x3000,
]);

/** Python's `s.split()` with no argument: runs of whitespace separate, no empty tokens. */
function pySplit(s: string): string[] {
  const out: string[] = [];
  let current = '';
  for (const ch of s) {
    if (PY_WHITESPACE.has(ch.codePointAt(0) as number)) {
      if (current !== '') out.push(current);
      current = '';
    } else {
      current += ch;
    }
  }
  if (current !== '') out.push(current);
  return out;
}

/** Token precision, recall and F1 of a prediction against its best references. */
export interface TokenOverlapScores {
  precision: number;
  recall: number;
  f1: number;
}

/**
 * unitxt's (SQuAD-style) `normalize_answer`: lowercase, drop ASCII punctuation, replace the articles
 * a/an/the by a space, collapse whitespace. Quirks kept on purpose: "2.1" → "21", "U.S." → "us".
 * @example normalizeAnswer('The U.S. grew 2.1%') // 'us grew 21'
 */
export function normalizeAnswer(s: string): string {
  let text = s.toLowerCase();
  let kept = '';
  for (const ch of text) if (!PY_PUNCTUATION.has(ch)) kept += ch;
  text = kept.replace(ARTICLES, ' ');
  return pySplit(text).join(' ');
}

/** Tokens of {@link normalizeAnswer}: the whitespace split, `[]` for an empty result. */
export function answerTokens(s: string): string[] {
  const normalized = normalizeAnswer(s);
  return normalized === '' ? [] : normalized.split(' ');
}

function counts(tokens: readonly string[]): Map<string, number> {
  const m = new Map<string, number>();
  for (const t of tokens) m.set(t, (m.get(t) ?? 0) + 1);
  return m;
}

/**
 * unitxt `TokenOverlap` for one instance: per reference the multiset intersection size n gives
 * P = n/|pred|, R = n/|ref|, F1 = 2PR/(P+R) (all 0 when n = 0); over references each measure is the
 * maximum independently, so P, R and F1 may come from different references.
 * @throws {ValidationError} when `references` is empty (unitxt crashes on `max([])`; we say why instead).
 * @example tokenOverlap('Paris is big', ['Paris']) // { precision: 1/3, recall: 1, f1: 0.5 }
 */
export function tokenOverlap(
  prediction: string,
  references: readonly string[],
): TokenOverlapScores {
  if (references.length === 0) {
    throw new ValidationError('token overlap needs at least one reference (got an empty list)');
  }
  const pred = answerTokens(prediction);
  const predCounts = counts(pred);
  const best: TokenOverlapScores = { precision: 0, recall: 0, f1: 0 };
  for (const reference of references) {
    const ref = answerTokens(reference);
    let n = 0;
    for (const [token, c] of counts(ref)) n += Math.min(c, predCounts.get(token) ?? 0);
    if (n === 0) continue;
    const p = n / pred.length;
    const r = n / ref.length;
    const f1 = (2 * p * r) / (p + r);
    best.precision = Math.max(best.precision, p);
    best.recall = Math.max(best.recall, r);
    best.f1 = Math.max(best.f1, f1);
  }
  return best;
}

/**
 * ai4rag `faithfulness`: token precision of the answer against the best single retrieved chunk
 * (chunks are not concatenated).
 * @throws {ValidationError} when `contexts` is empty.
 */
export function faithfulness(answer: string, contexts: readonly string[]): number {
  return tokenOverlap(answer, contexts).precision;
}

/**
 * ai4rag `answer_correctness`: token recall of the answer against the best-matching ground truth.
 * @throws {ValidationError} when `groundTruths` is empty.
 */
export function answerCorrectness(answer: string, groundTruths: readonly string[]): number {
  return tokenOverlap(answer, groundTruths).recall;
}

/**
 * ai4rag `context_correctness` (unitxt `MRR`): 1/rank of the first retrieved id that is a gold id, rank
 * counted over chunks with duplicates kept; 0 when none matches (also when `goldIds` is empty).
 * @example contextCorrectness(['doc_b', 'doc_a', 'doc_a'], ['doc_a']) // 0.5
 */
export function contextCorrectness(
  contextIds: readonly string[],
  goldIds: readonly string[],
): number {
  const gold = new Set(goldIds);
  const i = contextIds.findIndex((id) => gold.has(id));
  return i < 0 ? 0 : 1 / (i + 1);
}
