#!/usr/bin/env node
/**
 * CDK app entry (`cdk.json`: `npx tsx bin/app.ts`). The deploy context is validated before any construct
 * is built, so a bad value stops synth with one message (no stack trace); cdk-nag's AwsSolutions checks
 * gate the synth.
 */
import { createAi4ragApp } from '../lib/app.js';
import { DeployConfigError } from '../lib/config.js';

try {
  createAi4ragApp({ nag: true }).app.synth();
} catch (error) {
  if (!(error instanceof DeployConfigError)) throw error;
  console.error(error.message);
  process.exitCode = 1;
}
