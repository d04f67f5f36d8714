import type { ChunkingOptions } from './chunking/types.js';
import type { RankerStrategy, SearchMode } from './vectorstores/types.js';

/**
 * Defaults of the embedded runtime (CLI, local API). Chosen by measurement with `ai4rag eval-retrieval`
 * (see README, "Retrieval quality"); change them only with a new measurement.
 */
export const DEFAULT_COLLECTION = 'ai4rag_default';

export const DEFAULT_CHUNKING: Readonly<ChunkingOptions> = Object.freeze({
  method: 'recursive',
  chunkSize: 512,
  chunkOverlap: 64,
});

export const DEFAULT_RETRIEVAL: Readonly<{
  searchMode: SearchMode;
  rankerStrategy: RankerStrategy;
  rankerK: number;
  rankerAlpha: number;
}> = Object.freeze({ searchMode: 'hybrid', rankerStrategy: 'rrf', rankerK: 60, rankerAlpha: 1 });
