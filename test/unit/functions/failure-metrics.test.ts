// The failure metrics the handlers emit (Powertools EMF on stdout, in Lambda mode) match the alarms that watch them:
// same namespace, metric name and dimensions, with the functions' environment read from the synthesized stack.
import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { SQSEvent } from 'aws-lambda';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { APP_METRICS } from '../../../functions/_shared/metric-names.js';
import { byConstructId, type Json, ofType, synthesize } from '../../cdk/template.js';
import { context, getTestEvent, s3Body, sqsEvent } from './helpers.js';

const s3Mock = mockClient(S3Client);
const sqsMock = mockClient(SQSClient);

interface Emitted {
  namespace: string;
  name: string;
  dimensions: Record<string, string>;
  value: unknown;
}

/** The custom metrics in the EMF lines written to stdout. */
function emitted(lines: readonly string[]): Emitted[] {
  const out: Emitted[] = [];
  for (const line of lines) {
    if (!line.includes('"_aws"')) continue;
    const emf = JSON.parse(line) as Json;
    for (const directive of emf._aws.CloudWatchMetrics) {
      const [dimensionNames = []] = directive.Dimensions as string[][];
      for (const metric of directive.Metrics as { Name: string }[]) {
        out.push({
          namespace: directive.Namespace,
          name: metric.Name,
          dimensions: Object.fromEntries(dimensionNames.map((d) => [d, emf[d]])),
          value: emf[metric.Name],
        });
      }
    }
  }
  return out;
}

describe('failure metrics', () => {
  let alarms: Record<string, Json>;
  let functionEnv: (fnId: string) => Record<string, string>;
  let stdout: string[];

  beforeAll(() => {
    const s = synthesize({ vectorStore: 'pgvector' });
    alarms = Object.fromEntries(
      Object.values(ofType(s.resources, 'AWS::CloudWatch::Alarm'))
        .map((a) => a.Properties as Json)
        .filter((p) => Object.values(APP_METRICS).includes(p.MetricName))
        .map((p) => [p.MetricName, p]),
    );
    functionEnv = (fnId) =>
      (byConstructId(s.resources, fnId).properties.Environment as Json).Variables;
  });

  /** Loads the handler modules afresh inside "Lambda" with the function's deployed Powertools settings. */
  async function inLambda(fnId: string) {
    const env = functionEnv(fnId);
    vi.stubEnv('AWS_LAMBDA_FUNCTION_NAME', fnId);
    vi.stubEnv('POWERTOOLS_SERVICE_NAME', env.POWERTOOLS_SERVICE_NAME);
    vi.stubEnv('POWERTOOLS_METRICS_NAMESPACE', env.POWERTOOLS_METRICS_NAMESPACE);
    vi.stubEnv('POWERTOOLS_TRACE_ENABLED', 'false');
    vi.resetModules();
    const helpers = await import('./helpers.js');
    const ingest = await import('../../../functions/ingest/handler.js');
    const record = await import('../../../functions/experiment-record/handler.js');
    return { runtime: helpers.createTestRuntime(), ingest, record };
  }

  /** The alarm's metric identity, in the shape of {@link Emitted}. */
  function alarmed(name: string): Omit<Emitted, 'value'> {
    const alarm = alarms[name];
    return {
      namespace: alarm.Namespace,
      name: alarm.MetricName,
      dimensions: Object.fromEntries(alarm.Dimensions.map((d: Json) => [d.Name, d.Value])),
    };
  }

  beforeEach(() => {
    s3Mock.reset();
    sqsMock.reset();
    sqsMock.on(SendMessageBatchCommand).resolves({ Successful: [], Failed: [] });
    stdout = [];
    vi.spyOn(process.stdout, 'write').mockImplementation((chunk: unknown) => {
      stdout.push(String(chunk));
      return true;
    });
  });
  afterEach(() => {
    vi.restoreAllMocks();
    vi.unstubAllEnvs();
    vi.resetModules();
  });

  it('emits FailedDocuments for an upload ingestion marks failed, as its alarm watches it', async () => {
    // Prepare
    const { runtime, ingest } = await inLambda('IngestFunction');
    s3Mock.on(GetObjectCommand, { Key: 'tool.exe' }).resolves({ Body: s3Body('MZ') });
    const event = getTestEvent<SQSEvent>('sqs-s3-object-created');
    const body = JSON.parse(event.Records[0]?.body ?? '');
    body.Records[0].s3.object.key = 'tool.exe';
    (event.Records[0] as { body: string }).body = JSON.stringify(body);

    // Act
    const out = await ingest.createIngestHandler(runtime)(event, context);
    await runtime.close();

    // Assess
    expect(out).toEqual({ batchItemFailures: [] });
    expect(emitted(stdout)).toContainEqual({
      ...alarmed(APP_METRICS.failedDocuments),
      value: 1,
    });
  });

  it('emits FailedRecords for a record the ingest handler fails, as its alarm watches it', async () => {
    // Prepare
    const { runtime, ingest } = await inLambda('IngestFunction');

    // Act
    const out = await ingest.createIngestHandler(runtime)(sqsEvent(['not json']), context);
    await runtime.close();

    // Assess
    expect(out).toEqual({ batchItemFailures: [{ itemIdentifier: 'm1' }] });
    expect(emitted(stdout)).toContainEqual({ ...alarmed(APP_METRICS.failedRecords), value: 1 });
    expect(emitted(stdout).map((m) => m.name)).not.toContain(APP_METRICS.failedDocuments);
  });

  it('emits FailedTrials for the failures Record folds into the ledger, as its alarm watches it', async () => {
    // Prepare
    const { runtime, record } = await inLambda('ExperimentRecordFunction');
    const { putJson } = await import('../../../shared/src/ports/object-store.js');
    const trial = (trialId: string) => ({ trialId, status: 'running', score: null, config: {} });
    await putJson(runtime.objectStore, 'experiments/m1/state.json', {
      trials: [trial('t0001'), trial('t0002')],
      indexes: {},
    });
    const error = { Error: 'Lambda.TooManyRequestsException', Cause: 'Rate exceeded' };

    // Act
    const out = await record.createExperimentRecordHandler(runtime)(
      {
        experimentId: 'm1',
        prefix: 'experiments/m1/',
        results: [
          { trialId: 't0001', ok: false, error },
          { trialId: 't0002', ok: false, error },
        ],
      },
      context,
    );
    await runtime.close();

    // Assess
    expect(out).toEqual({ recorded: 2, failed: 2 });
    expect(emitted(stdout)).toContainEqual({ ...alarmed(APP_METRICS.failedTrials), value: 2 });
  });
});
