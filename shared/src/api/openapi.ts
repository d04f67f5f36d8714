/**
 * The OpenAPI 3.1 document of the Query API, generated from the zod schemas the handlers validate with.
 * OpenAPI 3.1 schemas are JSON Schema 2020-12, which is what `z.toJSONSchema` emits, so no conversion is needed.
 */
import * as z from 'zod';
import { ErrorResponse, ROUTES } from './schemas.js';

/** Options of {@link buildOpenApiDocument}. */
export interface OpenApiOptions {
  /** Document version. @default '0.1.0' */
  version?: string;
  /** `servers[0].url`. @default '/' */
  serverUrl?: string;
}

type JsonObject = Record<string, unknown>;

function schemaOf(schema: z.ZodType, io: 'input' | 'output', components: JsonObject): JsonObject {
  const raw = z.toJSONSchema(schema, { io, unrepresentable: 'any' });
  // Named schemas (`.meta({ id })`) come back as `$defs`; OpenAPI keeps them under components.schemas.
  const json = JSON.parse(
    JSON.stringify(raw).replaceAll('"#/$defs/', '"#/components/schemas/'),
  ) as JsonObject;
  delete json.$schema;
  const defs = json.$defs as JsonObject | undefined;
  delete json.$defs;
  if (defs) for (const [name, def] of Object.entries(defs)) components[name] ??= def;
  const id = json.id;
  if (typeof id === 'string') {
    delete json.id;
    components[id] ??= json;
    return { $ref: `#/components/schemas/${id}` };
  }
  return json;
}

/** Names the schema of a stream's `done` data (registered under components) in the route's description. */
function streamDoneText(schema: z.ZodType | undefined, components: JsonObject): string {
  if (schema === undefined) return '';
  const ref = schemaOf(schema, 'output', components).$ref;
  return typeof ref === 'string' ? `; the \`done\` data is ${ref}` : '';
}

/**
 * Builds the OpenAPI document (deterministic: same schemas, same JSON), served as `docs/openapi.json`.
 * @example writeFileSync('docs/openapi.json', `${JSON.stringify(buildOpenApiDocument(), null, 2)}\n`);
 */
export function buildOpenApiDocument(options: OpenApiOptions = {}): JsonObject {
  const components: JsonObject = {};
  schemaOf(ErrorResponse, 'output', components);
  const paths: Record<string, JsonObject> = {};
  for (const route of ROUTES) {
    const responses: JsonObject = {
      '200': route.stream
        ? {
            description: `text/event-stream of \`sources\`, \`token\` and \`done\` events${streamDoneText(route.streamDone, components)}`,
            content: { 'text/event-stream': { schema: { type: 'string' } } },
          }
        : {
            description: 'OK',
            content: {
              'application/json': { schema: schemaOf(route.response, 'output', components) },
            },
          },
    };
    for (const code of route.errors) {
      responses[String(code)] = {
        description: STATUS_TEXT[code] ?? 'Error',
        content: {
          'application/json': { schema: { $ref: '#/components/schemas/ErrorResponse' } },
        },
      };
    }
    const parameters: JsonObject[] = [];
    for (const name of route.pathParams ?? []) {
      parameters.push({ name, in: 'path', required: true, schema: { type: 'string' } });
    }
    if (route.query) {
      for (const [name, field] of Object.entries(route.query.shape)) {
        const schema = schemaOf(field as z.ZodType, 'input', components);
        parameters.push({ name, in: 'query', required: false, schema });
      }
    }
    const operation: JsonObject = {
      operationId: route.operationId,
      summary: route.summary,
      ...(parameters.length > 0 && { parameters }),
      ...(route.request && {
        requestBody: {
          required: true,
          content: {
            'application/json': { schema: schemaOf(route.request, 'input', components) },
          },
        },
      }),
      responses,
      ...(route.public && { security: [] }),
    };
    paths[route.path] ??= {};
    (paths[route.path] as JsonObject)[route.method] = operation;
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'ai4rag-serverless Query API',
      version: options.version ?? '0.1.0',
      description:
        'Search, answer generation (with sources and timing), chat, streaming, document management and stats.',
    },
    servers: [{ url: options.serverUrl ?? '/' }],
    security: [{ bearerAuth: [] }],
    paths,
    components: {
      securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer' } },
      schemas: Object.fromEntries(Object.entries(components).sort(([a], [b]) => (a < b ? -1 : 1))),
    },
  };
}

const STATUS_TEXT: Readonly<Record<number, string>> = {
  400: 'Invalid request (malformed JSON included)',
  401: 'Missing or wrong bearer token',
  404: 'Not found',
  405: 'Method not allowed on this path (the `Allow` header lists the allowed ones)',
  415: 'Content-Type is not JSON',
  503: 'The collection needs an embedding model this deployment cannot build',
  504: 'The request ran out of its time budget (API Gateway allows 29 s)',
};
