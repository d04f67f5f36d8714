import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningServer, startServer } from '../../../bin/cli/serve.js';
import { FAQ, LEAVE_POLICY } from './helpers.js';

const TOKEN = 'test-token-123';

describe('ai4rag serve over 127.0.0.1', () => {
  let server: RunningServer;
  const call = (path: string, init: RequestInit = {}, token: string | null = TOKEN) =>
    fetch(`${server.url}${path}`, {
      ...init,
      headers: {
        ...(init.body !== undefined && { 'content-type': 'application/json' }),
        ...(token !== null && { authorization: `Bearer ${token}` }),
      },
    });

  async function upload(key: string, text: string): Promise<Response> {
    const res = await call('/uploads', { method: 'POST', body: JSON.stringify({ key }) });
    const { url } = (await res.json()) as { url: string };
    return fetch(url, { method: 'PUT', body: text });
  }

  beforeAll(async () => {
    server = await startServer({
      dataDir: mkdtempSync(join(tmpdir(), 'ai4rag-serve-')),
      port: 0,
      token: TOKEN,
      inMemory: true,
      env: { AI4RAG_COLLECTION: 'ai4rag_serve_test' },
    });
  });
  afterAll(async () => {
    await server.close();
  });

  it('answers 401 without the token, and /health without one', async () => {
    // Act
    const none = await call('/search', { method: 'POST', body: '{"query":"x"}' }, null);
    const wrong = await call('/stats', {}, 'nope');
    const health = await call('/health', {}, null);

    // Assess
    expect(none.status).toBe(401);
    expect(await none.json()).toEqual({
      error: { code: 'unauthorized', message: 'missing or wrong bearer token' },
    });
    expect(wrong.status).toBe(401);
    expect(health.status).toBe(200);
  });

  it('refuses an upload URL with a forged signature', async () => {
    // Act
    const res = await fetch(
      `${server.url}/uploads/x.md?expires=${Math.floor(Date.now() / 1000) + 60}&signature=abc`,
      { method: 'PUT', body: 'hi' },
    );

    // Assess
    expect(res.status).toBe(403);
  });

  it('searches after ingesting two small documents through upload URLs', async () => {
    // Prepare
    const a = await upload('guides/leave policy.md', LEAVE_POLICY);
    const b = await upload('faq.txt', FAQ);

    // Act
    const res = await call('/search', {
      method: 'POST',
      body: JSON.stringify({ query: 'approval limit for expenses', k: 2 }),
    });

    // Assess
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { results: { document_key: string; text: string }[] };
    expect(body.results[0]?.document_key).toBe('faq.txt');
    expect(body.results[0]?.text).toContain('500 euros');
    const docs = (await (await call('/documents')).json()) as { documents: unknown[] };
    expect(docs.documents).toHaveLength(2);
  });

  it('streams an answer as server-sent events', async () => {
    // Act
    const res = await call('/stream', {
      method: 'POST',
      body: JSON.stringify({ question: 'How many days of annual leave do employees get?' }),
    });
    const text = await res.text();

    // Assess
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    const names = [...text.matchAll(/^event: (\w+)$/gm)].map((m) => m[1]);
    expect(names[0]).toBe('sources');
    expect(names.at(-1)).toBe('done');
    expect(names.filter((n) => n === 'token').length).toBeGreaterThan(0);
  });

  it('answers 404 for a document path that is not indexed', async () => {
    // Act
    const res = await call(`/documents/${encodeURIComponent('nope/x.md')}`);

    // Assess
    expect(res.status).toBe(404);
  });
  it('answers 422 naming the reason for a broken re-upload, and keeps serving the previous version', async () => {
    // Prepare
    const good = await upload(
      'guide.html',
      '<html><body><p>The parking garage closes at nine.</p></body></html>',
    );
    expect(good.status).toBe(200);
    // Act: the same key replaced by a page nested far too deep, and a .docx that is no zip
    const deep = await upload(
      'guide.html',
      `<html><body>${'<div>'.repeat(100_000)}x</body></html>`,
    );
    const broken = await upload('broken.docx', 'this is not a zip archive');
    // Assess
    expect(deep.status).toBe(422);
    expect(((await deep.json()) as { error: { message: string } }).error.message).toContain(
      'guide.html',
    );
    expect(broken.status).toBe(422);
    const body = (await broken.json()) as { status: string; error: { message: string } };
    expect(body.status).toBe('failed');
    expect(body.error.message).toContain('broken.docx');
    const search = await call('/search', {
      method: 'POST',
      body: JSON.stringify({ query: 'parking garage closes', k: 1 }),
    });
    const hits = (await search.json()) as { results: { document_key: string; text: string }[] };
    expect(hits.results[0]?.document_key).toBe('guide.html');
    expect(hits.results[0]?.text).toContain('parking garage');
  });

  it('indexes a text upload holding NUL bytes (stripped), with no 500', async () => {
    // Act
    const res = await upload(
      'nul.txt',
      'Visitors sign in at the front desk.\u0000 Badges are returned on exit.\n',
    );
    // Assess
    expect(res.status).toBe(200);
    const search = await call('/search', {
      method: 'POST',
      body: JSON.stringify({ query: 'visitors badges front desk', k: 1 }),
    });
    const hits = (await search.json()) as { results: { document_key: string; text: string }[] };
    expect(hits.results[0]?.document_key).toBe('nul.txt');
    expect(hits.results[0]?.text).not.toContain('\u0000');
  });
});
