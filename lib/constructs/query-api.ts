/**
 * The Query API: an API Gateway REST API in front of the search, generate and documents Lambdas, with IAM
 * (SigV4) auth on every method by default or API keys with a usage plan, stage throttling, JSON access
 * logs, X-Ray, and body validation of every POST. Streaming answers use a Function URL (see the stack).
 */
import { Duration, RemovalPolicy, Token, Validations } from 'aws-cdk-lib';
import * as apigateway from 'aws-cdk-lib/aws-apigateway';
import { type IFunction, Function as LambdaFunction } from 'aws-cdk-lib/aws-lambda';
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
  /** Function of POST /search. */
  readonly search: IFunction;
  /** Function of POST /generate and POST /chat. */
  readonly generate: IFunction;
  /** Function of the document routes, and of wrong methods and unknown paths (405 / 404). */
  readonly documents: IFunction;
  /** 'iam': SigV4 on every method; 'apiKey': an API key on every method (usage plan). */
  readonly auth: 'iam' | 'apiKey';
  /** Steady-state requests per second of the stage. @default 50 */
  readonly rateLimit?: number;
  /** Burst of the stage. @default 100 */
  readonly burstLimit?: number;
  /**
   * Browser origins allowed by CORS (`['*']`, or origins such as `https://app.example.com`): preflight OPTIONS
   * on every resource, the header on gateway responses, and AI4RAG_CORS_ORIGINS on the functions (set only on
   * `lambda.Function`s; an imported function must set it itself). @default [] (CORS off)
   */
  readonly corsOrigins?: readonly string[];
}

/**
 * Error code (the `error.code` the handlers also answer with) of each gateway response type the API customises;
 * the message is API Gateway's own (`$context.error.messageString`).
 */
export const GATEWAY_ERROR_CODES: Readonly<Record<string, string>> = {
  DEFAULT_4XX: 'client_error',
  DEFAULT_5XX: 'internal_error',
  BAD_REQUEST_BODY: 'validation_error',
  BAD_REQUEST_PARAMETERS: 'validation_error',
  UNAUTHORIZED: 'unauthorized',
  ACCESS_DENIED: 'forbidden',
  EXPIRED_TOKEN: 'forbidden',
  INVALID_SIGNATURE: 'forbidden',
  INVALID_API_KEY: 'forbidden',
  MISSING_AUTHENTICATION_TOKEN: 'missing_authentication',
  WAF_FILTERED: 'forbidden',
  RESOURCE_NOT_FOUND: 'not_found',
  REQUEST_TOO_LARGE: 'payload_too_large',
  UNSUPPORTED_MEDIA_TYPE: 'unsupported_media_type',
  THROTTLED: 'throttled',
  QUOTA_EXCEEDED: 'quota_exceeded',
  INTEGRATION_TIMEOUT: 'timeout',
  INTEGRATION_FAILURE: 'integration_failure',
};

/** The body template of a gateway response: the handlers' `{ error: { code, message } }`. */
export function gatewayErrorTemplate(code: string): string {
  return `{"error":{"code":"${code}","message":$context.error.messageString}}`;
}

/** Methods answered by the functions and not by a route: a wrong method (405) or an unknown path (404). */
const FALLBACK_METHOD = 'ANY';

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
    const origins = [...(props.corsOrigins ?? [])];
    checkCorsOrigins(origins);
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
      ...(origins.length > 0 && {
        defaultCorsPreflightOptions: {
          allowOrigins: origins,
          allowMethods: ['GET', 'POST', 'DELETE', 'OPTIONS'],
          allowHeaders: [...apigateway.Cors.DEFAULT_HEADERS],
          maxAge: Duration.hours(1),
        },
      }),
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

    // Every other method of a route reaches its function, which answers 405 with `Allow` (API Gateway itself
    // would answer 403 "Missing Authentication Token"); unknown paths reach the documents function (404). The
    // explicit methods take precedence over ANY. No test-invoke permission: it would double the policy size.
    const fallback = (resource: apigateway.IResource, fn: IFunction): void => {
      resource.addMethod(
        FALLBACK_METHOD,
        new apigateway.LambdaIntegration(fn, { allowTestInvoke: false }),
      );
    };
    const search = api.root.addResource('search');
    postWith(search, props.search, 'SearchRequest');
    fallback(search, props.search);
    const generate = api.root.addResource('generate');
    postWith(generate, props.generate, 'GenerateRequest');
    fallback(generate, props.generate);
    const chat = api.root.addResource('chat');
    postWith(chat, props.generate, 'ChatRequest');
    fallback(chat, props.generate);
    const documents = api.root.addResource('documents');
    get(documents, props.documents);
    fallback(documents, props.documents);
    const document = documents.addResource('{id}');
    get(document, props.documents, true);
    document.addMethod('DELETE', new apigateway.LambdaIntegration(props.documents), {
      requestValidator: validator,
      requestParameters: { 'method.request.path.id': true },
    });
    fallback(document, props.documents);
    const uploads = api.root.addResource('uploads');
    postWith(uploads, props.documents, 'UploadRequest');
    fallback(uploads, props.documents);
    for (const path of ['stats', 'health']) {
      const resource = api.root.addResource(path);
      get(resource, props.documents);
      fallback(resource, props.documents);
    }
    fallback(api.root, props.documents);
    fallback(api.root.addResource('{proxy+}'), props.documents);

    // Errors API Gateway answers itself carry the handlers' body shape (and the CORS header when CORS is on).
    const corsHeader = gatewayCorsHeaders(origins);
    for (const [type, code] of Object.entries(GATEWAY_ERROR_CODES)) {
      api.addGatewayResponse(`Gateway${type}`, {
        type: apigateway.ResponseType.of(type),
        responseHeaders: { 'Content-Type': "'application/json'", ...corsHeader },
        templates: { 'application/json': gatewayErrorTemplate(code) },
      });
    }
    if (origins.length > 0) {
      for (const fn of [props.search, props.generate, props.documents]) {
        if (fn instanceof LambdaFunction)
          fn.addEnvironment('AI4RAG_CORS_ORIGINS', origins.join(','));
      }
      for (const method of api.methods) {
        if (method.httpMethod !== 'OPTIONS') continue;
        Validations.of(method).acknowledge({
          id: 'AwsSolutions-APIG4',
          reason:
            'CORS preflight (OPTIONS, a mock integration): browsers send it without credentials by design; it returns only the CORS headers.',
        });
      }
    }

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

/**
 * Rejects CORS origins the gateway cannot serve: `*` mixed with origins, or values that are not origins.
 * @throws {Error} naming every bad value.
 */
function checkCorsOrigins(origins: readonly string[]): void {
  const problems: string[] = [];
  if (origins.includes('*') && origins.length > 1) {
    problems.push("corsOrigins: '*' cannot be combined with other origins");
  }
  for (const origin of origins) {
    if (Token.isUnresolved(origin)) continue;
    if (origin !== '*' && !/^https?:\/\/[A-Za-z0-9.-]+(:\d{1,5})?$/.test(origin)) {
      problems.push(
        `corsOrigins: ${JSON.stringify(origin)} is not an origin (scheme://host[:port])`,
      );
    }
  }
  if (problems.length > 0) throw new Error(problems.join('\n'));
}

/**
 * `Access-Control-Allow-Origin` of the gateway's own error responses: `*` or the one origin as given; with several
 * origins, the request's `Origin` echoed (a gateway response cannot choose among them; without credentials this
 * only lets a page read an error body, which holds no data).
 */
function gatewayCorsHeaders(origins: readonly string[]): Record<string, string> {
  if (origins.length === 0) return {};
  if (origins.length === 1) {
    return {
      'Access-Control-Allow-Origin': `'${origins[0]}'`,
      ...(origins[0] !== '*' && { Vary: "'Origin'" }),
    };
  }
  return { 'Access-Control-Allow-Origin': 'method.request.header.Origin', Vary: "'Origin'" };
}
