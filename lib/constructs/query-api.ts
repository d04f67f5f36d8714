/**
 * The Query API: an API Gateway REST API in front of the search, generate and documents Lambdas, with IAM
 * (SigV4) auth on every method by default or API keys with a usage plan, stage throttling, JSON access
 * logs, X-Ray, and body validation of every POST. Streaming answers use a Function URL (see the stack).
 */
import { RemovalPolicy, Validations } from 'aws-cdk-lib';
import * as apigateway from 'aws-cdk-lib/aws-apigateway';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { z } from 'zod';
import {
  ChatRequest,
  GenerateRequest,
  SearchRequest,
  UploadRequest,
} from '../../shared/src/api/schemas.js';

/** Props of {@link QueryApi}. */
export interface QueryApiProps {
  search: IFunction;
  generate: IFunction;
  documents: IFunction;
  /** 'iam': SigV4 on every method; 'apiKey': an API key on every method (usage plan). */
  auth: 'iam' | 'apiKey';
  /** Steady-state requests per second of the stage (default 50). */
  rateLimit?: number;
  /** Burst of the stage (default 100). */
  burstLimit?: number;
}

/**
 * JSON Schema (draft 4, what API Gateway models accept) of a request body, generated from the zod schema
 * the handler validates with, so the gateway and the handler cannot disagree. `$ref`s are inlined because
 * a model cannot reference definitions inside itself.
 */
export function requestModelSchema(schema: z.ZodType): apigateway.JsonSchema {
  const json = z.toJSONSchema(schema, { target: 'draft-4', io: 'input', unrepresentable: 'any' });
  const definitions = (json as { definitions?: Record<string, unknown> }).definitions ?? {};
  const inline = (node: unknown, depth: number): unknown => {
    if (depth > 32) throw new Error('request schema nests too deeply (recursive $ref?)');
    if (Array.isArray(node)) return node.map((item) => inline(item, depth + 1));
    if (node === null || typeof node !== 'object') return node;
    const record = node as Record<string, unknown>;
    const ref = record.$ref;
    if (typeof ref === 'string') {
      const name = ref.replace(/^#\/definitions\//, '');
      const target = definitions[name];
      if (target === undefined) throw new Error(`request schema has an unknown $ref ${ref}`);
      return inline(target, depth + 1);
    }
    const out: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(record)) {
      if (key === '$schema' || key === 'definitions' || key === 'id') continue;
      out[key] = inline(value, depth + 1);
    }
    return out;
  };
  // The draft-4 keywords zod emits (type, properties, required, enum, min/max…) are spelled the same in
  // CDK's JsonSchema, so the object passes through as is.
  return {
    schema: apigateway.JsonSchemaVersion.DRAFT4,
    ...(inline(json, 0) as apigateway.JsonSchema),
  };
}

/** Request-body models of the POST routes, from the handlers' zod schemas (shared/src/api). */
export const REQUEST_SCHEMAS = {
  SearchRequest,
  GenerateRequest,
  ChatRequest,
  UploadRequest,
} as const;

/** REST API with the routes of the brief; every method is authorized (IAM or API key). */
export class QueryApi extends Construct {
  /** The REST API. */
  readonly api: apigateway.RestApi;
  /** The API key (apiKey mode only). */
  readonly apiKey?: apigateway.IApiKey;

  constructor(scope: Construct, id: string, props: QueryApiProps) {
    super(scope, id);
    const accessLogs = new LogGroup(this, 'AccessLogs', {
      retention: RetentionDays.ONE_MONTH,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    const iam = props.auth === 'iam';
    this.api = new apigateway.RestApi(this, 'RestApi', {
      restApiName: 'ai4rag',
      description: 'ai4rag Query API: search, generate, chat, documents',
      endpointTypes: [apigateway.EndpointType.REGIONAL],
      cloudWatchRole: true,
      cloudWatchRoleRemovalPolicy: RemovalPolicy.DESTROY,
      deployOptions: {
        stageName: 'v1',
        throttlingRateLimit: props.rateLimit ?? 50,
        throttlingBurstLimit: props.burstLimit ?? 100,
        accessLogDestination: new apigateway.LogGroupLogDestination(accessLogs),
        accessLogFormat: apigateway.AccessLogFormat.jsonWithStandardFields(),
        loggingLevel: apigateway.MethodLoggingLevel.ERROR,
        dataTraceEnabled: false,
        metricsEnabled: true,
        tracingEnabled: true,
      },
      defaultMethodOptions: iam
        ? { authorizationType: apigateway.AuthorizationType.IAM }
        : { authorizationType: apigateway.AuthorizationType.NONE, apiKeyRequired: true },
      ...(iam ? {} : { apiKeySourceType: apigateway.ApiKeySourceType.HEADER }),
    });
    const api = this.api;

    // One validator checking both bodies (against the models) and required parameters.
    const validator = new apigateway.RequestValidator(this, 'RequestValidator', {
      restApi: api,
      requestValidatorName: 'body-and-parameters',
      validateRequestBody: true,
      validateRequestParameters: true,
    });
    const model = (name: keyof typeof REQUEST_SCHEMAS): apigateway.Model =>
      api.addModel(name, {
        contentType: 'application/json',
        modelName: name,
        schema: requestModelSchema(REQUEST_SCHEMAS[name]),
      });
    const postWith = (
      resource: apigateway.IResource,
      fn: IFunction,
      name: keyof typeof REQUEST_SCHEMAS,
    ): void => {
      resource.addMethod('POST', new apigateway.LambdaIntegration(fn), {
        requestValidator: validator,
        requestModels: { 'application/json': model(name) },
      });
    };
    const get = (resource: apigateway.IResource, fn: IFunction, withId = false): void => {
      resource.addMethod('GET', new apigateway.LambdaIntegration(fn), {
        requestValidator: validator,
        ...(withId ? { requestParameters: { 'method.request.path.id': true } } : {}),
      });
    };

    postWith(api.root.addResource('search'), props.search, 'SearchRequest');
    postWith(api.root.addResource('generate'), props.generate, 'GenerateRequest');
    postWith(api.root.addResource('chat'), props.generate, 'ChatRequest');
    const documents = api.root.addResource('documents');
    get(documents, props.documents);
    const document = documents.addResource('{id}');
    get(document, props.documents, true);
    document.addMethod('DELETE', new apigateway.LambdaIntegration(props.documents), {
      requestValidator: validator,
      requestParameters: { 'method.request.path.id': true },
    });
    postWith(api.root.addResource('uploads'), props.documents, 'UploadRequest');
    get(api.root.addResource('stats'), props.documents);
    get(api.root.addResource('health'), props.documents);

    if (!iam) {
      const key = api.addApiKey('ApiKey', { description: 'ai4rag Query API key' });
      const plan = api.addUsagePlan('UsagePlan', {
        name: 'ai4rag',
        throttle: { rateLimit: props.rateLimit ?? 50, burstLimit: props.burstLimit ?? 100 },
        apiStages: [{ api, stage: api.deploymentStage }],
      });
      plan.addApiKey(key);
      this.apiKey = key;
      Validations.of(api).acknowledge({
        id: 'AwsSolutions-APIG4',
        reason:
          'apiAuth=apiKey was chosen at deploy time: every method requires an API key (usage plan with throttling) instead of IAM.',
      });
    }
    Validations.of(api).acknowledge({
      id: 'AwsSolutions-COG4',
      reason:
        'The Query API is for services and operators, authorized with IAM SigV4 (or API keys when chosen); there is no end-user pool.',
    });
    Validations.of(api).acknowledge({
      id: 'AwsSolutions-APIG3',
      reason:
        'No WAF: every method needs IAM auth or an API key, and the stage is throttled; add a WebACL in front for public exposure.',
    });
  }
}
