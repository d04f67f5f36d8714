import type { Embedder } from '../../../shared/src/embeddings/types.js';
import { words } from '../../../shared/src/text/analyzer.js';

/** An embedder that also counts its calls (to prove validation happens before any I/O). */
export interface FakeEmbedder extends Embedder {
  readonly calls: { documents: number; queries: number };
}

function hash32(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/**
 * Deterministic bag-of-words embedder: each word adds ±1 to a hashed bucket; the vector is L2-normalized
 * (an empty text maps to the first basis vector so cosine distances stay defined).
 */
export function createHashEmbedder(
  options: { dimension?: number; modelId?: string } = {},
): FakeEmbedder {
  const dimension = options.dimension ?? 8;
  const calls = { documents: 0, queries: 0 };
  const embed = (text: string): number[] => {
    const v = new Array<number>(dimension).fill(0);
    for (const w of words(text)) {
      const h = hash32(w);
      v[h % dimension] = (v[h % dimension] ?? 0) + ((h >>> 16) & 1 ? 1 : -1);
    }
    const norm = Math.hypot(...v);
    if (norm === 0) {
      v[0] = 1;
      return v;
    }
    return v.map((x) => x / norm);
  };
  return {
    modelId: options.modelId ?? `fake-hash-${dimension}`,
    dimension,
    contextLength: 512,
    calls,
    async embedDocuments(texts) {
      calls.documents += 1;
      return texts.map(embed);
    },
    async embedQuery(text) {
      calls.queries += 1;
      return embed(text);
    },
  };
}

/**
 * Embedder returning exactly the vectors given per text (for distance-ordering tests); other texts fall back
 * to `fallback` when given, else throw.
 */
export function createFixedEmbedder(
  vectors: Record<string, number[]>,
  options: { dimension: number; modelId?: string; fallback?: Embedder },
): FakeEmbedder {
  const calls = { documents: 0, queries: 0 };
  const lookup = async (text: string): Promise<number[]> => {
    const v = vectors[text];
    if (v !== undefined) return v;
    if (options.fallback) return options.fallback.embedQuery(text);
    throw new Error(`fixed embedder has no vector for ${JSON.stringify(text)}`);
  };
  return {
    modelId: options.modelId ?? `fake-fixed-${options.dimension}`,
    dimension: options.dimension,
    contextLength: 512,
    calls,
    async embedDocuments(texts) {
      calls.documents += 1;
      const out: number[][] = [];
      for (const t of texts) out.push(await lookup(t));
      return out;
    },
    async embedQuery(text) {
      calls.queries += 1;
      return lookup(text);
    },
  };
}
