/**
 * The vector store the Lambdas talk to: either RDS PostgreSQL 16 with pgvector behind an RDS Proxy in a
 * private VPC, or Zilliz Cloud (managed Milvus) reached over the internet with a token kept in Secrets
 * Manager. The rest of the stack only sees {@link VectorStoreAccess}.
 */
import {
  type CfnResource,
  CustomResource,
  Duration,
  RemovalPolicy,
  Stack,
  Validations,
} from 'aws-cdk-lib';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import type { IGrantable } from 'aws-cdk-lib/aws-iam';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import * as rds from 'aws-cdk-lib/aws-rds';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import { Provider } from 'aws-cdk-lib/custom-resources';
import { Construct } from 'constructs';
import type { DeployConfig } from '../config.js';
import { createNodeFunction } from './node-function.js';

/** Name of the application database on the RDS instance. */
export const PGVECTOR_DATABASE = 'ai4rag';
/** Port of the RDS Proxy endpoint the Lambdas connect to. */
export const PGVECTOR_PORT = 5432;

/** Network placement handed to functions that reach the database. */
export interface VpcPlacement {
  vpc: ec2.IVpc;
  subnets: ec2.SubnetSelection;
  securityGroup: ec2.ISecurityGroup;
}

/** What a function needs to use the store: env vars, a grant, and (pgvector) a VPC placement. */
export interface VectorStoreAccess {
  /** Environment variables naming the store and its credentials' secret. */
  readonly environment: Record<string, string>;
  /** VPC placement for store clients; undefined for Zilliz (no VPC). */
  readonly placement?: VpcPlacement;
  /** Gives a function read access to the store's credentials secret. */
  grantAccess(grantee: IGrantable): void;
}

/** Props of {@link VectorStore}. */
export interface VectorStoreProps {
  config: DeployConfig;
}

/**
 * Builds the configured store. For pgvector it also runs `CREATE EXTENSION IF NOT EXISTS vector` at
 * deploy time through the `DbInitFunction` custom resource.
 */
export class VectorStore extends Construct implements VectorStoreAccess {
  readonly environment: Record<string, string>;
  readonly placement?: VpcPlacement;
  /** The VPC (pgvector only). */
  readonly vpc?: ec2.Vpc;
  /** The database instance (pgvector only). */
  readonly instance?: rds.DatabaseInstance;
  /** The proxy the functions connect to (pgvector only). */
  readonly proxy?: rds.DatabaseProxy;
  /** The function that enables the vector extension (pgvector only). */
  readonly dbInitFunction?: NodejsFunction;
  private readonly secret: secretsmanager.ISecret;

  constructor(scope: Construct, id: string, props: VectorStoreProps) {
    super(scope, id);
    const { config } = props;
    if (config.vectorStore === 'zilliz') {
      if (config.zilliz === undefined) throw new Error('zilliz settings missing from DeployConfig');
      this.secret = secretsmanager.Secret.fromSecretNameV2(
        this,
        'ZillizToken',
        config.zilliz.tokenSecretName,
      );
      this.environment = {
        AI4RAG_STORE: 'milvus',
        MILVUS_URI: config.zilliz.uri,
        MILVUS_TOKEN_SECRET_ARN: this.secret.secretArn,
      };
      return;
    }

    // Egress is needed only to reach an external model or reranker endpoint; AWS services go through endpoints.
    const needsInternet =
      config.openai !== undefined ||
      config.rerank !== undefined ||
      Object.keys(config.endpoints ?? {}).length > 0;
    const vpc = new ec2.Vpc(this, 'Vpc', {
      maxAzs: 2,
      natGateways: needsInternet ? 1 : 0,
      subnetConfiguration: needsInternet
        ? [
            { name: 'public', subnetType: ec2.SubnetType.PUBLIC, cidrMask: 24 },
            { name: 'app', subnetType: ec2.SubnetType.PRIVATE_WITH_EGRESS, cidrMask: 22 },
            { name: 'db', subnetType: ec2.SubnetType.PRIVATE_ISOLATED, cidrMask: 24 },
          ]
        : [
            { name: 'app', subnetType: ec2.SubnetType.PRIVATE_ISOLATED, cidrMask: 22 },
            { name: 'db', subnetType: ec2.SubnetType.PRIVATE_ISOLATED, cidrMask: 24 },
          ],
      flowLogs: {
        rejected: {
          destination: ec2.FlowLogDestination.toCloudWatchLogs(
            new LogGroup(this, 'FlowLogs', {
              retention: RetentionDays.ONE_MONTH,
              removalPolicy: RemovalPolicy.DESTROY,
            }),
          ),
          trafficType: ec2.FlowLogTrafficType.REJECT,
        },
      },
    });
    this.vpc = vpc;
    const appSubnets: ec2.SubnetSelection = { subnetGroupName: 'app' };
    const dbSubnets: ec2.SubnetSelection = { subnetGroupName: 'db' };

    const lambdaSg = new ec2.SecurityGroup(this, 'LambdaSecurityGroup', {
      vpc,
      description: 'ai4rag Lambdas (outbound is bounded by the subnets routes)',
      // Isolated subnets have no route out, so all-outbound reaches only the VPC, the S3 gateway
      // endpoint (whose prefix list would need a lookup) and the interface endpoints.
      allowAllOutbound: true,
    });
    const proxySg = new ec2.SecurityGroup(this, 'ProxySecurityGroup', {
      vpc,
      description: 'ai4rag RDS Proxy',
      allowAllOutbound: false,
    });
    const dbSg = new ec2.SecurityGroup(this, 'DatabaseSecurityGroup', {
      vpc,
      description: 'ai4rag PostgreSQL instance: reachable from the proxy only',
      allowAllOutbound: false,
    });
    const endpointSg = new ec2.SecurityGroup(this, 'EndpointSecurityGroup', {
      vpc,
      description: 'ai4rag interface VPC endpoints: HTTPS from the Lambdas',
      allowAllOutbound: false,
    });
    proxySg.addIngressRule(lambdaSg, ec2.Port.tcp(PGVECTOR_PORT), 'Lambdas to the proxy');
    // The proxy → database ingress rule is added by addProxy below.
    proxySg.addEgressRule(dbSg, ec2.Port.tcp(PGVECTOR_PORT), 'Proxy to the database');
    endpointSg.addIngressRule(lambdaSg, ec2.Port.tcp(443), 'Lambdas to AWS APIs');
    vpc.addGatewayEndpoint('S3Endpoint', {
      service: ec2.GatewayVpcEndpointAwsService.S3,
      subnets: [appSubnets],
    });
    for (const [name, service] of [
      ['SqsEndpoint', ec2.InterfaceVpcEndpointAwsService.SQS],
      ['SecretsManagerEndpoint', ec2.InterfaceVpcEndpointAwsService.SECRETS_MANAGER],
      ['XRayEndpoint', ec2.InterfaceVpcEndpointAwsService.XRAY],
    ] as const) {
      vpc.addInterfaceEndpoint(name, {
        service,
        subnets: appSubnets,
        securityGroups: [endpointSg],
        open: false,
        privateDnsEnabled: true,
      });
    }

    const instance = new rds.DatabaseInstance(this, 'Database', {
      engine: rds.DatabaseInstanceEngine.postgres({ version: rds.PostgresEngineVersion.VER_16 }),
      instanceType: new ec2.InstanceType(config.database.instanceType),
      vpc,
      vpcSubnets: dbSubnets,
      securityGroups: [dbSg],
      databaseName: PGVECTOR_DATABASE,
      credentials: rds.Credentials.fromGeneratedSecret('ai4rag_admin'),
      storageEncrypted: true,
      allocatedStorage: 20,
      maxAllocatedStorage: 200,
      storageType: rds.StorageType.GP3,
      multiAz: config.database.multiAz,
      iamAuthentication: true,
      backupRetention: Duration.days(7),
      deletionProtection: config.database.deletionProtection,
      removalPolicy: config.database.deletionProtection
        ? RemovalPolicy.SNAPSHOT
        : RemovalPolicy.DESTROY,
      enablePerformanceInsights: false,
      cloudwatchLogsExports: ['postgresql'],
      cloudwatchLogsRetention: RetentionDays.ONE_MONTH,
      publiclyAccessible: false,
      autoMinorVersionUpgrade: true,
    });
    this.instance = instance;
    const secret = instance.secret;
    if (secret === undefined) throw new Error('generated database secret missing');
    this.secret = secret;

    // Each Lambda environment holds one pooled connection per client; the proxy multiplexes them onto
    // at most 90 % of the instance's max_connections, leaving room for the admin and DbInit sessions.
    const proxy = instance.addProxy('Proxy', {
      secrets: [secret],
      vpc,
      vpcSubnets: dbSubnets,
      securityGroups: [proxySg],
      requireTLS: true,
      maxConnectionsPercent: 90,
      maxIdleConnectionsPercent: 30,
      borrowTimeout: Duration.seconds(30),
      idleClientTimeout: Duration.minutes(15),
      debugLogging: false,
    });
    this.proxy = proxy;

    this.placement = { vpc, subnets: appSubnets, securityGroup: lambdaSg };
    this.environment = {
      AI4RAG_STORE: 'pgvector',
      PGVECTOR_HOST: proxy.endpoint,
      PGVECTOR_PORT: String(PGVECTOR_PORT),
      PGVECTOR_DB: PGVECTOR_DATABASE,
      PGVECTOR_SECRET_ARN: secret.secretArn,
    };

    const dbInit = createNodeFunction(scope, 'DbInitFunction', {
      folder: 'db-init',
      description: 'ai4rag: CREATE EXTENSION vector on deploy (custom resource)',
      memorySize: 256,
      timeout: Duration.minutes(2),
      environment: {},
      vpc: this.placement,
    });
    secret.grantRead(dbInit);
    this.dbInitFunction = dbInit;
    const provider = new Provider(this, 'DbInitProvider', {
      onEventHandler: dbInit,
      logGroup: new LogGroup(this, 'DbInitProviderLogs', {
        retention: RetentionDays.ONE_MONTH,
        removalPolicy: RemovalPolicy.DESTROY,
      }),
    });
    const init = new CustomResource(this, 'VectorExtension', {
      serviceToken: provider.serviceToken,
      resourceType: 'Custom::Ai4ragPgvectorExtension',
      properties: {
        host: proxy.endpoint,
        port: String(PGVECTOR_PORT),
        database: PGVECTOR_DATABASE,
        secretArn: secret.secretArn,
        extension: 'vector',
      },
    });
    init.node.addDependency(proxy, instance);
    Validations.of(provider).acknowledge({
      id: `AwsSolutions-IAM5[Resource::<${Stack.of(this).getLogicalId(dbInit.node.defaultChild as CfnResource)}.Arn>:*]`,
      reason:
        'The Provider framework grants invoke on DbInitFunction and its versions (ARN suffix :*), nothing else.',
    });
    Validations.of(provider).acknowledge({
      id: 'AwsSolutions-L1',
      reason:
        'The custom-resource framework Lambda of aws-cdk-lib picks its own runtime; it only relays events to DbInitFunction.',
    });
  }

  grantAccess(grantee: IGrantable): void {
    this.secret.grantRead(grantee);
  }
}
