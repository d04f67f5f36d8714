/**
 * One way to build every Lambda of the app, so runtime, architecture, bundling, tracing, logging and
 * Powertools settings cannot drift between functions.
 */
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type CfnResource, type Duration, RemovalPolicy } from 'aws-cdk-lib';
import type * as ec2 from 'aws-cdk-lib/aws-ec2';
import { Architecture, LoggingFormat, Runtime, Tracing } from 'aws-cdk-lib/aws-lambda';
import { type BundlingOptions, NodejsFunction, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import type { DeployConfig } from '../config.js';

/** Repository root (the folder holding package.json and package-lock.json). */
export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * ESM bundles have no `require`; some dependencies (pg, the AWS SDK's CJS paths) still call it, so
 * the banner recreates it from `import.meta.url`.
 */
export const ESM_REQUIRE_BANNER =
  "import { createRequire as __ai4ragCreateRequire } from 'node:module'; const require = __ai4ragCreateRequire(import.meta.url);";

/** Template metadata key holding a function's source entry (relative to the repository root). */
export const ENTRY_METADATA_KEY = 'ai4rag:entry';

/** Template metadata key holding what a function's bundle holds ({@link BundleContents}). */
export const BUNDLE_METADATA_KEY = 'ai4rag:bundle';

/**
 * What a function's bundle holds besides its handler's own code; the rest is left out of it (see
 * `functions/_shared/bundle.ts`, which reads the constants {@link bundlingOptions} defines).
 */
export interface BundleContents {
  /**
   * The vector store the function opens: the stack's variant, for functions with store access.
   * @default no store (the bundle carries neither pg nor the Milvus SDK)
   */
  readonly vectorStore?: DeployConfig['vectorStore'];
  /**
   * Whether the function calls OpenAI-compatible models (embedders, chat, judge).
   * @default false (the bundle carries no OpenAI SDK; local models only)
   */
  readonly remoteModels?: boolean;
}

/**
 * The esbuild settings of every function: ESM for Node 22, minified, no source map, and the constants that tell
 * `functions/_shared/bundle.ts` which store and models the bundle holds. The one source of these options: the
 * stack passes them to NodejsFunction, `npm run bench` and the bundle tests build with them.
 * @example new NodejsFunction(scope, id, { entry, bundling: bundlingOptions({ vectorStore: 'pgvector' }) });
 */
export function bundlingOptions(contents: BundleContents): BundlingOptions {
  return {
    format: OutputFormat.ESM,
    target: 'node22',
    platform: 'node',
    minify: true,
    // No source map: a full map is 4-5x the bundle (14-20 MB), is shipped in the asset and unpacked in every
    // container, and with --enable-source-maps Node parses it at the first stack trace (time and memory in the
    // request that failed). Errors are logged with their message, name and cause chain; to read a minified
    // stack, rebuild the same commit with a map (esbuild's output is deterministic).
    sourceMap: false,
    mainFields: ['module', 'main'],
    banner: ESM_REQUIRE_BANNER,
    // Bundle the AWS SDK too (the pinned versions, not the runtime's); pg-native is an optional
    // add-on of pg that is only required when asked for.
    externalModules: ['pg-native'],
    define: {
      AI4RAG_BUNDLE_STORE: JSON.stringify(
        contents.vectorStore === undefined
          ? 'none'
          : contents.vectorStore === 'zilliz'
            ? 'milvus'
            : 'pgvector',
      ),
      AI4RAG_BUNDLE_REMOTE_MODELS: JSON.stringify(contents.remoteModels ?? false),
    },
    forceDockerBundling: false,
  };
}

/** What differs between functions: the handler folder, sizing, and the environment. */
export interface NodeFunctionSpec {
  /** Folder under functions/ holding handler.ts (e.g. 'embed-batch'). */
  folder: string;
  /** Exported handler name (default 'handler'). */
  handler?: string;
  description: string;
  memorySize: number;
  timeout: Duration;
  environment: Record<string, string>;
  /** Set to place the function in the VPC (pgvector variant, functions that reach the database). */
  vpc?: { vpc: ec2.IVpc; subnets: ec2.SubnetSelection; securityGroup: ec2.ISecurityGroup };
  /**
   * What its bundle holds (store, remote models).
   * @default neither a store nor remote models
   */
  bundle?: BundleContents;
}

/**
 * Creates a bundled Node.js 22 / arm64 function with X-Ray tracing and its own one-month log group.
 * The construct id is used as the function's id in the template, e.g. 'SearchFunction'.
 */
export function createNodeFunction(
  scope: Construct,
  id: string,
  spec: NodeFunctionSpec,
): NodejsFunction {
  const bundle = spec.bundle ?? {};
  const logGroup = new LogGroup(scope, `${id}Logs`, {
    retention: RetentionDays.ONE_MONTH,
    removalPolicy: RemovalPolicy.DESTROY,
  });
  const fn = new NodejsFunction(scope, id, {
    entry: resolve(REPO_ROOT, 'functions', spec.folder, 'handler.ts'),
    handler: spec.handler ?? 'handler',
    projectRoot: REPO_ROOT,
    depsLockFilePath: resolve(REPO_ROOT, 'package-lock.json'),
    description: spec.description,
    runtime: Runtime.NODEJS_22_X,
    architecture: Architecture.ARM_64,
    memorySize: spec.memorySize,
    timeout: spec.timeout,
    tracing: Tracing.ACTIVE,
    logGroup,
    loggingFormat: LoggingFormat.JSON,
    environment: {
      POWERTOOLS_SERVICE_NAME: 'ai4rag',
      POWERTOOLS_METRICS_NAMESPACE: 'Ai4rag',
      POWERTOOLS_LOG_LEVEL: 'INFO',
      ...spec.environment,
    },
    ...(spec.vpc !== undefined
      ? {
          vpc: spec.vpc.vpc,
          vpcSubnets: spec.vpc.subnets,
          securityGroups: [spec.vpc.securityGroup],
        }
      : {}),
    bundling: bundlingOptions(bundle),
  });
  // The handler's source entry, in the template: the template-driven tests build each function from it.
  (fn.node.defaultChild as CfnResource).addMetadata(
    ENTRY_METADATA_KEY,
    `functions/${spec.folder}/handler.ts`,
  );
  // What the bundle holds: `npm run bench` and the bundle tests build each function from the template with it.
  const contents: BundleContents = {
    ...(bundle.vectorStore !== undefined && { vectorStore: bundle.vectorStore }),
    remoteModels: bundle.remoteModels ?? false,
  };
  (fn.node.defaultChild as CfnResource).addMetadata(BUNDLE_METADATA_KEY, contents);
  return fn;
}
