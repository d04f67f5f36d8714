// The alarms of the Monitoring construct, the metrics they watch, and the batches/ lifecycle against DLQ retention.
import { describe, expect, it } from 'vitest';
import {
  APP_METRICS,
  METRICS_NAMESPACE,
  METRICS_SERVICE,
} from '../../functions/_shared/metric-names.js';
import {
  ALARM_THRESHOLDS,
  estimatedMaxConnections,
  Monitoring,
} from '../../lib/constructs/monitoring.js';
import { byConstructId, type Json, ofType, type Synthesized, synthesize } from './template.js';

const ZILLIZ = {
  vectorStore: 'zilliz',
  zillizUri: 'https://in03-abc.api.gcp-us-west1.zillizcloud.com',
  zillizTokenSecretName: 'ai4rag/zilliz-token',
};

/** Alarms by the construct id under Monitoring (e.g. 'IngestQueueOldestMessage'). */
function alarmsOf(s: Synthesized): Record<string, Json> {
  const out: Record<string, Json> = {};
  for (const [logicalId, alarm] of Object.entries(ofType(s.resources, 'AWS::CloudWatch::Alarm'))) {
    const match = /^Monitoring(.+)[0-9A-F]{8}$/.exec(logicalId);
    if (match?.[1] !== undefined) out[match[1]] = alarm.Properties;
  }
  return out;
}

const dims = (alarm: Json): Record<string, Json> =>
  Object.fromEntries((alarm.Dimensions ?? []).map((d: Json) => [d.Name, d.Value]));

describe.each([
  ['pgvector', { vectorStore: 'pgvector' }],
  ['zilliz', ZILLIZ],
])('Monitoring (%s)', (variant, context) => {
  const s = synthesize(context);
  const alarms = alarmsOf(s);

  it('notifies the encrypted alarm topic from every alarm, missing data not breaching', () => {
    // Assess
    expect(Object.keys(alarms).length).toBe(
      Object.keys(ofType(s.resources, 'AWS::CloudWatch::Alarm')).length,
    );
    for (const [id, alarm] of Object.entries(alarms)) {
      expect(alarm.AlarmActions, id).toEqual([
        { Ref: expect.stringMatching(/^MonitoringAlarmTopic/) },
      ]);
      expect(alarm.TreatMissingData, id).toBe('notBreaching');
    }
  });

  it.each(['Ingest', 'Chunk', 'Embed'])('watches the %s queue age and its DLQ', (name) => {
    // Prepare
    const queue = alarms[`${name}QueueOldestMessage`];
    const dlqAge = alarms[`${name}DlqOldestMessage`];

    // Assess
    expect(queue).toMatchObject({
      Namespace: 'AWS/SQS',
      MetricName: 'ApproximateAgeOfOldestMessage',
      Statistic: 'Maximum',
      Threshold: 3600,
      ComparisonOperator: 'GreaterThanThreshold',
    });
    expect(dims(queue).QueueName).toEqual({
      'Fn::GetAtt': [expect.stringMatching(new RegExp(`^${name}Queue`)), 'QueueName'],
    });
    expect(dlqAge).toMatchObject({
      MetricName: 'ApproximateAgeOfOldestMessage',
      Threshold: ALARM_THRESHOLDS.dlqOldestMessageSeconds,
    });
    expect(dlqAge.Threshold).toBeLessThan(Monitoring.DLQ_RETENTION.toSeconds());
    expect(alarms[`${name}DlqNotEmpty`]).toMatchObject({
      MetricName: 'ApproximateNumberOfMessagesVisible',
      Threshold: 0,
    });
  });

  it('alarms on the API stage 5XX count and p99 latency', () => {
    // Assess
    expect(alarms.ApiServerErrors).toMatchObject({
      Namespace: 'AWS/ApiGateway',
      MetricName: '5XXError',
      Statistic: 'Sum',
      Threshold: ALARM_THRESHOLDS.apiServerErrors,
    });
    expect(alarms.ApiLatencyP99).toMatchObject({
      Namespace: 'AWS/ApiGateway',
      MetricName: 'Latency',
      ExtendedStatistic: 'p99',
      Threshold: ALARM_THRESHOLDS.apiLatencyP99Ms,
      EvaluationPeriods: 3,
    });
    for (const alarm of [alarms.ApiServerErrors, alarms.ApiLatencyP99]) {
      expect(Object.keys(dims(alarm)).sort()).toEqual(['ApiName', 'Stage']);
      expect(dims(alarm).ApiName).toBe('ai4rag');
    }
  });

  it('alarms on the custom failure metrics under the namespace and service the functions emit with', () => {
    // Prepare
    const env = (fnId: string) =>
      (byConstructId(s.resources, fnId).properties.Environment as Json).Variables;

    // Assess
    for (const name of Object.values(APP_METRICS)) {
      expect(alarms[name], name).toMatchObject({
        Namespace: METRICS_NAMESPACE,
        MetricName: name,
        Statistic: 'Sum',
        Dimensions: [{ Name: 'service', Value: METRICS_SERVICE }],
      });
    }
    expect(alarms.FailedRecords).toMatchObject({
      Threshold: ALARM_THRESHOLDS.failedRecords,
      EvaluationPeriods: 3,
      DatapointsToAlarm: 2,
    });
    for (const fnId of [
      'IngestFunction',
      'ChunkFunction',
      'EmbedBatchFunction',
      'ExperimentRecordFunction',
    ]) {
      expect(env(fnId), fnId).toMatchObject({
        POWERTOOLS_METRICS_NAMESPACE: METRICS_NAMESPACE,
        POWERTOOLS_SERVICE_NAME: METRICS_SERVICE,
      });
    }
  });

  it('alarms on RDS CPU, connections and free storage and on the proxy with pgvector only', () => {
    // Prepare
    const database = [
      'DatabaseCpu',
      'DatabaseConnections',
      'DatabaseFreeStorage',
      'DatabaseProxyBorrowLatency',
    ];

    // Assess
    if (variant === 'zilliz') {
      for (const id of database) expect(alarms[id], id).toBeUndefined();
      return;
    }
    expect(alarms.DatabaseCpu).toMatchObject({
      Namespace: 'AWS/RDS',
      MetricName: 'CPUUtilization',
      Threshold: 80,
      EvaluationPeriods: 3,
    });
    // The default instance type, t4g.small (2 GiB): max_connections about 225.
    expect(alarms.DatabaseConnections).toMatchObject({
      MetricName: 'DatabaseConnections',
      Threshold: 180,
    });
    expect(alarms.DatabaseFreeStorage).toMatchObject({
      MetricName: 'FreeStorageSpace',
      Statistic: 'Minimum',
      Threshold: 2 * 1024 ** 3,
      ComparisonOperator: 'LessThanThreshold',
    });
    for (const id of ['DatabaseCpu', 'DatabaseConnections', 'DatabaseFreeStorage']) {
      expect(dims(alarms[id]).DBInstanceIdentifier, id).toEqual({
        Ref: expect.stringMatching(/^VectorStoreDatabase/),
      });
    }
    expect(alarms.DatabaseProxyBorrowLatency).toMatchObject({
      Namespace: 'AWS/RDS',
      MetricName: 'DatabaseConnectionsBorrowLatency',
      Threshold: 1_000_000,
    });
    expect(dims(alarms.DatabaseProxyBorrowLatency).ProxyName).toEqual({
      Ref: expect.stringMatching(/^VectorStoreDatabaseProxy/),
    });
  });

  it('keeps batches/ objects longer than any DLQ keeps the messages that name them', () => {
    // Prepare
    const artifacts = byConstructId(s.resources, 'ArtifactsBucket').properties as Json;
    const rule = artifacts.LifecycleConfiguration.Rules.find((r: Json) => r.Prefix === 'batches/');
    const dlqs = Object.entries(ofType(s.resources, 'AWS::SQS::Queue')).filter(([id]) =>
      /Dlq[0-9A-F]{8}$/.test(id),
    );

    // Assess
    expect(dlqs).toHaveLength(3);
    expect(rule.ExpirationInDays).toBe(Monitoring.BATCHES_RETENTION.toDays());
    for (const [id, dlq] of dlqs) {
      const retention = dlq.Properties?.MessageRetentionPeriod as number;
      expect(retention, id).toBe(Monitoring.DLQ_RETENTION.toSeconds());
      expect(rule.ExpirationInDays * 86_400, id).toBeGreaterThan(retention);
    }
  });
});

describe('estimatedMaxConnections', () => {
  it.each([
    ['t4g.small', 225],
    ['t3.micro', 112],
    ['m6g.large', 901],
    ['r6g.large', 1802],
    ['m6g.2xlarge', 3604],
    ['r6g.4xlarge', 5000],
  ])('estimates %s at %i', (instanceType, expected) => {
    // Act / Assess
    expect(estimatedMaxConnections(instanceType)).toBe(expected);
  });

  it('reads no estimate from a type it does not know', () => {
    // Act / Assess
    expect(estimatedMaxConnections('db.custom')).toBeUndefined();
    expect(estimatedMaxConnections('t4g.metal')).toBeUndefined();
  });
});
