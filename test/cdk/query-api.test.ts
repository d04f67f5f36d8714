import { App, Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { Code, Function as LambdaFunction, Runtime } from 'aws-cdk-lib/aws-lambda';
import { AwsSolutionsChecks } from 'cdk-nag';
import { describe, expect, it } from 'vitest';
import {
  GATEWAY_ERROR_CODES,
  gatewayErrorTemplate,
  QueryApi,
  type QueryApiProps,
} from '../../lib/constructs/query-api.js';
import type { Json } from './template.js';

interface Made {
  app: App;
  stack: Stack;
  template: Template;
  nag: AwsSolutionsChecks;
}

/** A fixed-env stack holding only the Query API and three inline functions. */
function makeStack(props: Partial<QueryApiProps> = {}): Made {
  const app = new App();
  // Validated on demand (validateScope), not as a synth plugin: the inline test functions have findings of their own.
  const nag = new AwsSolutionsChecks(app);
  const stack = new Stack(app, 'ApiTest', {
    env: { account: '123456789012', region: 'eu-west-1' },
  });
  const fn = (id: string) =>
    new LambdaFunction(stack, id, {
      runtime: Runtime.NODEJS_22_X,
      handler: 'index.handler',
      code: Code.fromInline('export const handler = async () => ({ statusCode: 200 });'),
    });
  new QueryApi(stack, 'QueryApi', {
    search: fn('Search'),
    generate: fn('Generate'),
    documents: fn('Documents'),
    auth: 'iam',
    ...props,
  });
  return { app, stack, template: Template.fromStack(stack), nag };
}

function resourcesOf(template: Template, type: string): Json[] {
  return Object.values(template.findResources(type));
}

/** The logical id of the function an integration URI invokes. */
function integrationTarget(method: Json): string | undefined {
  const parts = JSON.stringify(method.Properties.Integration?.Uri ?? '');
  return /"(Search|Generate|Documents)[0-9A-F]{8}"/.exec(parts)?.[1];
}

describe('QueryApi gateway responses', () => {
  const { template } = makeStack();

  it.each(Object.entries(GATEWAY_ERROR_CODES))(
    'answers %s with the handlers’ error body (code %s)',
    (type, code) => {
      template.hasResourceProperties('AWS::ApiGateway::GatewayResponse', {
        ResponseType: type,
        ResponseTemplates: {
          'application/json': `{"error":{"code":"${code}","message":$context.error.messageString}}`,
        },
        ResponseParameters: { 'gatewayresponse.header.Content-Type': "'application/json'" },
      });
    },
  );

  it('maps the integration timeout to 504 code timeout, like the handlers’ own deadline', () => {
    // Assess
    expect(GATEWAY_ERROR_CODES.INTEGRATION_TIMEOUT).toBe('timeout');
    expect(
      JSON.parse(gatewayErrorTemplate('timeout').replace('$context.error.messageString', '"x"')),
    ).toEqual({ error: { code: 'timeout', message: 'x' } });
  });

  it('adds no CORS header, preflight or environment by default', () => {
    // Assess
    for (const response of resourcesOf(template, 'AWS::ApiGateway::GatewayResponse')) {
      expect(Object.keys(response.Properties.ResponseParameters)).toEqual([
        'gatewayresponse.header.Content-Type',
      ]);
    }
    const methods = resourcesOf(template, 'AWS::ApiGateway::Method');
    expect(methods.filter((m) => m.Properties.HttpMethod === 'OPTIONS')).toEqual([]);
    for (const fn of resourcesOf(template, 'AWS::Lambda::Function')) {
      expect(fn.Properties.Environment?.Variables?.AI4RAG_CORS_ORIGINS).toBeUndefined();
    }
  });
});

describe('QueryApi wrong methods and unknown paths', () => {
  const { template } = makeStack();
  const methods = resourcesOf(template, 'AWS::ApiGateway::Method');

  it('routes ANY of each route resource to its own function (405 with Allow there)', () => {
    // Prepare
    const paths = Object.fromEntries(
      Object.entries(template.findResources('AWS::ApiGateway::Resource')).map(([id, r]) => [
        id,
        (r as Json).Properties.PathPart as string,
      ]),
    );
    const anyByPath = Object.fromEntries(
      methods
        .filter((m) => m.Properties.HttpMethod === 'ANY')
        .map((m) => [
          m.Properties.ResourceId.Ref ? paths[m.Properties.ResourceId.Ref] : '/',
          integrationTarget(m),
        ]),
    );

    // Assess
    expect(anyByPath).toEqual({
      '/': 'Documents',
      search: 'Search',
      generate: 'Generate',
      chat: 'Generate',
      documents: 'Documents',
      '{id}': 'Documents',
      uploads: 'Documents',
      stats: 'Documents',
      health: 'Documents',
      '{proxy+}': 'Documents',
    });
  });

  it('authorizes the ANY methods like every other method, as Lambda proxy integrations', () => {
    for (const method of methods.filter((m) => m.Properties.HttpMethod === 'ANY')) {
      expect(method.Properties).toMatchObject({
        AuthorizationType: 'AWS_IAM',
        Integration: { Type: 'AWS_PROXY', IntegrationHttpMethod: 'POST' },
      });
    }
  });

  it('keeps the explicit routes (with body validation) beside ANY', () => {
    template.hasResourceProperties('AWS::ApiGateway::Method', {
      HttpMethod: 'POST',
      RequestModels: { 'application/json': Match.anyValue() },
    });
    expect(methods.filter((m) => m.Properties.HttpMethod !== 'ANY')).toHaveLength(9);
  });
});

describe('QueryApi with CORS', () => {
  it('adds preflight OPTIONS without auth on every resource, and the origin on gateway responses', () => {
    // Act
    const { template } = makeStack({ corsOrigins: ['https://app.example.com'] });

    // Assess
    const options = resourcesOf(template, 'AWS::ApiGateway::Method').filter(
      (m) => m.Properties.HttpMethod === 'OPTIONS',
    );
    expect(options).toHaveLength(10);
    for (const method of options) {
      expect(method.Properties).toMatchObject({
        AuthorizationType: 'NONE',
        Integration: { Type: 'MOCK' },
      });
      expect(JSON.stringify(method.Properties.Integration.IntegrationResponses)).toContain(
        "'https://app.example.com'",
      );
    }
    for (const response of resourcesOf(template, 'AWS::ApiGateway::GatewayResponse')) {
      expect(response.Properties.ResponseParameters).toMatchObject({
        'gatewayresponse.header.Access-Control-Allow-Origin': "'https://app.example.com'",
        'gatewayresponse.header.Vary': "'Origin'",
      });
    }
  });

  it('tells the functions the allowed origins (their responses carry the header)', () => {
    // Act
    const { template } = makeStack({
      corsOrigins: ['https://app.example.com', 'http://localhost:5173'],
    });

    // Assess
    const fns = resourcesOf(template, 'AWS::Lambda::Function');
    expect(fns).toHaveLength(3);
    for (const fn of fns) {
      expect(fn.Properties.Environment.Variables.AI4RAG_CORS_ORIGINS).toBe(
        'https://app.example.com,http://localhost:5173',
      );
    }
    for (const response of resourcesOf(template, 'AWS::ApiGateway::GatewayResponse')) {
      expect(
        response.Properties.ResponseParameters[
          'gatewayresponse.header.Access-Control-Allow-Origin'
        ],
      ).toBe('method.request.header.Origin');
    }
  });

  it("answers '*' without Vary when every origin is allowed", () => {
    // Act
    const { template } = makeStack({ corsOrigins: ['*'] });

    // Assess
    const response = resourcesOf(template, 'AWS::ApiGateway::GatewayResponse')[0];
    expect(response.Properties.ResponseParameters).toEqual({
      'gatewayresponse.header.Content-Type': "'application/json'",
      'gatewayresponse.header.Access-Control-Allow-Origin': "'*'",
    });
  });

  it.each([
    ['a path', ['https://app.example.com/ui']],
    ["'*' with an origin", ['*', 'https://app.example.com']],
    ['no scheme', ['app.example.com']],
  ])('refuses %s at synth time', (_name, corsOrigins) => {
    expect(() => makeStack({ corsOrigins })).toThrow(/corsOrigins/);
  });

  it('passes cdk-nag (the preflight methods are acknowledged, nothing else)', () => {
    // Prepare
    const { app, nag } = makeStack({ corsOrigins: ['https://app.example.com'] });

    // Act
    const report = nag.validateScope(app);

    // Assess: the inline test functions' findings are not the construct's, and the stack acknowledges the
    // gateway's managed CloudWatch role policy (AwsSolutions-IAM4) for the whole app.
    const api = report.violations.filter(
      (v) =>
        !v.ruleName.startsWith('AwsSolutions-IAM4') &&
        JSON.stringify(v.violatingResources).includes('QueryApi'),
    );
    expect(api.map((v) => v.ruleName)).toEqual([]);
  });
});
