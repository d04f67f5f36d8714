/**
 * The whole cloud deployment in one stack: buckets, the S3 → SQS → Lambda ingestion pipeline, the vector
 * store (pgvector on RDS or Zilliz Cloud), the Query API, the experiment state machine and operations.
 * Every function, queue and grant is declared here so least privilege can be read in one place.
 */

import type { CfnResource } from 'aws-cdk-lib';
import {
  CfnOutput,
  Duration,
  RemovalPolicy,
  Stack,
  type StackProps,
  Validations,
} from 'aws-cdk-lib';
import * as events from 'aws-cdk-lib/aws-events';
import * as eventsTargets from 'aws-cdk-lib/aws-events-targets';
import { FunctionUrlAuthType, InvokeMode } from 'aws-cdk-lib/aws-lambda';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import * as s3 from 'aws-cdk-lib/aws-s3';
import { SqsDestination } from 'aws-cdk-lib/aws-s3-notifications';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import type { StateMachine } from 'aws-cdk-lib/aws-stepfunctions';
import type { Construct, IConstruct } from 'constructs';
import type { DeployConfig } from './config.js';
import { createExperimentStateMachine } from './constructs/experiment-state-machine.js';
import { Monitoring } from './constructs/monitoring.js';
import { createNodeFunction, type NodeFunctionSpec } from './constructs/node-function.js';
import { QueryApi } from './constructs/query-api.js';
import { type StoreAccess, VectorStore } from './constructs/vector-store.js';

/** Props of {@link Ai4ragStack}. */
export interface Ai4ragStackProps extends StackProps {
  /** Validated deploy configuration (see `parseDeployConfig`). */
  config: DeployConfig;
}

/** Construct ids of the twelve application functions (also their ids in the template). */
export const FUNCTION_IDS = [
  'IngestFunction',
  'ChunkFunction',
  'EmbedBatchFunction',
  'SearchFunction',
  'GenerateFunction',
  'DocumentsFunction',
  'EvaluateFunction',
  'ExperimentPrepareFunction',
  'ExperimentProposeFunction',
  'ExperimentIndexFunction',
  'ExperimentRecordFunction',
  'ExperimentFinalizeFunction',
] as const;

/**
 * Construct id of the streaming-answer function: the same bundle as GenerateFunction, but its
 * `streamHandler` export (a function has one handler, and streaming needs `streamifyResponse`).
 */
export const STREAM_FUNCTION_ID = 'GenerateStreamFunction';

/**
 * Construct id of the scheduled index step (pgvector stores only): the HNSW segment merges a commit's index step
 * leaves behind (functions/index-build), run by {@link INDEX_SCHEDULE_ID}.
 */
export const INDEX_FUNCTION_ID = 'IndexBuildFunction';
/** Construct id of the EventBridge rule that runs {@link INDEX_FUNCTION_ID} every {@link INDEX_SCHEDULE_HOURS} hours. */
export const INDEX_SCHEDULE_ID = 'IndexBuildSchedule';
/** Hours between two runs of the scheduled index step. */
export const INDEX_SCHEDULE_HOURS = 1;

/** One of {@link FUNCTION_IDS}. */
export type FunctionId = (typeof FUNCTION_IDS)[number];

/** Artifacts-bucket prefix of the ingestion chunk batches (SQS carries keys, S3 carries payloads). */
export const BATCHES_PREFIX = 'batches/';
/** Artifacts-bucket prefix of experiment inputs, trial state and outputs. */
export const EXPERIMENTS_PREFIX = 'experiments/';

/**
 * Artifacts-bucket key layout (shared/src/ingest/knowledge-base.ts, shared/src/experiment/ledger.ts):
 * `status/` ingestion status, `documents/` parsed documents too large for a message, `batches/` chunk
 * batches; `experiments/<id>/` experiment state, `indexes/` reusable trial-index markers, `cache/` the
 * trial result cache shared by experiments.
 */
export const ARTIFACT_PREFIXES: Partial<Record<FunctionId, readonly string[]>> = {
  IngestFunction: ['status/', 'documents/', BATCHES_PREFIX],
  ChunkFunction: ['status/', 'documents/', BATCHES_PREFIX],
  EmbedBatchFunction: ['status/', BATCHES_PREFIX, EXPERIMENTS_PREFIX],
  DocumentsFunction: ['status/', 'documents/', BATCHES_PREFIX],
  EvaluateFunction: [EXPERIMENTS_PREFIX, 'indexes/', 'cache/'],
  ExperimentPrepareFunction: [EXPERIMENTS_PREFIX],
  ExperimentProposeFunction: [EXPERIMENTS_PREFIX, 'cache/'],
  ExperimentIndexFunction: [EXPERIMENTS_PREFIX, 'indexes/'],
  ExperimentRecordFunction: [EXPERIMENTS_PREFIX],
  ExperimentFinalizeFunction: [EXPERIMENTS_PREFIX],
};

/**
 * Functions that rerank: the query functions (every request may) and the experiment's trials (a search space
 * may); prepare resolves the space's rerankers before any trial runs.
 */
const RERANK_FUNCTIONS: ReadonlySet<string> = new Set([
  'SearchFunction',
  'GenerateFunction',
  'EvaluateFunction',
  'ExperimentPrepareFunction',
  STREAM_FUNCTION_ID,
]);

/**
 * Functions that write or read the knowledge-base collection. They all get the same embedding model, chunking and
 * serving pattern (and the model endpoints, so a writer creates the collection with the model readers expect):
 * one source of truth, checked per configuration by test/cdk/environment.test.ts and run by test/deployed.
 */
export const KNOWLEDGE_BASE_FUNCTIONS: ReadonlySet<string> = new Set([
  'IngestFunction',
  'ChunkFunction',
  'EmbedBatchFunction',
  'SearchFunction',
  'GenerateFunction',
  'DocumentsFunction',
  STREAM_FUNCTION_ID,
]);

/** SQS visibility timeout must cover the consumer's retries within one receive: 6 × its timeout. */
const VISIBILITY_FACTOR = 6;
/** Receives before a message moves to the DLQ. */
const MAX_RECEIVE_COUNT = 3;

interface FunctionPlan {
  folder: string;
  handler?: string;
  description: string;
  memorySize: number;
  timeout: Duration;
  /** Store access: `read` connects as the read-only role, `write` as the writer; false: no store. */
  store: StoreAccess | false;
  model: boolean;
}

/** Sizing and needs of each function; grants beyond store/model are in the constructor. */
const PLAN: Record<FunctionId, FunctionPlan> = {
  IngestFunction: {
    folder: 'ingest',
    description:
      'ai4rag: parse an uploaded document, skip unchanged, queue chunking; delete on removal',
    memorySize: 1536,
    timeout: Duration.minutes(2),
    store: 'write',
    model: true,
  },
  ChunkFunction: {
    folder: 'chunk',
    description: 'ai4rag: chunk a parsed document into embedding batches',
    memorySize: 1024,
    timeout: Duration.minutes(2),
    store: 'write',
    model: true,
  },
  EmbedBatchFunction: {
    folder: 'embed-batch',
    description: 'ai4rag: embed one batch of chunks and upsert it into the vector store',
    memorySize: 1024,
    timeout: Duration.minutes(5),
    store: 'write',
    model: true,
  },
  SearchFunction: {
    folder: 'search',
    description: 'ai4rag: POST /search',
    memorySize: 1024,
    timeout: Duration.seconds(29),
    store: 'read',
    model: true,
  },
  GenerateFunction: {
    folder: 'generate',
    description: 'ai4rag: POST /generate and POST /chat',
    memorySize: 1024,
    timeout: Duration.minutes(5),
    store: 'read',
    model: true,
  },
  DocumentsFunction: {
    folder: 'documents',
    description: 'ai4rag: documents list/get/delete, upload URLs, stats, health',
    memorySize: 512,
    timeout: Duration.seconds(29),
    store: 'write',
    model: true,
  },
  EvaluateFunction: {
    folder: 'evaluate',
    description: 'ai4rag: answer and score the benchmark for one trial',
    memorySize: 2048,
    timeout: Duration.minutes(15),
    store: 'write',
    model: true,
  },
  ExperimentPrepareFunction: {
    folder: 'experiment-prepare',
    description: 'ai4rag: validate an experiment, build its search space',
    memorySize: 1024,
    timeout: Duration.minutes(5),
    store: false,
    model: true,
  },
  ExperimentProposeFunction: {
    folder: 'experiment-propose',
    description: 'ai4rag: propose the next trials (optimizer)',
    memorySize: 1024,
    timeout: Duration.minutes(2),
    store: false,
    model: false,
  },
  ExperimentIndexFunction: {
    folder: 'experiment-index',
    description: 'ai4rag: reuse or build a trial index, emit its embedding batches',
    memorySize: 2048,
    timeout: Duration.minutes(15),
    store: 'write',
    model: true,
  },
  ExperimentRecordFunction: {
    folder: 'experiment-record',
    description: 'ai4rag: record trial results (cache, events, artefacts)',
    memorySize: 512,
    timeout: Duration.minutes(2),
    store: false,
    model: false,
  },
  ExperimentFinalizeFunction: {
    folder: 'experiment-finalize',
    description: 'ai4rag: leaderboard, pattern.json, evaluation results, report',
    memorySize: 1024,
    timeout: Duration.minutes(5),
    store: 'write',
    model: false,
  },
};

/**
 * The scheduled index step: the knowledge base's writer, 15 minutes for the merges (`SCHEDULED_INDEX_ROWS`), and the
 * embedding model's settings only because a store opens with its embedder (it embeds nothing).
 */
const INDEX_PLAN: FunctionPlan = {
  folder: 'index-build',
  description:
    'ai4rag: scheduled HNSW segment merges and keyword-postings folds of the knowledge base',
  memorySize: 512,
  timeout: Duration.minutes(15),
  store: 'write',
  model: true,
};

/** The streaming function: GenerateFunction's bundle and needs, its `streamHandler` export. */
const STREAM_PLAN: FunctionPlan = {
  ...PLAN.GenerateFunction,
  handler: 'streamHandler',
  description: 'ai4rag: streaming answers (server-sent events) through the Function URL',
  // A Function URL stream may run up to 15 minutes; long answers from slow models fit in 5.
  timeout: Duration.minutes(5),
};

/** Logical id of a construct's CloudFormation resource, as cdk-nag prints it in finding ids. */
function logicalIdOf(construct: IConstruct): string {
  const resource = construct.node.defaultChild as CfnResource | undefined;
  if (resource === undefined) throw new Error(`${construct.node.path} has no default child`);
  return Stack.of(construct).getLogicalId(resource);
}

/**
 * The ai4rag deployment. Synthesize with `parseDeployConfig(readDeployContext(app.node))`.
 *
 * @example
 * const app = new App();
 * new Ai4ragStack(app, 'Ai4rag', { config: parseDeployConfig(readDeployContext(app.node)) });
 */
export class Ai4ragStack extends Stack {
  /** The twelve application functions by construct id. */
  readonly functions: Record<FunctionId, NodejsFunction>;
  /** The streaming-answer function behind the Function URL. */
  readonly streamFunction: NodejsFunction;
  /** The scheduled index step (pgvector stores only). */
  readonly indexFunction: NodejsFunction | undefined;
  readonly documentsBucket: s3.Bucket;
  readonly artifactsBucket: s3.Bucket;
  readonly stateMachine: StateMachine;
  readonly queryApi: QueryApi;
  readonly vectorStore: VectorStore;

  constructor(scope: Construct, id: string, props: Ai4ragStackProps) {
    super(scope, id, props);
    const { config } = props;
    const removal = config.autoDeleteBuckets ? RemovalPolicy.DESTROY : RemovalPolicy.RETAIN;

    // ---- Buckets -------------------------------------------------------------------------------
    const accessLogs = new s3.Bucket(this, 'AccessLogsBucket', {
      encryption: s3.BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
      lifecycleRules: [{ expiration: Duration.days(90) }],
      removalPolicy: removal,
      autoDeleteObjects: config.autoDeleteBuckets,
    });
    Validations.of(accessLogs).acknowledge({
      id: 'AwsSolutions-S1',
      reason: 'This is the server-access-log target bucket; logging it into itself would loop.',
    });
    const bucket = (bucketId: string, logPrefix: string, rules: s3.LifecycleRule[]): s3.Bucket =>
      new s3.Bucket(this, bucketId, {
        encryption: s3.BucketEncryption.S3_MANAGED,
        enforceSSL: true,
        versioned: true,
        blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
        objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
        serverAccessLogsBucket: accessLogs,
        serverAccessLogsPrefix: logPrefix,
        lifecycleRules: [{ noncurrentVersionExpiration: Duration.days(30) }, ...rules],
        removalPolicy: removal,
        autoDeleteObjects: config.autoDeleteBuckets,
      });
    const documentsBucket = bucket('DocumentsBucket', 'documents/', []);
    const artifactsBucket = bucket('ArtifactsBucket', 'artifacts/', [
      { prefix: BATCHES_PREFIX, expiration: Monitoring.BATCHES_RETENTION },
    ]);
    this.documentsBucket = documentsBucket;
    this.artifactsBucket = artifactsBucket;

    // ---- Vector store and model endpoint -------------------------------------------------------
    const store = new VectorStore(this, 'VectorStore', { config });
    this.vectorStore = store;
    const openaiKey =
      config.openai !== undefined
        ? secretsmanager.Secret.fromSecretNameV2(
            this,
            'OpenAiApiKey',
            config.openai.apiKeySecretName,
          )
        : undefined;
    // Per-role endpoints (AI4RAG_<ROLE>_BASE_URL, key secret AI4RAG_<ROLE>_API_KEY_SECRET_ARN), read by the
    // runtime through shared/src/endpoints.ts.
    const roleKeys: secretsmanager.ISecret[] = [];
    const roleEnvironment: Record<string, string> = {};
    for (const [role, endpoint] of Object.entries(config.endpoints ?? {})) {
      const prefix = `AI4RAG_${role.toUpperCase()}`;
      roleEnvironment[`${prefix}_BASE_URL`] = endpoint.baseUrl;
      if (endpoint.apiKeySecretName !== undefined) {
        const key = secretsmanager.Secret.fromSecretNameV2(
          this,
          `${role[0]?.toUpperCase()}${role.slice(1)}ApiKey`,
          endpoint.apiKeySecretName,
        );
        roleKeys.push(key);
        roleEnvironment[`${prefix}_API_KEY_SECRET_ARN`] = key.secretArn;
      }
    }
    const modelEnvironment: Record<string, string> = {
      AI4RAG_EMBEDDING_MODEL: config.embeddingModel,
      AI4RAG_FOUNDATION_MODEL: config.foundationModel,
      ...(config.openai !== undefined && openaiKey !== undefined
        ? { OPENAI_BASE_URL: config.openai.baseUrl, OPENAI_API_KEY_SECRET_ARN: openaiKey.secretArn }
        : {}),
      ...roleEnvironment,
    };
    const servingPattern =
      config.servingPattern !== undefined ? JSON.stringify(config.servingPattern) : undefined;
    const rerankKey =
      config.rerank?.apiKeySecretName !== undefined
        ? secretsmanager.Secret.fromSecretNameV2(
            this,
            'RerankApiKey',
            config.rerank.apiKeySecretName,
          )
        : undefined;
    const rerankEnvironment: Record<string, string> =
      config.rerank === undefined
        ? {}
        : {
            AI4RAG_RERANK_BASE_URL: config.rerank.baseUrl,
            ...(config.rerank.model !== undefined && { AI4RAG_RERANK_MODEL: config.rerank.model }),
            ...(config.rerank.candidates !== undefined && {
              AI4RAG_RERANK_CANDIDATES: String(config.rerank.candidates),
            }),
            ...(rerankKey !== undefined && {
              AI4RAG_RERANK_API_KEY_SECRET_ARN: rerankKey.secretArn,
            }),
          };

    // ---- Functions -----------------------------------------------------------------------------
    const baseEnvironment = {
      AI4RAG_COLLECTION: config.collection,
      AI4RAG_DOCUMENTS_BUCKET: documentsBucket.bucketName,
      AI4RAG_ARTIFACTS_BUCKET: artifactsBucket.bucketName,
      AI4RAG_STORE: store.environment.AI4RAG_STORE ?? config.vectorStore,
    };
    const functions = {} as Record<FunctionId, NodejsFunction>;
    const build = (fnId: string, plan: FunctionPlan, withPattern: boolean): NodejsFunction => {
      const spec: NodeFunctionSpec = {
        folder: plan.folder,
        ...(plan.handler !== undefined ? { handler: plan.handler } : {}),
        description: plan.description,
        memorySize: plan.memorySize,
        timeout: plan.timeout,
        environment: {
          ...baseEnvironment,
          ...(plan.store ? store.environmentFor(plan.store) : {}),
          ...(plan.model ? modelEnvironment : {}),
          ...(withPattern && servingPattern !== undefined
            ? { AI4RAG_SERVING_PATTERN: servingPattern }
            : {}),
          ...(RERANK_FUNCTIONS.has(fnId) ? rerankEnvironment : {}),
        },
        ...(plan.store && store.placement !== undefined ? { vpc: store.placement } : {}),
        // Only the store and models the plan grants are bundled (functions/_shared/bundle.ts).
        bundle: {
          ...(plan.store && { vectorStore: config.vectorStore }),
          remoteModels: plan.model,
        },
      };
      const fn = createNodeFunction(this, fnId, spec);
      if (plan.store) store.grantAccess(fn, plan.store);
      if (plan.model) openaiKey?.grantRead(fn);
      if (plan.model) for (const key of roleKeys) key.grantRead(fn);
      if (RERANK_FUNCTIONS.has(fnId)) rerankKey?.grantRead(fn);
      return fn;
    };
    for (const fnId of FUNCTION_IDS) {
      functions[fnId] = build(fnId, PLAN[fnId], KNOWLEDGE_BASE_FUNCTIONS.has(fnId));
    }
    const streamFunction = build(STREAM_FUNCTION_ID, STREAM_PLAN, true);
    this.streamFunction = streamFunction;
    this.functions = functions;
    // The HNSW segments are pgvector's; Milvus builds its own index.
    const indexFunction =
      config.vectorStore === 'pgvector' ? build(INDEX_FUNCTION_ID, INDEX_PLAN, true) : undefined;
    this.indexFunction = indexFunction;
    if (indexFunction !== undefined) {
      new events.Rule(this, INDEX_SCHEDULE_ID, {
        description: 'ai4rag: run the scheduled index step of the knowledge base',
        schedule: events.Schedule.rate(Duration.hours(INDEX_SCHEDULE_HOURS)),
        // No retry: a failed run left nothing half-done that cannot wait for the next one.
        targets: [new eventsTargets.LambdaFunction(indexFunction, { retryAttempts: 0 })],
      });
    }

    // ---- Ingestion pipeline --------------------------------------------------------------------
    const pipelineQueue = (name: string, consumer: NodejsFunction, timeout: Duration) => {
      const dlq = new sqs.Queue(this, `${name}Dlq`, {
        encryption: sqs.QueueEncryption.SQS_MANAGED,
        enforceSSL: true,
        retentionPeriod: Monitoring.DLQ_RETENTION,
      });
      Validations.of(dlq).acknowledge({
        id: 'AwsSolutions-SQS3',
        reason:
          'This queue is itself a dead-letter queue; its messages are alarmed on and redriven by hand.',
      });
      const queue = new sqs.Queue(this, `${name}Queue`, {
        encryption: sqs.QueueEncryption.SQS_MANAGED,
        enforceSSL: true,
        visibilityTimeout: Duration.seconds(timeout.toSeconds() * VISIBILITY_FACTOR),
        retentionPeriod: Duration.days(4),
        deadLetterQueue: { queue: dlq, maxReceiveCount: MAX_RECEIVE_COUNT },
      });
      return { queue, dlq, consumer };
    };
    const ingest = pipelineQueue('Ingest', functions.IngestFunction, PLAN.IngestFunction.timeout);
    const chunk = pipelineQueue('Chunk', functions.ChunkFunction, PLAN.ChunkFunction.timeout);
    const embed = pipelineQueue(
      'Embed',
      functions.EmbedBatchFunction,
      PLAN.EmbedBatchFunction.timeout,
    );
    documentsBucket.addEventNotification(
      s3.EventType.OBJECT_CREATED,
      new SqsDestination(ingest.queue),
    );
    documentsBucket.addEventNotification(
      s3.EventType.OBJECT_REMOVED,
      new SqsDestination(ingest.queue),
    );
    // Database-bound consumers are capped so a burst of uploads cannot exhaust proxy connections.
    functions.IngestFunction.addEventSource(
      new SqsEventSource(ingest.queue, {
        batchSize: 5,
        reportBatchItemFailures: true,
        maxConcurrency: 10,
      }),
    );
    functions.ChunkFunction.addEventSource(
      new SqsEventSource(chunk.queue, {
        batchSize: 5,
        reportBatchItemFailures: true,
        maxConcurrency: 10,
      }),
    );
    functions.EmbedBatchFunction.addEventSource(
      new SqsEventSource(embed.queue, {
        batchSize: 1,
        reportBatchItemFailures: true,
        maxConcurrency: 8,
      }),
    );
    functions.IngestFunction.addEnvironment('AI4RAG_CHUNK_QUEUE_URL', chunk.queue.queueUrl);
    chunk.queue.grantSendMessages(functions.IngestFunction);
    functions.ChunkFunction.addEnvironment('AI4RAG_EMBED_QUEUE_URL', embed.queue.queueUrl);
    embed.queue.grantSendMessages(functions.ChunkFunction);
    // DocumentsFunction re-queues a document for re-indexing on request.
    functions.DocumentsFunction.addEnvironment('AI4RAG_INGEST_QUEUE_URL', ingest.queue.queueUrl);
    ingest.queue.grantSendMessages(functions.DocumentsFunction);

    // ---- Bucket grants (least privilege per function) ------------------------------------------
    for (const [fnId, prefixes] of Object.entries(ARTIFACT_PREFIXES)) {
      for (const prefix of prefixes) {
        artifactsBucket.grantReadWrite(functions[fnId as FunctionId], `${prefix}*`);
      }
    }
    for (const fnId of [
      'IngestFunction',
      'ChunkFunction',
      'DocumentsFunction',
      'ExperimentPrepareFunction',
      'ExperimentIndexFunction',
    ] as const) {
      documentsBucket.grantRead(functions[fnId]);
    }
    documentsBucket.grantDelete(functions.DocumentsFunction);
    // Pre-signed upload URLs carry the signer's permissions.
    documentsBucket.grantPut(functions.DocumentsFunction);

    // ---- Query API and streaming ---------------------------------------------------------------
    const queryApi = new QueryApi(this, 'QueryApi', {
      search: functions.SearchFunction,
      generate: functions.GenerateFunction,
      documents: functions.DocumentsFunction,
      auth: config.apiAuth,
      ...(config.corsOrigins !== undefined && { corsOrigins: config.corsOrigins }),
    });
    this.queryApi = queryApi;
    const streamUrl = streamFunction.addFunctionUrl({
      authType: FunctionUrlAuthType.AWS_IAM,
      invokeMode: InvokeMode.RESPONSE_STREAM,
    });

    // ---- Experiment state machine --------------------------------------------------------------
    this.stateMachine = createExperimentStateMachine(this, {
      trialConcurrency: config.trialConcurrency,
      functions: {
        prepare: functions.ExperimentPrepareFunction,
        propose: functions.ExperimentProposeFunction,
        index: functions.ExperimentIndexFunction,
        embedBatch: functions.EmbedBatchFunction,
        evaluate: functions.EvaluateFunction,
        record: functions.ExperimentRecordFunction,
        finalize: functions.ExperimentFinalizeFunction,
      },
    });

    // ---- Operations ----------------------------------------------------------------------------
    const monitoring = new Monitoring(this, 'Monitoring', {
      functions: {
        ...functions,
        [STREAM_FUNCTION_ID]: streamFunction,
        ...(indexFunction !== undefined && { [INDEX_FUNCTION_ID]: indexFunction }),
      },
      deadLetterQueues: { IngestDlq: ingest.dlq, ChunkDlq: chunk.dlq, EmbedDlq: embed.dlq },
      queues: { IngestQueue: ingest.queue, ChunkQueue: chunk.queue, EmbedQueue: embed.queue },
      stateMachine: this.stateMachine,
      apiStage: queryApi.api.deploymentStage,
      ...(this.vectorStore.instance !== undefined && {
        database: {
          instance: this.vectorStore.instance,
          instanceType: config.database.instanceType,
          ...(this.vectorStore.proxy !== undefined && { proxy: this.vectorStore.proxy }),
        },
      }),
      ...(config.alarmEmail !== undefined ? { alarmEmail: config.alarmEmail } : {}),
    });

    // ---- Outputs -------------------------------------------------------------------------------
    new CfnOutput(this, 'ApiUrl', { value: queryApi.api.url, description: 'Query API base URL' });
    new CfnOutput(this, 'StreamUrl', {
      value: streamUrl.url,
      description:
        'Streaming answers (POST, server-sent events): Function URL, IAM auth, response streaming',
    });
    new CfnOutput(this, 'DocumentsBucketName', { value: documentsBucket.bucketName });
    new CfnOutput(this, 'ArtifactsBucketName', { value: artifactsBucket.bucketName });
    new CfnOutput(this, 'ExperimentStateMachineArn', {
      value: this.stateMachine.stateMachineArn,
    });
    new CfnOutput(this, 'AlarmTopicArn', { value: monitoring.topic.topicArn });
    if (queryApi.apiKey !== undefined) {
      new CfnOutput(this, 'ApiKeyId', {
        value: queryApi.apiKey.keyId,
        description: 'aws apigateway get-api-key --include-value --api-key <id> prints the key',
      });
    }

    this.acknowledgeFindings(config);
  }

  /** cdk-nag findings that are deliberate, each with its reason. */
  private acknowledgeFindings(config: DeployConfig): void {
    const ack = (scope: IConstruct, id: string, reason: string): void =>
      Validations.of(scope).acknowledge({ id: `AwsSolutions-${id}`, reason });
    ack(
      this,
      'L1',
      'Node.js 22 is the runtime the handlers are built and tested for (esbuild target node22); the CDK-provided custom-resource handlers pick their own runtime.',
    );
    ack(
      this,
      'IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]',
      'The AWS managed basic execution role only allows writing the function’s own CloudWatch logs.',
    );
    if (config.vectorStore === 'pgvector') {
      ack(
        this,
        'IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaVPCAccessExecutionRole]',
        'Functions in the VPC need ENI management; this AWS managed policy holds exactly those actions.',
      );
    }
    ack(
      this.queryApi,
      'IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs]',
      'API Gateway’s account-level CloudWatch role uses the AWS managed push-to-logs policy.',
    );
    ack(
      this,
      'IAM5[Resource::*]',
      'X-Ray PutTraceSegments/PutTelemetryRecords and ENI actions do not support resource-level permissions.',
    );
    const bucketWildcards = [
      'Action::s3:GetObject*',
      'Action::s3:GetBucket*',
      'Action::s3:List*',
      'Action::s3:DeleteObject*',
      'Action::s3:Abort*',
    ];
    for (const finding of bucketWildcards) {
      ack(
        this,
        `IAM5[${finding}]`,
        'aws-cdk-lib bucket grants use these action families (object versions, tagging, multipart); the resources are limited to one bucket or prefix.',
      );
    }
    const documents = `<${logicalIdOf(this.documentsBucket)}.Arn>`;
    const artifacts = `<${logicalIdOf(this.artifactsBucket)}.Arn>`;
    ack(
      this,
      `IAM5[Resource::${documents}/*]`,
      'Ingestion, documents management and experiments read (documents also deletes and uploads) any uploaded document: document keys are user-chosen.',
    );
    const reasons: Record<string, string> = {
      'status/':
        'Ingestion status objects are keyed by collection and document; access is limited to status/.',
      'documents/':
        'Parsed documents too large for a message are keyed by collection, document and hash; access is limited to documents/.',
      [BATCHES_PREFIX]:
        'Chunk batches are keyed by collection, document and hash; access is limited to batches/.',
      [EXPERIMENTS_PREFIX]:
        'Experiment state lives under experiments/<id>/ with generated ids; access is limited to experiments/.',
      'indexes/':
        'Reusable trial-index markers are keyed by collection; access is limited to indexes/.',
      'cache/':
        'The trial result cache is keyed by configuration hash; access is limited to cache/.',
    };
    for (const [prefix, reason] of Object.entries(reasons)) {
      ack(this, `IAM5[Resource::${artifacts}/${prefix}*]`, reason);
    }
    for (const fnId of FUNCTION_IDS) {
      ack(
        this,
        `IAM5[Resource::<${logicalIdOf(this.functions[fnId])}.Arn>:*]`,
        'Step Functions LambdaInvoke grants invoke on the function and its versions/aliases (ARN suffix :*).',
      );
    }
    if (config.openai !== undefined) {
      ack(
        this,
        `IAM5[Resource::arn:<AWS::Partition>:secretsmanager:<AWS::Region>:<AWS::AccountId>:secret:${config.openai.apiKeySecretName}-??????]`,
        'The API key secret is referenced by name; Secrets Manager appends a random 6-character suffix to its ARN.',
      );
    }
    for (const endpoint of Object.values(config.endpoints ?? {})) {
      if (endpoint.apiKeySecretName === undefined) continue;
      ack(
        this,
        `IAM5[Resource::arn:<AWS::Partition>:secretsmanager:<AWS::Region>:<AWS::AccountId>:secret:${endpoint.apiKeySecretName}-??????]`,
        'A model endpoint key secret is referenced by name; Secrets Manager appends a random 6-character suffix to its ARN.',
      );
    }
    if (config.rerank?.apiKeySecretName !== undefined) {
      ack(
        this,
        `IAM5[Resource::arn:<AWS::Partition>:secretsmanager:<AWS::Region>:<AWS::AccountId>:secret:${config.rerank.apiKeySecretName}-??????]`,
        'The reranker key secret is referenced by name; Secrets Manager appends a random 6-character suffix to its ARN.',
      );
    }
    if (config.zilliz !== undefined) {
      ack(
        this,
        `IAM5[Resource::arn:<AWS::Partition>:secretsmanager:<AWS::Region>:<AWS::AccountId>:secret:${config.zilliz.tokenSecretName}-??????]`,
        'The Zilliz token secret is referenced by name; Secrets Manager appends a random 6-character suffix to its ARN.',
      );
    }
    const instance = this.vectorStore.instance;
    if (instance !== undefined) {
      ack(
        instance,
        'SMG4',
        'The generated master secret is read by RDS Proxy and DbInit; rotate it with `aws secretsmanager rotate-secret` after adding a rotation Lambda (not provisioned, to avoid NAT/endpoint costs).',
      );
      ack(
        instance,
        'RDS11',
        'Clients reach PostgreSQL only through the RDS Proxy on 5432 inside private subnets; a non-default port adds nothing.',
      );
      if (!config.database.multiAz) {
        ack(
          instance,
          'RDS3',
          'Single-AZ by default to keep a small deployment cheap; set -c dbMultiAz=true for production.',
        );
      }
      if (!config.database.deletionProtection) {
        ack(
          instance,
          'RDS10',
          'Deletion protection was turned off explicitly (-c dbDeletionProtection=false).',
        );
      }
    }
  }
}
