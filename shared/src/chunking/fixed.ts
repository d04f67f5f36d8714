import type { LoadedDocument } from '../documents/types.js';
import { chunksFromSpans } from './document.js';
import { approxTokens, CHARS_PER_TOKEN } from './limits.js';
import type { TextSpan } from './recursive-splitter.js';
import type { AI4RAGChunk, ChunkingOptions } from './types.js';

/** Sizes of {@link splitFixed}, in approximate tokens. */
export interface FixedSplitOptions {
  /** Maximum `approxTokens` of a window; at least 1. */
  chunkSize: number;
  /** Tokens repeated at the start of the next window (at most); below `chunkSize`. */
  chunkOverlap: number;
}

interface Word {
  start: number;
  end: number;
}

/** Maximal runs of non-whitespace, with their offsets. */
function wordsOf(text: string): Word[] {
  const words: Word[] = [];
  for (const m of text.matchAll(/\S+/gu)) {
    words.push({ start: m.index, end: m.index + m[0].length });
  }
  return words;
}

/** Cuts `[start, end)` into pieces of at most `size` UTF-16 units, stepping `step`, never inside a surrogate pair. */
function cutByCharacters(text: string, start: number, end: number, size: number, step: number) {
  const spans: TextSpan[] = [];
  let from = start;
  for (;;) {
    let to = Math.min(end, from + size);
    if (to < end && /[\uD800-\uDBFF]/u.test(text.charAt(to - 1)) && to - 1 > from) to -= 1;
    spans.push({ text: text.slice(from, to), startIndex: from });
    if (to >= end) return spans;
    let next = from + step;
    if (next <= from) next = to;
    if (/[\uDC00-\uDFFF]/u.test(text.charAt(next)) && next > from + 1) next -= 1;
    from = next;
  }
}

/**
 * Fixed-size token windows with overlap, over the whitespace-separated words of `text`:
 * 1. A window is a run of consecutive words; its text is the document slice from its first word's start to its last
 *    word's end (inner whitespace kept), and it takes words while `approxTokens(slice) ≤ chunkSize`.
 * 2. The next window starts at the earliest word inside the previous window such that the repeated slice (that word
 *    to the previous window's end) has `approxTokens ≤ chunkOverlap` and the new window still reaches the next
 *    unseen word within `chunkSize`; when no word qualifies (overlap 0, a long last word), right after the window.
 * 3. A word longer than `chunkSize` tokens is cut by characters into pieces of `4 × chunkSize` characters, each
 *    starting `4 × (chunkSize − chunkOverlap)` characters after the previous; windows before and after it do not
 *    overlap with it.
 * Every window satisfies `approxTokens(text) ≤ chunkSize`; `startIndex` is the offset of its first character.
 * @throws {RangeError} when the sizes are not integers with 0 ≤ chunkOverlap < chunkSize.
 * @example splitFixed('a b c d', { chunkSize: 1, chunkOverlap: 0 }) // a, b, c, d (each 1 token)
 */
export function splitFixed(text: string, options: FixedSplitOptions): TextSpan[] {
  const { chunkSize, chunkOverlap } = options;
  if (!Number.isInteger(chunkSize) || chunkSize < 1) {
    throw new RangeError(`chunkSize must be a positive integer, got ${chunkSize}`);
  }
  if (!Number.isInteger(chunkOverlap) || chunkOverlap < 0 || chunkOverlap >= chunkSize) {
    throw new RangeError(
      `chunkOverlap must be an integer in 0..${chunkSize - 1}, got ${chunkOverlap}`,
    );
  }
  const words = wordsOf(text);
  // approxTokens of the slice from word i to word j, without the slice.
  const tokens = (i: number, j: number) =>
    Math.ceil(((words[j] as Word).end - (words[i] as Word).start) / CHARS_PER_TOKEN);
  const spans: TextSpan[] = [];
  let i = 0;
  while (i < words.length) {
    const first = words[i] as Word;
    if (approxTokens(text.slice(first.start, first.end)) > chunkSize) {
      const size = chunkSize * CHARS_PER_TOKEN;
      const step = (chunkSize - chunkOverlap) * CHARS_PER_TOKEN;
      for (const span of cutByCharacters(text, first.start, first.end, size, step))
        spans.push(span);
      i += 1;
      continue;
    }
    let j = i;
    while (j + 1 < words.length && tokens(i, j + 1) <= chunkSize) j += 1;
    const last = words[j] as Word;
    spans.push({ text: text.slice(first.start, last.end), startIndex: first.start });
    if (j + 1 >= words.length) break;
    let next = j + 1;
    if (chunkOverlap > 0) {
      for (let k = i + 1; k <= j; k += 1) {
        if (tokens(k, j) <= chunkOverlap && tokens(k, j + 1) <= chunkSize) {
          next = k;
          break;
        }
      }
    }
    i = next;
  }
  return spans;
}

/**
 * `fixed` chunking of one (validated) document: {@link splitFixed} over `doc.text`, numbered in order, with
 * `start_index`.
 */
export function chunkFixed(doc: LoadedDocument, opts: ChunkingOptions): AI4RAGChunk[] {
  return chunksFromSpans(
    doc,
    splitFixed(doc.text, { chunkSize: opts.chunkSize, chunkOverlap: opts.chunkOverlap }),
  );
}
