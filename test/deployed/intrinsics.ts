/**
 * CloudFormation intrinsics of a synthesized template, resolved to local stand-ins: every Ref / GetAtt gets the
 * value AWS would give it (names, ARNs, URLs in a fixed fake account), except the endpoints a test replaces
 * (the RDS Proxy or instance endpoint → a loopback relay). An intrinsic or resource type the resolver does not
 * know is an error naming it, so new wiring cannot be silently mis-resolved.
 */

// biome-ignore lint/suspicious/noExplicitAny: parsed CloudFormation JSON is navigated freely
export type Json = any;

export interface TemplateResource {
  Type: string;
  Properties?: Record<string, Json>;
  Metadata?: Record<string, Json>;
}

export interface TemplateJson {
  Resources: Record<string, TemplateResource>;
  Parameters?: Record<string, Json>;
}

export const ACCOUNT = '000000000000';
export const REGION = 'us-east-1';

/** Values a test gives for attributes AWS would create (e.g. the database endpoint). */
export interface AttributeStandIns {
  /** Host of the RDS Proxy and instance endpoints. */
  databaseHost?: string;
  /** Port of the RDS instance endpoint (the proxy's port is in the template). */
  databasePort?: string;
}

export class TemplateResolutionError extends Error {
  override name = 'TemplateResolutionError';
}

/** The S3 bucket name of a bucket resource (lower-case, as generated names are). */
export function bucketName(logicalId: string): string {
  return `ai4rag-${logicalId.toLowerCase()}`;
}

export function queueUrl(logicalId: string): string {
  return `https://sqs.${REGION}.amazonaws.com/${ACCOUNT}/${logicalId}`;
}

export function queueArn(logicalId: string): string {
  return `arn:aws:sqs:${REGION}:${ACCOUNT}:${logicalId}`;
}

export function functionArn(logicalId: string): string {
  return `arn:aws:lambda:${REGION}:${ACCOUNT}:function:${logicalId}`;
}

/** ARN of a secret the stack creates (Secrets Manager appends 6 random characters to the name). */
export function secretArn(logicalId: string): string {
  return `arn:aws:secretsmanager:${REGION}:${ACCOUNT}:secret:${logicalId}-AbCdEf`;
}

const PSEUDO: Record<string, string> = {
  'AWS::Partition': 'aws',
  'AWS::Region': REGION,
  'AWS::AccountId': ACCOUNT,
  'AWS::URLSuffix': 'amazonaws.com',
  'AWS::StackName': 'Ai4rag',
  'AWS::StackId': `arn:aws:cloudformation:${REGION}:${ACCOUNT}:stack/Ai4rag/1`,
  'AWS::NoValue': '',
};

export class Resolver {
  constructor(
    readonly template: TemplateJson,
    readonly standIns: AttributeStandIns = {},
  ) {}

  resource(logicalId: string): TemplateResource {
    const r = this.template.Resources[logicalId];
    if (r === undefined)
      throw new TemplateResolutionError(`no resource ${logicalId} in the template`);
    return r;
  }

  /** The value of `{Ref: logicalId}`. */
  ref(logicalId: string): string {
    const pseudo = PSEUDO[logicalId];
    if (pseudo !== undefined) return pseudo;
    const parameter = this.template.Parameters?.[logicalId];
    if (parameter !== undefined) {
      if (parameter.Default === undefined) {
        throw new TemplateResolutionError(`parameter ${logicalId} has no default`);
      }
      return String(parameter.Default);
    }
    const { Type } = this.resource(logicalId);
    switch (Type) {
      case 'AWS::S3::Bucket':
        return bucketName(logicalId);
      case 'AWS::SQS::Queue':
        return queueUrl(logicalId);
      case 'AWS::Lambda::Function':
        return logicalId;
      case 'AWS::SecretsManager::Secret':
      case 'AWS::SecretsManager::SecretTargetAttachment':
        return secretArn(this.secretOf(logicalId));
      case 'AWS::StepFunctions::StateMachine':
        return `arn:aws:states:${REGION}:${ACCOUNT}:stateMachine:${logicalId}`;
      case 'AWS::SNS::Topic':
        return `arn:aws:sns:${REGION}:${ACCOUNT}:${logicalId}`;
      case 'AWS::IAM::Role':
      case 'AWS::Logs::LogGroup':
      case 'AWS::EC2::SecurityGroup':
      case 'AWS::EC2::Subnet':
      case 'AWS::EC2::VPC':
      case 'AWS::RDS::DBInstance':
      case 'AWS::RDS::DBProxy':
      case 'AWS::ApiGateway::RestApi':
      case 'AWS::ApiGateway::Resource':
      case 'AWS::ApiGateway::Model':
      case 'AWS::ApiGateway::RequestValidator':
      case 'AWS::ApiGateway::Deployment':
      case 'AWS::ApiGateway::Stage':
      case 'AWS::ApiGateway::ApiKey':
      case 'AWS::ApiGateway::UsagePlan':
      case 'AWS::EC2::RouteTable':
      case 'AWS::EC2::NatGateway':
      case 'AWS::EC2::InternetGateway':
      case 'AWS::EC2::VPCEndpoint':
      case 'AWS::EC2::Route':
      case 'AWS::IAM::Policy':
      case 'AWS::KMS::Key':
      case 'AWS::CloudWatch::Alarm':
      case 'AWS::Lambda::EventSourceMapping':
        return logicalId;
      default:
        throw new TemplateResolutionError(`Ref to ${logicalId} (${Type}) has no local stand-in`);
    }
  }

  /** A secret attachment resolves to its secret. */
  secretOf(logicalId: string): string {
    const r = this.resource(logicalId);
    if (r.Type === 'AWS::SecretsManager::SecretTargetAttachment') {
      const target = r.Properties?.SecretId;
      if (target?.Ref === undefined)
        throw new TemplateResolutionError(`${logicalId}: SecretId is not a Ref`);
      return this.secretOf(target.Ref);
    }
    return logicalId;
  }

  /** The value of `{"Fn::GetAtt": [logicalId, attribute]}`. */
  getAtt(logicalId: string, attribute: string): string {
    const { Type } = this.resource(logicalId);
    const key = `${Type}.${attribute}`;
    switch (key) {
      case 'AWS::SQS::Queue.Arn':
        return queueArn(logicalId);
      case 'AWS::SQS::Queue.QueueUrl':
        return queueUrl(logicalId);
      case 'AWS::SQS::Queue.QueueName':
        return logicalId;
      case 'AWS::S3::Bucket.Arn':
        return `arn:aws:s3:::${bucketName(logicalId)}`;
      case 'AWS::S3::Bucket.RegionalDomainName':
      case 'AWS::S3::Bucket.DomainName':
        return `${bucketName(logicalId)}.s3.${REGION}.amazonaws.com`;
      case 'AWS::Lambda::Function.Arn':
        return functionArn(logicalId);
      case 'AWS::IAM::Role.Arn':
        return `arn:aws:iam::${ACCOUNT}:role/${logicalId}`;
      case 'AWS::Logs::LogGroup.Arn':
        return `arn:aws:logs:${REGION}:${ACCOUNT}:log-group:${logicalId}:*`;
      case 'AWS::SNS::Topic.TopicArn':
        return `arn:aws:sns:${REGION}:${ACCOUNT}:${logicalId}`;
      case 'AWS::StepFunctions::StateMachine.Arn':
        return `arn:aws:states:${REGION}:${ACCOUNT}:stateMachine:${logicalId}`;
      case 'AWS::StepFunctions::StateMachine.Name':
        return logicalId;
      case 'AWS::EC2::SecurityGroup.GroupId':
        return `sg-${logicalId}`;
      case 'AWS::ApiGateway::RestApi.RootResourceId':
        return `${logicalId}/`;
      case 'AWS::RDS::DBProxy.Endpoint':
      case 'AWS::RDS::DBInstance.Endpoint.Address': {
        const host = this.standIns.databaseHost;
        if (host === undefined)
          throw new TemplateResolutionError(`${key} needs a database stand-in`);
        return host;
      }
      case 'AWS::RDS::DBInstance.Endpoint.Port': {
        const port = this.standIns.databasePort;
        if (port === undefined)
          throw new TemplateResolutionError(`${key} needs a database stand-in`);
        return port;
      }
      case 'AWS::RDS::DBProxy.DBProxyArn':
        return `arn:aws:rds:${REGION}:${ACCOUNT}:db-proxy:${logicalId}`;
      case 'AWS::RDS::DBInstance.DbiResourceId':
        return `db-${logicalId}`;
      case 'AWS::Lambda::Url.FunctionUrl':
        return `https://${logicalId.toLowerCase()}.lambda-url.${REGION}.on.aws/`;
      default:
        // Attributes no call depends on (VPC ids, default security groups, …) keep a recognisable placeholder.
        return `local:${logicalId}.${attribute}`;
    }
  }

  /** Resolves every intrinsic in a value (strings, arrays and objects pass through). */
  resolve(value: Json): Json {
    if (Array.isArray(value)) return value.map((v) => this.resolve(v));
    if (value === null || typeof value !== 'object') return value;
    const keys = Object.keys(value);
    if (keys.length === 1) {
      const [k] = keys as [string];
      const arg = value[k];
      if (k === 'Ref') return this.ref(arg);
      if (k === 'Fn::GetAtt') {
        const [id, ...attr] = Array.isArray(arg) ? arg : String(arg).split('.');
        return this.getAtt(id, attr.join('.'));
      }
      if (k === 'Fn::Join') {
        const [sep, parts] = arg as [string, Json[]];
        return this.resolve(parts)
          .map((p: Json) => String(p))
          .join(sep);
      }
      if (k === 'Fn::Select') {
        const [index, list] = arg as [number | string, Json];
        return this.resolve(list)[Number(index)];
      }
      if (k === 'Fn::Split') {
        const [sep, text] = arg as [string, Json];
        return String(this.resolve(text)).split(sep);
      }
      if (k === 'Fn::Sub') {
        const [text, vars] = Array.isArray(arg) ? arg : [arg, {}];
        const local = this.resolve(vars ?? {}) as Record<string, string>;
        return String(text).replace(/\$\{([^}]+)\}/g, (_m, name: string) => {
          if (local[name] !== undefined) return local[name];
          const dot = name.indexOf('.');
          if (dot > 0 && !name.startsWith('AWS::')) {
            return this.getAtt(name.slice(0, dot), name.slice(dot + 1));
          }
          return this.ref(name);
        });
      }
      if (k.startsWith('Fn::')) throw new TemplateResolutionError(`${k} is not supported locally`);
    }
    const out: Record<string, Json> = {};
    for (const [k, v] of Object.entries(value)) out[k] = this.resolve(v);
    return out;
  }

  /** Resources of one type, by logical id. */
  ofType(type: string): [string, TemplateResource][] {
    return Object.entries(this.template.Resources).filter(([, r]) => r.Type === type);
  }
}

/** The logical id a resolved function ARN (or name) points at. */
export function functionIdOfArn(arn: string): string {
  const m = /^arn:aws:lambda:[^:]+:[^:]+:function:([^:]+)(:.*)?$/.exec(arn);
  return m?.[1] ?? arn;
}
