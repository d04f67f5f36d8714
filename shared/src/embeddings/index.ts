export {
  type FetchLike,
  toOpenAIErrorEnvelope,
  withOpenAIErrorEnvelope,
} from './error-envelope.js';
export { EmbeddingError } from './errors.js';
export { type CreateEmbedderOptions, createEmbedder, DEFAULT_EMBEDDING_MODEL } from './factory.js';
export {
  FEATURE_HASH_DEFAULT_DIMENSION,
  FEATURE_HASH_MODEL_PREFIX,
  FeatureHashEmbedder,
  type FeatureHashEmbedderOptions,
  featureHashVector,
} from './feature-hash.js';
export {
  acceptedBatchSize,
  approxTokens,
  CHARS_PER_TOKEN,
  decodeBase64Float32,
  isContextLengthError,
  MIN_CONTEXT_LENGTH,
  OPENAI_MAX_BATCH_SIZE,
  OpenAIEmbedder,
  type OpenAIEmbedderOptions,
} from './openai.js';
export {
  type EmbeddingPrefixes,
  KNOWN_EMBEDDING_PREFIXES,
  type KnownEmbeddingPrefixes,
  prefixedModelId,
  resolvePrefixes,
} from './prefixes.js';
export type { Embedder } from './types.js';
