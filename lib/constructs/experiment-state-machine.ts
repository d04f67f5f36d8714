/**
 * The optimizer's state machine. Its shape is a contract with the experiment handlers (each receives
 * exactly the payload built here, `payloadResponseOnly`), and the same synthesized definition is run
 * locally by aws-local-stepfunctions, so states and paths below must not change without the handlers.
 *
 * Resilience: every Task retries Lambda's transient errors (throttling included) with capped, fully
 * jittered exponential backoff before anything else sees the error; a trial that still fails is caught
 * into `TrialFailed` (its `{Error, Cause}` recorded with the trial); a control state that still fails is
 * caught into `<State>Failed`, which names the state, and ends the execution in `ExperimentFailed`
 * with the original error name and a cause saying where it happened. The Propose loop is bounded.
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

/**
 * Errors of the Lambda service itself (not of our code) that a later attempt can clear: throttling
 * (`TooManyRequestsException`, account or reserved concurrency) and service-side failures. Our handlers
 * throw no transient error class of their own: the SDK, OpenAI and reranker clients already retry
 * throttling and 5xx inside the invocation (`shared/src/util/retry.ts`), so retrying their final errors
 * here would multiply those attempts.
 */
export const LAMBDA_TRANSIENT_ERRORS = [
  'Lambda.TooManyRequestsException',
  'Lambda.ServiceException',
  'Lambda.AWSLambdaException',
  'Lambda.SdkClientException',
  'Lambda.ClientExecutionTimeoutException',
] as const;

/**
 * Retry of {@link LAMBDA_TRANSIENT_ERRORS} on every Task: waits drawn uniformly from
 * [0, min(maxDelay, interval × backoffRate^n)] (FULL jitter spreads out the trials a throttle hit
 * together); at most about 4 minutes in all before the error reaches a Catch.
 */
export const TASK_RETRY = Object.freeze({
  interval: Duration.seconds(2),
  backoffRate: 2,
  maxAttempts: 8,
  maxDelay: Duration.seconds(60),
});

/**
 * Hard cap on Propose rounds of one execution, whatever the execution's maxEvals: the experiment
 * input's own upper bound on maxEvals (`shared/src/experiment/input.ts`), since every round that is not
 * done runs at least one new trial of the budget.
 */
export const MAX_EXPERIMENT_ROUNDS = 1000;

/** Error name of an execution stopped by the round bound. */
export const ROUND_LIMIT_ERROR = 'ExperimentRoundLimitExceeded';

const ids = {
  experimentId: sfn.JsonPath.stringAt('$.experimentId'),
  prefix: sfn.JsonPath.stringAt('$.prefix'),
};

/**
 * Creates `ExperimentStateMachine` (Standard, logging ALL, X-Ray) directly in `scope`:
 * Prepare → StartRounds → Propose → CountRound → BudgetLeft? → (RunTrials Map → Record → Propose) |
 * (Finalize → Succeed) | (RoundLimitReached → ExperimentFailed), each control state caught into
 * `<State>Failed` → ExperimentFailed.
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
  ): LambdaInvoke => {
    const task = new LambdaInvoke(scope, id, {
      lambdaFunction,
      payloadResponseOnly: true,
      // CDK's default retrier leaves out Lambda.TooManyRequestsException and has no jitter: ours replaces it.
      retryOnServiceExceptions: false,
      ...(options.payload !== undefined
        ? { payload: sfn.TaskInput.fromObject(options.payload) }
        : {}),
      // '$' is the ASL default; it is left out of the definition because aws-local-stepfunctions 3.0.0
      // writes an explicit ResultPath '$' into a key named "$" instead of replacing the state.
      ...(options.resultPath === '$' ? {} : { resultPath: options.resultPath }),
    });
    task.addRetry({
      errors: [...LAMBDA_TRANSIENT_ERRORS],
      ...TASK_RETRY,
      jitterStrategy: sfn.JitterType.FULL,
    });
    return task;
  };

  // A control state that fails for good: `<state>Failed` shapes `$.failure` and ends in ExperimentFailed.
  const experimentFailed = new sfn.Fail(scope, 'ExperimentFailed', {
    errorPath: '$.failure.error',
    causePath: '$.failure.cause',
  });
  const failureOf = (state: string): sfn.Chain =>
    new sfn.Pass(scope, `${state}Failed`, {
      parameters: {
        state,
        error: sfn.JsonPath.stringAt('$.failure.Error'),
        cause: sfn.JsonPath.format(`${state} failed: {}`, sfn.JsonPath.stringAt('$.failure.Cause')),
      },
      resultPath: '$.failure',
    }).next(experimentFailed);
  const catchControl = <T extends sfn.TaskStateBase | sfn.Map>(state: T): T =>
    state.addCatch(failureOf(state.id), {
      errors: [sfn.Errors.ALL],
      resultPath: '$.failure',
    }) as T;

  const prepare = catchControl(invoke('Prepare', functions.prepare, { resultPath: '$' }));
  const propose = catchControl(
    invoke('Propose', functions.propose, { payload: ids, resultPath: '$.proposal' }),
  );
  // The round counter lives in the state; Prepare reports the execution's maxEvals (after a resume's merge).
  const startRounds = new sfn.Pass(scope, 'StartRounds', {
    result: sfn.Result.fromObject({ count: 0 }),
    resultPath: '$.rounds',
  });
  const countRound = new sfn.Pass(scope, 'CountRound', {
    parameters: { count: sfn.JsonPath.mathAdd(sfn.JsonPath.numberAt('$.rounds.count'), 1) },
    resultPath: '$.rounds',
  });
  const roundLimitReached = new sfn.Pass(scope, 'RoundLimitReached', {
    parameters: {
      state: 'Propose',
      error: ROUND_LIMIT_ERROR,
      cause: sfn.JsonPath.format(
        'Propose proposed trials in {} rounds without finishing (maxEvals {}): the loop was stopped.',
        sfn.JsonPath.stringAt('$.rounds.count'),
        sfn.JsonPath.stringAt('$.maxEvals'),
      ),
    },
    resultPath: '$.failure',
  }).next(experimentFailed);

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

  const runTrials = catchControl(
    new sfn.Map(scope, 'RunTrials', {
      itemsPath: '$.proposal.trials',
      itemSelector: {
        ...ids,
        trialId: sfn.JsonPath.stringAt('$$.Map.Item.Value.trialId'),
      },
      maxConcurrency: props.trialConcurrency,
      resultPath: '$.results',
    }),
  );
  runTrials.itemProcessor(indexTrial.next(embedBatches).next(evaluateTrial));

  const record = catchControl(
    invoke('Record', functions.record, {
      payload: { ...ids, results: sfn.JsonPath.listAt('$.results') },
      resultPath: sfn.JsonPath.DISCARD,
    }),
  );
  const finalize = catchControl(
    invoke('Finalize', functions.finalize, { payload: ids, resultPath: '$.artefacts' }),
  );

  const budgetLeft = new sfn.Choice(scope, 'BudgetLeft?')
    .when(
      sfn.Condition.booleanEquals('$.proposal.done', true),
      finalize.next(new sfn.Succeed(scope, 'Done')),
    )
    .when(
      sfn.Condition.or(
        sfn.Condition.numberGreaterThanJsonPath('$.rounds.count', '$.maxEvals'),
        sfn.Condition.numberGreaterThan('$.rounds.count', MAX_EXPERIMENT_ROUNDS),
      ),
      roundLimitReached,
    )
    .otherwise(runTrials.next(record).next(propose));

  const logGroup = new LogGroup(scope, 'ExperimentStateMachineLogs', {
    retention: RetentionDays.ONE_MONTH,
    removalPolicy: RemovalPolicy.DESTROY,
  });
  return new sfn.StateMachine(scope, 'ExperimentStateMachine', {
    stateMachineType: sfn.StateMachineType.STANDARD,
    definitionBody: sfn.DefinitionBody.fromChainable(
      prepare.next(startRounds).next(propose).next(countRound).next(budgetLeft),
    ),
    logs: { destination: logGroup, level: sfn.LogLevel.ALL, includeExecutionData: true },
    tracingEnabled: true,
    timeout: Duration.hours(24),
  });
}
