import { ValidationError } from '../errors.js';
import { analyze, words } from '../text/analyzer.js';
import type { Embedder } from './types.js';

/** Default vector length of the local embedder. */
export const FEATURE_HASH_DEFAULT_DIMENSION = 384;

/** Model id prefix of the local embedder; the full id ends with the dimension. */
export const FEATURE_HASH_MODEL_PREFIX = 'local/feature-hash-v1-';

/**
 * Feature weights (before term-frequency damping). Changing any of them requires a new model id version.
 * Tuned on SciFact / ClapNQ dev retrieval at 384 dimensions: heavier bigrams or char-grams cost nDCG there
 * (more hash collisions), lighter ones lose the robustness to word forms the stemmer misses.
 */
const WEIGHT_UNIGRAM = 1.0;
const WEIGHT_BIGRAM = 0.25;
/** L2 mass of one word's character n-grams (each gram gets WEIGHT_CHARGRAMS / sqrt(gram count)). */
const WEIGHT_CHARGRAMS = 0.25;
const MIN_GRAM = 3;
const MAX_GRAM = 5;

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

function fnv1a(state: number, s: string): number {
  let h = state;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, FNV_PRIME);
  }
  return h;
}

/** murmur3's finalizer: FNV-1a's low bits avalanche poorly, and the index and the sign both come from them. */
function fmix32(input: number): number {
  let h = input;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** Distinct seeds per feature family, so the unigram "cat" and the char-gram "cat" land apart. */
const SEED_UNIGRAM = fnv1a(FNV_OFFSET, 'w:');
const SEED_BIGRAM = fnv1a(FNV_OFFSET, 'b:');
const SEED_CHARGRAM = fnv1a(FNV_OFFSET, 'c:');

function addHashed(vec: Float64Array, hash: number, value: number): void {
  const mixed = fmix32(hash);
  const index = (mixed >>> 1) % vec.length;
  vec[index] = (vec[index] ?? 0) + ((mixed & 1) === 1 ? -value : value);
}

/** Everything about one surface word that does not depend on its context, computed once and memoized. */
interface WordFeatures {
  /** FNV-1a hash of the analyzed token (`analyze(word)`), or null for a stopword. */
  readonly unigram: number | null;
  /** Char-gram slots of `<word>`, each `±(index + 1)` (sign = hash sign). */
  readonly grams: Int32Array;
}

/**
 * Memo of word features per dimension: stemming and char-gram hashing dominate the cost otherwise (about 3x).
 * Bounded: a dimension's memo is cleared when full. Results never depend on the memo's state.
 */
const WORD_CACHE_LIMIT = 50_000;
const wordCaches = new Map<number, Map<string, WordFeatures>>();

function wordFeatures(word: string, dimension: number): WordFeatures {
  let cache = wordCaches.get(dimension);
  if (cache === undefined) {
    cache = new Map();
    wordCaches.set(dimension, cache);
  }
  const cached = cache.get(word);
  if (cached !== undefined) return cached;
  // analyze() on the single word keeps the unigrams identical to analyze(text) (same stopwords, same stemmer).
  const token = analyze(word)[0];
  const padded = `<${word}>`;
  const length = padded.length;
  let count = 0;
  for (let n = MIN_GRAM; n <= MAX_GRAM; n++) count += Math.max(0, length - n + 1);
  const grams = new Int32Array(count);
  let k = 0;
  for (let start = 0; start + MIN_GRAM <= length; start++) {
    let h = SEED_CHARGRAM;
    const end = Math.min(length, start + MAX_GRAM);
    for (let i = start; i < end; i++) {
      h ^= padded.charCodeAt(i);
      h = Math.imul(h, FNV_PRIME);
      if (i - start + 1 >= MIN_GRAM) {
        const mixed = fmix32(h);
        const slot = ((mixed >>> 1) % dimension) + 1;
        grams[k++] = (mixed & 1) === 1 ? -slot : slot;
      }
    }
  }
  const features: WordFeatures = {
    unigram: token === undefined ? null : fnv1a(SEED_UNIGRAM, token) >>> 0,
    grams,
  };
  if (cache.size >= WORD_CACHE_LIMIT) cache.clear();
  cache.set(word, features);
  return features;
}

function bigramHash(previous: number, current: number): number {
  return Math.imul(fmix32(SEED_BIGRAM ^ previous) ^ current, FNV_PRIME) >>> 0;
}

/** Adds each distinct hash of a sorted list once, weighted by `weight * (1 + ln(tf))`. */
function addDampedRuns(vec: Float64Array, sorted: Uint32Array, weight: number): void {
  let i = 0;
  while (i < sorted.length) {
    const hash = sorted[i] as number;
    let j = i + 1;
    while (j < sorted.length && sorted[j] === hash) j++;
    addHashed(vec, hash, weight * (1 + Math.log(j - i)));
    i = j;
  }
}

/**
 * The local embedder's pure core: a signed feature-hashing vector (the "hashing trick") of analyzed word
 * unigrams ({@link analyze}), bigrams of consecutive analyzed tokens, and fastText-style character 3–5-grams of
 * `<word>` for each {@link words} token. Every feature's term frequency is damped with `1 + ln(tf)`; weights are
 * 1 (unigram), 0.25 (bigram) and 0.25 / sqrt(gram count) per char-gram (one word's grams weigh 0.25 in L2 terms).
 * The result is L2-normalized. Deterministic across runs and machines; text without words gives a zero vector.
 * @throws {ValidationError} when `dimension` is not a positive integer.
 * @example featureHashVector('cat sat on the mat', 8).length // 8
 */
export function featureHashVector(
  text: string,
  dimension: number = FEATURE_HASH_DEFAULT_DIMENSION,
): number[] {
  if (!Number.isInteger(dimension) || dimension < 1) {
    throw new ValidationError(`dimension must be a positive integer, got ${String(dimension)}`);
  }
  const vec = new Float64Array(dimension);
  const surface = words(text);
  const unigrams = new Uint32Array(surface.length);
  const bigrams = new Uint32Array(surface.length);
  const wordTf = new Map<WordFeatures, number>();
  let unigramCount = 0;
  let bigramCount = 0;
  let previous: number | null = null;
  for (const word of surface) {
    const features = wordFeatures(word, dimension);
    wordTf.set(features, (wordTf.get(features) ?? 0) + 1);
    const unigram = features.unigram;
    if (unigram === null) continue;
    unigrams[unigramCount++] = unigram;
    if (previous !== null) bigrams[bigramCount++] = bigramHash(previous, unigram);
    previous = unigram;
  }
  addDampedRuns(vec, unigrams.subarray(0, unigramCount).sort(), WEIGHT_UNIGRAM);
  addDampedRuns(vec, bigrams.subarray(0, bigramCount).sort(), WEIGHT_BIGRAM);
  for (const [features, tf] of wordTf) {
    const grams = features.grams;
    const value = (WEIGHT_CHARGRAMS * (1 + Math.log(tf))) / Math.sqrt(grams.length);
    for (let k = 0; k < grams.length; k++) {
      const slot = grams[k] as number;
      const index = slot > 0 ? slot - 1 : -slot - 1;
      vec[index] = (vec[index] ?? 0) + (slot > 0 ? value : -value);
    }
  }

  let norm = 0;
  for (let i = 0; i < dimension; i++) norm += (vec[i] as number) ** 2;
  const scale = norm > 0 ? 1 / Math.sqrt(norm) : 0;
  const out = new Array<number>(dimension);
  for (let i = 0; i < dimension; i++) out[i] = (vec[i] as number) * scale;
  return out;
}

/** Texts embedded between two yields to the event loop. */
const EMBED_SLICE = 16;

/** Options of {@link FeatureHashEmbedder}. */
export interface FeatureHashEmbedderOptions {
  /** Vector length (default 384). Part of the model id, so a different length is a different index. */
  dimension?: number;
}

/**
 * The embedded default embedder: lexical-plus-subword feature hashing, no model files, no network, fast enough
 * for tests and benchmarks. It is not a semantic model (no synonyms); it gives dense-vector search a sane,
 * deterministic baseline wherever a real model is not configured.
 * @example
 * const embedder = new FeatureHashEmbedder({ dimension: 384 });
 * const [vector] = await embedder.embedDocuments(['The proteins were binding']);
 */
export class FeatureHashEmbedder implements Embedder {
  readonly modelId: string;
  readonly dimension: number;
  /** Feature hashing has no window; the value only keeps chunk-size rules (≤ 0.9 × context) permissive. */
  readonly contextLength = 8192;

  /** @throws {ValidationError} when `dimension` is not a positive integer. */
  constructor(options: FeatureHashEmbedderOptions = {}) {
    const dimension = options.dimension ?? FEATURE_HASH_DEFAULT_DIMENSION;
    if (!Number.isInteger(dimension) || dimension < 1) {
      throw new ValidationError(`dimension must be a positive integer, got ${String(dimension)}`);
    }
    this.dimension = dimension;
    this.modelId = `${FEATURE_HASH_MODEL_PREFIX}${dimension}`;
  }

  /** Embeds each text; synchronous work wrapped in a promise to fit the {@link Embedder} port. */
  async embedDocuments(texts: string[]): Promise<number[][]> {
    const out: number[][] = [];
    for (let i = 0; i < texts.length; i++) {
      // Yield to the event loop every EMBED_SLICE texts: a 1,024-text batch is ~100 ms of CPU, and I/O waiting
      // meanwhile (a database write of the previous batch, an API request) should progress.
      if (i > 0 && i % EMBED_SLICE === 0)
        await new Promise<void>((resolve) => setImmediate(resolve));
      out.push(featureHashVector(texts[i] as string, this.dimension));
    }
    return out;
  }

  /** Same features as documents (the model is symmetric). */
  async embedQuery(text: string): Promise<number[]> {
    return featureHashVector(text, this.dimension);
  }
}
