/**
 * What a Lambda bundle holds, fixed when it is built. `lib/constructs/node-function.ts` has esbuild `define`
 * the two constants below per function: the vector store its stack variant and plan give it, and whether it
 * calls remote models. esbuild folds the checks here, drops the `import()` of every branch that cannot run and,
 * with it, what only that branch reaches: the Milvus SDK (gRPC, protobufjs, parquetjs) outside the Zilliz
 * variant, pg outside the pgvector one, the OpenAI SDK in functions that call no model. Unbundled (tsx, vitest,
 * the CLI, `ai4rag serve`) the constants are undefined and every part loads on first use.
 *
 * The checks must stay literal in this file: esbuild decides which imports to bundle per file, while parsing
 * (a constant imported from here is folded too late to drop an import).
 */
import { Ai4ragError } from '../../shared/src/errors.js';

/** The vector store a bundle opens (the runtime's AI4RAG_STORE names); `none` for functions without one. */
export type BundleStore = 'pgvector' | 'milvus' | 'none';

/** Defined by esbuild in a Lambda bundle (`'pgvector' | 'milvus' | 'none'`); undefined elsewhere. */
declare const AI4RAG_BUNDLE_STORE: BundleStore | undefined;
/** Defined by esbuild in a Lambda bundle: whether it may call OpenAI-compatible models; undefined elsewhere. */
declare const AI4RAG_BUNDLE_REMOTE_MODELS: boolean | undefined;

/** True in a Lambda bundle: the deployed (AWS) runtime is the only one it carries. */
export const IN_LAMBDA_BUNDLE = typeof AI4RAG_BUNDLE_STORE !== 'undefined';

/**
 * A part of the runtime was asked of a bundle built without it: the function's plan (`store`, `model`) in
 * `lib/ai4rag-stack.ts` does not match what its code uses. A deployment bug, so it is not exposed to callers.
 */
export class NotInBundleError extends Ai4ragError {
  constructor(part: string) {
    super(
      `${part} is not in this function's bundle: give the function that part in its plan (lib/ai4rag-stack.ts PLAN)`,
    );
    this.name = 'NotInBundleError';
  }
}

/**
 * The pgvector opener (pg.Pool → PgVectorStore), loaded on first use.
 * @throws {NotInBundleError} (rejects) in a bundle without the pgvector store.
 */
export function loadPgvectorOpener(): Promise<typeof import('./store-pgvector.js')> {
  if (typeof AI4RAG_BUNDLE_STORE === 'undefined' || AI4RAG_BUNDLE_STORE === 'pgvector') {
    return import('./store-pgvector.js');
  }
  return Promise.reject(new NotInBundleError('The pgvector store'));
}

/**
 * The Milvus / Zilliz opener, loaded on first use.
 * @throws {NotInBundleError} (rejects) in a bundle without the Milvus store.
 */
export function loadMilvusOpener(): Promise<typeof import('./store-milvus.js')> {
  if (typeof AI4RAG_BUNDLE_STORE === 'undefined' || AI4RAG_BUNDLE_STORE === 'milvus') {
    return import('./store-milvus.js');
  }
  return Promise.reject(new NotInBundleError('The Milvus store'));
}

/**
 * The OpenAI-compatible embedder factory and chat model, loaded on first use.
 * @throws {NotInBundleError} (rejects) in a bundle without remote models.
 */
export function loadRemoteModels(): Promise<typeof import('./remote-models.js')> {
  if (typeof AI4RAG_BUNDLE_REMOTE_MODELS === 'undefined' || AI4RAG_BUNDLE_REMOTE_MODELS) {
    return import('./remote-models.js');
  }
  return Promise.reject(new NotInBundleError('Remote (OpenAI-compatible) models'));
}

/**
 * PGlite and the pgvector store on it, for the local runtime; loaded when its first store opens. Never in a
 * Lambda bundle, whose runtime is the AWS one.
 * @throws {NotInBundleError} (rejects) in a Lambda bundle.
 */
export function loadLocalStore(): Promise<typeof import('./store-local.js')> {
  if (typeof AI4RAG_BUNDLE_STORE === 'undefined') return import('./store-local.js');
  return Promise.reject(new NotInBundleError('The local (PGlite) store'));
}
