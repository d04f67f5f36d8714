import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningServer, startServer } from '../../../bin/cli/serve.js';

const TOKEN = 'serve-methods-token';
let server: RunningServer;

function call(path: string, init: RequestInit = {}): Promise<Response> {
  return fetch(`${server.url}${path}`, {
    ...init,
    headers: { authorization: `Bearer ${TOKEN}`, ...(init.headers as Record<string, string>) },
  });
}

beforeAll(async () => {
  server = await startServer({
    dataDir: mkdtempSync(join(tmpdir(), 'ai4rag-serve-methods-')),
    port: 0,
    token: TOKEN,
    inMemory: true,
    env: { AI4RAG_COLLECTION: 'ai4rag_serve_methods' },
  });
});
afterAll(async () => {
  await server.close();
});

describe('ai4rag serve answers like the deployed API', () => {
  it.each([
    ['GET', '/search', 'POST'],
    ['DELETE', '/stats', 'GET'],
    ['PUT', '/documents/a.md', 'GET, DELETE'],
  ])('answers %s %s with 405 and Allow: %s', async (method, path, allow) => {
    // Act
    const res = await call(path, { method });

    // Assess
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe(allow);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe(
      'method_not_allowed',
    );
  });

  it.each([
    ['malformed JSON', 'application/json', '{"query"', 400, 'invalid_json'],
    ['a text body', 'text/plain', 'leave', 415, 'unsupported_media_type'],
  ])('answers %s (content type %s)', async (_name, contentType, body, status, code) => {
    // Act
    const res = await call('/search', {
      method: 'POST',
      headers: { 'content-type': contentType },
      body,
    });

    // Assess
    expect(res.status).toBe(status);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe(code);
  });

  it('still answers 404 for a path that is no route', async () => {
    // Act
    const res = await call('/nope');

    // Assess
    expect(res.status).toBe(404);
  });
});
