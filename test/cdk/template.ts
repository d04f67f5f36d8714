// Helpers shared by the CDK tests: in-process synth with bundling skipped, and template lookups.
import { Template } from 'aws-cdk-lib/assertions';
import { type Ai4ragApp, createAi4ragApp } from '../../lib/app.js';

// biome-ignore lint/suspicious/noExplicitAny: parsed CloudFormation/ASL JSON is navigated freely in assertions
export type Json = any;

export type Resources = Record<string, { Type: string; Properties?: Record<string, unknown> }>;

export interface Synthesized {
  synth: Ai4ragApp;
  template: Template;
  resources: Resources;
}

/**
 * Synthesizes the stack once for a context (no bundling; cdk-nag, with CDK's built-in CloudFormation validation,
 * only when asked: they add ~1 s and ~4.5 s). test/cdk/nag.test.ts synthesizes every variant with both.
 */
export function synthesize(context: Record<string, unknown>, nag = false): Synthesized {
  const key = JSON.stringify([context, nag]);
  const cached = cache.get(key);
  if (cached !== undefined) return cached;
  const synth = createAi4ragApp({ context, skipBundling: true, nag, cfnValidation: nag });
  const template = Template.fromStack(synth.stack);
  const resources = template.toJSON().Resources as Resources;
  const result = { synth, template, resources };
  cache.set(key, result);
  return result;
}

/** One synth per context and test file (each file runs in its own worker). */
const cache = new Map<string, Synthesized>();

/** Resources of one type, by logical id. */
export function ofType(resources: Resources, type: string): Resources {
  return Object.fromEntries(Object.entries(resources).filter(([, r]) => r.Type === type));
}

/** The single resource whose logical id is `<constructId><8 hex digits>`. */
export function byConstructId(
  resources: Resources,
  constructId: string,
): { logicalId: string; properties: Record<string, unknown> } {
  const pattern = new RegExp(`^${constructId}[0-9A-F]{8}$`);
  const matches = Object.entries(resources).filter(([id]) => pattern.test(id));
  if (matches.length !== 1) {
    throw new Error(`expected one resource for ${constructId}, found ${matches.length}`);
  }
  const [logicalId, resource] = matches[0]!;
  return { logicalId, properties: resource.Properties ?? {} };
}

/**
 * The state machine definition with every intrinsic replaced by a placeholder string, parsed. Enough to
 * check states and paths without resolving ARNs.
 */
export function parseDefinition(definitionString: unknown): Record<string, Json> {
  const join = (definitionString as { 'Fn::Join': [string, unknown[]] })['Fn::Join'];
  const text = join[1].map((part) => (typeof part === 'string' ? part : 'INTRINSIC')).join('');
  return JSON.parse(text) as Record<string, Json>;
}
