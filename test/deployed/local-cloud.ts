/**
 * The synthesized template, run locally as AWS would run it. Every function the template declares is built from
 * its source entry (Metadata `ai4rag:entry`) and its handler export, in a module graph of its own, with exactly
 * the environment the template gives it (Refs and GetAtts resolved to local stand-ins). AWS itself is replaced by
 * aws-sdk-client-mock answering from in-memory state the template describes:
 *
 * - S3: the template's buckets (versioned ones create delete markers), with its bucket notifications delivered
 *   as S3 event messages (keys URL-encoded, sequencers increasing) to the queues it names;
 * - SQS: the template's queues, redrive policies (maxReceiveCount → DLQ) and event source mappings (batch size,
 *   ReportBatchItemFailures, including Lambda's rule that an invalid failure list fails the whole batch);
 * - Secrets Manager: the secrets the template creates (generated passwords, RDS attachment fields) or names;
 * - IAM: every SDK call of a function is checked against the policies the template attaches to its role;
 * - API Gateway: the REST API's resources, methods, auth, request validators and models, Lambda proxy
 *   integrations and gateway responses; the Function URL in its invoke mode (response streaming);
 * - Step Functions: the state machine definition from the template, executed by aws-local-stepfunctions with each
 *   Task's resolved ARN invoking that function;
 * - custom resources backed by the CDK Provider framework (e.g. the database initialisation) run at "deploy".
 *
 * One invocation runs at a time (a mutex), so each can have the process environment of its function.
 */
import { randomUUID } from 'node:crypto';
import { resolve as resolvePath } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  NoSuchBucket,
  NoSuchKey,
  NotFound,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import {
  GetSecretValueCommand,
  ResourceNotFoundException,
  SecretsManagerClient,
} from '@aws-sdk/client-secrets-manager';
import {
  QueueDoesNotExist,
  SendMessageBatchCommand,
  SendMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { Ajv } from 'ajv';
import type { Context } from 'aws-lambda';
import { mockClient } from 'aws-sdk-client-mock';
import { vi } from 'vitest';
import { ENTRY_METADATA_KEY, REPO_ROOT } from '../../lib/constructs/node-function.js';
import { AccessDeniedError, RolePolicies } from './iam.js';
import {
  ACCOUNT,
  type AttributeStandIns,
  bucketName,
  functionArn,
  functionIdOfArn,
  type Json,
  REGION,
  Resolver,
  secretArn,
  type TemplateJson,
} from './intrinsics.js';

/** Variables of the test process a function must not inherit: only the template's reach it. */
const SCRUBBED = /^(AI4RAG_|PGVECTOR_|PG[A-Z]+$|MILVUS_|OPENAI_|AWS_|POWERTOOLS_|NODE_OPTIONS$)/;

export interface LocalCloudOptions {
  template: TemplateJson;
  standIns?: AttributeStandIns;
  /** Values of secrets the template names but does not create (fromSecretNameV2), by name. */
  namedSecrets?: Record<string, string>;
  /**
   * Variables a test adds to every function that reaches the database, with the reason (e.g. trusting the
   * test relay's TLS certificate). Each must be absent from the template: a stand-in never hides wiring.
   */
  databaseClientEnvironment?: Record<string, string>;
}

interface Message {
  messageId: string;
  body: string;
  receiveCount: number;
  sentAt: number;
}

interface QueueState {
  logicalId: string;
  url: string;
  arn: string;
  messages: Message[];
  deadLetterArn?: string;
  maxReceiveCount?: number;
}

interface StoredObject {
  body: Uint8Array;
  contentType?: string;
  etag: string;
  lastModified: Date;
}

interface BucketState {
  logicalId: string;
  name: string;
  versioned: boolean;
  objects: Map<string, StoredObject>;
  notifications: { events: string[]; queueArn: string; prefix?: string; suffix?: string }[];
}

type Handler = (...args: unknown[]) => Promise<unknown>;

export interface DeployedFunction {
  logicalId: string;
  entry?: string;
  exportName: string;
  environment: Record<string, string>;
  timeoutSeconds: number;
  memorySize: number;
  policies: RolePolicies;
  inVpc: boolean;
  /** Security groups of its VPC config (sg-<logicalId>). */
  securityGroups: string[];
  /** Whether its subnets route to a NAT gateway (internet egress from the VPC). */
  hasEgress: boolean;
}

export interface ApiRequest {
  method: string;
  path: string;
  headers?: Record<string, string>;
  body?: string;
  query?: Record<string, string>;
  /** A SigV4-signed request (IAM auth): the harness does not verify signatures, only that one was sent. */
  signed?: boolean;
  /** Value of the x-api-key header. */
  apiKey?: string;
}

export interface ApiResponse {
  statusCode: number;
  headers: Record<string, string>;
  body: string;
  /** Which function answered; undefined when the gateway answered itself. */
  function?: string;
}

const STREAMING = Symbol.for('ai4rag.localCloud.streaming');

/** Messages API Gateway gives its own responses (when no gateway response overrides them). */
const GATEWAY_DEFAULTS: Record<string, { status: number; message: string; family: '4XX' | '5XX' }> =
  {
    MISSING_AUTHENTICATION_TOKEN: {
      status: 403,
      message: 'Missing Authentication Token',
      family: '4XX',
    },
    INVALID_API_KEY: { status: 403, message: 'Forbidden', family: '4XX' },
    BAD_REQUEST_BODY: { status: 400, message: 'Invalid request body', family: '4XX' },
    ACCESS_DENIED: { status: 403, message: 'Forbidden', family: '4XX' },
    AUTHORIZER_CONFIGURATION_ERROR: {
      status: 500,
      message: 'Internal server error',
      family: '5XX',
    },
    INTEGRATION_FAILURE: { status: 502, message: 'Internal server error', family: '5XX' },
    INTEGRATION_TIMEOUT: { status: 504, message: 'Endpoint request timed out', family: '5XX' },
  };

export class LocalCloud {
  readonly resolver: Resolver;
  readonly functions = new Map<string, DeployedFunction>();
  readonly queues = new Map<string, QueueState>();
  readonly buckets = new Map<string, BucketState>();
  /** Every SDK call refused by IAM, as "function: message". */
  readonly denied: string[] = [];
  /** Lambda invocations in order (function logical id). */
  readonly invocations: string[] = [];
  /** Value of the API key (apiKey auth). */
  readonly apiKeyValue = `local-${randomUUID()}`;
  readonly #handlers = new Map<string, Promise<Handler>>();
  readonly #secrets = new Map<string, string>();
  readonly #mocks: { restore(): void }[] = [];
  #current: DeployedFunction | undefined;
  #mutex: Promise<unknown> = Promise.resolve();
  #sequencer = 0n;
  #savedAwslambda: unknown;

  constructor(readonly options: LocalCloudOptions) {
    this.resolver = new Resolver(options.template, options.standIns ?? {});
    this.#readFunctions();
    this.#readQueues();
    this.#readBuckets();
    this.#readSecrets();
    this.#installMocks();
    const g = globalThis as { awslambda?: unknown };
    this.#savedAwslambda = g.awslambda;
    g.awslambda = {
      streamifyResponse: (fn: Handler) =>
        Object.assign((...a: unknown[]) => fn(...a), { [STREAMING]: true }),
      HttpResponseStream: {
        from: (
          stream: LocalResponseStream,
          meta: { statusCode: number; headers: Record<string, string> },
        ) => {
          stream.meta = meta;
          return stream;
        },
      },
    };
  }

  /** The function currently running (its SDK calls are checked against its role). */
  get current(): DeployedFunction | undefined {
    return this.#current;
  }

  close(): void {
    for (const m of this.#mocks) m.restore();
    (globalThis as { awslambda?: unknown }).awslambda = this.#savedAwslambda;
  }

  // ---- Reading the template ------------------------------------------------------------------------------------

  #readFunctions(): void {
    for (const [id, r] of this.resolver.ofType('AWS::Lambda::Function')) {
      const p = r.Properties ?? {};
      const entry = r.Metadata?.[ENTRY_METADATA_KEY] as string | undefined;
      const env = this.resolver.resolve(p.Environment?.Variables ?? {}) as Record<string, string>;
      const roleId = p.Role?.['Fn::GetAtt']?.[0] as string;
      const subnets = (p.VpcConfig?.SubnetIds ?? []).map((s: Json) => s.Ref as string);
      const fn: DeployedFunction = {
        logicalId: id,
        ...(entry !== undefined && { entry }),
        exportName:
          String(p.Handler ?? 'index.handler')
            .split('.')
            .pop() ?? 'handler',
        environment: Object.fromEntries(Object.entries(env).map(([k, v]) => [k, String(v)])),
        timeoutSeconds: Number(p.Timeout ?? 3),
        memorySize: Number(p.MemorySize ?? 128),
        policies: new RolePolicies(roleId, this.resolver),
        inVpc: p.VpcConfig !== undefined,
        securityGroups: (p.VpcConfig?.SecurityGroupIds ?? []).map((g: Json) =>
          String(this.resolver.resolve(g)),
        ),
        hasEgress: subnets.some((s: string) => this.#subnetHasNat(s)),
      };
      this.functions.set(id, fn);
    }
  }

  #subnetHasNat(subnetId: string): boolean {
    for (const [, assoc] of this.resolver.ofType('AWS::EC2::SubnetRouteTableAssociation')) {
      if (assoc.Properties?.SubnetId?.Ref !== subnetId) continue;
      const table = assoc.Properties?.RouteTableId?.Ref;
      for (const [, route] of this.resolver.ofType('AWS::EC2::Route')) {
        if (route.Properties?.RouteTableId?.Ref === table && route.Properties?.NatGatewayId)
          return true;
      }
    }
    return false;
  }

  #readQueues(): void {
    for (const [id, r] of this.resolver.ofType('AWS::SQS::Queue')) {
      const redrive = r.Properties?.RedrivePolicy;
      const q: QueueState = {
        logicalId: id,
        url: this.resolver.ref(id),
        arn: this.resolver.getAtt(id, 'Arn'),
        messages: [],
        ...(redrive !== undefined && {
          deadLetterArn: String(this.resolver.resolve(redrive.deadLetterTargetArn)),
          maxReceiveCount: Number(redrive.maxReceiveCount),
        }),
      };
      this.queues.set(q.url, q);
    }
  }

  #readBuckets(): void {
    for (const [id, r] of this.resolver.ofType('AWS::S3::Bucket')) {
      const name = bucketName(id);
      this.buckets.set(name, {
        logicalId: id,
        name,
        versioned: r.Properties?.VersioningConfiguration?.Status === 'Enabled',
        objects: new Map(),
        notifications: [],
      });
    }
    for (const [, r] of this.resolver.ofType('Custom::S3BucketNotifications')) {
      const name = String(this.resolver.resolve(r.Properties?.BucketName));
      const bucket = this.buckets.get(name);
      if (bucket === undefined) throw new Error(`bucket notifications for unknown bucket ${name}`);
      for (const c of r.Properties?.NotificationConfiguration?.QueueConfigurations ?? []) {
        const rules: Json[] = c.Filter?.Key?.FilterRules ?? [];
        const rule = (n: string) => rules.find((x) => String(x.Name).toLowerCase() === n)?.Value;
        bucket.notifications.push({
          events: c.Events,
          queueArn: String(this.resolver.resolve(c.QueueArn)),
          ...(rule('prefix') !== undefined && { prefix: rule('prefix') }),
          ...(rule('suffix') !== undefined && { suffix: rule('suffix') }),
        });
      }
    }
  }

  #readSecrets(): void {
    const attachments = new Map<string, Json>();
    for (const [, r] of this.resolver.ofType('AWS::SecretsManager::SecretTargetAttachment')) {
      attachments.set(r.Properties?.SecretId?.Ref, r.Properties);
    }
    for (const [id, r] of this.resolver.ofType('AWS::SecretsManager::Secret')) {
      const g = r.Properties?.GenerateSecretString;
      let value: Record<string, unknown> | string;
      if (g !== undefined) {
        value = {
          ...(g.SecretStringTemplate ? JSON.parse(g.SecretStringTemplate) : {}),
          [g.GenerateStringKey ?? 'password']: randomUUID().replaceAll('-', ''),
        };
      } else value = String(this.resolver.resolve(r.Properties?.SecretString ?? ''));
      const attachment = attachments.get(id);
      if (attachment !== undefined && typeof value === 'object') {
        const target = attachment.TargetId?.Ref as string;
        const instance = this.resolver.resource(target);
        value = {
          ...value,
          engine: 'postgres',
          host: this.resolver.getAtt(target, 'Endpoint.Address'),
          port: Number(this.resolver.getAtt(target, 'Endpoint.Port')),
          dbInstanceIdentifier: target.toLowerCase(),
          ...(instance.Properties?.DBName !== undefined && { dbname: instance.Properties.DBName }),
        };
      }
      this.#secrets.set(secretArn(id), typeof value === 'string' ? value : JSON.stringify(value));
    }
    for (const [name, value] of Object.entries(this.options.namedSecrets ?? {})) {
      this.#secrets.set(`arn:aws:secretsmanager:${REGION}:${ACCOUNT}:secret:${name}-AbCdEf`, value);
    }
  }

  /** The value of a secret the stack created (e.g. the database master secret), by logical id. */
  secretValue(logicalId: string): string | undefined {
    return this.#secrets.get(secretArn(logicalId));
  }

  // ---- IAM ---------------------------------------------------------------------------------------------------

  #authorize(action: string, resource: string): void {
    const fn = this.#current;
    if (fn === undefined) return; // The test itself, acting as an administrator.
    if (!fn.policies.allows(action, resource)) {
      const error = new AccessDeniedError(
        `arn:aws:sts::${ACCOUNT}:assumed-role/${fn.policies.roleLogicalId}/${fn.logicalId}`,
        action,
        resource,
      );
      this.denied.push(`${fn.logicalId}: ${error.message}`);
      throw error;
    }
  }

  // ---- AWS SDK mocks -------------------------------------------------------------------------------------------

  #installMocks(): void {
    const s3 = mockClient(S3Client);
    const sqs = mockClient(SQSClient);
    const secrets = mockClient(SecretsManagerClient);
    this.#mocks.push(s3, sqs, secrets);
    const bucketOf = (name: string): BucketState => {
      const b = this.buckets.get(name);
      if (b === undefined) {
        throw new NoSuchBucket({
          message: `The specified bucket does not exist: ${name}`,
          $metadata: { httpStatusCode: 404 },
        });
      }
      return b;
    };
    const objectArn = (bucket: string, key: string) => `arn:aws:s3:::${bucket}/${key}`;
    const missing = (bucket: string, key: string, head: boolean): Error => {
      // Without s3:ListBucket, S3 answers a missing key with 403, not 404.
      this.#authorizeOrNull('s3:ListBucket', `arn:aws:s3:::${bucket}`);
      return head
        ? new NotFound({ message: 'Not Found', $metadata: { httpStatusCode: 404 } })
        : new NoSuchKey({
            message: `The specified key does not exist: ${key}`,
            $metadata: { httpStatusCode: 404 },
          });
    };
    s3.on(PutObjectCommand).callsFake(async (input) => {
      this.#authorize('s3:PutObject', objectArn(input.Bucket, input.Key));
      await this.putObject(input.Bucket, input.Key, await toBytes(input.Body), input.ContentType);
      return { ETag: '"etag"', $metadata: { httpStatusCode: 200 } };
    });
    s3.on(GetObjectCommand).callsFake(async (input) => {
      this.#authorize('s3:GetObject', objectArn(input.Bucket, input.Key));
      const o = bucketOf(input.Bucket).objects.get(input.Key);
      if (o === undefined) throw missing(input.Bucket, input.Key, false);
      const bytes = o.body;
      return {
        Body: {
          transformToByteArray: async () => bytes,
          transformToString: async () => new TextDecoder().decode(bytes),
        },
        ContentLength: bytes.length,
        ETag: o.etag,
        ...(o.contentType !== undefined && { ContentType: o.contentType }),
      };
    });
    s3.on(HeadObjectCommand).callsFake(async (input) => {
      this.#authorize('s3:GetObject', objectArn(input.Bucket, input.Key));
      const o = bucketOf(input.Bucket).objects.get(input.Key);
      if (o === undefined) throw missing(input.Bucket, input.Key, true);
      return { ContentLength: o.body.length, ETag: o.etag, LastModified: o.lastModified };
    });
    s3.on(DeleteObjectCommand).callsFake(async (input) => {
      this.#authorize('s3:DeleteObject', objectArn(input.Bucket, input.Key));
      await this.deleteObject(input.Bucket, input.Key);
      return { $metadata: { httpStatusCode: 204 } };
    });
    s3.on(ListObjectsV2Command).callsFake(async (input) => {
      this.#authorize('s3:ListBucket', `arn:aws:s3:::${input.Bucket}`);
      const prefix = input.Prefix ?? '';
      const keys = [...bucketOf(input.Bucket).objects.keys()]
        .filter((k) => k.startsWith(prefix))
        .sort();
      const start = input.ContinuationToken
        ? keys.findIndex((k) => k > String(input.ContinuationToken))
        : 0;
      const max = Math.min(input.MaxKeys ?? 1000, 1000);
      const page = start < 0 ? [] : keys.slice(start, start + max);
      const truncated = start >= 0 && start + max < keys.length;
      return {
        Contents: page.map((Key) => ({
          Key,
          Size: bucketOf(input.Bucket).objects.get(Key)?.body.length,
        })),
        KeyCount: page.length,
        IsTruncated: truncated,
        ...(truncated && { NextContinuationToken: page[page.length - 1] }),
      };
    });
    const send = (queueUrl: string, bodies: string[]) => {
      const q = this.queues.get(queueUrl);
      if (q === undefined) {
        throw new QueueDoesNotExist({
          message: 'The specified queue does not exist.',
          $metadata: { httpStatusCode: 400 },
        });
      }
      this.#authorize('sqs:SendMessage', q.arn);
      for (const body of bodies) {
        if (Buffer.byteLength(body, 'utf8') > 262_144) {
          throw Object.assign(
            new Error(
              'One or more parameters are invalid. Reason: Message must be shorter than 262144 bytes.',
            ),
            { name: 'InvalidParameterValue' },
          );
        }
        q.messages.push({ messageId: randomUUID(), body, receiveCount: 0, sentAt: Date.now() });
      }
    };
    sqs.on(SendMessageCommand).callsFake(async (input) => {
      send(input.QueueUrl, [input.MessageBody]);
      return { MessageId: randomUUID() };
    });
    sqs.on(SendMessageBatchCommand).callsFake(async (input) => {
      const entries: { Id: string; MessageBody: string }[] = input.Entries ?? [];
      if (entries.length > 10) {
        throw Object.assign(new Error('Maximum number of entries per request are 10.'), {
          name: 'TooManyEntriesInBatchRequest',
        });
      }
      const total = entries.reduce((n, e) => n + Buffer.byteLength(e.MessageBody, 'utf8'), 0);
      if (total > 262_144) {
        throw Object.assign(new Error('Batch requests cannot be longer than 262144 bytes.'), {
          name: 'BatchRequestTooLong',
        });
      }
      send(
        input.QueueUrl,
        entries.map((e) => e.MessageBody),
      );
      return {
        Successful: entries.map((e) => ({
          Id: e.Id,
          MessageId: randomUUID(),
          MD5OfMessageBody: '',
        })),
        Failed: [],
      };
    });
    secrets.on(GetSecretValueCommand).callsFake(async (input) => {
      const id = String(input.SecretId);
      const arn = [...this.#secrets.keys()].find(
        (a) =>
          a === id ||
          a.replace(/-[A-Za-z0-9]{6}$/, '') === id ||
          a.split(':secret:')[1]?.replace(/-[A-Za-z0-9]{6}$/, '') === id,
      );
      if (arn === undefined) {
        throw new ResourceNotFoundException({
          message: "Secrets Manager can't find the specified secret.",
          $metadata: { httpStatusCode: 400 },
        });
      }
      this.#authorize('secretsmanager:GetSecretValue', arn);
      return { ARN: arn, SecretString: this.#secrets.get(arn), VersionId: 'v1' };
    });
  }

  #authorizeOrNull(action: string, resource: string): void {
    const fn = this.#current;
    if (fn !== undefined && !fn.policies.allows(action, resource)) {
      throw new AccessDeniedError(fn.logicalId, action, resource);
    }
  }

  // ---- S3 with notifications -----------------------------------------------------------------------------------

  /** Puts an object as a user would (no IAM check when no function runs), with its notifications. */
  async putObject(
    bucket: string,
    key: string,
    body: Uint8Array | string,
    contentType?: string,
  ): Promise<void> {
    const b = this.buckets.get(bucket);
    if (b === undefined) throw new Error(`no bucket ${bucket}`);
    const bytes = typeof body === 'string' ? new TextEncoder().encode(body) : body;
    b.objects.set(key, {
      body: bytes,
      etag: `"${randomUUID().replaceAll('-', '')}"`,
      lastModified: new Date(),
      ...(contentType !== undefined && { contentType }),
    });
    this.#notify(b, 'ObjectCreated:Put', key, bytes.length);
  }

  async deleteObject(bucket: string, key: string): Promise<void> {
    const b = this.buckets.get(bucket);
    if (b === undefined) throw new Error(`no bucket ${bucket}`);
    b.objects.delete(key);
    // A DELETE on a versioned bucket adds a delete marker (and S3 notifies even when the key did not exist).
    this.#notify(
      b,
      b.versioned ? 'ObjectRemoved:DeleteMarkerCreated' : 'ObjectRemoved:Delete',
      key,
      0,
    );
  }

  /** The bucket name of a bucket construct id (e.g. 'DocumentsBucket'). */
  bucket(constructId: string): string {
    const pattern = new RegExp(`^${constructId}[0-9A-F]{8}$`);
    for (const b of this.buckets.values()) if (pattern.test(b.logicalId)) return b.name;
    throw new Error(`no bucket ${constructId} in the template`);
  }

  #notify(b: BucketState, eventName: string, key: string, size: number): void {
    this.#sequencer += 1n;
    const sequencer = this.#sequencer.toString(16).toUpperCase().padStart(16, '0');
    for (const n of b.notifications) {
      const matches = n.events.some((e) => {
        const pattern = e.replace(/^s3:/, '');
        return pattern.endsWith('*')
          ? eventName.startsWith(pattern.slice(0, -1))
          : pattern === eventName;
      });
      if (!matches) continue;
      if (n.prefix !== undefined && !key.startsWith(n.prefix)) continue;
      if (n.suffix !== undefined && !key.endsWith(n.suffix)) continue;
      const queue = [...this.queues.values()].find((q) => q.arn === n.queueArn);
      if (queue === undefined) throw new Error(`notification to unknown queue ${n.queueArn}`);
      this.#assertQueueAcceptsS3(queue, b);
      const record = {
        eventVersion: '2.1',
        eventSource: 'aws:s3',
        awsRegion: REGION,
        eventTime: new Date().toISOString(),
        eventName,
        userIdentity: { principalId: 'AWS:LOCAL' },
        requestParameters: { sourceIPAddress: '127.0.0.1' },
        responseElements: {},
        s3: {
          s3SchemaVersion: '1.0',
          configurationId: 'local',
          bucket: {
            name: b.name,
            ownerIdentity: { principalId: 'LOCAL' },
            arn: `arn:aws:s3:::${b.name}`,
          },
          // S3 form-encodes keys in notifications: spaces become '+'.
          object: {
            key: encodeURIComponent(key).replace(/%20/g, '+').replace(/%2F/g, '/'),
            size,
            eTag: 'etag',
            sequencer,
          },
        },
      };
      queue.messages.push({
        messageId: randomUUID(),
        body: JSON.stringify({ Records: [record] }),
        receiveCount: 0,
        sentAt: Date.now(),
      });
    }
  }

  #assertQueueAcceptsS3(queue: QueueState, bucket: BucketState): void {
    const allowed = this.resolver.ofType('AWS::SQS::QueuePolicy').some(([, p]) => {
      const targets = (p.Properties?.Queues ?? []).map((q: Json) =>
        String(this.resolver.resolve(q)),
      );
      if (!targets.includes(queue.url)) return false;
      const doc = this.resolver.resolve(p.Properties?.PolicyDocument);
      return (doc?.Statement ?? []).some(
        (s: Json) =>
          s.Effect === 'Allow' &&
          JSON.stringify(s.Principal ?? {}).includes('s3.amazonaws.com') &&
          JSON.stringify(s.Condition ?? {}).includes(`arn:aws:s3:::${bucket.name}`),
      );
    });
    if (!allowed)
      throw new Error(`queue ${queue.logicalId} has no policy letting ${bucket.name} send to it`);
  }

  // ---- Lambda --------------------------------------------------------------------------------------------------

  /** The function of a construct id (e.g. 'SearchFunction'), or of a logical id. */
  fn(idOrConstructId: string): DeployedFunction {
    const direct = this.functions.get(idOrConstructId);
    if (direct !== undefined) return direct;
    const pattern = new RegExp(`^${idOrConstructId}[0-9A-F]{8}$`);
    const found = [...this.functions.values()].filter((f) => pattern.test(f.logicalId));
    if (found.length !== 1)
      throw new Error(`expected one function ${idOrConstructId}, found ${found.length}`);
    return found[0] as DeployedFunction;
  }

  #withEnvironment<T>(fn: DeployedFunction, body: () => Promise<T>): Promise<T> {
    const saved = { ...process.env };
    for (const k of Object.keys(process.env)) if (SCRUBBED.test(k)) delete process.env[k];
    Object.assign(process.env, {
      AWS_REGION: REGION,
      AWS_DEFAULT_REGION: REGION,
      AWS_ACCESS_KEY_ID: 'ASIALOCAL',
      AWS_SECRET_ACCESS_KEY: 'local',
      AWS_SESSION_TOKEN: 'local',
      AWS_LAMBDA_FUNCTION_NAME: fn.logicalId,
      AWS_LAMBDA_FUNCTION_MEMORY_SIZE: String(fn.memorySize),
      AWS_LAMBDA_FUNCTION_VERSION: '$LATEST',
      AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs22.x',
      LAMBDA_TASK_ROOT: '/var/task',
      // Set by Lambda per invocation (active tracing): the X-Ray SDK builds its facade segment from it.
      _X_AMZN_TRACE_ID: `Root=1-${Math.floor(Date.now() / 1000).toString(16)}-${randomUUID().replaceAll('-', '').slice(0, 24)};Parent=${randomUUID().replaceAll('-', '').slice(0, 16)};Sampled=0`,
      ...fn.environment,
      ...(this.#reachesDatabase(fn) ? this.options.databaseClientEnvironment : {}),
    });
    return body().finally(() => {
      for (const k of Object.keys(process.env)) delete process.env[k];
      Object.assign(process.env, saved);
    });
  }

  #reachesDatabase(fn: DeployedFunction): boolean {
    return Object.keys(fn.environment).some((k) => k.startsWith('PGVECTOR_'));
  }

  #handler(fn: DeployedFunction): Promise<Handler> {
    let h = this.#handlers.get(fn.logicalId);
    if (h === undefined) {
      if (fn.entry === undefined)
        throw new Error(`${fn.logicalId} has no ${ENTRY_METADATA_KEY} metadata`);
      const url = pathToFileURL(resolvePath(REPO_ROOT, fn.entry)).href;
      h = this.#withEnvironment(fn, async () => {
        // A module graph of its own, as a separate container would have.
        vi.resetModules();
        const mod = (await import(url)) as Record<string, unknown>;
        const exported = mod[fn.exportName];
        if (typeof exported !== 'function') {
          throw new Error(
            `${fn.entry} exports no function ${fn.exportName} (Handler index.${fn.exportName})`,
          );
        }
        return exported as Handler;
      });
      this.#handlers.set(fn.logicalId, h);
    }
    return h;
  }

  #context(fn: DeployedFunction, deadline: number): Context {
    return {
      callbackWaitsForEmptyEventLoop: true,
      functionName: fn.logicalId,
      functionVersion: '$LATEST',
      invokedFunctionArn: functionArn(fn.logicalId),
      memoryLimitInMB: String(fn.memorySize),
      awsRequestId: randomUUID(),
      logGroupName: `/aws/lambda/${fn.logicalId}`,
      logStreamName: 'local',
      getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
      done: () => undefined,
      fail: () => undefined,
      succeed: () => undefined,
    };
  }

  /**
   * Invokes a function as Lambda does (one at a time here): its handler, its environment, its timeout. A thrown
   * error is returned as Lambda reports it (`errorType` from its name).
   */
  invoke(idOrConstructId: string, event: unknown, extra: unknown[] = []): Promise<unknown> {
    const fn = this.fn(idOrConstructId);
    const run = async () => {
      const handler = await this.#handler(fn);
      this.invocations.push(fn.logicalId);
      return this.#withEnvironment(fn, async () => {
        const deadline = Date.now() + fn.timeoutSeconds * 1000;
        this.#current = fn;
        let timer: NodeJS.Timeout | undefined;
        try {
          const timeout = new Promise<never>((_, reject) => {
            timer = setTimeout(
              () =>
                reject(
                  Object.assign(new Error(`Task timed out after ${fn.timeoutSeconds} seconds`), {
                    name: 'Sandbox.Timedout',
                  }),
                ),
              fn.timeoutSeconds * 1000,
            );
          });
          const args = (handler as { [STREAMING]?: boolean })[STREAMING]
            ? [event, extra[0], this.#context(fn, deadline)]
            : [event, this.#context(fn, deadline)];
          return await Promise.race([handler(...args), timeout]);
        } finally {
          clearTimeout(timer);
          this.#current = undefined;
        }
      });
    };
    const result = this.#mutex.then(run, run);
    this.#mutex = result.catch(() => undefined);
    return result;
  }

  // ---- SQS event source mappings -------------------------------------------------------------------------------

  /** The event source mappings: queue → function, batch size, partial batch responses. */
  mappings(): {
    queue: QueueState;
    fn: DeployedFunction;
    batchSize: number;
    reportFailures: boolean;
    maxConcurrency?: number;
  }[] {
    return this.resolver.ofType('AWS::Lambda::EventSourceMapping').map(([, r]) => {
      const p = r.Properties ?? {};
      const arn = String(this.resolver.resolve(p.EventSourceArn));
      const queue = [...this.queues.values()].find((q) => q.arn === arn);
      if (queue === undefined)
        throw new Error(`event source ${arn} is not a queue of the template`);
      return {
        queue,
        fn: this.fn(functionIdOfArn(String(this.resolver.resolve(p.FunctionName)))),
        batchSize: Number(p.BatchSize ?? 10),
        reportFailures: (p.FunctionResponseTypes ?? []).includes('ReportBatchItemFailures'),
        ...(p.ScalingConfig?.MaximumConcurrency !== undefined && {
          maxConcurrency: Number(p.ScalingConfig.MaximumConcurrency),
        }),
      };
    });
  }

  /**
   * Delivers queued messages to their functions until every mapped queue is empty: failed messages come back
   * (receive count + 1) until the queue's maxReceiveCount moves them to its DLQ.
   * @returns the deliveries made.
   */
  async settle(maxDeliveries = 2000): Promise<number> {
    const mappings = this.mappings();
    let deliveries = 0;
    for (;;) {
      const m = mappings.find((x) => x.queue.messages.length > 0);
      if (m === undefined) return deliveries;
      if (++deliveries > maxDeliveries)
        throw new Error(`queues did not settle after ${maxDeliveries} deliveries`);
      const batch = m.queue.messages.splice(0, m.batchSize);
      for (const msg of batch) msg.receiveCount += 1;
      const event = {
        Records: batch.map((msg) => ({
          messageId: msg.messageId,
          receiptHandle: `rh-${msg.messageId}-${msg.receiveCount}`,
          body: msg.body,
          attributes: {
            ApproximateReceiveCount: String(msg.receiveCount),
            SentTimestamp: String(msg.sentAt),
            SenderId: 'LOCAL',
            ApproximateFirstReceiveTimestamp: String(Date.now()),
          },
          messageAttributes: {},
          md5OfBody: '',
          eventSource: 'aws:sqs',
          eventSourceARN: m.queue.arn,
          awsRegion: REGION,
        })),
      };
      let failed: Set<string>;
      try {
        const out = (await this.invoke(m.fn.logicalId, event)) as
          | { batchItemFailures?: { itemIdentifier?: string }[] }
          | undefined;
        const list = m.reportFailures ? (out?.batchItemFailures ?? []) : [];
        const ids = new Set(batch.map((b) => b.messageId));
        // Lambda treats a failure naming no message of the batch (or an empty id) as a failure of the whole batch.
        const invalid = list.some((f) => !f.itemIdentifier || !ids.has(f.itemIdentifier));
        failed = invalid ? ids : new Set(list.map((f) => f.itemIdentifier as string));
      } catch {
        failed = new Set(batch.map((b) => b.messageId));
      }
      for (const msg of batch) {
        if (!failed.has(msg.messageId)) continue;
        const max = m.queue.maxReceiveCount;
        if (max !== undefined && msg.receiveCount >= max) {
          const dlq = [...this.queues.values()].find((q) => q.arn === m.queue.deadLetterArn);
          dlq?.messages.push(msg);
        } else m.queue.messages.push(msg);
      }
    }
  }

  /** A queue by construct id prefix (e.g. 'IngestDlq'). */
  queue(constructId: string): QueueState {
    const pattern = new RegExp(`^${constructId}[0-9A-F]{8}$`);
    const found = [...this.queues.values()].find((q) => pattern.test(q.logicalId));
    if (found === undefined) throw new Error(`no queue ${constructId}`);
    return found;
  }

  // ---- Custom resources ----------------------------------------------------------------------------------------

  /**
   * Runs the stack's Provider-framework custom resources (Create), in template order: the provider's onEvent
   * function relays to the user function its USER_ON_EVENT_FUNCTION_ARN names.
   */
  async deployCustomResources(): Promise<Record<string, unknown>> {
    const results: Record<string, unknown> = {};
    for (const [id, r] of Object.entries(this.options.template.Resources)) {
      if (!r.Type.startsWith('Custom::') && r.Type !== 'AWS::CloudFormation::CustomResource')
        continue;
      const token = r.Properties?.ServiceToken?.['Fn::GetAtt']?.[0] as string | undefined;
      const framework = token === undefined ? undefined : this.functions.get(token);
      const user = framework?.environment.USER_ON_EVENT_FUNCTION_ARN;
      if (user === undefined) continue; // CDK's own singleton handlers (notifications, auto-delete, log retention)
      const { ServiceToken: _t, ...props } = this.resolver.resolve(r.Properties ?? {});
      results[id] = await this.invoke(functionIdOfArn(user), {
        RequestType: 'Create',
        ServiceToken: 'local',
        ResponseURL: 'http://127.0.0.1/unused',
        StackId: `arn:aws:cloudformation:${REGION}:${ACCOUNT}:stack/Ai4rag/1`,
        RequestId: randomUUID(),
        LogicalResourceId: id,
        ResourceType: r.Type,
        ResourceProperties: { ServiceToken: 'local', ...props },
      });
    }
    return results;
  }

  // ---- API Gateway (REST) --------------------------------------------------------------------------------------

  #resourcePath(resourceRef: Json): string {
    const resolved = String(this.resolver.resolve(resourceRef));
    if (resolved.endsWith('/')) return '/';
    const r = this.resolver.resource(resolved);
    const parent = this.#resourcePath(r.Properties?.ParentId);
    return `${parent === '/' ? '' : parent}/${r.Properties?.PathPart}`;
  }

  /** Routes of the REST API: path template → method → Method resource properties. */
  routes(): Map<string, Map<string, Json>> {
    const routes = new Map<string, Map<string, Json>>();
    for (const [, m] of this.resolver.ofType('AWS::ApiGateway::Method')) {
      const path = this.#resourcePath(m.Properties?.ResourceId);
      const methods = routes.get(path) ?? new Map<string, Json>();
      methods.set(String(m.Properties?.HttpMethod), m.Properties);
      routes.set(path, methods);
    }
    return routes;
  }

  #gatewayResponse(type: string, requestId: string, message?: string): ApiResponse {
    const d = GATEWAY_DEFAULTS[type] ?? {
      status: 500,
      message: 'Internal server error',
      family: '5XX',
    };
    const text = message ?? d.message;
    const responses = this.resolver
      .ofType('AWS::ApiGateway::GatewayResponse')
      .map(([, r]) => r.Properties ?? {});
    const custom =
      responses.find((r) => r.ResponseType === type) ??
      responses.find((r) => r.ResponseType === `DEFAULT_${d.family}`);
    if (custom === undefined) {
      return {
        statusCode: d.status,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ message: text }),
      };
    }
    const template = custom.ResponseTemplates?.['application/json'] as string | undefined;
    const substitute = (s: string) =>
      s
        .replaceAll('$context.error.messageString', JSON.stringify(text))
        .replaceAll('$context.error.message', text)
        .replaceAll('$context.error.responseType', type)
        .replaceAll('$context.requestId', requestId);
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    for (const [k, v] of Object.entries(custom.ResponseParameters ?? {})) {
      const name = k.replace(/^gatewayresponse\.header\./, '');
      headers[name.toLowerCase()] = String(v).replace(/^'(.*)'$/, '$1');
    }
    return {
      statusCode: Number(custom.StatusCode ?? d.status),
      headers,
      body: template === undefined ? JSON.stringify({ message: text }) : substitute(template),
    };
  }

  /** A request to the REST API, through its auth, validation, integration and gateway responses. */
  async api(request: ApiRequest): Promise<ApiResponse> {
    const requestId = randomUUID();
    const headers = Object.fromEntries(
      Object.entries(request.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v]),
    );
    const match = this.#matchRoute(request.path);
    if (match === undefined)
      return this.#gatewayResponse('MISSING_AUTHENTICATION_TOKEN', requestId);
    const method = match.methods.get(request.method.toUpperCase()) ?? match.methods.get('ANY');
    if (method === undefined)
      return this.#gatewayResponse('MISSING_AUTHENTICATION_TOKEN', requestId);
    if (method.Integration?.Type === 'MOCK') {
      const ir = method.Integration.IntegrationResponses?.[0] ?? {};
      const out: Record<string, string> = {};
      for (const [k, v] of Object.entries(ir.ResponseParameters ?? {})) {
        out[k.replace(/^method\.response\.header\./, '').toLowerCase()] = String(v).replace(
          /^'(.*)'$/,
          '$1',
        );
      }
      return { statusCode: Number(ir.StatusCode ?? 200), headers: out, body: '' };
    }
    if (method.AuthorizationType === 'AWS_IAM' && request.signed !== true) {
      return this.#gatewayResponse('MISSING_AUTHENTICATION_TOKEN', requestId);
    }
    if (method.ApiKeyRequired === true && request.apiKey !== this.apiKeyValue) {
      return this.#gatewayResponse('INVALID_API_KEY', requestId);
    }
    const validation = this.#validateBody(method, headers, request.body);
    if (validation !== undefined)
      return this.#gatewayResponse('BAD_REQUEST_BODY', requestId, validation);
    const integration = method.Integration ?? {};
    if (integration.Type !== 'AWS_PROXY')
      throw new Error(`integration ${integration.Type} is not supported locally`);
    const uri = String(this.resolver.resolve(integration.Uri));
    const target = /functions\/(.+)\/invocations$/.exec(uri)?.[1];
    if (target === undefined) throw new Error(`integration URI ${uri} names no function`);
    const fnId = functionIdOfArn(target);
    this.#assertInvokePermission(fnId, 'apigateway.amazonaws.com');
    const event = {
      resource: match.template,
      path: request.path,
      httpMethod: request.method.toUpperCase(),
      headers,
      multiValueHeaders: Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, [v]])),
      queryStringParameters: request.query ?? null,
      multiValueQueryStringParameters: request.query
        ? Object.fromEntries(Object.entries(request.query).map(([k, v]) => [k, [v]]))
        : null,
      pathParameters: Object.keys(match.params).length > 0 ? match.params : null,
      stageVariables: null,
      requestContext: {
        requestId,
        stage: this.#stageName(),
        resourcePath: match.template,
        httpMethod: request.method.toUpperCase(),
        path: `/${this.#stageName()}${request.path}`,
        accountId: ACCOUNT,
        identity: {
          sourceIp: '127.0.0.1',
          userAgent: 'local',
          ...(request.apiKey && { apiKey: request.apiKey }),
        },
        requestTimeEpoch: Date.now(),
      },
      body: request.body ?? null,
      isBase64Encoded: false,
    };
    const limit = Number(integration.TimeoutInMillis ?? 29_000);
    let out: { statusCode?: number; headers?: Record<string, string>; body?: string } | undefined;
    try {
      let timer: NodeJS.Timeout | undefined;
      const timedOut = Symbol('timeout');
      const result = await Promise.race([
        this.invoke(fnId, event),
        new Promise((r) => {
          timer = setTimeout(() => r(timedOut), limit);
        }),
      ]).finally(() => clearTimeout(timer));
      if (result === timedOut) return this.#gatewayResponse('INTEGRATION_TIMEOUT', requestId);
      out = result as typeof out;
    } catch {
      return { ...this.#gatewayResponse('INTEGRATION_FAILURE', requestId), function: fnId };
    }
    if (out === undefined || typeof out.statusCode !== 'number') {
      return { ...this.#gatewayResponse('INTEGRATION_FAILURE', requestId), function: fnId };
    }
    return {
      statusCode: out.statusCode,
      headers: Object.fromEntries(
        Object.entries(out.headers ?? {}).map(([k, v]) => [k.toLowerCase(), String(v)]),
      ),
      body: out.body ?? '',
      function: fnId,
    };
  }

  #stageName(): string {
    const stage = this.resolver.ofType('AWS::ApiGateway::Stage')[0]?.[1];
    return String(stage?.Properties?.StageName ?? 'prod');
  }

  #matchRoute(
    path: string,
  ): { template: string; methods: Map<string, Json>; params: Record<string, string> } | undefined {
    const segments = path.split('/').filter((s) => s !== '');
    for (const [template, methods] of this.routes()) {
      const parts = template.split('/').filter((s) => s !== '');
      const params: Record<string, string> = {};
      let ok = parts.length === segments.length;
      for (let i = 0; ok && i < parts.length; i += 1) {
        const part = parts[i] as string;
        const seg = segments[i] as string;
        if (part.endsWith('+}')) {
          params[part.slice(1, -2)] = segments.slice(i).join('/');
          ok = true;
          break;
        }
        if (part.startsWith('{')) params[part.slice(1, -1)] = decodeURIComponent(seg);
        else if (part !== seg) ok = false;
      }
      if (ok) return { template, methods, params };
    }
    return undefined;
  }

  #validateBody(
    method: Json,
    headers: Record<string, string>,
    body: string | undefined,
  ): string | undefined {
    const validatorId = method.RequestValidatorId?.Ref as string | undefined;
    if (validatorId === undefined) return undefined;
    const validator = this.resolver.resource(validatorId).Properties ?? {};
    if (validator.ValidateRequestBody !== true) return undefined;
    const contentType = (headers['content-type'] ?? 'application/json').split(';')[0]?.trim() ?? '';
    const modelRef = method.RequestModels?.[contentType]?.Ref as string | undefined;
    if (modelRef === undefined) return undefined;
    const schema = this.resolver.resource(modelRef).Properties?.Schema;
    let value: unknown;
    try {
      value = JSON.parse(body ?? '');
    } catch {
      return 'Invalid request body';
    }
    return validateDraft4(schema, value) ? undefined : 'Invalid request body';
  }

  #assertInvokePermission(fnId: string, principal: string): void {
    const ok = this.resolver.ofType('AWS::Lambda::Permission').some(([, p]) => {
      const target = String(this.resolver.resolve(p.Properties?.FunctionName));
      return (
        (target === fnId || functionIdOfArn(target) === fnId) &&
        p.Properties?.Principal === principal
      );
    });
    if (!ok) throw new Error(`${principal} has no permission to invoke ${fnId}`);
  }

  // ---- Lambda Function URL -------------------------------------------------------------------------------------

  /** A request to a Function URL (IAM auth needs `signed`); a RESPONSE_STREAM URL answers what was streamed. */
  async functionUrl(request: ApiRequest): Promise<ApiResponse> {
    const urls = this.resolver.ofType('AWS::Lambda::Url');
    if (urls.length !== 1) throw new Error(`expected one Function URL, found ${urls.length}`);
    const p = urls[0]?.[1].Properties ?? {};
    if (p.AuthType === 'AWS_IAM' && request.signed !== true) {
      return { statusCode: 403, headers: {}, body: JSON.stringify({ Message: 'Forbidden' }) };
    }
    const fnId = functionIdOfArn(String(this.resolver.resolve(p.TargetFunctionArn)));
    const event = {
      version: '2.0',
      routeKey: '$default',
      rawPath: request.path,
      rawQueryString: '',
      headers: Object.fromEntries(
        Object.entries(request.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v]),
      ),
      requestContext: {
        http: {
          method: request.method.toUpperCase(),
          path: request.path,
          sourceIp: '127.0.0.1',
          protocol: 'HTTP/1.1',
          userAgent: 'local',
        },
        requestId: randomUUID(),
        accountId: ACCOUNT,
        timeEpoch: Date.now(),
      },
      body: request.body,
      isBase64Encoded: false,
    };
    if (p.InvokeMode === 'RESPONSE_STREAM') {
      const stream = new LocalResponseStream();
      await this.invoke(fnId, event, [stream]);
      if (!stream.ended) throw new Error(`${fnId} did not end its response stream`);
      return {
        statusCode: stream.meta?.statusCode ?? 200,
        headers: stream.meta?.headers ?? {},
        body: stream.chunks.join(''),
        function: fnId,
      };
    }
    const out = (await this.invoke(fnId, event)) as {
      statusCode: number;
      headers?: Record<string, string>;
      body?: string;
    };
    return {
      statusCode: out.statusCode,
      headers: out.headers ?? {},
      body: out.body ?? '',
      function: fnId,
    };
  }

  // ---- EventBridge schedules -----------------------------------------------------------------------------------

  /**
   * Fires a scheduled rule (its construct id) as EventBridge does: an enabled rule with a schedule expression invokes
   * each of its targets with a Scheduled Event, once a Lambda permission lets `events.amazonaws.com` invoke that
   * function from this rule. Returns the expression and each target's result; a target that throws rejects.
   */
  async runSchedule(constructId: string): Promise<{ schedule: string; results: unknown[] }> {
    const pattern = new RegExp(`^${constructId}[0-9A-F]{8}$`);
    const rules = this.resolver.ofType('AWS::Events::Rule').filter(([id]) => pattern.test(id));
    const [ruleId, rule] = rules.length === 1 ? (rules[0] as (typeof rules)[number]) : [];
    if (ruleId === undefined || rule === undefined)
      throw new Error(`expected one rule ${constructId}, found ${rules.length}`);
    const p = rule.Properties ?? {};
    const schedule = typeof p.ScheduleExpression === 'string' ? p.ScheduleExpression : '';
    if (schedule === '') throw new Error(`rule ${ruleId} has no schedule expression`);
    if (p.State !== 'ENABLED') throw new Error(`rule ${ruleId} is not enabled (${p.State})`);
    const results: unknown[] = [];
    for (const target of (p.Targets ?? []) as Json[]) {
      const fnId = functionIdOfArn(String(this.resolver.resolve(target.Arn)));
      const allowed = this.resolver.ofType('AWS::Lambda::Permission').some(([, perm]) => {
        const q = perm.Properties ?? {};
        const fn = String(this.resolver.resolve(q.FunctionName));
        return (
          (fn === fnId || functionIdOfArn(fn) === fnId) &&
          q.Principal === 'events.amazonaws.com' &&
          q.Action === 'lambda:InvokeFunction' &&
          q.SourceArn?.['Fn::GetAtt']?.[0] === ruleId
        );
      });
      if (!allowed) throw new Error(`rule ${ruleId} has no permission to invoke ${fnId}`);
      results.push(
        await this.invoke(fnId, {
          version: '0',
          id: randomUUID(),
          'detail-type': 'Scheduled Event',
          source: 'aws.events',
          account: ACCOUNT,
          time: new Date().toISOString(),
          region: REGION,
          resources: [`arn:aws:events:${REGION}:${ACCOUNT}:rule/${ruleId}`],
          detail: {},
        }),
      );
    }
    return { schedule, results };
  }

  // ---- Step Functions ------------------------------------------------------------------------------------------

  /** Runs the template's (single) state machine locally with its Tasks invoking the template's functions. */
  async startExecution(input: unknown): Promise<{
    status: 'SUCCEEDED' | 'FAILED';
    output?: unknown;
    error?: string;
    cause?: string;
    states: string[];
  }> {
    const machines = this.resolver.ofType('AWS::StepFunctions::StateMachine');
    if (machines.length !== 1)
      throw new Error(`expected one state machine, found ${machines.length}`);
    const p = machines[0]?.[1].Properties ?? {};
    const definition = JSON.parse(String(this.resolver.resolve(p.DefinitionString)));
    const role = new RolePolicies(String(p.RoleArn?.['Fn::GetAtt']?.[0]), this.resolver);
    const { normalizeResultPaths } = await import('../../bin/cli/local-state-machine.js');
    normalizeResultPaths(definition.States);
    const tasks = new Map<string, string>();
    const collect = (states: Record<string, Json>) => {
      for (const [name, state] of Object.entries(states)) {
        if (state.Type === 'Task') tasks.set(name, String(state.Resource));
        const processor = state.ItemProcessor ?? state.Iterator;
        if (processor?.States) collect(processor.States);
        for (const b of state.Branches ?? []) collect(b.States);
      }
    };
    collect(definition.States);
    const overrides: Record<string, (input: unknown) => Promise<unknown>> = {};
    for (const [name, resource] of tasks) {
      const arn = resource === 'arn:aws:states:::lambda:invoke' ? undefined : resource;
      if (arn === undefined)
        throw new Error(`state ${name}: lambda:invoke integrations are not supported locally`);
      if (!role.allows('lambda:InvokeFunction', arn)) {
        throw new Error(`the state machine role may not invoke ${arn} (state ${name})`);
      }
      const fnId = functionIdOfArn(arn);
      overrides[name] = async (stateInput: unknown) =>
        (await this.invoke(fnId, stateInput)) ?? null;
    }
    const { StateMachine } = await import('aws-local-stepfunctions');
    const machine = new StateMachine(definition, {
      validationOptions: { checkArn: false, checkPaths: true },
    });
    const execution = machine.run(input as never, {
      overrides: { taskResourceLocalHandlers: overrides as never },
    });
    const states: string[] = [];
    let failure: { error?: string; cause?: string } = {};
    const logs = (async () => {
      for await (const e of execution.eventLogs) {
        if (e.type === 'StateEntered') states.push(e.state.name);
        if (e.type === 'ExecutionFailed')
          failure = {
            error: e.Error,
            cause: typeof e.Cause === 'string' ? e.Cause : JSON.stringify(e.Cause),
          };
      }
    })();
    try {
      const output = await execution.result;
      await logs;
      return { status: 'SUCCEEDED', output, states };
    } catch (error) {
      await logs.catch(() => undefined);
      return {
        status: 'FAILED',
        error: failure.error ?? (error as Error).name,
        cause: failure.cause ?? (error as Error).message,
        states,
      };
    }
  }
}

/** The response stream handed to a RESPONSE_STREAM handler. */
export class LocalResponseStream {
  readonly chunks: string[] = [];
  meta: { statusCode: number; headers: Record<string, string> } | undefined;
  ended = false;
  write(chunk: string | Uint8Array): boolean {
    this.chunks.push(typeof chunk === 'string' ? chunk : new TextDecoder().decode(chunk));
    return true;
  }
  end(chunk?: string): void {
    if (chunk !== undefined) this.write(chunk);
    this.ended = true;
  }
  setContentType(type: string): void {
    this.meta = {
      statusCode: this.meta?.statusCode ?? 200,
      headers: { ...this.meta?.headers, 'content-type': type },
    };
  }
}

async function toBytes(body: unknown): Promise<Uint8Array> {
  if (body === undefined || body === null) return new Uint8Array();
  if (typeof body === 'string') return new TextEncoder().encode(body);
  if (body instanceof Uint8Array) return body;
  if (typeof (body as AsyncIterable<unknown>)[Symbol.asyncIterator] === 'function') {
    const parts: Buffer[] = [];
    for await (const c of body as AsyncIterable<Buffer | string>) parts.push(Buffer.from(c));
    return Buffer.concat(parts);
  }
  throw new Error(`unsupported PutObject body ${typeof body}`);
}

/** Validates a value against an API Gateway model (JSON Schema draft 4) with ajv. */
function validateDraft4(schema: Json, value: unknown): boolean {
  return ajvValidator(schema)(value);
}

const compiled = new Map<string, (v: unknown) => boolean>();

function ajvValidator(schema: Json): (v: unknown) => boolean {
  const key = JSON.stringify(schema);
  let v = compiled.get(key);
  if (v === undefined) {
    // Draft 4's boolean exclusiveMinimum/Maximum, in the numeric form later drafts (and ajv) use.
    const upgrade = (node: Json): Json => {
      if (Array.isArray(node)) return node.map(upgrade);
      if (node === null || typeof node !== 'object') return node;
      const out: Record<string, Json> = {};
      for (const [k, val] of Object.entries(node)) {
        if (k === '$schema' || k === 'id') continue;
        out[k] = upgrade(val);
      }
      if (out.exclusiveMinimum === true) {
        out.exclusiveMinimum = out.minimum;
        delete out.minimum;
      } else if (out.exclusiveMinimum === false) delete out.exclusiveMinimum;
      if (out.exclusiveMaximum === true) {
        out.exclusiveMaximum = out.maximum;
        delete out.maximum;
      } else if (out.exclusiveMaximum === false) delete out.exclusiveMaximum;
      return out;
    };
    const ajv = new Ajv({ strict: false, allErrors: false });
    v = ajv.compile(upgrade(schema)) as (v: unknown) => boolean;
    compiled.set(key, v);
  }
  return v;
}
