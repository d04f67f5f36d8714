/**
 * Builds the CDK app the same way for `cdk synth` (bin/app.ts), the in-process synth used by the local
 * state-machine runner, and the CDK tests, so all three see the same context defaults and cdk-nag gate.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { Ai4ragStack } from './ai4rag-stack.js';
import { parseDeployConfig, readDeployContext } from './config.js';
import { REPO_ROOT } from './constructs/node-function.js';

/** Id (and CloudFormation stack name) of the stack. */
export const STACK_ID = 'Ai4rag';

/** Context key that lists the stacks to bundle; an empty list skips esbuild entirely. */
export const BUNDLING_STACKS_CONTEXT = 'aws:cdk:bundling-stacks';

/** Options of {@link createAi4ragApp}. */
export interface CreateAi4ragAppOptions {
  /**
   * Context on top of cdk.json's (in-process use). Omit it under the CDK CLI, which passes cdk.json and
   * `-c` values itself.
   */
  context?: Record<string, unknown>;
  /** Skip esbuild bundling (fast in-process synth). */
  skipBundling?: boolean;
  /** Add the cdk-nag AwsSolutions checks (default true). */
  nag?: boolean;
  /**
   * CDK's built-in CloudFormation validation of the synthesized template (default true). It costs about 4.5 s the
   * first time in a process (a WebAssembly rules engine); tests that only read the template's shape turn it off,
   * the cdk-nag tests keep it.
   */
  cfnValidation?: boolean;
  /** Output directory of the cloud assembly (in-process use). */
  outdir?: string;
}

/** The app, its one stack and the nag pack (if added). */
export interface Ai4ragApp {
  app: App;
  stack: Ai4ragStack;
  nag?: AwsSolutionsChecks;
}

/** The `context` object of the repository's cdk.json. */
export function readCdkJsonContext(): Record<string, unknown> {
  const json = JSON.parse(readFileSync(resolve(REPO_ROOT, 'cdk.json'), 'utf8')) as {
    context?: Record<string, unknown>;
  };
  return json.context ?? {};
}

/**
 * Creates the app and the stack, validating the deploy context first.
 *
 * @throws {DeployConfigError} when the context is invalid (the one clear message).
 * @example
 * const { app, stack } = createAi4ragApp({ context: { vectorStore: 'zilliz', zillizUri }, skipBundling: true });
 */
export function createAi4ragApp(options: CreateAi4ragAppOptions = {}): Ai4ragApp {
  const inProcess = options.context !== undefined || options.skipBundling === true;
  const context: Record<string, unknown> = inProcess
    ? {
        ...readCdkJsonContext(),
        ...options.context,
        ...(options.skipBundling === true ? { [BUNDLING_STACKS_CONTEXT]: [] } : {}),
      }
    : {};
  const app = new App({
    ...(inProcess ? { context } : {}),
    ...(options.cfnValidation === false ? { builtinCloudFormationValidation: false } : {}),
    ...(options.outdir !== undefined ? { outdir: options.outdir } : {}),
  });
  const config = parseDeployConfig(readDeployContext(app.node), { baseDir: REPO_ROOT });
  const stack = new Ai4ragStack(app, STACK_ID, {
    config,
    description: `ai4rag serverless RAG platform (${config.vectorStore})`,
  });
  if (options.nag === false) return { app, stack };
  const nag = new AwsSolutionsChecks(app);
  Validations.of(app).addPlugins(nag);
  return { app, stack, nag };
}
