/**
 * One way to build every Lambda of the app, so runtime, architecture, bundling, tracing, logging and
 * Powertools settings cannot drift between functions.
 */
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type CfnResource, type Duration, RemovalPolicy } from 'aws-cdk-lib';
import type * as ec2 from 'aws-cdk-lib/aws-ec2';
import { Architecture, LoggingFormat, Runtime, Tracing } from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';

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
      NODE_OPTIONS: '--enable-source-maps',
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
    bundling: {
      format: OutputFormat.ESM,
      target: 'node22',
      platform: 'node',
      minify: true,
      sourceMap: true,
      mainFields: ['module', 'main'],
      banner: ESM_REQUIRE_BANNER,
      // Bundle the AWS SDK too (the pinned versions, not the runtime's); pg-native is an optional
      // add-on of pg that is only required when asked for.
      externalModules: ['pg-native'],
      forceDockerBundling: false,
    },
  });
  // The handler's source entry, in the template: the template-driven tests build each function from it.
  (fn.node.defaultChild as CfnResource).addMetadata(
    ENTRY_METADATA_KEY,
    `functions/${spec.folder}/handler.ts`,
  );
  return fn;
}
