import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Match } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { FUNCTION_IDS } from '../../lib/ai4rag-stack.js';
import {
  byConstructId,
  type Json,
  ofType,
  parseDefinition,
  type Synthesized,
  synthesize,
} from './template.js';

const ZILLIZ = { vectorStore: 'zilliz', zillizUri: 'https://example.zillizcloud.com' };

const servingPatternFile = (): string => {
  const dir = mkdtempSync(join(tmpdir(), 'ai4rag-cdk-'));
  const file = join(dir, 'pattern.json');
  writeFileSync(
    file,
    JSON.stringify({
      name: 'Pattern2',
      iteration: 1,
      settings: {
        vector_store_binding: { provider_type: 'pgvector', collection_name: 'ai4rag_p2' },
        embedding: { model_id: 'text-embedding-3-small' },
        retrieval: { method: 'window', number_of_chunks: 4, search_mode: 'vector', window_size: 1 },
        generation: {
          model_id: 'gpt-4o-mini',
          temperature: 0,
          max_completion_tokens: 300,
          context_template_text: '{document}',
          user_message_text: '{reference_documents}\n{question}',
          system_message_text: 'Be brief.',
          language: { code: 'en', name: 'English' },
        },
      },
    }),
  );
  return file;
};

const envOf = (s: Synthesized, constructId: string): Record<string, unknown> => {
  const { properties } = byConstructId(s.resources, constructId);
  return (properties.Environment as { Variables: Record<string, unknown> }).Variables;
};

describe.each([
  ['pgvector', { vectorStore: 'pgvector' }],
  ['zilliz', ZILLIZ],
])('Ai4ragStack (%s)', (variant, context) => {
  let s: Synthesized;
  beforeAll(() => {
    s = synthesize(context);
  });

  it('defines the twelve functions on Node.js 22, arm64, with tracing and a log group', () => {
    for (const id of FUNCTION_IDS) {
      const { properties } = byConstructId(s.resources, id);
      expect(properties, id).toMatchObject({
        Runtime: 'nodejs22.x',
        Architectures: ['arm64'],
        Handler: 'index.handler',
        TracingConfig: { Mode: 'Active' },
        LoggingConfig: { LogFormat: 'JSON', LogGroup: { Ref: expect.stringMatching(/Logs/) } },
      });
    }
  });

  it('runs the scheduled index step hourly on pgvector, as the writer in the VPC, without retries (none on Zilliz)', () => {
    const rules = Object.entries(ofType(s.resources, 'AWS::Events::Rule'));
    const index = Object.entries(ofType(s.resources, 'AWS::Lambda::Function')).filter(([id]) =>
      /^IndexBuildFunction[0-9A-F]{8}$/.test(id),
    );
    if (variant !== 'pgvector') {
      expect(index).toEqual([]);
      expect(rules).toEqual([]);
      return;
    }
    const [fnId, fn] = index[0] ?? [];
    expect(index).toHaveLength(1);
    expect(fn?.Properties).toMatchObject({
      Runtime: 'nodejs22.x',
      Handler: 'index.handler',
      Timeout: 900,
      VpcConfig: expect.any(Object),
    });
    const env = envOf(s, 'IndexBuildFunction');
    expect(env).toMatchObject({
      AI4RAG_COLLECTION: 'ai4rag_default',
      AI4RAG_STORE: 'pgvector',
      PGVECTOR_SECRET_ARN: envOf(s, 'EmbedBatchFunction').PGVECTOR_SECRET_ARN,
    });
    expect(rules).toHaveLength(1);
    const [ruleId, rule] = rules[0] ?? [];
    expect(rule?.Properties).toMatchObject({
      ScheduleExpression: 'rate(1 hour)',
      State: 'ENABLED',
      Targets: [
        {
          Arn: { 'Fn::GetAtt': [fnId, 'Arn'] },
          RetryPolicy: { MaximumRetryAttempts: 0 },
        },
      ],
    });
    const permissions = Object.values(ofType(s.resources, 'AWS::Lambda::Permission')).filter(
      (p) => p.Properties?.Principal === 'events.amazonaws.com',
    );
    expect(permissions.map((p) => p.Properties)).toEqual([
      {
        Action: 'lambda:InvokeFunction',
        FunctionName: { 'Fn::GetAtt': [fnId, 'Arn'] },
        Principal: 'events.amazonaws.com',
        SourceArn: { 'Fn::GetAtt': [ruleId, 'Arn'] },
      },
    ]);
  });

  it('gives every pipeline queue a DLQ after 3 receives and 6 × its consumer timeout', () => {
    // Prepare
    const queues = ofType(s.resources, 'AWS::SQS::Queue');

    // Act
    const withDlq = Object.entries(queues).filter(([, q]) => q.Properties?.RedrivePolicy);
    const visibility = Object.fromEntries(
      withDlq.map(([id, q]) => [id.replace(/[0-9A-F]{8}$/, ''), q.Properties?.VisibilityTimeout]),
    );

    // Assess
    expect(Object.keys(queues)).toHaveLength(6);
    expect(visibility).toEqual({ IngestQueue: 720, ChunkQueue: 720, EmbedQueue: 1800 });
    for (const [, queue] of withDlq) {
      const redrive = queue.Properties?.RedrivePolicy as Record<string, unknown>;
      expect(redrive.maxReceiveCount).toBe(3);
      const target = (redrive.deadLetterTargetArn as { 'Fn::GetAtt': [string, string] })[
        'Fn::GetAtt'
      ][0];
      expect(queues[target]?.Type).toBe('AWS::SQS::Queue');
      expect(queues[target]?.Properties?.RedrivePolicy).toBeUndefined();
    }
  });

  it('encrypts and enforces TLS on every queue and bucket', () => {
    for (const queue of Object.values(ofType(s.resources, 'AWS::SQS::Queue'))) {
      expect(queue.Properties?.SqsManagedSseEnabled).toBe(true);
    }
    for (const bucket of Object.values(ofType(s.resources, 'AWS::S3::Bucket'))) {
      expect(bucket.Properties).toMatchObject({
        BucketEncryption: {
          ServerSideEncryptionConfiguration: [
            { ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } },
          ],
        },
        PublicAccessBlockConfiguration: {
          BlockPublicAcls: true,
          BlockPublicPolicy: true,
          IgnorePublicAcls: true,
          RestrictPublicBuckets: true,
        },
      });
    }
    const policies = Object.values(ofType(s.resources, 'AWS::S3::BucketPolicy'));
    const queuePolicies = Object.values(ofType(s.resources, 'AWS::SQS::QueuePolicy'));
    for (const policy of [...policies, ...queuePolicies]) {
      expect(JSON.stringify(policy.Properties)).toContain('"aws:SecureTransport":"false"');
    }
    expect(policies).toHaveLength(3);
    expect(queuePolicies).toHaveLength(6);
  });

  it('versions and access-logs the documents and artifacts buckets', () => {
    for (const id of ['DocumentsBucket', 'ArtifactsBucket']) {
      const { properties } = byConstructId(s.resources, id);
      expect(properties.VersioningConfiguration, id).toEqual({ Status: 'Enabled' });
      expect(properties.LoggingConfiguration, id).toMatchObject({
        DestinationBucketName: { Ref: expect.stringMatching(/^AccessLogsBucket/) },
      });
    }
  });

  it('sends ObjectCreated and ObjectRemoved of the documents bucket to the ingest queue', () => {
    // Prepare
    const ingestQueue = byConstructId(s.resources, 'IngestQueue').logicalId;

    // Assess
    s.template.hasResourceProperties('Custom::S3BucketNotifications', {
      BucketName: { Ref: byConstructId(s.resources, 'DocumentsBucket').logicalId },
      NotificationConfiguration: {
        QueueConfigurations: [
          { Events: ['s3:ObjectCreated:*'], QueueArn: { 'Fn::GetAtt': [ingestQueue, 'Arn'] } },
          { Events: ['s3:ObjectRemoved:*'], QueueArn: { 'Fn::GetAtt': [ingestQueue, 'Arn'] } },
        ],
      },
    });
  });

  it('consumes the three queues with partial batch failure reporting', () => {
    const mappings = Object.values(ofType(s.resources, 'AWS::Lambda::EventSourceMapping'));
    const consumers = mappings.map((m) => ({
      fn: String((m.Properties as Json).FunctionName.Ref).replace(/[0-9A-F]{8}$/, ''),
      queue: String((m.Properties as Json).EventSourceArn['Fn::GetAtt'][0]).replace(
        /[0-9A-F]{8}$/,
        '',
      ),
      failures: m.Properties?.FunctionResponseTypes,
    }));
    expect(consumers.sort((a, b) => a.fn.localeCompare(b.fn))).toEqual([
      { fn: 'ChunkFunction', queue: 'ChunkQueue', failures: ['ReportBatchItemFailures'] },
      { fn: 'EmbedBatchFunction', queue: 'EmbedQueue', failures: ['ReportBatchItemFailures'] },
      { fn: 'IngestFunction', queue: 'IngestQueue', failures: ['ReportBatchItemFailures'] },
    ]);
  });

  it('authorizes every API method with IAM', () => {
    // Prepare
    const methods = Object.values(ofType(s.resources, 'AWS::ApiGateway::Method'));

    // Assess: the 9 routes, and ANY (405 / 404 from the functions) on each of the 10 resources
    expect(methods).toHaveLength(19);
    for (const method of methods) {
      expect(method.Properties?.AuthorizationType).toBe('AWS_IAM');
    }
    expect(methods.map((m) => m.Properties?.HttpMethod).sort()).toEqual(
      [
        'DELETE',
        'GET',
        'GET',
        'GET',
        'GET',
        'POST',
        'POST',
        'POST',
        'POST',
        ...Array<string>(10).fill('ANY'),
      ].sort(),
    );
  });

  it('validates every POST body against a model', () => {
    const posts = Object.values(ofType(s.resources, 'AWS::ApiGateway::Method')).filter(
      (m) => m.Properties?.HttpMethod === 'POST',
    );
    for (const post of posts) {
      expect(post.Properties).toMatchObject({
        RequestValidatorId: { Ref: expect.stringMatching(/RequestValidator/) },
        RequestModels: { 'application/json': { Ref: expect.stringMatching(/Request/) } },
      });
    }
    s.template.hasResourceProperties('AWS::ApiGateway::RequestValidator', {
      ValidateRequestBody: true,
      ValidateRequestParameters: true,
    });
    s.template.resourceCountIs('AWS::ApiGateway::Model', 4);
  });

  it('derives the body models from the handlers’ zod schemas, refs inlined', () => {
    // Act
    const models = Object.fromEntries(
      Object.values(ofType(s.resources, 'AWS::ApiGateway::Model')).map((m) => [
        m.Properties?.Name,
        m.Properties?.Schema as Json,
      ]),
    );

    // Assess
    expect(Object.keys(models).sort()).toEqual([
      'ChatRequest',
      'GenerateRequest',
      'SearchRequest',
      'UploadRequest',
    ]);
    expect(models.UploadRequest).toEqual({
      $schema: 'http://json-schema.org/draft-04/schema#',
      type: 'object',
      properties: {
        key: { type: 'string', minLength: 1, maxLength: 1024 },
        content_type: { type: 'string', minLength: 1, maxLength: 255 },
      },
      required: ['key'],
      additionalProperties: false,
    });
    expect(models.SearchRequest.required).toEqual(['query']);
    expect(models.ChatRequest.properties.messages.items).toMatchObject({
      type: 'object',
      required: ['role', 'content'],
    });
    expect(JSON.stringify(models)).not.toContain('$ref');
  });

  it('throttles, traces and access-logs the API stage', () => {
    s.template.hasResourceProperties('AWS::ApiGateway::Stage', {
      StageName: 'v1',
      TracingEnabled: true,
      AccessLogSetting: { DestinationArn: Match.anyValue(), Format: Match.anyValue() },
      MethodSettings: [Match.objectLike({ ThrottlingRateLimit: 50, ThrottlingBurstLimit: 100 })],
    });
  });

  it('streams answers from GenerateStreamFunction through an IAM-authorized Function URL', () => {
    // Prepare
    const stream = byConstructId(s.resources, 'GenerateStreamFunction');

    // Assess
    s.template.hasResourceProperties('AWS::Lambda::Url', {
      AuthType: 'AWS_IAM',
      InvokeMode: 'RESPONSE_STREAM',
      TargetFunctionArn: { 'Fn::GetAtt': [stream.logicalId, 'Arn'] },
    });
    s.template.resourceCountIs('AWS::Lambda::Url', 1);
    expect(stream.properties).toMatchObject({
      Handler: 'index.streamHandler',
      Runtime: 'nodejs22.x',
      Architectures: ['arm64'],
    });
    expect((stream.properties.Environment as Json).Variables).toEqual(envOf(s, 'GenerateFunction'));
    const outputs = s.template.toJSON().Outputs as Record<string, unknown>;
    expect(Object.keys(outputs)).toEqual(
      expect.arrayContaining(['ApiUrl', 'StreamUrl', 'ExperimentStateMachineArn']),
    );
  });

  it('loops Propose → BudgetLeft? → RunTrials → Record → Propose in the state machine', () => {
    // Prepare
    const { properties } = byConstructId(s.resources, 'ExperimentStateMachine');

    // Act
    const asl = parseDefinition(properties.DefinitionString);
    const states = asl.States;

    // Assess
    expect(asl.StartAt).toBe('Prepare');
    // ResultPath '$' (the whole state becomes the result) is the ASL default, so it is not written.
    expect(states.Prepare).toMatchObject({ Type: 'Task', Next: 'StartRounds' });
    expect(states.StartRounds).toMatchObject({ Type: 'Pass', Next: 'Propose' });
    expect(states.Prepare.ResultPath).toBeUndefined();
    expect(states.Prepare.Parameters).toBeUndefined();
    expect(states.Propose).toMatchObject({
      ResultPath: '$.proposal',
      Parameters: { 'experimentId.$': '$.experimentId', 'prefix.$': '$.prefix' },
      Next: 'CountRound',
    });
    expect(states.CountRound).toMatchObject({ Type: 'Pass', Next: 'BudgetLeft?' });
    expect(states['BudgetLeft?']).toMatchObject({
      Type: 'Choice',
      Choices: [
        { Variable: '$.proposal.done', BooleanEquals: true, Next: 'Finalize' },
        { Next: 'RoundLimitReached' },
      ],
      Default: 'RunTrials',
    });
    expect(states.RunTrials).toMatchObject({
      Type: 'Map',
      ItemsPath: '$.proposal.trials',
      MaxConcurrency: 2,
      ResultPath: '$.results',
      Next: 'Record',
      ItemSelector: {
        'experimentId.$': '$.experimentId',
        'prefix.$': '$.prefix',
        'trialId.$': '$$.Map.Item.Value.trialId',
      },
    });
    expect(states.Record).toMatchObject({
      ResultPath: null,
      Parameters: { 'results.$': '$.results' },
      Next: 'Propose',
    });
    expect(states.Finalize).toMatchObject({ ResultPath: '$.artefacts', Next: 'Done' });
    expect(states.Done).toEqual({ Type: 'Succeed' });
  });

  it('runs IndexTrial → EmbedBatches → EvaluateTrial per trial, each caught into TrialFailed', () => {
    // Prepare
    const { properties } = byConstructId(s.resources, 'ExperimentStateMachine');

    // Act
    const processor = parseDefinition(properties.DefinitionString).States.RunTrials.ItemProcessor;
    const inner = processor.States;

    // Assess
    expect(processor.StartAt).toBe('IndexTrial');
    expect(Object.keys(inner).sort()).toEqual(
      ['EmbedBatches', 'EvaluateTrial', 'IndexTrial', 'TrialFailed'].sort(),
    );
    expect(inner.IndexTrial).toMatchObject({ ResultPath: '$.index', Next: 'EmbedBatches' });
    expect(inner.EmbedBatches).toMatchObject({
      Type: 'Map',
      ItemsPath: '$.index.batches',
      MaxConcurrency: 4,
      ResultPath: null,
      Next: 'EvaluateTrial',
      ItemSelector: {
        'experimentId.$': '$.experimentId',
        'prefix.$': '$.prefix',
        'trialId.$': '$.trialId',
        'collection.$': '$.index.collection',
        'batchKey.$': '$$.Map.Item.Value',
      },
    });
    expect(inner.EvaluateTrial).toMatchObject({ End: true });
    expect(inner.EvaluateTrial.ResultPath).toBeUndefined();
    for (const name of ['IndexTrial', 'EmbedBatches', 'EvaluateTrial']) {
      expect(inner[name].Catch, name).toEqual([
        { ErrorEquals: ['States.ALL'], ResultPath: '$.error', Next: 'TrialFailed' },
      ]);
    }
    expect(inner.TrialFailed).toEqual({
      Type: 'Pass',
      Parameters: { 'trialId.$': '$.trialId', ok: false, 'error.$': '$.error' },
      End: true,
    });
  });

  it('logs ALL and traces the state machine', () => {
    s.template.hasResourceProperties('AWS::StepFunctions::StateMachine', {
      StateMachineType: 'STANDARD',
      TracingConfiguration: { Enabled: true },
      LoggingConfiguration: Match.objectLike({ Level: 'ALL', IncludeExecutionData: true }),
    });
  });

  it('alarms on each DLQ, each function’s errors and throttles, and failed experiments', () => {
    // Prepare
    const alarms = Object.values(ofType(s.resources, 'AWS::CloudWatch::Alarm'));

    // Act
    const metrics = alarms.map((a) => a.Properties?.MetricName);

    // Assess
    // 12 application functions + the streaming one (+ the scheduled index step on pgvector); the queue, API,
    // custom-metric and database alarms (and their thresholds) are covered by monitoring.test.ts.
    const zeroThreshold = [
      'ApproximateNumberOfMessagesVisible',
      'Errors',
      'Throttles',
      'ExecutionsFailed',
    ];
    expect(metrics.filter((m) => m === 'ApproximateNumberOfMessagesVisible')).toHaveLength(3);
    const fns = variant === 'pgvector' ? 14 : 13;
    expect(metrics.filter((m) => m === 'Errors')).toHaveLength(fns);
    expect(metrics.filter((m) => m === 'Throttles')).toHaveLength(fns);
    expect(metrics.filter((m) => m === 'ExecutionsFailed')).toHaveLength(1);
    expect(alarms).toHaveLength(3 + 2 * fns + 1 + 11 + (variant === 'pgvector' ? 4 : 0));
    for (const alarm of alarms) {
      expect(alarm.Properties).toMatchObject({
        AlarmActions: [{ Ref: expect.stringMatching(/AlarmTopic/) }],
      });
      if (zeroThreshold.includes(alarm.Properties?.MetricName as string)) {
        expect(alarm.Properties).toMatchObject({
          Threshold: 0,
          ComparisonOperator: 'GreaterThanThreshold',
        });
      }
    }
    s.template.hasResourceProperties('AWS::SNS::Topic', {
      KmsMasterKeyId: Match.anyValue(),
    });
    s.template.resourceCountIs('AWS::CloudWatch::Dashboard', 1);
  });

  it('passes the store settings to store clients only', () => {
    // Act
    const search = envOf(s, 'SearchFunction');
    const propose = envOf(s, 'ExperimentProposeFunction');

    // Assess
    const storeKeys =
      variant === 'pgvector'
        ? ['PGVECTOR_HOST', 'PGVECTOR_PORT', 'PGVECTOR_DB', 'PGVECTOR_SECRET_ARN']
        : ['MILVUS_URI', 'MILVUS_TOKEN_SECRET_ARN'];
    expect(search).toMatchObject({
      AI4RAG_STORE: variant === 'pgvector' ? 'pgvector' : 'milvus',
      AI4RAG_COLLECTION: 'ai4rag_default',
      AI4RAG_EMBEDDING_MODEL: 'local',
      AI4RAG_FOUNDATION_MODEL: 'local/extractive-v1',
      POWERTOOLS_SERVICE_NAME: 'ai4rag',
    });
    for (const key of storeKeys) {
      expect(search[key], key).toBeDefined();
      expect(propose[key], key).toBeUndefined();
    }
    expect(search.OPENAI_BASE_URL).toBeUndefined();
    expect(envOf(s, 'IngestFunction').AI4RAG_CHUNK_QUEUE_URL).toEqual({
      Ref: byConstructId(s.resources, 'ChunkQueue').logicalId,
    });
    expect(envOf(s, 'ChunkFunction').AI4RAG_EMBED_QUEUE_URL).toEqual({
      Ref: byConstructId(s.resources, 'EmbedQueue').logicalId,
    });
  });

  it('gives SearchFunction no bucket access and the experiment functions only experiments/*', () => {
    // Prepare
    const policies = Object.entries(ofType(s.resources, 'AWS::IAM::Policy'));
    const policyOf = (fnId: string): string => {
      const match = policies.find(([id]) => id.startsWith(`${fnId}ServiceRoleDefaultPolicy`));
      return JSON.stringify(match?.[1].Properties);
    };

    // Act
    const search = policyOf('SearchFunction');
    const propose = policyOf('ExperimentProposeFunction');

    // Assess
    expect(search).not.toContain('s3:');
    expect(search).toContain('secretsmanager:GetSecretValue');
    expect(propose).toContain('/experiments/*');
    expect(propose).not.toContain('/batches/*');
    expect(propose).not.toContain('secretsmanager:');
    expect(policyOf('DocumentsFunction')).toContain('s3:PutObject');
    expect(policyOf('DocumentsFunction')).toContain('/status/*');
    expect(policyOf('EvaluateFunction')).toContain('/cache/*');
    expect(policyOf('EvaluateFunction')).not.toContain('/status/*');
  });
});

describe('Ai4ragStack (pgvector specifics)', () => {
  let s: Synthesized;
  beforeAll(() => {
    s = synthesize({ vectorStore: 'pgvector' });
  });

  it('runs PostgreSQL 16, encrypted, with generated credentials, behind a TLS-only proxy', () => {
    s.template.hasResourceProperties('AWS::RDS::DBInstance', {
      Engine: 'postgres',
      EngineVersion: '16',
      StorageEncrypted: true,
      DeletionProtection: true,
      BackupRetentionPeriod: 7,
      PubliclyAccessible: false,
    });
    s.template.hasResourceProperties('AWS::RDS::DBProxy', {
      EngineFamily: 'POSTGRESQL',
      RequireTLS: true,
    });
    // The master secret and one per application role (ai4rag_writer, ai4rag_reader).
    s.template.resourceCountIs('AWS::SecretsManager::Secret', 3);
  });

  it('places database clients in isolated subnets with S3, SQS, Secrets Manager and X-Ray endpoints', () => {
    // Act
    const endpoints = Object.values(ofType(s.resources, 'AWS::EC2::VPCEndpoint')).map((e) =>
      JSON.stringify(e.Properties?.ServiceName),
    );

    // Assess
    s.template.resourceCountIs('AWS::EC2::NatGateway', 0);
    expect(endpoints.some((e) => e.includes('.s3'))).toBe(true);
    for (const service of ['sqs', 'secretsmanager', 'xray']) {
      expect(
        endpoints.some((e) => e.includes(`.${service}`)),
        service,
      ).toBe(true);
    }
    expect(byConstructId(s.resources, 'SearchFunction').properties.VpcConfig).toBeDefined();
    expect(
      byConstructId(s.resources, 'ExperimentProposeFunction').properties.VpcConfig,
    ).toBeUndefined();
  });

  it('lets the Lambda security group reach the proxy only on 5432', () => {
    const ingress = Object.values(ofType(s.resources, 'AWS::EC2::SecurityGroupIngress')).map(
      (r) => ({
        port: r.Properties?.FromPort,
        to: String((r.Properties as Json).GroupId['Fn::GetAtt'][0]),
        from: String((r.Properties as Json).SourceSecurityGroupId['Fn::GetAtt'][0]),
      }),
    );
    const simplify = (id: string) => id.replace(/^VectorStore/, '').replace(/[0-9A-F]{8}$/, '');
    expect(
      ingress
        .map((r) => `${simplify(r.from)} -> ${simplify(r.to)}:${JSON.stringify(r.port)}`)
        .map((line) => line.replace(/[0-9A-F]{8}",.*$/, ''))
        .sort(),
    ).toEqual([
      'LambdaSecurityGroup -> EndpointSecurityGroup:443',
      'LambdaSecurityGroup -> ProxySecurityGroup:5432',
      // The database port is the instance's endpoint port (5432), referenced by token.
      'ProxySecurityGroup -> DatabaseSecurityGroup:{"Fn::GetAtt":["VectorStoreDatabase',
    ]);
  });

  it('enables the vector extension at deploy time through DbInitFunction', () => {
    s.template.hasResourceProperties('Custom::Ai4ragPgvectorExtension', {
      extension: 'vector',
      database: 'ai4rag',
      port: '5432',
    });
    expect(byConstructId(s.resources, 'DbInitFunction').properties).toMatchObject({
      Runtime: 'nodejs22.x',
      VpcConfig: expect.anything(),
    });
  });
});

describe('Ai4ragStack (zilliz specifics)', () => {
  let s: Synthesized;
  beforeAll(() => {
    s = synthesize(ZILLIZ);
  });

  it('has no VPC, no database and no function in a VPC', () => {
    s.template.resourceCountIs('AWS::EC2::VPC', 0);
    s.template.resourceCountIs('AWS::RDS::DBInstance', 0);
    s.template.resourceCountIs('AWS::RDS::DBProxy', 0);
    for (const fn of Object.values(ofType(s.resources, 'AWS::Lambda::Function'))) {
      expect(fn.Properties?.VpcConfig).toBeUndefined();
    }
  });

  it('passes the Zilliz URI and the token secret by name', () => {
    expect(envOf(s, 'SearchFunction')).toMatchObject({
      AI4RAG_STORE: 'milvus',
      MILVUS_URI: 'https://example.zillizcloud.com',
      MILVUS_TOKEN_SECRET_ARN: {
        'Fn::Join': ['', expect.arrayContaining([':secret:ai4rag/zilliz-token'])],
      },
    });
  });
});

describe('Ai4ragStack (API keys, OpenAI endpoint, serving pattern)', () => {
  let s: Synthesized;
  beforeAll(() => {
    s = synthesize({
      vectorStore: 'pgvector',
      apiAuth: 'apiKey',
      openaiBaseUrl: 'https://models.example.com/v1',
      foundationModel: 'gpt-4o',
      servingPattern: servingPatternFile(),
      trialConcurrency: '5',
    });
  });

  it('requires an API key on every method, with a usage plan', () => {
    const methods = Object.values(ofType(s.resources, 'AWS::ApiGateway::Method'));
    expect(methods).toHaveLength(19);
    for (const method of methods) {
      expect(method.Properties?.ApiKeyRequired).toBe(true);
    }
    s.template.resourceCountIs('AWS::ApiGateway::ApiKey', 1);
    s.template.resourceCountIs('AWS::ApiGateway::UsagePlanKey', 1);
    s.template.hasResourceProperties('AWS::ApiGateway::UsagePlan', {
      Throttle: { RateLimit: 50, BurstLimit: 100 },
    });
  });

  it('passes the serving pattern to every knowledge-base function (writers and readers agree)', () => {
    // Act
    const search = envOf(s, 'SearchFunction');
    const pattern = JSON.parse(String(search.AI4RAG_SERVING_PATTERN));

    // Assess
    expect(pattern.name).toBe('Pattern2');
    expect(pattern.settings.retrieval).toEqual({
      method: 'window',
      number_of_chunks: 4,
      search_mode: 'vector',
      window_size: 1,
    });
    expect(envOf(s, 'GenerateFunction').AI4RAG_SERVING_PATTERN).toBe(search.AI4RAG_SERVING_PATTERN);
    expect(envOf(s, 'GenerateStreamFunction').AI4RAG_SERVING_PATTERN).toBe(
      search.AI4RAG_SERVING_PATTERN,
    );
    for (const id of [
      'IngestFunction',
      'ChunkFunction',
      'EmbedBatchFunction',
      'DocumentsFunction',
    ]) {
      expect(envOf(s, id).AI4RAG_SERVING_PATTERN, id).toBe(search.AI4RAG_SERVING_PATTERN);
    }
    expect(envOf(s, 'EvaluateFunction').AI4RAG_SERVING_PATTERN).toBeUndefined();
    expect(search).toMatchObject({
      OPENAI_BASE_URL: 'https://models.example.com/v1',
      AI4RAG_EMBEDDING_MODEL: 'text-embedding-3-small',
      AI4RAG_FOUNDATION_MODEL: 'gpt-4o',
    });
  });

  it('adds one NAT gateway so the functions reach the model endpoint', () => {
    s.template.resourceCountIs('AWS::EC2::NatGateway', 1);
  });

  it('uses trialConcurrency as the RunTrials MaxConcurrency', () => {
    const { properties } = byConstructId(s.resources, 'ExperimentStateMachine');
    expect(parseDefinition(properties.DefinitionString).States.RunTrials.MaxConcurrency).toBe(5);
  });
});

describe('Ai4ragStack (per-role model endpoints)', () => {
  let s: Synthesized;
  beforeAll(() => {
    s = synthesize({
      vectorStore: 'pgvector',
      embeddingBaseUrl: 'http://tei.internal:8080/v1',
      embeddingModel: 'BAAI/bge-small-en-v1.5',
      chatBaseUrl: 'https://vllm.example.com/v1',
      chatApiKeySecretName: 'ai4rag/vllm-key',
      foundationModel: 'meta-llama/Llama-3.1-8B-Instruct',
    });
  });

  it('gives the model functions each role endpoint and its key secret, and nothing of OPENAI_*', () => {
    // Act
    const generate = envOf(s, 'GenerateFunction');
    // Assess
    expect(generate).toMatchObject({
      AI4RAG_EMBEDDING_BASE_URL: 'http://tei.internal:8080/v1',
      AI4RAG_CHAT_BASE_URL: 'https://vllm.example.com/v1',
      AI4RAG_EMBEDDING_MODEL: 'BAAI/bge-small-en-v1.5',
    });
    expect(JSON.stringify(generate.AI4RAG_CHAT_API_KEY_SECRET_ARN)).toContain(
      'secret:ai4rag/vllm-key',
    );
    expect(generate.OPENAI_BASE_URL).toBeUndefined();
    expect(generate.AI4RAG_EMBEDDING_API_KEY_SECRET_ARN).toBeUndefined();
  });
});

describe('Ai4ragStack (reranker)', () => {
  let s: Synthesized;
  beforeAll(() => {
    s = synthesize({
      vectorStore: 'pgvector',
      rerankBaseUrl: 'https://tei.example.com',
      rerankModel: 'BAAI/bge-reranker-base',
      rerankCandidates: '30',
      rerankApiKeySecretName: 'ai4rag/tei-key',
    });
  });

  it('passes the reranker to the query functions and the experiment trials only', () => {
    // Prepare
    const rerankFunctions = [
      'SearchFunction',
      'GenerateFunction',
      'GenerateStreamFunction',
      'EvaluateFunction',
      'ExperimentPrepareFunction',
    ];
    const others = [
      'IngestFunction',
      'ChunkFunction',
      'EmbedBatchFunction',
      'ExperimentProposeFunction',
    ];

    // Act
    const search = envOf(s, 'SearchFunction');

    // Assess
    expect(search).toMatchObject({
      AI4RAG_RERANK_BASE_URL: 'https://tei.example.com',
      AI4RAG_RERANK_MODEL: 'BAAI/bge-reranker-base',
      AI4RAG_RERANK_CANDIDATES: '30',
    });
    expect(JSON.stringify(search.AI4RAG_RERANK_API_KEY_SECRET_ARN)).toContain(
      'secret:ai4rag/tei-key',
    );
    for (const id of rerankFunctions) {
      expect(envOf(s, id).AI4RAG_RERANK_BASE_URL, id).toBe('https://tei.example.com');
    }
    for (const id of others) {
      expect(envOf(s, id).AI4RAG_RERANK_BASE_URL, id).toBeUndefined();
      expect(envOf(s, id).AI4RAG_RERANK_MODEL, id).toBeUndefined();
    }
  });

  it('lets only the reranking functions read the reranker key', () => {
    // Prepare
    const policies = Object.entries(ofType(s.resources, 'AWS::IAM::Policy'));
    const policyOf = (fnId: string): string =>
      JSON.stringify(
        policies.find(([id]) => id.startsWith(`${fnId}ServiceRoleDefaultPolicy`))?.[1].Properties,
      );

    // Assess
    expect(policyOf('SearchFunction')).toContain('secret:ai4rag/tei-key');
    expect(policyOf('EvaluateFunction')).toContain('secret:ai4rag/tei-key');
    expect(policyOf('IngestFunction')).not.toContain('secret:ai4rag/tei-key');
  });

  it('adds one NAT gateway so the functions in the VPC reach the reranker', () => {
    s.template.resourceCountIs('AWS::EC2::NatGateway', 1);
  });
});
