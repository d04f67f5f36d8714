/**
 * The pgvector network and database access: a subnet layout that NAT does not change, a proxy that is not
 * replaced, NAT count / extra endpoints / existing-VPC options, and per-role database secrets.
 */
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { Ai4ragStack } from '../../lib/ai4rag-stack.js';
import { BUNDLING_STACKS_CONTEXT, readCdkJsonContext } from '../../lib/app.js';
import { DeployConfigError, parseDeployConfig } from '../../lib/config.js';
import { PGVECTOR_READER_ROLE, PGVECTOR_WRITER_ROLE } from '../../lib/constructs/vector-store.js';
import {
  byConstructId,
  type Json,
  ofType,
  type Resources,
  type Synthesized,
  synthesize,
} from './template.js';

const OPENAI = {
  openaiBaseUrl: 'https://models.example.com/v1',
  embeddingModel: 'text-embedding-3-small',
  foundationModel: 'gpt-4o-mini',
};

const subnets = (resources: Resources) =>
  Object.fromEntries(
    Object.entries(ofType(resources, 'AWS::EC2::Subnet')).map(([id, r]) => [
      id,
      (r.Properties as Json).CidrBlock as string,
    ]),
  );
const envOf = (s: Synthesized, fnId: string): Record<string, Json> =>
  (byConstructId(s.resources, fnId).properties as Json).Environment.Variables;
const onlyOf = (resources: Resources, type: string): [string, Json] => {
  const all = Object.entries(ofType(resources, type));
  expect(all, type).toHaveLength(1);
  return all[0] as [string, Json];
};

describe('pgvector network', () => {
  let plain: Synthesized;
  let withNat: Synthesized;
  beforeAll(() => {
    plain = synthesize({ vectorStore: 'pgvector' });
    withNat = synthesize({ vectorStore: 'pgvector', ...OPENAI });
  });

  it('keeps every subnet of the no-NAT layout, at the same address, when openaiBaseUrl adds NAT', () => {
    // Act
    const before = subnets(plain.resources);
    const after = subnets(withNat.resources);

    // Assess: app and db at the addresses the no-NAT layout always had; NAT only adds the public subnets
    expect(Object.values(before).sort()).toEqual([
      '10.0.0.0/22',
      '10.0.4.0/22',
      '10.0.8.0/24',
      '10.0.9.0/24',
    ]);
    expect(after).toMatchObject(before);
    expect(Object.keys(after).filter((id) => !(id in before))).toEqual([
      expect.stringMatching(/^VectorStoreVpcpublicSubnet1Subnet/),
      expect.stringMatching(/^VectorStoreVpcpublicSubnet2Subnet/),
    ]);
    plain.template.resourceCountIs('AWS::EC2::InternetGateway', 0);
    plain.template.resourceCountIs('AWS::EC2::NatGateway', 0);
    withNat.template.resourceCountIs('AWS::EC2::NatGateway', 1);
  });

  it('leaves the database, its subnet group and the proxy unchanged; the proxy name is generated', () => {
    // Act
    const [proxyId, proxy] = onlyOf(plain.resources, 'AWS::RDS::DBProxy');
    const [natProxyId, natProxy] = onlyOf(withNat.resources, 'AWS::RDS::DBProxy');

    // Assess
    expect(natProxyId).toBe(proxyId);
    expect(natProxy.Properties).toEqual(proxy.Properties);
    expect(proxy.Properties.DBProxyName).not.toBe('Proxy');
    expect(proxy.Properties.DBProxyName).toMatch(/VectorStore.*Proxy/);
    for (const type of ['AWS::RDS::DBInstance', 'AWS::RDS::DBSubnetGroup']) {
      const [id, resource] = onlyOf(plain.resources, type);
      const [natId, natResource] = onlyOf(withNat.resources, type);
      expect(natId, type).toBe(id);
      expect(natResource.Properties, type).toEqual(resource.Properties);
    }
  });

  it('takes an explicit NAT count, and no NAT even with a model endpoint', () => {
    // Act
    const two = synthesize({ vectorStore: 'pgvector', ...OPENAI, natGateways: '2' });
    const none = synthesize({ vectorStore: 'pgvector', ...OPENAI, natGateways: 0 });

    // Assess
    two.template.resourceCountIs('AWS::EC2::NatGateway', 2);
    none.template.resourceCountIs('AWS::EC2::NatGateway', 0);
    expect(subnets(none.resources)).toEqual(subnets(plain.resources));
  });

  it('adds interface endpoints for AWS services and PrivateLink endpoint services', () => {
    // Act
    const s = synthesize({
      vectorStore: 'pgvector',
      interfaceEndpoints:
        'bedrock-runtime, com.amazonaws.vpce.eu-west-1.vpce-svc-0123456789abcdef0',
    });
    const bedrock = byConstructId(s.resources, 'VectorStoreVpcEndpointBedrockRuntime').properties;
    const service = byConstructId(
      s.resources,
      'VectorStoreVpcEndpointVpceSvc0123456789abcdef0',
    ).properties;

    // Assess
    expect(JSON.stringify(bedrock.ServiceName)).toContain('.bedrock-runtime');
    expect(bedrock).toMatchObject({ VpcEndpointType: 'Interface', PrivateDnsEnabled: true });
    expect(service).toMatchObject({
      ServiceName: 'com.amazonaws.vpce.eu-west-1.vpce-svc-0123456789abcdef0',
      PrivateDnsEnabled: false,
    });
  });

  it('leaves the AWS service endpoints out with awsServiceEndpoints=false', () => {
    // Act
    const s = synthesize({ vectorStore: 'pgvector', awsServiceEndpoints: 'false' });

    // Assess
    s.template.resourceCountIs('AWS::EC2::VPCEndpoint', 0);
  });
});

describe('pgvector in an existing VPC', () => {
  const VPC_ID = 'vpc-0123456789abcdef0';
  const subnet = (n: number, az: string) => ({
    subnetId: `subnet-0${n}23456789abcdef0`,
    cidr: `10.1.${n}.0/24`,
    availabilityZone: az,
    routeTableId: `rtb-0${n}23456789abcdef0`,
  });
  /** The cached answer of the VPC lookup (what `cdk.context.json` holds after a synth with credentials). */
  const LOOKUP = {
    [`vpc-provider:account=123456789012:filter.vpc-id=${VPC_ID}:region=eu-west-1:returnAsymmetricSubnets=true`]:
      {
        vpcId: VPC_ID,
        vpcCidrBlock: '10.1.0.0/16',
        ownerAccountId: '123456789012',
        availabilityZones: [],
        subnetGroups: [
          {
            name: 'Private',
            type: 'Private',
            subnets: [subnet(1, 'eu-west-1a'), subnet(2, 'eu-west-1b')],
          },
          {
            name: 'Isolated',
            type: 'Isolated',
            subnets: [subnet(3, 'eu-west-1a'), subnet(4, 'eu-west-1b')],
          },
        ],
      },
  };
  const build = (env?: { account: string; region: string }) => {
    const context = {
      ...readCdkJsonContext(),
      ...LOOKUP,
      [BUNDLING_STACKS_CONTEXT]: [],
      vectorStore: 'pgvector',
      vpcId: VPC_ID,
    };
    const app = new App({ context });
    return new Ai4ragStack(app, 'Ai4rag', {
      config: parseDeployConfig(context),
      ...(env !== undefined && { env }),
    });
  };

  it('looks the VPC up and creates none (no subnets, no NAT, no flow log)', () => {
    // Act
    const template = Template.fromStack(build({ account: '123456789012', region: 'eu-west-1' }));
    const resources = template.toJSON().Resources as Resources;

    // Assess: functions in the private subnets, the database and the proxy in the isolated ones
    for (const type of [
      'AWS::EC2::VPC',
      'AWS::EC2::Subnet',
      'AWS::EC2::NatGateway',
      'AWS::EC2::FlowLog',
    ]) {
      template.resourceCountIs(type, 0);
    }
    template.hasResourceProperties('AWS::RDS::DBProxy', {
      VpcSubnetIds: ['subnet-0323456789abcdef0', 'subnet-0423456789abcdef0'],
    });
    expect(
      (byConstructId(resources, 'SearchFunction').properties as Json).VpcConfig.SubnetIds,
    ).toEqual(['subnet-0123456789abcdef0', 'subnet-0223456789abcdef0']);
  });

  it('explains that a lookup needs the stack account and region', () => {
    expect(() => build()).toThrow(/vpcId vpc-0123456789abcdef0: looking up an existing VPC needs/);
  });
});

describe('network context keys', () => {
  it.each([
    [
      { natGateways: '3' },
      'natGateways: must be an integer from 0 to 2 (the VPC spans two availability zones)',
    ],
    [{ vpcId: 'vpc-xyz' }, "vpcId: must be a VPC id such as 'vpc-0123456789abcdef0'"],
    [
      { vpcId: 'vpc-0123456789abcdef0', natGateways: 1 },
      'natGateways: applies to the VPC the stack creates, not to an existing vpcId',
    ],
    [{ interfaceEndpoints: ['https://x'] }, 'interfaceEndpoints.0: must be an AWS service name'],
  ])('rejects %j', (context, message) => {
    expect(() => parseDeployConfig({ vectorStore: 'pgvector', ...context })).toThrow(
      DeployConfigError,
    );
    expect(() => parseDeployConfig({ vectorStore: 'pgvector', ...context })).toThrow(message);
  });

  it('parses a comma-separated endpoint list and the NAT count', () => {
    // Act
    const config = parseDeployConfig({
      vectorStore: 'pgvector',
      natGateways: '2',
      interfaceEndpoints: 'bedrock-runtime,sagemaker.runtime',
    });

    // Assess
    expect(config.network).toEqual({
      natGateways: 2,
      interfaceEndpoints: ['bedrock-runtime', 'sagemaker.runtime'],
      awsServiceEndpoints: true,
    });
  });
});

describe('pgvector database roles', () => {
  let s: Synthesized;
  let secrets: Record<string, string>;
  beforeAll(() => {
    s = synthesize({ vectorStore: 'pgvector' });
    secrets = Object.fromEntries(
      Object.entries(ofType(s.resources, 'AWS::SecretsManager::Secret')).map(([id, r]) => [
        JSON.parse((r.Properties as Json).GenerateSecretString.SecretStringTemplate).username,
        id,
      ]),
    );
  });
  const attachmentOf = (secretId: string): string => {
    const found = Object.entries(
      ofType(s.resources, 'AWS::SecretsManager::SecretTargetAttachment'),
    ).find(([, r]) => (r.Properties as Json).SecretId.Ref === secretId);
    if (found === undefined) throw new Error(`no attachment for ${secretId}`);
    return found[0];
  };

  it('generates a secret per role and registers all three with the proxy', () => {
    // Assess
    expect(Object.keys(secrets).sort()).toEqual(
      ['ai4rag_admin', PGVECTOR_READER_ROLE, PGVECTOR_WRITER_ROLE].sort(),
    );
    const [, proxy] = onlyOf(s.resources, 'AWS::RDS::DBProxy');
    expect(proxy.Properties.Auth).toHaveLength(3);
  });

  it('connects the query functions as the reader and the other store clients as the writer', () => {
    // Prepare
    const reader = { Ref: attachmentOf(secrets[PGVECTOR_READER_ROLE] as string) };
    const writer = { Ref: attachmentOf(secrets[PGVECTOR_WRITER_ROLE] as string) };

    // Assess
    for (const fnId of ['SearchFunction', 'GenerateFunction', 'GenerateStreamFunction']) {
      expect(envOf(s, fnId).PGVECTOR_SECRET_ARN, fnId).toEqual(reader);
    }
    for (const fnId of [
      'IngestFunction',
      'EmbedBatchFunction',
      'DocumentsFunction',
      'EvaluateFunction',
      'ExperimentIndexFunction',
      'ExperimentFinalizeFunction',
    ]) {
      expect(envOf(s, fnId).PGVECTOR_SECRET_ARN, fnId).toEqual(writer);
    }
  });

  it('lets only DbInit and the proxy read the master secret', () => {
    // Prepare
    const master = secrets.ai4rag_admin as string;
    const readers = Object.entries(ofType(s.resources, 'AWS::IAM::Policy'))
      .filter(
        ([, p]) =>
          JSON.stringify(p.Properties).includes(`"${master}"`) ||
          JSON.stringify(p.Properties).includes(`"${attachmentOf(master)}"`),
      )
      .map(([id]) => id.replace(/[0-9A-F]{8}$/, ''));

    // Assess
    expect(readers.sort()).toEqual([
      'DbInitFunctionServiceRoleDefaultPolicy',
      'VectorStoreDatabaseProxyIAMRoleDefaultPolicy',
    ]);
  });

  it('passes the roles and their secrets to DbInit', () => {
    s.template.hasResourceProperties('Custom::Ai4ragPgvectorExtension', {
      extension: 'vector',
      writerRole: PGVECTOR_WRITER_ROLE,
      readerRole: PGVECTOR_READER_ROLE,
      writerSecretArn: { Ref: attachmentOf(secrets[PGVECTOR_WRITER_ROLE] as string) },
      readerSecretArn: { Ref: attachmentOf(secrets[PGVECTOR_READER_ROLE] as string) },
    });
  });
});
