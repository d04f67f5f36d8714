/**
 * Operations: one encrypted SNS topic every alarm notifies, alarms on what needs a human (messages in a
 * DLQ, function errors and throttles, failed experiments), and a dashboard of the key widgets.
 */
import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import { ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Key } from 'aws-cdk-lib/aws-kms';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { Topic } from 'aws-cdk-lib/aws-sns';
import { EmailSubscription } from 'aws-cdk-lib/aws-sns-subscriptions';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import type { StateMachine } from 'aws-cdk-lib/aws-stepfunctions';
import { Construct } from 'constructs';

/** Props of {@link Monitoring}. */
export interface MonitoringProps {
  /** Functions by construct id (e.g. 'SearchFunction'). */
  functions: Record<string, IFunction>;
  /** Dead-letter queues by name (e.g. 'IngestDlq'). */
  deadLetterQueues: Record<string, IQueue>;
  stateMachine: StateMachine;
  /** Pipeline queues by name, for the backlog widget. */
  queues: Record<string, IQueue>;
  /** Restful API name for the API widgets. */
  apiName: string;
  /** Optional e-mail subscribed to the alarm topic. */
  alarmEmail?: string;
}

/** Alarm topic, alarms and dashboard. */
export class Monitoring extends Construct {
  /** The topic every alarm notifies. */
  readonly topic: Topic;
  /** All alarms, by construct id. */
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
    const alarm = (alarmId: string, metric: cloudwatch.IMetric, description: string): void => {
      const created = new cloudwatch.Alarm(this, alarmId, {
        metric,
        threshold: 0,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 1,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
        alarmDescription: description,
      });
      created.addAlarmAction(action);
      this.alarms.push(created);
    };

    for (const [name, dlq] of Object.entries(props.deadLetterQueues)) {
      alarm(
        `${name}NotEmpty`,
        dlq.metricApproximateNumberOfMessagesVisible({
          period: Duration.minutes(5),
          statistic: 'Maximum',
        }),
        `${name} holds messages that failed processing 3 times: inspect and redrive`,
      );
    }
    for (const [name, fn] of Object.entries(props.functions)) {
      alarm(
        `${name}Errors`,
        fn.metricErrors({ period: Duration.minutes(5), statistic: 'Sum' }),
        `${name} raised errors`,
      );
      alarm(
        `${name}Throttles`,
        fn.metricThrottles({ period: Duration.minutes(5), statistic: 'Sum' }),
        `${name} was throttled (concurrency limit reached)`,
      );
    }
    alarm(
      'ExperimentsFailed',
      props.stateMachine.metricFailed({ period: Duration.minutes(5), statistic: 'Sum' }),
      'An experiment execution failed',
    );

    const dashboard = new cloudwatch.Dashboard(this, 'Dashboard', {
      defaultInterval: Duration.hours(3),
    });
    const fns = Object.entries(props.functions);
    const apiMetric = (metricName: string, statistic: string): cloudwatch.Metric =>
      new cloudwatch.Metric({
        namespace: 'AWS/ApiGateway',
        metricName,
        dimensionsMap: { ApiName: props.apiName },
        statistic,
        period: Duration.minutes(5),
      });
    dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: 'Query API requests and errors',
        left: [
          apiMetric('Count', 'Sum'),
          apiMetric('4XXError', 'Sum'),
          apiMetric('5XXError', 'Sum'),
        ],
        width: 12,
      }),
      new cloudwatch.GraphWidget({
        title: 'Query API latency (p50, p90)',
        left: [apiMetric('Latency', 'p50'), apiMetric('Latency', 'p90')],
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
        width: 12,
      }),
    );
    dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: 'Function errors',
        left: fns.map(([, fn]) => fn.metricErrors({ period: Duration.minutes(5) })),
        width: 8,
      }),
      new cloudwatch.GraphWidget({
        title: 'Function duration p90',
        left: fns.map(([, fn]) =>
          fn.metricDuration({ period: Duration.minutes(5), statistic: 'p90' }),
        ),
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
