import type { ChunkingOptions } from './chunking/types.js';
import type { RankerStrategy, SearchMode } from './vectorstores/types.js';

/**
 * Defaults of the embedded runtime (CLI, local API). Chosen by measurement with `ai4rag eval-retrieval`
 * on the three reference datasets (README, "Measured"); change them only with a new measurement.
 */
/**
 * Names a deployed knowledge-base collection may take: the deploy configuration and every function check the same
 * rule (an "ai4rag" prefix, letters, digits and underscores, at most 63 characters as PostgreSQL identifiers).
 */
export const KB_COLLECTION_NAME = /^ai4rag[A-Za-z0-9_]{0,57}$/;
/** What {@link KB_COLLECTION_NAME} requires, in words. */
export const KB_COLLECTION_RULE =
  'must start with "ai4rag" and hold only letters, digits and underscores (at most 63 characters)';
export const DEFAULT_COLLECTION = 'ai4rag_default';

export const DEFAULT_CHUNKING: Readonly<ChunkingOptions> = Object.freeze({
  method: 'recursive',
  chunkSize: 512,
  chunkOverlap: 64,
});

/** Retrieval settings: search mode and fusion. */
export interface RetrievalDefaults {
  searchMode: SearchMode;
  rankerStrategy: RankerStrategy;
  rankerK: number;
  rankerAlpha: number;
}

/**
 * With a semantic embedding model the dense and BM25 rankings are complementary and RRF (k = 60) fuses them
 * well. The local feature-hashing embedder is itself lexical, without IDF: fused with RRF it pulls BM25 down
 * (SciFact nDCG@10 0.57 vs 0.68), so BM25 leads and the dense side gets weight {@link LOCAL_DENSE_WEIGHT}.
 */
export const SEMANTIC_RETRIEVAL: Readonly<RetrievalDefaults> = Object.freeze({
  searchMode: 'hybrid',
  rankerStrategy: 'rrf',
  rankerK: 60,
  rankerAlpha: 1,
});

/** Dense-side weight of the weighted fusion used with the local lexical embedder. */
export const LOCAL_DENSE_WEIGHT = 0.2;

export const LEXICAL_RETRIEVAL: Readonly<RetrievalDefaults> = Object.freeze({
  searchMode: 'hybrid',
  rankerStrategy: 'weighted',
  rankerK: 0,
  rankerAlpha: LOCAL_DENSE_WEIGHT,
});

/** Default retrieval for an embedding model id: local (`local/…`) models are lexical. */
export function defaultRetrievalFor(embeddingModel: string): Readonly<RetrievalDefaults> {
  return embeddingModel === 'local' || embeddingModel.startsWith('local/')
    ? LEXICAL_RETRIEVAL
    : SEMANTIC_RETRIEVAL;
}
