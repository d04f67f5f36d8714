import { approxTokens, CHARS_PER_TOKEN } from './limits.js';

/**
 * ai4rag's separators for recursive chunking, tried in order. They are regular expressions
 * (`is_separator_regex=True`): the second splits *after* ". " with a lookbehind, so a sentence keeps its period.
 */
export const RECURSIVE_SEPARATORS: readonly string[] = Object.freeze([
  '\n\n',
  '(?<=\\. )',
  '\n',
  ' ',
  '',
]);

/** Settings of {@link splitTextRecursive}; sizes are in approximate tokens ({@link approxTokens}). */
export interface RecursiveSplitterOptions {
  /** Maximum tokens per chunk (sum of the token counts of the pieces merged into it). At least 1. */
  chunkSize: number;
  /** Tokens of trailing pieces carried over to the next chunk; must be below `chunkSize`. */
  chunkOverlap: number;
  /** Regex separators, most to least preferred; `''` means "split into characters". */
  separators?: readonly string[] | undefined;
}

/** A chunk and its character offset in the split text (LangChain's `add_start_index`). */
export interface TextSpan {
  text: string;
  startIndex: number;
}

interface Resolved {
  chunkSize: number;
  chunkOverlap: number;
  regexes: Map<string, { test: RegExp; split: RegExp }>;
}

function resolve(options: RecursiveSplitterOptions): Resolved & { separators: readonly string[] } {
  const { chunkSize, chunkOverlap } = options;
  if (!Number.isInteger(chunkSize) || chunkSize < 1) {
    throw new RangeError(`chunkSize must be a positive integer, got ${chunkSize}`);
  }
  if (!Number.isInteger(chunkOverlap) || chunkOverlap < 0 || chunkOverlap >= chunkSize) {
    throw new RangeError(
      `chunkOverlap must be an integer in 0..${chunkSize - 1}, got ${chunkOverlap}`,
    );
  }
  const separators = options.separators ?? RECURSIVE_SEPARATORS;
  const regexes = new Map<string, { test: RegExp; split: RegExp }>();
  for (const s of separators) {
    if (s !== '') regexes.set(s, { test: new RegExp(s, 'u'), split: new RegExp(s, 'gu') });
  }
  return { chunkSize, chunkOverlap, separators, regexes };
}

/**
 * Python's `_split_text_with_regex(keep_separator=True)`: cut the text at the *start* of every separator
 * match, so a consumed separator begins the next piece and a lookbehind separator ends the previous one.
 * Empty pieces are dropped.
 */
function splitKeepingSeparator(text: string, splitter: RegExp | undefined): string[] {
  if (splitter === undefined) return Array.from(text);
  const pieces: string[] = [];
  let last = 0;
  splitter.lastIndex = 0;
  for (const match of text.matchAll(splitter)) {
    if (match.index > last) {
      pieces.push(text.slice(last, match.index));
      last = match.index;
    }
  }
  if (last < text.length) pieces.push(text.slice(last));
  return pieces;
}

/** Python's `_join_docs` with `strip_whitespace=True`. */
function joinDocs(docs: readonly string[], separator: string): string | null {
  const text = docs.join(separator).trim();
  return text === '' ? null : text;
}

/**
 * Python's `TextSplitter._merge_splits`: greedily packs pieces up to `chunkSize` (the sum of the pieces'
 * own token counts), and on overflow drops pieces from the front until at most `chunkOverlap` tokens remain,
 * which then start the next chunk. A queue head index replaces Python's O(n²) `current_doc[1:]`.
 */
function mergeSplits(splits: readonly string[], separator: string, o: Resolved): string[] {
  const sepLen = approxTokens(separator);
  const docs: string[] = [];
  let current: string[] = [];
  let lengths: number[] = [];
  let head = 0;
  let total = 0;
  for (const d of splits) {
    const len = approxTokens(d);
    if (total + len + (current.length > head ? sepLen : 0) > o.chunkSize) {
      if (current.length > head) {
        const doc = joinDocs(current.slice(head), separator);
        if (doc !== null) docs.push(doc);
        while (
          current.length > head &&
          (total > o.chunkOverlap ||
            (total + len + (current.length > head ? sepLen : 0) > o.chunkSize && total > 0))
        ) {
          total -= (lengths[head] ?? 0) + (current.length - head > 1 ? sepLen : 0);
          head += 1;
        }
        if (head > 1024) {
          current = current.slice(head);
          lengths = lengths.slice(head);
          head = 0;
        }
      }
    }
    current.push(d);
    lengths.push(len);
    total += len + (current.length - head > 1 ? sepLen : 0);
  }
  const doc = joinDocs(current.slice(head), separator);
  if (doc !== null) docs.push(doc);
  return docs;
}

/** `push(...items)` without the argument-count limit of spreading a huge array. */
function appendAll(target: string[], items: readonly string[]): void {
  for (const item of items) target.push(item);
}

function splitRecursive(text: string, separators: readonly string[], o: Resolved): string[] {
  const finalChunks: string[] = [];
  let separator = separators[separators.length - 1] ?? '';
  let newSeparators: readonly string[] = [];
  for (let i = 0; i < separators.length; i += 1) {
    const s = separators[i] ?? '';
    if (s === '') {
      separator = s;
      break;
    }
    if (o.regexes.get(s)?.test.test(text)) {
      separator = s;
      newSeparators = separators.slice(i + 1);
      break;
    }
  }
  const splits = splitKeepingSeparator(text, o.regexes.get(separator)?.split);
  // keep_separator=True: the separator is already inside the pieces, so they are merged with ''.
  let goodSplits: string[] = [];
  for (const s of splits) {
    if (approxTokens(s) < o.chunkSize) {
      goodSplits.push(s);
      continue;
    }
    if (goodSplits.length > 0) {
      appendAll(finalChunks, mergeSplits(goodSplits, '', o));
      goodSplits = [];
    }
    if (newSeparators.length === 0) finalChunks.push(s);
    else appendAll(finalChunks, splitRecursive(s, newSeparators, o));
  }
  if (goodSplits.length > 0) appendAll(finalChunks, mergeSplits(goodSplits, '', o));
  return finalChunks;
}

/**
 * Splits text like Python LangChain's `RecursiveCharacterTextSplitter(is_separator_regex=True,
 * keep_separator=True, strip_whitespace=True)` with `length_function=approxTokens`: split on the first
 * separator that occurs, merge small pieces up to `chunkSize` with `chunkOverlap`, recurse into oversized
 * pieces with the remaining separators. Chunks are trimmed; whitespace-only chunks are dropped.
 * @example splitTextRecursive(text, { chunkSize: 512, chunkOverlap: 128 })
 */
export function splitTextRecursive(text: string, options: RecursiveSplitterOptions): string[] {
  const o = resolve(options);
  return splitRecursive(text, o.separators, o).filter((c) => c.trim() !== '');
}

/**
 * {@link splitTextRecursive} plus the start offset of each chunk in `text` (LangChain's `add_start_index`:
 * `text.indexOf(chunk, previousStart + previousLength - overlap)`). Unlike Python LangChain, the overlap is
 * converted to characters (`chunkOverlap × CHARS_PER_TOKEN`, an upper bound of the overlap's length) before
 * it is subtracted from a character offset; subtracting tokens makes Python miss the chunk (`-1`).
 * @example splitTextWithStartIndex('A. B.', { chunkSize: 128, chunkOverlap: 0 })[0] // { text: 'A. B.', startIndex: 0 }
 */
export function splitTextWithStartIndex(
  text: string,
  options: RecursiveSplitterOptions,
): TextSpan[] {
  const chunks = splitTextRecursive(text, options);
  const overlapChars = options.chunkOverlap * CHARS_PER_TOKEN;
  const spans: TextSpan[] = [];
  let previousStart = 0;
  let previousLength = 0;
  for (const chunk of chunks) {
    const from = Math.max(0, previousStart + previousLength - overlapChars);
    let index = text.indexOf(chunk, from);
    if (index < 0) index = text.indexOf(chunk, previousStart);
    if (index < 0) index = text.indexOf(chunk);
    spans.push({ text: chunk, startIndex: index });
    previousStart = Math.max(index, 0);
    previousLength = chunk.length;
  }
  return spans;
}
