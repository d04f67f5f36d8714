import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { OPENAPI_PATH, renderOpenApi } from '../../../scripts/openapi.js';
import { buildOpenApiDocument } from '../../../shared/src/api/openapi.js';

describe('docs/openapi.json', () => {
  it('equals the document generated from the zod schemas (run scripts/openapi.ts)', () => {
    // Act
    const committed = readFileSync(OPENAPI_PATH, 'utf8');

    // Assess
    expect(committed).toBe(renderOpenApi());
  });

  it('documents every route with its request schema and error responses', () => {
    // Act
    const doc = buildOpenApiDocument() as {
      openapi: string;
      paths: Record<
        string,
        Record<
          string,
          { requestBody?: unknown; responses: Record<string, unknown>; security?: unknown[] }
        >
      >;
    };

    // Assess
    expect(doc.openapi).toBe('3.1.0');
    expect(Object.keys(doc.paths)).toEqual([
      '/search',
      '/generate',
      '/chat',
      '/stream',
      '/documents',
      '/documents/{id}',
      '/uploads',
      '/stats',
      '/health',
    ]);
    expect(doc.paths['/search']?.post?.requestBody).toEqual({
      required: true,
      content: { 'application/json': { schema: { $ref: '#/components/schemas/SearchRequest' } } },
    });
    expect(Object.keys(doc.paths['/search']?.post?.responses ?? {})).toEqual([
      '200',
      '400',
      '401',
      '404',
      '405',
      '415',
      '503',
      '504',
    ]);
    // The deployed API authenticates every route, /health included: no route opts out of the global security.
    expect(doc.paths['/health']?.get?.security).toBeUndefined();
    expect(Object.keys(doc.paths['/health']?.get?.responses ?? {})).toEqual(['200', '401', '405']);
    expect(JSON.stringify(doc)).not.toContain('$defs');
  });
});
