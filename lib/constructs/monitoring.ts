/**
 * Operations: one encrypted SNS topic every alarm notifies, alarms on what needs a human, and a dashboard of the
 * key widgets. Lambda `Errors` alone stay at 0 for most failures (HTTP handlers answer 500, SQS handlers report
 * `batchItemFailures`, a failed trial is recorded), so the alarms also watch the API's 5XX and p99 latency, the
 * age of the oldest message per queue, the failure metrics the handlers emit (`functions/_shared/metric-names.ts`)
 * and, with pgvector, the database and its proxy. Thresholds are {@link ALARM_THRESHOLDS}.
 */
import { Annotations, Duration, RemovalPolicy } from 'aws-cdk-lib';
import type { Stage } from 'aws-cdk-lib/aws-apigateway';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import { ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Key } from 'aws-cdk-lib/aws-kms';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import type { IDatabaseInstance, IDatabaseProxy } from 'aws-cdk-lib/aws-rds';
import { Topic } from 'aws-cdk-lib/aws-sns';
import { EmailSubscription } from 'aws-cdk-lib/aws-sns-subscriptions';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import type { StateMachine } from 'aws-cdk-lib/aws-stepfunctions';
import { Construct } from 'constructs';
import {
  APP_METRICS,
  METRICS_NAMESPACE,
  METRICS_SERVICE,
} from '../../functions/_shared/metric-names.js';

/** The database watched with the pgvector store. */
export interface MonitoredDatabase {
  /** The PostgreSQL instance. */
  readonly instance: IDatabaseInstance;
  /** Its instance type (e.g. `t4g.small`): the connections threshold follows its memory. */
  readonly instanceType: string;
  /**
   * The RDS Proxy the functions connect through.
   * @default - no proxy alarm
   */
  readonly proxy?: IDatabaseProxy;
}

/** Props of {@link Monitoring}. */
export interface MonitoringProps {
  /** Functions by construct id (e.g. 'SearchFunction'). */
  readonly functions: Record<string, IFunction>;
  /** Dead-letter queues by name (e.g. 'IngestDlq'). */
  readonly deadLetterQueues: Record<string, IQueue>;
  readonly stateMachine: StateMachine;
  /** Pipeline queues by name (e.g. 'IngestQueue'). */
  readonly queues: Record<string, IQueue>;
  /** The Query API's stage (its 5XX and latency metrics carry `ApiName` and `Stage`). */
  readonly apiStage: Stage;
  /**
   * The database (pgvector only).
   * @default - no database alarms (Zilliz)
   */
  readonly database?: MonitoredDatabase;
  /**
   * E-mail subscribed to the alarm topic.
   * @default - no subscription
   */
  readonly alarmEmail?: string;
}

/** What the alarms compare against (values in the metric's unit). */
export const ALARM_THRESHOLDS = Object.freeze({
  /** API 5XX responses per 5 minutes. */
  apiServerErrors: 5,
  /** API p99 latency (ms), 3 periods of 5 minutes in a row: about 70 % of the 29 s integration timeout. */
  apiLatencyP99Ms: 20_000,
  /** Oldest message of a pipeline queue (s): work stuck for an hour, far below the 4-day retention. */
  queueOldestMessageSeconds: Duration.hours(1).toSeconds(),
  /**
   * Oldest message of a DLQ (s). A standard queue's message expires from its DLQ at its *original* enqueue time
   * plus {@link Monitoring.DLQ_RETENTION}; at 7 days in the DLQ there are days left to redrive it.
   */
  dlqOldestMessageSeconds: Duration.days(7).toSeconds(),
  /** Failed SQS record attempts per 5 minutes, in 2 of 3 periods: a retry storm, before the DLQ fills. */
  failedRecords: 10,
  /** RDS CPU (%), 3 periods of 5 minutes. */
  databaseCpuPercent: 80,
  /** RDS connections as a share of the estimated `max_connections`, 3 periods of 5 minutes. */
  databaseConnectionsRatio: 0.8,
  /** RDS free storage (bytes): storage autoscaling grows a 20 GiB volume at 10 % free; below this it did not. */
  databaseFreeStorageBytes: 2 * 1024 ** 3,
  /** RDS Proxy connection borrow latency (µs), 3 periods: clients wait for a pooled connection. */
  proxyBorrowLatencyMicros: 1_000_000,
});

/** Memory (GiB) of the RDS instance sizes per family kind, for the `max_connections` estimate. */
const SIZE_GIB: Readonly<Record<string, number>> = {
  nano: 0.5,
  micro: 1,
  small: 2,
  medium: 4,
  large: 8,
  xlarge: 16,
};

/**
 * Estimated PostgreSQL `max_connections` of an RDS instance type: RDS's default
 * `LEAST(DBInstanceClassMemory / 9531392, 5000)`, with the class memory read from the type (burstable and general
 * purpose: 8 GiB per `large`, memory optimized `r`/`x`/`z`: twice that). Undefined for a type it cannot read.
 * @example estimatedMaxConnections('t4g.small') // 225
 */
export function estimatedMaxConnections(instanceType: string): number | undefined {
  const match = /^([a-z]+)\d+[a-z-]*\.(\d*)(nano|micro|small|medium|large|xlarge)$/.exec(
    instanceType,
  );
  if (match === null) return undefined;
  const [, family = '', multiplier, size = ''] = match;
  const base = SIZE_GIB[size];
  if (base === undefined) return undefined;
  const factor = /^[rxz]/.test(family) ? 2 : 1;
  const gib = base * factor * (multiplier === '' ? 1 : Number(multiplier));
  return Math.min(Math.floor((gib * 1024 ** 3) / 9_531_392), 5000);
}

const FIVE_MINUTES = Duration.minutes(5);

/** Alarm topic, alarms and dashboard. */
export class Monitoring extends Construct {
  /**
   * How long a DLQ keeps a message: the window a redrive must happen in (see the README's runbook). Every pipeline
   * DLQ is created with it; the objects its messages point to must outlive it ({@link BATCHES_RETENTION}).
   */
  static readonly DLQ_RETENTION = Duration.days(14);
  /**
   * Lifecycle of `batches/`: embed messages name a batch object, so it outlives the longest a message can wait
   * (its DLQ retention, counted from its first enqueue) plus a day for a redrive started at the last moment.
   */
  static readonly BATCHES_RETENTION = Duration.days(Monitoring.DLQ_RETENTION.toDays() + 1);

  /** The topic every alarm notifies. */
  readonly topic: Topic;
  /** All alarms. */
  readonly alarms: cloudwatch.Alarm[] = [];

  constructor(scope: Construct, id: string, props: MonitoringProps) {
    super(scope, id);
    const key = new Key(this, 'AlarmTopicKey', {
      description: 'ai4rag alarm topic encryption',
      enableKeyRotation: true,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    // CloudWatch alarms must encrypt their notifications with the topic's key.
    key.grant(
      new ServicePrincipal('cloudwatch.amazonaws.com'),
      'kms:Decrypt',
      'kms:GenerateDataKey*',
    );
    this.topic = new Topic(this, 'AlarmTopic', {
      displayName: 'ai4rag alarms',
      masterKey: key,
      enforceSSL: true,
    });
    if (props.alarmEmail !== undefined) {
      this.topic.addSubscription(new EmailSubscription(props.alarmEmail));
    }
    const action = new SnsAction(this.topic);
    const alarm = (
      alarmId: string,
      metric: cloudwatch.IMetric,
      description: string,
      options: {
        threshold?: number;
        below?: boolean;
        evaluationPeriods?: number;
        datapointsToAlarm?: number;
      } = {},
    ): void => {
      const created = new cloudwatch.Alarm(this, alarmId, {
        metric,
        threshold: options.threshold ?? 0,
        comparisonOperator: options.below
          ? cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD
          : cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: options.evaluationPeriods ?? 1,
        ...(options.datapointsToAlarm !== undefined && {
          datapointsToAlarm: options.datapointsToAlarm,
        }),
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
        alarmDescription: description,
      });
      created.addAlarmAction(action);
      this.alarms.push(created);
    };
    const t = ALARM_THRESHOLDS;

    // ---- Queues ------------------------------------------------------------------------------------------------
    for (const [name, dlq] of Object.entries(props.deadLetterQueues)) {
      alarm(
        `${name}NotEmpty`,
        dlq.metricApproximateNumberOfMessagesVisible({
          period: FIVE_MINUTES,
          statistic: 'Maximum',
        }),
        `${name} holds messages that failed processing 3 times: inspect and redrive (README, DLQ redrive)`,
      );
      alarm(
        `${name}OldestMessage`,
        dlq.metricApproximateAgeOfOldestMessage({ period: FIVE_MINUTES, statistic: 'Maximum' }),
        `${name}'s oldest message has waited over ${t.dlqOldestMessageSeconds / 86_400} days: redrive it ` +
          `before it expires (${Monitoring.DLQ_RETENTION.toDays()} days after it was first sent)`,
        { threshold: t.dlqOldestMessageSeconds },
      );
    }
    for (const [name, queue] of Object.entries(props.queues)) {
      alarm(
        `${name}OldestMessage`,
        queue.metricApproximateAgeOfOldestMessage({ period: FIVE_MINUTES, statistic: 'Maximum' }),
        `${name}'s oldest message has waited over ${t.queueOldestMessageSeconds / 60} minutes: its ` +
          'consumer is failing, throttled or capped',
        { threshold: t.queueOldestMessageSeconds },
      );
    }

    // ---- Functions and experiments -----------------------------------------------------------------------------
    for (const [name, fn] of Object.entries(props.functions)) {
      alarm(
        `${name}Errors`,
        fn.metricErrors({ period: FIVE_MINUTES, statistic: 'Sum' }),
        `${name} raised errors`,
      );
      alarm(
        `${name}Throttles`,
        fn.metricThrottles({ period: FIVE_MINUTES, statistic: 'Sum' }),
        `${name} was throttled (concurrency limit reached)`,
      );
    }
    alarm(
      'ExperimentsFailed',
      props.stateMachine.metricFailed({ period: FIVE_MINUTES, statistic: 'Sum' }),
      'An experiment execution failed: its Error and Cause name the state (describe-execution)',
    );
    const custom = (metricName: string): cloudwatch.Metric =>
      new cloudwatch.Metric({
        namespace: METRICS_NAMESPACE,
        metricName,
        dimensionsMap: { service: METRICS_SERVICE },
        statistic: 'Sum',
        period: FIVE_MINUTES,
      });
    alarm(
      APP_METRICS.failedDocuments,
      custom(APP_METRICS.failedDocuments),
      'Documents were marked failed by ingestion: their status (GET /documents, status/ in the artifacts bucket) ' +
        'carries the reason',
    );
    alarm(
      APP_METRICS.failedRecords,
      custom(APP_METRICS.failedRecords),
      'Ingestion records keep failing (retried by their queue): see the ingest, chunk and embed-batch logs',
      { threshold: t.failedRecords, evaluationPeriods: 3, datapointsToAlarm: 2 },
    );
    alarm(
      APP_METRICS.failedTrials,
      custom(APP_METRICS.failedTrials),
      'Experiment trials were recorded as failed: the report and state.json carry each error',
    );

    // ---- Query API ---------------------------------------------------------------------------------------------
    alarm(
      'ApiServerErrors',
      props.apiStage.metricServerError({ period: FIVE_MINUTES, statistic: 'Sum' }),
      `The Query API answered more than ${t.apiServerErrors} 5XX in 5 minutes`,
      { threshold: t.apiServerErrors },
    );
    alarm(
      'ApiLatencyP99',
      props.apiStage.metricLatency({ period: FIVE_MINUTES, statistic: 'p99' }),
      `The Query API's p99 latency stayed above ${t.apiLatencyP99Ms / 1000} s for 15 minutes`,
      { threshold: t.apiLatencyP99Ms, evaluationPeriods: 3 },
    );

    // ---- Database (pgvector) -----------------------------------------------------------------------------------
    const db = props.database;
    if (db !== undefined) {
      alarm(
        'DatabaseCpu',
        db.instance.metricCPUUtilization({ period: FIVE_MINUTES, statistic: 'Average' }),
        `PostgreSQL CPU stayed above ${t.databaseCpuPercent} % for 15 minutes`,
        { threshold: t.databaseCpuPercent, evaluationPeriods: 3 },
      );
      const maxConnections = estimatedMaxConnections(db.instanceType);
      if (maxConnections === undefined) {
        Annotations.of(this).addWarningV2(
          'ai4rag:monitoring-connections',
          `No DatabaseConnections alarm: max_connections of '${db.instanceType}' is not estimated.`,
        );
      } else {
        const threshold = Math.floor(maxConnections * t.databaseConnectionsRatio);
        alarm(
          'DatabaseConnections',
          db.instance.metricDatabaseConnections({ period: FIVE_MINUTES, statistic: 'Maximum' }),
          `PostgreSQL connections stayed above ${threshold} (${t.databaseConnectionsRatio * 100} % of about ` +
            `${maxConnections} for ${db.instanceType}) for 15 minutes`,
          { threshold, evaluationPeriods: 3 },
        );
      }
      alarm(
        'DatabaseFreeStorage',
        db.instance.metricFreeStorageSpace({ period: FIVE_MINUTES, statistic: 'Minimum' }),
        `PostgreSQL has less than ${t.databaseFreeStorageBytes / 1024 ** 3} GiB free (storage autoscaling ` +
          'capped or not keeping up)',
        { threshold: t.databaseFreeStorageBytes, below: true },
      );
      if (db.proxy !== undefined) {
        alarm(
          'DatabaseProxyBorrowLatency',
          new cloudwatch.Metric({
            namespace: 'AWS/RDS',
            metricName: 'DatabaseConnectionsBorrowLatency',
            dimensionsMap: { ProxyName: db.proxy.dbProxyName },
            statistic: 'Average',
            period: FIVE_MINUTES,
          }),
          'Clients waited over 1 s on average for an RDS Proxy connection for 15 minutes (pool exhausted)',
          { threshold: t.proxyBorrowLatencyMicros, evaluationPeriods: 3 },
        );
      }
    }

    // ---- Dashboard ---------------------------------------------------------------------------------------------
    const dashboard = new cloudwatch.Dashboard(this, 'Dashboard', {
      defaultInterval: Duration.hours(3),
    });
    const fns = Object.entries(props.functions);
    const stage = props.apiStage;
    dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: 'Query API requests and errors',
        left: [
          stage.metricCount({ period: FIVE_MINUTES, statistic: 'Sum' }),
          stage.metricClientError({ period: FIVE_MINUTES, statistic: 'Sum' }),
          stage.metricServerError({ period: FIVE_MINUTES, statistic: 'Sum' }),
        ],
        width: 12,
      }),
      new cloudwatch.GraphWidget({
        title: 'Query API latency (p50, p90, p99)',
        left: ['p50', 'p90', 'p99'].map((statistic) =>
          stage.metricLatency({ period: FIVE_MINUTES, statistic }),
        ),
        width: 12,
      }),
    );
    dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: 'Ingestion backlog (visible messages)',
        left: Object.values(props.queues).map((q) =>
          q.metricApproximateNumberOfMessagesVisible({ period: Duration.minutes(1) }),
        ),
        right: Object.values(props.deadLetterQueues).map((q) =>
          q.metricApproximateNumberOfMessagesVisible({ period: Duration.minutes(1) }),
        ),
        width: 12,
      }),
      new cloudwatch.GraphWidget({
        title: 'Experiments',
        left: [
          props.stateMachine.metricStarted(),
          props.stateMachine.metricSucceeded(),
          props.stateMachine.metricFailed(),
        ],
        right: [custom(APP_METRICS.failedTrials)],
        width: 12,
      }),
    );
    dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: 'Queue age of oldest message (s)',
        left: Object.values(props.queues).map((q) =>
          q.metricApproximateAgeOfOldestMessage({ period: FIVE_MINUTES, statistic: 'Maximum' }),
        ),
        width: 12,
      }),
      new cloudwatch.GraphWidget({
        title: 'Ingestion failures',
        left: [custom(APP_METRICS.failedDocuments), custom(APP_METRICS.failedRecords)],
        width: 12,
      }),
    );
    dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: 'Function errors',
        left: fns.map(([, fn]) => fn.metricErrors({ period: FIVE_MINUTES })),
        width: 8,
      }),
      new cloudwatch.GraphWidget({
        title: 'Function duration p90',
        left: fns.map(([, fn]) => fn.metricDuration({ period: FIVE_MINUTES, statistic: 'p90' })),
        width: 8,
      }),
      new cloudwatch.AlarmStatusWidget({
        title: 'Alarms',
        alarms: this.alarms,
        width: 8,
      }),
    );
  }
}
