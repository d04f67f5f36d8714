import { createLocalEmbedder, embeddingModelId, missingEndpointError } from './local.js';
import { OpenAIEmbedder, type OpenAIEmbedderOptions } from './openai.js';
import type { Embedder } from './types.js';

export { DEFAULT_EMBEDDING_MODEL } from './local.js';

/** Options of {@link createEmbedder}. */
export interface CreateEmbedderOptions {
  /**
   * Connection (and optional tuning) for non-local model ids; callers map `OPENAI_BASE_URL` and
   * `OPENAI_API_KEY` here (shared code reads no environment). `prefixes` sets the model's query/document
   * instruction prefixes; without it, those of a known family (E5, BGE English, Nomic, mxbai) apply.
   */
  openai?: Omit<OpenAIEmbedderOptions, 'model'>;
}

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
  const id = embeddingModelId(spec);
  const local = createLocalEmbedder(id);
  if (local) return local;
  const connection = options.openai;
  if (!connection?.client && (!connection?.baseURL || !connection.apiKey)) {
    throw missingEndpointError(id, connection);
  }
  return OpenAIEmbedder.create({ ...connection, model: id });
}
