import { ValidationError } from '../errors.js';
import {
  FEATURE_HASH_DEFAULT_DIMENSION,
  FEATURE_HASH_MODEL_PREFIX,
  FeatureHashEmbedder,
} from './feature-hash.js';
import { OpenAIEmbedder, type OpenAIEmbedderOptions } from './openai.js';
import type { Embedder } from './types.js';

/** The embedded default: local feature hashing, 384 dimensions, no model files and no network. */
export const DEFAULT_EMBEDDING_MODEL = `${FEATURE_HASH_MODEL_PREFIX}${FEATURE_HASH_DEFAULT_DIMENSION}`;

/** Options of {@link createEmbedder}. */
export interface CreateEmbedderOptions {
  /**
   * Connection (and optional tuning) for non-local model ids; callers map `OPENAI_BASE_URL` and
   * `OPENAI_API_KEY` here (shared code reads no environment). `prefixes` sets the model's query/document
   * instruction prefixes; without it, those of a known family (E5, BGE English, Nomic, mxbai) apply.
   */
  openai?: Omit<OpenAIEmbedderOptions, 'model'>;
}

const LOCAL_MODEL = /^local\/feature-hash-v1-(\d+)$/;

/**
 * Turns a model id into a ready embedder, so configs and the CLI name embedders by id only:
 * `local` or `local/feature-hash-v1-<dim>` gives the local {@link FeatureHashEmbedder}; any other id is sent
 * verbatim to an OpenAI-compatible endpoint ({@link OpenAIEmbedder}, with auto-detection of what is not given).
 * A remote embedder's `modelId` is the id plus its instruction prefixes, if any (e.g.
 * `intfloat/e5-base-v2 [query: "query: ", document: "passage: "]`).
 * @throws {ValidationError} for an unknown `local/...` id, or a remote id without connection settings.
 * @throws {EmbeddingError} when the remote model cannot be reached or used.
 * @example
 * const local = await createEmbedder(DEFAULT_EMBEDDING_MODEL);
 * const remote = await createEmbedder('text-embedding-3-small', { openai: { baseURL, apiKey } });
 */
export async function createEmbedder(
  spec: string,
  options: CreateEmbedderOptions = {},
): Promise<Embedder> {
  const id = typeof spec === 'string' ? spec.trim() : '';
  if (id === '') throw new ValidationError('embedding model id must be a non-empty string');
  if (id === 'local') return new FeatureHashEmbedder();
  const local = LOCAL_MODEL.exec(id);
  if (local) return new FeatureHashEmbedder({ dimension: Number(local[1]) });
  if (id.startsWith('local/') || id.startsWith('local:')) {
    throw new ValidationError(
      `unknown local embedding model "${id}": use "local" or "local/feature-hash-v1-<dimension>"`,
    );
  }
  const connection = options.openai;
  if (!connection?.client && (!connection?.baseURL || !connection.apiKey)) {
    const missing = [
      connection?.baseURL ? undefined : 'OPENAI_BASE_URL (baseURL)',
      connection?.apiKey ? undefined : 'OPENAI_API_KEY (apiKey)',
    ].filter((x) => x !== undefined);
    throw new ValidationError(
      `embedding model "${id}" is not local, so it needs an OpenAI-compatible endpoint: set ${missing.join(' and ')}, or use "${DEFAULT_EMBEDDING_MODEL}"`,
    );
  }
  return OpenAIEmbedder.create({ ...connection, model: id });
}
