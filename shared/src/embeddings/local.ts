/**
 * The embedders served in process, by model id. Kept apart from `factory.ts` so code that only ever embeds
 * locally (and the Lambda functions built without remote models) does not load the OpenAI SDK.
 */
import { ValidationError } from '../errors.js';
import {
  FEATURE_HASH_DEFAULT_DIMENSION,
  FEATURE_HASH_MODEL_PREFIX,
  FeatureHashEmbedder,
} from './feature-hash.js';
import type { Embedder } from './types.js';

/** The embedded default: local feature hashing, 384 dimensions, no model files and no network. */
export const DEFAULT_EMBEDDING_MODEL = `${FEATURE_HASH_MODEL_PREFIX}${FEATURE_HASH_DEFAULT_DIMENSION}`;

const LOCAL_MODEL = /^local\/feature-hash-v1-(\d+)$/;

/**
 * A model id, trimmed.
 * @throws {ValidationError} when it is empty (or not a string).
 */
export function embeddingModelId(spec: string): string {
  const id = typeof spec === 'string' ? spec.trim() : '';
  if (id === '') throw new ValidationError('embedding model id must be a non-empty string');
  return id;
}

/**
 * The local embedder of a model id: `local` or `local/feature-hash-v1-<dim>` give a {@link FeatureHashEmbedder};
 * any id that does not start with `local/` or `local:` is not local (undefined).
 * @param id a trimmed model id.
 * @throws {ValidationError} for an unknown `local/...` id.
 * @example createLocalEmbedder('local/feature-hash-v1-384') // a FeatureHashEmbedder
 */
export function createLocalEmbedder(id: string): Embedder | undefined {
  if (id === 'local') return new FeatureHashEmbedder();
  const local = LOCAL_MODEL.exec(id);
  if (local) return new FeatureHashEmbedder({ dimension: Number(local[1]) });
  if (id.startsWith('local/') || id.startsWith('local:')) {
    throw new ValidationError(
      `unknown local embedding model "${id}": use "local" or "local/feature-hash-v1-<dimension>"`,
    );
  }
  return undefined;
}

/**
 * The error for a non-local model id without connection settings, naming the settings that are missing.
 * @example throw missingEndpointError('text-embedding-3-small')
 */
export function missingEndpointError(
  id: string,
  connection: { baseURL?: string | undefined; apiKey?: string | undefined } = {},
): ValidationError {
  const missing = [
    connection.baseURL ? undefined : 'OPENAI_BASE_URL (baseURL)',
    connection.apiKey ? undefined : 'OPENAI_API_KEY (apiKey)',
  ].filter((x) => x !== undefined);
  return new ValidationError(
    `embedding model "${id}" is not local, so it needs an OpenAI-compatible endpoint: set ${missing.join(' and ')}, or use "${DEFAULT_EMBEDDING_MODEL}"`,
  );
}

/**
 * The embedder of a model id served without connection settings, as `createEmbedder(spec)` (factory.ts) gives it
 * without loading the OpenAI SDK: a local embedder, else the error naming the missing settings.
 * @throws {ValidationError} for an empty or unknown local id, or a remote id.
 * @example createOfflineEmbedder('local') // a FeatureHashEmbedder
 */
export function createOfflineEmbedder(spec: string): Embedder {
  const id = embeddingModelId(spec);
  const local = createLocalEmbedder(id);
  if (local === undefined) throw missingEndpointError(id);
  return local;
}
