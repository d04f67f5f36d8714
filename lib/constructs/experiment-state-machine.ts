/**
 * The optimizer's state machine. Its shape is a contract with the experiment handlers (each receives
 * exactly the payload built here, `payloadResponseOnly`), and the same synthesized definition is run
 * locally by aws-local-stepfunctions, so states and paths below must not change without the handlers.
 */
import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import { LambdaInvoke } from 'aws-cdk-lib/aws-stepfunctions-tasks';
import type { Construct } from 'constructs';

/** The functions the state machine invokes, by role. */
export interface ExperimentFunctions {
  prepare: IFunction;
  propose: IFunction;
  index: IFunction;
  embedBatch: IFunction;
  evaluate: IFunction;
  record: IFunction;
  finalize: IFunction;
}

/** Props of {@link createExperimentStateMachine}. */
export interface ExperimentStateMachineProps {
  functions: ExperimentFunctions;
  /** How many trials of one proposal run at once (the RunTrials Map's MaxConcurrency). */
  trialConcurrency: number;
}

/** Inner Map concurrency: embedding batches of one trial in flight at once. */
export const EMBED_BATCH_CONCURRENCY = 4;

const ids = {
  experimentId: sfn.JsonPath.stringAt('$.experimentId'),
  prefix: sfn.JsonPath.stringAt('$.prefix'),
};

/**
 * Creates `ExperimentStateMachine` (Standard, logging ALL, X-Ray) directly in `scope`:
 * Prepare → Propose → BudgetLeft? → (RunTrials Map → Record → Propose) | (Finalize → Succeed).
 */
export function createExperimentStateMachine(
  scope: Construct,
  props: ExperimentStateMachineProps,
): sfn.StateMachine {
  const { functions } = props;
  const invoke = (
    id: string,
    lambdaFunction: IFunction,
    options: { payload?: Record<string, unknown>; resultPath: string },
  ): LambdaInvoke =>
    new LambdaInvoke(scope, id, {
      lambdaFunction,
      payloadResponseOnly: true,
      ...(options.payload !== undefined
        ? { payload: sfn.TaskInput.fromObject(options.payload) }
        : {}),
      // '$' is the ASL default; it is left out of the definition because aws-local-stepfunctions 3.0.0
      // writes an explicit ResultPath '$' into a key named "$" instead of replacing the state.
      ...(options.resultPath === '$' ? {} : { resultPath: options.resultPath }),
    });

  const prepare = invoke('Prepare', functions.prepare, { resultPath: '$' });
  const propose = invoke('Propose', functions.propose, {
    payload: ids,
    resultPath: '$.proposal',
  });

  const trialFailed = new sfn.Pass(scope, 'TrialFailed', {
    parameters: {
      trialId: sfn.JsonPath.stringAt('$.trialId'),
      ok: false,
      error: sfn.JsonPath.objectAt('$.error'),
    },
  });
  const catchAll = { errors: [sfn.Errors.ALL], resultPath: '$.error' };

  const indexTrial = invoke('IndexTrial', functions.index, { resultPath: '$.index' });
  const embedBatches = new sfn.Map(scope, 'EmbedBatches', {
    itemsPath: '$.index.batches',
    itemSelector: {
      ...ids,
      trialId: sfn.JsonPath.stringAt('$.trialId'),
      collection: sfn.JsonPath.stringAt('$.index.collection'),
      batchKey: sfn.JsonPath.stringAt('$$.Map.Item.Value'),
    },
    maxConcurrency: EMBED_BATCH_CONCURRENCY,
    resultPath: sfn.JsonPath.DISCARD,
  });
  embedBatches.itemProcessor(invoke('EmbedBatch', functions.embedBatch, { resultPath: '$' }));
  const evaluateTrial = invoke('EvaluateTrial', functions.evaluate, {
    payload: { ...ids, trialId: sfn.JsonPath.stringAt('$.trialId') },
    resultPath: '$',
  });
  indexTrial.addCatch(trialFailed, catchAll);
  embedBatches.addCatch(trialFailed, catchAll);
  evaluateTrial.addCatch(trialFailed, catchAll);

  const runTrials = new sfn.Map(scope, 'RunTrials', {
    itemsPath: '$.proposal.trials',
    itemSelector: {
      ...ids,
      trialId: sfn.JsonPath.stringAt('$$.Map.Item.Value.trialId'),
    },
    maxConcurrency: props.trialConcurrency,
    resultPath: '$.results',
  });
  runTrials.itemProcessor(indexTrial.next(embedBatches).next(evaluateTrial));

  const record = invoke('Record', functions.record, {
    payload: { ...ids, results: sfn.JsonPath.listAt('$.results') },
    resultPath: sfn.JsonPath.DISCARD,
  });
  const finalize = invoke('Finalize', functions.finalize, {
    payload: ids,
    resultPath: '$.artefacts',
  });

  const budgetLeft = new sfn.Choice(scope, 'BudgetLeft?')
    .when(
      sfn.Condition.booleanEquals('$.proposal.done', true),
      finalize.next(new sfn.Succeed(scope, 'Done')),
    )
    .otherwise(runTrials.next(record).next(propose));

  const logGroup = new LogGroup(scope, 'ExperimentStateMachineLogs', {
    retention: RetentionDays.ONE_MONTH,
    removalPolicy: RemovalPolicy.DESTROY,
  });
  return new sfn.StateMachine(scope, 'ExperimentStateMachine', {
    stateMachineType: sfn.StateMachineType.STANDARD,
    definitionBody: sfn.DefinitionBody.fromChainable(prepare.next(propose).next(budgetLeft)),
    logs: { destination: logGroup, level: sfn.LogLevel.ALL, includeExecutionData: true },
    tracingEnabled: true,
    timeout: Duration.hours(24),
  });
}
