/**
 * What a handler needs besides its event: object stores, queues, embedders, models and vector stores. The AWS
 * runtime (`runtime-aws.ts`) builds them from the environment (S3, SQS, Secrets Manager, RDS or Zilliz); the
 * local runtime (`runtime-local.ts`) from a data folder (files, in-process queues, PGlite). Everything is
 * created once per container, on first use. In a Lambda bundle only the AWS runtime and the parts its function
 * uses are bundled (`bundle.ts`).
 */
import { DEFAULT_DATA_DIR, ENV } from '../../shared/src/config.js';
import { IN_LAMBDA_BUNDLE } from './bundle.js';
import { createAwsRuntime } from './runtime-aws.js';
import type { Runtime } from './runtime-common.js';
import { createLocalRuntime } from './runtime-local.js';

export { NotInBundleError } from './bundle.js';
export { type AwsClients, createAwsRuntime } from './runtime-aws.js';
export {
  type OpenStoreOptions,
  type QueueName,
  type RerankerOptions,
  type Runtime,
  RuntimeClosedError,
  type RuntimeConfig,
} from './runtime-common.js';
export {
  createLocalRuntime,
  type LocalRuntime,
  type LocalRuntimeOptions,
} from './runtime-local.js';

let defaultRuntime: Runtime | undefined;

/**
 * The container's runtime: AWS in a Lambda bundle or when the documents bucket is configured (the CDK stack sets
 * it), else local in AI4RAG_DATA_DIR. Built once, on first use.
 */
export function getDefaultRuntime(): Runtime {
  defaultRuntime ??=
    IN_LAMBDA_BUNDLE || ENV.AI4RAG_DOCUMENTS_BUCKET !== undefined
      ? createAwsRuntime(ENV)
      : createLocalRuntime({ dataDir: DEFAULT_DATA_DIR, env: ENV });
  return defaultRuntime;
}

const RUNTIME_KEYS: readonly (keyof Runtime)[] = [
  'objectStore',
  'documents',
  'queue',
  'embedder',
  'model',
  'openStore',
  'config',
  'close',
];

/**
 * A handler's runtime: the injected parts, completed by the container's default runtime only when something is
 * missing — resolved on first invocation, never at import.
 * @example const runtime = lazyRuntime(deps); ... const store = await runtime().openStore(...)
 */
export function lazyRuntime(deps: Partial<Runtime> = {}): () => Runtime {
  let runtime: Runtime | undefined;
  return () => {
    if (!runtime) {
      const complete = RUNTIME_KEYS.every((k) => deps[k] !== undefined);
      runtime = complete ? (deps as Runtime) : { ...getDefaultRuntime(), ...deps };
    }
    return runtime;
  };
}
