/**
 * The CLI's models: each role's endpoint from the environment (`shared/src/endpoints.ts`: AI4RAG_<ROLE>_BASE_URL,
 * OPENAI_BASE_URL, `model@name` with AI4RAG_ENDPOINT_<NAME>_BASE_URL), parsed once and validated with one message.
 */
import { ENV } from '../../shared/src/config.js';
import { createEmbedder } from '../../shared/src/embeddings/factory.js';
import { parseEmbeddingPrefixes } from '../../shared/src/embeddings/prefixes.js';
import type { Embedder } from '../../shared/src/embeddings/types.js';
import {
  type Endpoints,
  NO_API_KEY,
  parseEndpoints,
  resolveModel,
} from '../../shared/src/endpoints.js';
import { ValidationError } from '../../shared/src/errors.js';
import {
  LOCAL_EXTRACTIVE_MODEL_ID,
  LocalExtractiveModel,
} from '../../shared/src/generation/local-extractive.js';
import { OpenAIFoundationModel } from '../../shared/src/generation/openai-model.js';
import type { FoundationModel } from '../../shared/src/generation/types.js';

let endpoints: Endpoints | undefined;

/**
 * The endpoints the environment defines.
 * @throws {EndpointConfigError} (a usage error, exit 2) naming every bad variable.
 */
export function cliEndpoints(): Endpoints {
  endpoints ??= parseEndpoints(ENV);
  return endpoints;
}

/**
 * The embedder of a model id: local, or OpenAI-compatible at the `embedding` endpoint (or `model@name`), with the
 * instruction prefixes of `--embedding-prefixes` (else AI4RAG_EMBEDDING_PREFIXES; default `auto`).
 * @throws {EndpointConfigError} for a remote model without an endpoint.
 */
export async function cliEmbedder(spec: string, prefixesFlag?: string): Promise<Embedder> {
  if (spec === 'local' || spec.startsWith('local/')) {
    // Checked all the same (a bad value is an error everywhere), and refused: the local embedder takes none.
    if (prefixesFlag !== undefined) {
      parseEmbeddingPrefixes(prefixesFlag);
      if (prefixesFlag !== 'auto' && prefixesFlag !== 'none') {
        throw new ValidationError(
          `--embedding-prefixes applies to OpenAI-compatible embedding models; ${spec} takes no instruction prefixes`,
        );
      }
    }
    return createEmbedder(spec);
  }
  const { model, endpoint } = resolveModel(cliEndpoints(), 'embedding', spec);
  const prefixes =
    prefixesFlag !== undefined
      ? parseEmbeddingPrefixes(prefixesFlag)
      : parseEmbeddingPrefixes(ENV.AI4RAG_EMBEDDING_PREFIXES, 'AI4RAG_EMBEDDING_PREFIXES');
  return createEmbedder(
    model,
    endpoint
      ? {
          openai: {
            baseURL: endpoint.baseURL,
            apiKey: endpoint.apiKey || NO_API_KEY,
            ...(prefixes !== undefined && { prefixes }),
          },
        }
      : {},
  );
}

/**
 * The foundation model of a model id: the local extractive model (default, no network) or an OpenAI-compatible
 * chat model at the `chat` endpoint (or `model@name`).
 * @throws {EndpointConfigError} for a remote model without an endpoint.
 */
export function cliChatModel(spec: string | undefined): FoundationModel {
  if (spec === undefined || spec === LOCAL_EXTRACTIVE_MODEL_ID || spec === 'local') {
    return new LocalExtractiveModel();
  }
  const { model, endpoint } = resolveModel(cliEndpoints(), 'chat', spec);
  if (!endpoint) return new LocalExtractiveModel();
  return new OpenAIFoundationModel({
    baseURL: endpoint.baseURL,
    apiKey: endpoint.apiKey || NO_API_KEY,
    model,
  });
}
