import { createHash } from 'node:crypto';
import type { LoadedDocument } from '../documents/types.js';
import type { Embedder } from '../embeddings/types.js';
import { chunksFromSpans } from './document.js';
import { ChunkingValidationError } from './errors.js';
import {
  approxTokens,
  CHARS_PER_TOKEN,
  type ResolvedSemanticOptions,
  resolveSemanticOptions,
} from './limits.js';
import { splitTextWithStartIndex } from './recursive-splitter.js';
import type { AI4RAGChunk, ChunkingOptions, SemanticBreakpoint } from './types.js';

/** What semantic chunking has cost so far (all documents chunked by one chunker). */
export interface ChunkingCost {
  /** Sentence groups whose vector was needed (one per sentence). */
  groups: number;
  /** Groups sent to the embedder (the others came from the cache). */
  embedded: number;
  /** Groups answered by the cache (identical text seen before, in this document or an earlier one). */
  cacheHits: number;
  /** Approximate tokens sent to the embedder. */
  tokens: number;
  /** Wall-clock milliseconds spent waiting for the embedder. */
  ms: number;
}

/** A sentence: a span of the document text, trimmed. */
export interface Sentence {
  start: number;
  end: number;
}

/** Group vectors cached per chunker (LRU); 4,096 × 384 float32 ≈ 6 MB. */
export const SEMANTIC_CACHE_ENTRIES = 4096;
/** Groups embedded per `embedDocuments` call; vectors of one batch at a time are held. */
const EMBED_BATCH = 256;

/**
 * Sentence boundaries: the whitespace after `.`, `?` or `!` (closing quotes and brackets stay with the sentence),
 * and every blank line (headings, list items and table rows rarely end with a period).
 */
const BOUNDARY = /(?<=[.?!][)\]"'”’»]*)\s+|[ \t]*\r?\n(?:[ \t]*\r?\n)+\s*/gu;

/**
 * Splits text into sentences (LangChain's `SemanticChunker` splits on `(?<=[.?!])\s+`; blank lines are boundaries
 * too). Each sentence is a trimmed span of `text`; whitespace-only text has none.
 * @example splitSentences('One. Two?\n\nThree') // spans of 'One.', 'Two?', 'Three'
 */
export function splitSentences(text: string): Sentence[] {
  const sentences: Sentence[] = [];
  const push = (from: number, to: number) => {
    let start = from;
    let end = to;
    while (start < end && /\s/u.test(text.charAt(start))) start += 1;
    while (end > start && /\s/u.test(text.charAt(end - 1))) end -= 1;
    if (end > start) sentences.push({ start, end });
  };
  let cursor = 0;
  for (const m of text.matchAll(BOUNDARY)) {
    push(cursor, m.index);
    cursor = m.index + m[0].length;
  }
  push(cursor, text.length);
  return sentences;
}

/** numpy's `percentile` (linear interpolation between closest ranks). */
export function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const rank = (p / 100) * (sorted.length - 1);
  const lo = Math.floor(rank);
  const hi = Math.ceil(rank);
  const a = sorted[lo] as number;
  return a + ((sorted[hi] as number) - a) * (rank - lo);
}

/** numpy's `gradient` with unit spacing: one-sided at the ends, central differences inside. */
export function gradient(values: readonly number[]): number[] {
  const n = values.length;
  if (n < 2) return [];
  const v = (i: number) => values[i] as number;
  return values.map((_, i) =>
    i === 0 ? v(1) - v(0) : i === n - 1 ? v(n - 1) - v(n - 2) : (v(i + 1) - v(i - 1)) / 2,
  );
}

/**
 * Indices `i` of the distances after which a chunk ends (between sentence `i` and `i + 1`), as LangChain's
 * `SemanticChunker`: values above the threshold, where the threshold is the `amount`-th percentile of the
 * distances (`percentile`), `mean + amount × std` (population std, `standard_deviation`), or the `amount`-th
 * percentile of the distances' gradient, compared with the gradient (`gradient`; fewer than 2 distances: none).
 * @example breakpointIndices([0.1, 0.9, 0.2], 'percentile', 50) // [1]
 */
export function breakpointIndices(
  distances: readonly number[],
  type: SemanticBreakpoint,
  amount: number,
): number[] {
  if (distances.length === 0) return [];
  let values: readonly number[] = distances;
  let threshold: number;
  if (type === 'percentile') threshold = percentile(distances, amount);
  else if (type === 'standard_deviation') {
    const mean = distances.reduce((s, d) => s + d, 0) / distances.length;
    const variance = distances.reduce((s, d) => s + (d - mean) ** 2, 0) / distances.length;
    threshold = mean + amount * Math.sqrt(variance);
  } else {
    values = gradient(distances);
    if (values.length === 0) return [];
    threshold = percentile(values, amount);
  }
  const out: number[] = [];
  values.forEach((v, i) => {
    if (v > threshold) out.push(i);
  });
  return out;
}

function cosineDistance(a: Float32Array, b: Float32Array): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    const x = a[i] as number;
    const y = b[i] as number;
    dot += x * y;
    na += x * x;
    nb += y * y;
  }
  return na === 0 || nb === 0 ? 1 : 1 - dot / Math.sqrt(na * nb);
}

/** A bounded map with least-recently-used eviction. */
class LruCache<V> {
  private readonly map = new Map<string, V>();
  constructor(private readonly max: number) {}
  get(key: string): V | undefined {
    const v = this.map.get(key);
    if (v !== undefined) {
      this.map.delete(key);
      this.map.set(key, v);
    }
    return v;
  }
  set(key: string, value: V): void {
    this.map.delete(key);
    this.map.set(key, value);
    if (this.map.size > this.max) {
      const oldest = this.map.keys().next();
      if (!oldest.done) this.map.delete(oldest.value);
    }
  }
}

/** A chunk-to-be: a span of the text covering sentences `first..last` (pieces of one long sentence share both). */
interface Unit {
  start: number;
  end: number;
  first: number;
  last: number;
}

/**
 * Semantic chunking in the manner of LangChain's `SemanticChunker` / LlamaIndex's `SemanticSplitterNodeParser`,
 * with its embedding cache and cost (see {@link createSemanticChunker}).
 */
export class SemanticChunker {
  readonly settings: ResolvedSemanticOptions;
  private readonly cache: LruCache<Float32Array>;
  private readonly spent: ChunkingCost = { groups: 0, embedded: 0, cacheHits: 0, tokens: 0, ms: 0 };

  constructor(
    opts: ChunkingOptions,
    private readonly embedder: Embedder,
    cacheEntries = SEMANTIC_CACHE_ENTRIES,
  ) {
    this.settings = resolveSemanticOptions(opts);
    this.cache = new LruCache(Math.max(1, cacheEntries));
  }

  /** The cost so far (a copy; `ms` rounded to 0.1). */
  cost(): ChunkingCost {
    return { ...this.spent, ms: Math.round(this.spent.ms * 10) / 10 };
  }

  /** Distances between consecutive sentence groups (`groups.length − 1`), embedding batch by batch. */
  private async distances(text: string, sentences: readonly Sentence[]): Promise<number[]> {
    const b = this.settings.bufferSize;
    const maxChars = Math.max(1, this.embedder.contextLength) * CHARS_PER_TOKEN;
    const groupText = (i: number) => {
      const from = Math.max(0, i - b);
      const to = Math.min(sentences.length - 1, i + b);
      const parts: string[] = [];
      for (let k = from; k <= to; k++) {
        const s = sentences[k] as Sentence;
        parts.push(text.slice(s.start, s.end));
      }
      // Longer than the embedder's window: only its start is embedded (as the embedder would truncate).
      return parts.join(' ').slice(0, maxChars);
    };
    const out: number[] = [];
    let previous: Float32Array | undefined;
    for (let from = 0; from < sentences.length; from += EMBED_BATCH) {
      const texts: string[] = [];
      for (let i = from; i < Math.min(sentences.length, from + EMBED_BATCH); i++)
        texts.push(groupText(i));
      for (const vector of await this.vectors(texts)) {
        if (previous !== undefined) out.push(cosineDistance(previous, vector));
        previous = vector;
      }
    }
    return out;
  }

  /** Vectors of `texts` in order: cached ones reused, the others embedded once each (duplicates included). */
  private async vectors(texts: readonly string[]): Promise<Float32Array[]> {
    const keys = texts.map((t) => createHash('sha256').update(t, 'utf8').digest('hex'));
    const found = new Map<string, Float32Array>();
    const missing: string[] = [];
    const missingKeys: string[] = [];
    const pending = new Set<string>();
    for (const [i, key] of keys.entries()) {
      this.spent.groups += 1;
      const hit = found.get(key) ?? this.cache.get(key);
      if (hit !== undefined) {
        found.set(key, hit);
        this.spent.cacheHits += 1;
        continue;
      }
      if (pending.has(key)) {
        this.spent.cacheHits += 1;
        continue;
      }
      missing.push(texts[i] as string);
      missingKeys.push(key);
      pending.add(key);
    }
    if (missing.length > 0) {
      const started = performance.now();
      const vectors = await this.embedder.embedDocuments(missing);
      this.spent.ms += performance.now() - started;
      if (vectors.length !== missing.length) {
        throw new ChunkingValidationError(
          `Semantic chunking: embedder ${this.embedder.modelId} returned ${vectors.length} vectors for ${missing.length} sentence groups.`,
        );
      }
      this.spent.embedded += missing.length;
      for (const t of missing) this.spent.tokens += approxTokens(t);
      vectors.forEach((v, i) => {
        const vector = Float32Array.from(v);
        const key = missingKeys[i] as string;
        found.set(key, vector);
        this.cache.set(key, vector);
      });
    }
    return keys.map((k) => found.get(k) as Float32Array);
  }

  /** Chunks one (validated) document. */
  async chunk(doc: LoadedDocument): Promise<AI4RAGChunk[]> {
    const text = doc.text;
    const sentences = splitSentences(text);
    if (sentences.length === 0) return [];
    const { breakpoint, breakpointAmount, chunkSize, minChunkSize } = this.settings;
    const distances = sentences.length > 1 ? await this.distances(text, sentences) : [];
    const cuts = breakpointIndices(distances, breakpoint, breakpointAmount);
    const units: Unit[] = [];
    let first = 0;
    for (const cut of [...cuts, sentences.length - 1]) {
      this.bound(text, sentences, distances, first, cut, units);
      first = cut + 1;
    }
    mergeSmall(units, distances, chunkSize, minChunkSize);
    rebalanceSmall(sentences, units, distances, chunkSize, minChunkSize);
    return chunksFromSpans(
      doc,
      units.map((u) => ({ text: text.slice(u.start, u.end), startIndex: u.start })),
    );
  }

  /**
   * Appends sentences `lo..hi` as units of at most `chunkSize` tokens: a segment too large is cut at its largest
   * inner distance, recursively; a single sentence too large is cut by the recursive splitter (overlap 0).
   */
  private bound(
    text: string,
    sentences: readonly Sentence[],
    distances: readonly number[],
    lo: number,
    hi: number,
    units: Unit[],
  ): void {
    const { chunkSize } = this.settings;
    const stack: [number, number][] = [[lo, hi]];
    while (stack.length > 0) {
      const [a, b] = stack.pop() as [number, number];
      const start = (sentences[a] as Sentence).start;
      const end = (sentences[b] as Sentence).end;
      if (Math.ceil((end - start) / CHARS_PER_TOKEN) <= chunkSize) {
        units.push({ start, end, first: a, last: b });
        continue;
      }
      if (a === b) {
        for (const piece of splitTextWithStartIndex(text.slice(start, end), {
          chunkSize,
          chunkOverlap: 0,
        })) {
          const s = start + piece.startIndex;
          units.push({ start: s, end: s + piece.text.length, first: a, last: a });
        }
        continue;
      }
      let cut = a;
      for (let k = a + 1; k < b; k++) {
        if ((distances[k] as number) > (distances[cut] as number)) cut = k;
      }
      // Depth first, right half pushed first, so units come out in text order.
      stack.push([cut + 1, b], [a, cut]);
    }
  }
}

/**
 * Merges every unit under `minChunkSize` tokens into the neighbour it is closer to (the smaller distance at their
 * boundary; pieces of one sentence are closest), when the merged span fits `chunkSize`; else into the other
 * neighbour if that fits. A unit with no neighbour that fits stays (a one-unit document is shorter than the
 * minimum; otherwise both neighbours are nearly full).
 */
function mergeSmall(
  units: Unit[],
  distances: readonly number[],
  chunkSize: number,
  minChunkSize: number,
): void {
  /** `approxTokens` of `text.slice(start, end)`, without the slice. */
  const tokens = (start: number, end: number) => Math.ceil((end - start) / CHARS_PER_TOKEN);
  const gap = (left: Unit, right: Unit) =>
    left.last === right.first ? -1 : (distances[left.last] as number);
  let i = 0;
  while (i < units.length) {
    const u = units[i] as Unit;
    if (tokens(u.start, u.end) >= minChunkSize) {
      i += 1;
      continue;
    }
    const left = i > 0 ? (units[i - 1] as Unit) : undefined;
    const right = i + 1 < units.length ? (units[i + 1] as Unit) : undefined;
    const leftFits = left !== undefined && tokens(left.start, u.end) <= chunkSize;
    const rightFits = right !== undefined && tokens(u.start, right.end) <= chunkSize;
    let into: 'left' | 'right' | undefined;
    if (leftFits && rightFits) {
      into = gap(left as Unit, u) <= gap(u, right as Unit) ? 'left' : 'right';
    } else if (leftFits) into = 'left';
    else if (rightFits) into = 'right';
    if (into === 'left') {
      const l = left as Unit;
      units.splice(i - 1, 2, { start: l.start, end: u.end, first: l.first, last: u.last });
      i -= 1;
    } else if (into === 'right') {
      const r = right as Unit;
      units.splice(i, 2, { start: u.start, end: r.end, first: u.first, last: r.last });
    } else i += 1;
  }
}

/**
 * A unit still under `minChunkSize` (no neighbour had room for it) takes sentences from a neighbour instead: the unit
 * and its closer neighbour (then the other) are re-cut at the sentence boundary with the largest distance that leaves
 * both sides within `minChunkSize..chunkSize`. Pieces of one long sentence have no inner boundary and are left as they
 * are, so a unit stays small only next to such pieces (or alone, in a document shorter than the minimum).
 */
function rebalanceSmall(
  sentences: readonly Sentence[],
  units: Unit[],
  distances: readonly number[],
  chunkSize: number,
  minChunkSize: number,
): void {
  /** `approxTokens` of `text.slice(start, end)`, without the slice. */
  const tokens = (start: number, end: number) => Math.ceil((end - start) / CHARS_PER_TOKEN);
  const whole = (u: Unit) =>
    u.start === (sentences[u.first] as Sentence).start &&
    u.end === (sentences[u.last] as Sentence).end;
  const fits = (n: number) => n >= minChunkSize && n <= chunkSize;
  for (let i = 0; i < units.length; i++) {
    const u = units[i] as Unit;
    if (tokens(u.start, u.end) >= minChunkSize || !whole(u)) continue;
    const neighbours = [i - 1, i + 1]
      .filter((j) => j >= 0 && j < units.length && whole(units[j] as Unit))
      .sort((a, b) => {
        const gap = (j: number) => distances[j < i ? (units[j] as Unit).last : u.last] as number;
        return gap(a) - gap(b) || a - b;
      });
    for (const j of neighbours) {
      const [left, right] = j < i ? [units[j] as Unit, u] : [u, units[j] as Unit];
      let best: number | undefined;
      for (let k = left.first; k < right.last; k++) {
        const a = tokens(left.start, (sentences[k] as Sentence).end);
        const b = tokens((sentences[k + 1] as Sentence).start, right.end);
        if (
          fits(a) &&
          fits(b) &&
          (best === undefined || (distances[k] as number) > (distances[best] as number))
        )
          best = k;
      }
      if (best === undefined) continue;
      const cut = best;
      units.splice(
        Math.min(i, j),
        2,
        { start: left.start, end: (sentences[cut] as Sentence).end, first: left.first, last: cut },
        {
          start: (sentences[cut + 1] as Sentence).start,
          end: right.end,
          first: cut + 1,
          last: right.last,
        },
      );
      break;
    }
  }
}

/**
 * A semantic chunker bound to an embedder: sentences, each joined with `bufferSize` neighbours on each side and
 * embedded once (an LRU cache keyed by the text's SHA-256, {@link SEMANTIC_CACHE_ENTRIES} entries, shared by every
 * document it chunks), cosine distances between consecutive groups, breakpoints by {@link breakpointIndices}, then
 * the bounds (`chunkSize` maximum, `minChunkSize` minimum). Options must be validated.
 * @example const chunks = await createSemanticChunker(opts, embedder).chunk(doc);
 */
export function createSemanticChunker(
  opts: ChunkingOptions,
  embedder: Embedder,
  cacheEntries?: number,
): SemanticChunker {
  return new SemanticChunker(opts, embedder, cacheEntries);
}
