/**
 * The experiment state machine exactly as deployed, for local execution with aws-local-stepfunctions: the
 * stack is synthesized in-process (no bundling, no cdk-nag), the DefinitionString is resolved with fake
 * ARNs, and each Task resource is mapped back to the construct id of the function it invokes, so a local
 * runner can bind `functions/<name>/handler.ts` to each Task.
 */
import { CfnFunction } from 'aws-cdk-lib/aws-lambda';
import { CfnStateMachine } from 'aws-cdk-lib/aws-stepfunctions';
import { Ai4ragError } from '../shared/src/errors.js';
import { createAi4ragApp } from './app.js';

/** The definition could not be extracted or resolved from the synthesized template. */
export class LocalDefinitionError extends Ai4ragError {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'LocalDefinitionError';
  }
}

/** Account id used in fake ARNs. */
export const LOCAL_ACCOUNT = '000000000000';
/** Region used in fake ARNs. */
export const LOCAL_REGION = 'local';

/** Fake ARN of a function by construct id, as it appears in the resolved definition. */
export function localFunctionArn(constructId: string): string {
  return `arn:aws:lambda:${LOCAL_REGION}:${LOCAL_ACCOUNT}:function:${constructId}`;
}

/** Options of {@link synthExperimentDefinition}. */
export interface SynthExperimentDefinitionOptions {
  /**
   * Deploy context over cdk.json's (e.g. `{ trialConcurrency: 4 }`). The definition does not depend on the
   * vector store, so the default context is used when omitted.
   */
  context?: Record<string, unknown>;
}

/** The parsed ASL and the function behind each Task resource. */
export interface ExperimentDefinition {
  /** Amazon States Language object with fake ARNs in place of CloudFormation intrinsics. */
  definition: Record<string, unknown>;
  /** Task `Resource` ARN → construct id (e.g. 'ExperimentPrepareFunction'). */
  functionIds: Record<string, string>;
}

const PSEUDO: Record<string, string> = {
  'AWS::Partition': 'aws',
  'AWS::Region': LOCAL_REGION,
  'AWS::AccountId': LOCAL_ACCOUNT,
  'AWS::URLSuffix': 'amazonaws.com',
};

function resolveIntrinsic(value: unknown, functions: ReadonlyMap<string, string>): string {
  if (typeof value === 'string') return value;
  if (value !== null && typeof value === 'object') {
    const record = value as Record<string, unknown>;
    const join = record['Fn::Join'];
    if (Array.isArray(join) && typeof join[0] === 'string' && Array.isArray(join[1])) {
      return join[1].map((part) => resolveIntrinsic(part, functions)).join(join[0]);
    }
    const getAtt = record['Fn::GetAtt'];
    if (Array.isArray(getAtt) && typeof getAtt[0] === 'string') {
      const constructId = functions.get(getAtt[0]);
      if (constructId !== undefined && getAtt[1] === 'Arn') return localFunctionArn(constructId);
      return `arn:aws:local:${LOCAL_REGION}:${LOCAL_ACCOUNT}:${getAtt[0]}/${String(getAtt[1])}`;
    }
    const ref = record.Ref;
    if (typeof ref === 'string') {
      const constructId = functions.get(ref);
      if (constructId !== undefined) return constructId;
      return PSEUDO[ref] ?? ref;
    }
  }
  throw new LocalDefinitionError(
    `unsupported intrinsic in DefinitionString: ${JSON.stringify(value)}`,
  );
}

function collectTaskResources(states: unknown, into: string[]): void {
  if (states === null || typeof states !== 'object') return;
  for (const state of Object.values(states as Record<string, Record<string, unknown>>)) {
    if (state.Type === 'Task' && typeof state.Resource === 'string') into.push(state.Resource);
    const processor = (state.ItemProcessor ?? state.Iterator) as { States?: unknown } | undefined;
    if (processor !== undefined) collectTaskResources(processor.States, into);
    if (Array.isArray(state.Branches)) {
      for (const branch of state.Branches as { States?: unknown }[]) {
        collectTaskResources(branch.States, into);
      }
    }
  }
}

/**
 * Synthesizes the stack in-process and returns the experiment state machine's ASL with resolved ARNs.
 *
 * @throws {DeployConfigError} when the given context is invalid.
 * @throws {LocalDefinitionError} when the template holds no state machine or an unknown intrinsic.
 * @example
 * const { definition, functionIds } = synthExperimentDefinition();
 * const machine = new StateMachine(definition); // aws-local-stepfunctions
 */
export function synthExperimentDefinition(
  options: SynthExperimentDefinitionOptions = {},
): ExperimentDefinition {
  const { stack } = createAi4ragApp({
    context: options.context ?? {},
    skipBundling: true,
    nag: false,
  });
  const functions = new Map<string, string>();
  let stateMachine: CfnStateMachine | undefined;
  for (const construct of stack.node.findAll()) {
    if (construct instanceof CfnFunction) {
      const owner = construct.node.scope;
      if (owner !== undefined) functions.set(stack.getLogicalId(construct), owner.node.id);
    } else if (
      construct instanceof CfnStateMachine &&
      construct.node.scope?.node.id === 'ExperimentStateMachine'
    ) {
      stateMachine = construct;
    }
  }
  if (stateMachine === undefined) {
    throw new LocalDefinitionError('ExperimentStateMachine not found in the stack');
  }
  const raw = stack.resolve(stateMachine.definitionString) as unknown;
  let definition: Record<string, unknown>;
  try {
    definition = JSON.parse(resolveIntrinsic(raw, functions)) as Record<string, unknown>;
  } catch (error) {
    if (error instanceof LocalDefinitionError) throw error;
    throw new LocalDefinitionError('resolved DefinitionString is not JSON', { cause: error });
  }
  const resources: string[] = [];
  collectTaskResources(definition.States, resources);
  const byArn = new Map([...functions.values()].map((id) => [localFunctionArn(id), id]));
  const functionIds: Record<string, string> = {};
  for (const arn of resources) {
    const id = byArn.get(arn);
    if (id === undefined) throw new LocalDefinitionError(`Task resource ${arn} is not a function`);
    functionIds[arn] = id;
  }
  return { definition, functionIds };
}
