/**
 * The vector store the Lambdas talk to: either RDS PostgreSQL 16 with pgvector behind an RDS Proxy in a
 * private VPC (created, or an existing one), the query functions connecting as a read-only role and the others as
 * the writer, or Zilliz Cloud (managed Milvus) reached over the internet with a token kept in Secrets
 * Manager. The rest of the stack only sees {@link VectorStoreAccess}.
 */
import {
  type CfnResource,
  CustomResource,
  Duration,
  RemovalPolicy,
  Stack,
  Token,
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

/** Role of the application's writer (owns the collection tables: ingestion, documents, experiments). */
export const PGVECTOR_WRITER_ROLE = 'ai4rag_writer';
/** Role of the query functions: USAGE on the schema and SELECT on the writer's tables, nothing else. */
export const PGVECTOR_READER_ROLE = 'ai4rag_reader';
/** CIDR masks of the created VPC's subnets (fixed, so toggling NAT never re-addresses a subnet). */
const SUBNET_MASKS = { app: 22, db: 24, public: 24 } as const;

/** What a function does with the store: `read` connects as the reader role, `write` as the writer. */
export type StoreAccess = 'read' | 'write';

/** Network placement handed to functions that reach the database. */
export interface VpcPlacement {
  vpc: ec2.IVpc;
  subnets: ec2.SubnetSelection;
  securityGroup: ec2.ISecurityGroup;
}

/** What a function needs to use the store: env vars, a grant, and (pgvector) a VPC placement. */
export interface VectorStoreAccess {
  /** Environment variables naming the store (no credentials: see {@link environmentFor}). */
  readonly environment: Record<string, string>;
  /** VPC placement for store clients; undefined for Zilliz (no VPC). */
  readonly placement?: VpcPlacement;
  /** The environment of a reader or a writer: {@link environment} plus its credentials' secret. */
  environmentFor(access: StoreAccess): Record<string, string>;
  /** Gives a function read access to the credentials secret of `access`. */
  grantAccess(grantee: IGrantable, access: StoreAccess): void;
}

/** Props of {@link VectorStore}. */
export interface VectorStoreProps {
  config: DeployConfig;
}

/** Construct id of an extra interface endpoint (letters and digits of its service name). */
function endpointId(name: string): string {
  const short = name.startsWith('com.amazonaws.') ? (name.split('.').pop() ?? name) : name;
  return `Endpoint${short
    .split(/[^A-Za-z0-9]+/)
    .filter((p) => p !== '')
    .map((p) => p[0]?.toUpperCase() + p.slice(1))
    .join('')}`;
}

/**
 * Builds the configured store. For pgvector it also prepares the database at deploy time through the
 * `DbInitFunction` custom resource: `CREATE EXTENSION vector`, and the {@link PGVECTOR_WRITER_ROLE} and
 * {@link PGVECTOR_READER_ROLE} roles with passwords from their own generated secrets (registered with the RDS
 * Proxy). The master user is used by DbInit only.
 */
export class VectorStore extends Construct implements VectorStoreAccess {
  readonly environment: Record<string, string>;
  readonly placement?: VpcPlacement;
  /** The VPC, created or looked up (pgvector only). */
  readonly vpc?: ec2.IVpc;
  /** The database instance (pgvector only). */
  readonly instance?: rds.DatabaseInstance;
  /** The proxy the functions connect to (pgvector only). */
  readonly proxy?: rds.DatabaseProxy;
  /** The function that prepares the database at deploy time (pgvector only). */
  readonly dbInitFunction?: NodejsFunction;
  /** Credentials of each access: the role secrets (pgvector), or the one Zilliz token. */
  private readonly secrets: Record<StoreAccess, secretsmanager.ISecret>;

  constructor(scope: Construct, id: string, props: VectorStoreProps) {
    super(scope, id);
    const { config } = props;
    if (config.vectorStore === 'zilliz') {
      if (config.zilliz === undefined) throw new Error('zilliz settings missing from DeployConfig');
      const token = secretsmanager.Secret.fromSecretNameV2(
        this,
        'ZillizToken',
        config.zilliz.tokenSecretName,
      );
      this.secrets = { read: token, write: token };
      this.environment = {
        AI4RAG_STORE: 'milvus',
        MILVUS_URI: config.zilliz.uri,
        MILVUS_TOKEN_SECRET_ARN: token.secretArn,
      };
      return;
    }

    const { network } = config;
    const vpc =
      network.vpcId !== undefined ? this.lookUpVpc(network.vpcId) : this.createVpc(config);
    this.vpc = vpc;
    // An existing VPC: the functions go in its private subnets (with egress if it has them), the database in its
    // isolated ones if any.
    const appSubnets: ec2.SubnetSelection =
      network.vpcId === undefined
        ? { subnetGroupName: 'app' }
        : {
            subnetType:
              vpc.privateSubnets.length > 0
                ? ec2.SubnetType.PRIVATE_WITH_EGRESS
                : ec2.SubnetType.PRIVATE_ISOLATED,
          };
    const dbSubnets: ec2.SubnetSelection =
      network.vpcId === undefined
        ? { subnetGroupName: 'db' }
        : vpc.isolatedSubnets.length > 0
          ? { subnetType: ec2.SubnetType.PRIVATE_ISOLATED }
          : appSubnets;

    const lambdaSg = new ec2.SecurityGroup(this, 'LambdaSecurityGroup', {
      vpc,
      description: 'ai4rag Lambdas (outbound is bounded by the subnets routes)',
      // Subnets without a NAT route reach only the VPC, the S3 gateway endpoint (whose prefix list would need
      // a lookup) and the interface endpoints.
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
    if (network.awsServiceEndpoints) {
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
    }
    for (const name of network.interfaceEndpoints) {
      // An endpoint service of a model server has no private DNS name unless its owner verified one: the
      // functions use the endpoint's own DNS name (its DnsEntries) as the base URL.
      const isService = name.startsWith('com.amazonaws.vpce.');
      vpc.addInterfaceEndpoint(endpointId(name), {
        service: isService
          ? new ec2.InterfaceVpcEndpointService(name, 443)
          : new ec2.InterfaceVpcEndpointAwsService(name),
        subnets: appSubnets,
        securityGroups: [endpointSg],
        open: false,
        privateDnsEnabled: !isService,
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
    const master = instance.secret;
    if (master === undefined) throw new Error('generated database secret missing');
    // One generated secret per application role, attached to the instance (host, port, dbname added to it).
    const roleSecret = (secretId: string, username: string): secretsmanager.ISecret => {
      const secret = new rds.DatabaseSecret(this, secretId, { username });
      Validations.of(secret).acknowledge({
        id: 'AwsSolutions-SMG4',
        reason: `The ${username} password is set by DbInit from this secret; rotating it needs a rotation Lambda (not provisioned, to avoid NAT/endpoint costs) and a DbInit update.`,
      });
      return secret.attach(instance);
    };
    const writerSecret = roleSecret('WriterSecret', PGVECTOR_WRITER_ROLE);
    const readerSecret = roleSecret('ReaderSecret', PGVECTOR_READER_ROLE);
    this.secrets = { read: readerSecret, write: writerSecret };

    // Each Lambda environment holds one pooled connection per client; the proxy multiplexes them onto
    // at most 90 % of the instance's max_connections, leaving room for the admin and DbInit sessions.
    // Its name is generated (feature flag @aws-cdk/aws-rds:databaseProxyUniqueResourceName), so a change
    // that replaces it can create the new proxy before deleting the old one.
    const proxy = instance.addProxy('Proxy', {
      secrets: [master, writerSecret, readerSecret],
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
    };

    const dbInit = createNodeFunction(scope, 'DbInitFunction', {
      folder: 'db-init',
      description:
        'ai4rag: CREATE EXTENSION vector and the writer/reader roles on deploy (custom resource)',
      memorySize: 256,
      timeout: Duration.minutes(2),
      environment: {},
      vpc: this.placement,
      // It connects with pg directly, not through the runtime: the bundle needs neither store nor models.
      bundle: {},
    });
    for (const secret of [master, writerSecret, readerSecret]) secret.grantRead(dbInit);
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
        secretArn: master.secretArn,
        extension: 'vector',
        writerRole: PGVECTOR_WRITER_ROLE,
        writerSecretArn: writerSecret.secretArn,
        readerRole: PGVECTOR_READER_ROLE,
        readerSecretArn: readerSecret.secretArn,
      },
    });
    init.node.addDependency(proxy, instance, writerSecret, readerSecret);
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

  /**
   * The created VPC: two AZs, always the same three subnet groups at fixed CIDRs (`app` /22 and `db` /24 first,
   * at the addresses they had before the layout was fixed, then `public` /24). Without NAT gateways the public
   * subnets are only reserved (no subnet, no internet gateway) and `app` has no default route; turning NAT on
   * adds the public subnets, the gateways and the routes, and changes no existing subnet.
   */
  private createVpc(config: DeployConfig): ec2.Vpc {
    // Egress is needed only to reach an external model or reranker endpoint; AWS services go through endpoints.
    const needsInternet =
      config.openai !== undefined ||
      config.rerank !== undefined ||
      Object.keys(config.endpoints ?? {}).length > 0;
    const natGateways = config.network.natGateways ?? (needsInternet ? 1 : 0);
    return new ec2.Vpc(this, 'Vpc', {
      maxAzs: 2,
      natGateways,
      // Egress subnets count as needing one, but without NAT nothing would use it.
      createInternetGateway: natGateways > 0,
      subnetConfiguration: [
        {
          name: 'app',
          subnetType: ec2.SubnetType.PRIVATE_WITH_EGRESS,
          cidrMask: SUBNET_MASKS.app,
        },
        { name: 'db', subnetType: ec2.SubnetType.PRIVATE_ISOLATED, cidrMask: SUBNET_MASKS.db },
        {
          name: 'public',
          subnetType: ec2.SubnetType.PUBLIC,
          cidrMask: SUBNET_MASKS.public,
          reserved: natGateways === 0,
        },
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
  }

  /** An existing VPC, looked up at synth (cached in cdk.context.json); the stack needs an account and region. */
  private lookUpVpc(vpcId: string): ec2.IVpc {
    const stack = Stack.of(this);
    if (Token.isUnresolved(stack.account) || Token.isUnresolved(stack.region)) {
      throw new Error(
        `vpcId ${vpcId}: looking up an existing VPC needs the stack's account and region (env); ` +
          'deploy with credentials so CDK_DEFAULT_ACCOUNT/CDK_DEFAULT_REGION are set',
      );
    }
    return ec2.Vpc.fromLookup(this, 'Vpc', { vpcId });
  }

  environmentFor(access: StoreAccess): Record<string, string> {
    if (this.environment.AI4RAG_STORE === 'milvus') return this.environment;
    return { ...this.environment, PGVECTOR_SECRET_ARN: this.secrets[access].secretArn };
  }

  grantAccess(grantee: IGrantable, access: StoreAccess): void {
    this.secrets[access].grantRead(grantee);
  }
}
