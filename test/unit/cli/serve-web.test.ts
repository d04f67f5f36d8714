import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseHtml } from 'node-html-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningServer, runServe, startServer } from '../../../bin/cli/serve.js';
import { accessLogLine, fileSink, pathOnly } from '../../../bin/cli/serve-log.js';
import { WEB_CSP, webFile } from '../../../bin/cli/serve-web.js';
import { buildWeb } from '../../../scripts/build-web.js';

const TOKEN = 'serve-web-token';
const DOCS = fileURLToPath(new URL('../../../examples/docs', import.meta.url));
const BENCHMARK = [
  {
    question: 'When was the cooperative founded?',
    correct_answers: ['14 March 1987'],
    correct_answer_document_keys: ['about/company-overview.md'],
  },
  {
    question: 'Who currently chairs the Board?',
    correct_answers: ['Tomas Eklund'],
    correct_answer_document_keys: ['about/company-overview.md'],
  },
];

/** A raw GET: node's client sends the path as given (fetch would normalize `..`). */
function rawGet(url: string, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolvePromise, reject) => {
    const req = request(`${url}${path}`, { method: 'GET', path }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        body += c;
      });
      res.on('end', () => resolvePromise({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('ai4rag serve: the web app, its routes and the access log', () => {
  let dir = '';
  let webDir = '';
  let server: RunningServer;
  const log: string[] = [];

  const call = (path: string, init: RequestInit = {}) =>
    fetch(`${server.url}${path}`, {
      ...init,
      headers: {
        authorization: `Bearer ${TOKEN}`,
        'content-type': 'application/json',
        ...(init.headers as Record<string, string>),
      },
    });

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ai4rag-serve-web-'));
    webDir = join(dir, 'web');
    await mkdir(join(webDir, 'assets'), { recursive: true });
    await writeFile(join(webDir, 'index.html'), '<!doctype html><title>t</title>');
    await writeFile(join(webDir, 'assets', 'app.js'), 'console.log(1);');
    await writeFile(join(dir, 'secret.txt'), 'SECRET');
    server = await startServer({
      dataDir: join(dir, 'data'),
      port: 0,
      token: TOKEN,
      inMemory: true,
      webDir,
      accessLog: (line) => log.push(line),
      documentRoots: [DOCS, dir],
    });
  });

  afterAll(async () => {
    await server?.close();
    if (dir !== '') await rm(dir, { recursive: true, force: true });
  });

  it('serves the page without the token, with a strict Content-Security-Policy', async () => {
    // Act
    const res = await fetch(`${server.url}/`);
    const asset = await fetch(`${server.url}/assets/app.js`);

    // Assess
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(res.headers.get('content-security-policy')).toBe(WEB_CSP);
    expect(WEB_CSP).toContain("script-src 'self'");
    expect(WEB_CSP).toContain("connect-src 'self'");
    expect(WEB_CSP).not.toContain('unsafe-inline');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(await res.text()).toBe('<!doctype html><title>t</title>');
    expect(asset.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(await asset.text()).toBe('console.log(1);');
  });

  it.each([
    '/assets/../../secret.txt',
    '/assets/%2e%2e/%2e%2e/secret.txt',
    '/assets/..%2f..%2fsecret.txt',
    '/assets/%5c..%5c..%5csecret.txt',
    '/assets/app.js%00.png',
    '/assets/',
    '/assets/%E0%A4%A',
  ])('refuses the path %s (404, never a file outside the assets)', async (path) => {
    // Act
    const res = await rawGet(server.url, path);

    // Assess
    expect(res.status).toBe(404);
    expect(res.body).not.toContain('SECRET');
  });

  it('maps web paths inside the assets folder only', () => {
    // Act & Assess
    expect(webFile('/w', '/')).toBe('/w/index.html');
    expect(webFile('/w', '/assets/app.css')).toBe('/w/assets/app.css');
    expect(webFile('/w', '/assets/sub/x.js')).toBe('/w/assets/sub/x.js');
    expect(webFile('/w', '/assets/../x')).toBeUndefined();
    expect(webFile('/w', '/assets/.%2e/x')).toBeUndefined();
  });

  it('answers 503 naming the fix when the app was not built', async () => {
    // Prepare
    const bare = await startServer({
      dataDir: join(dir, 'bare'),
      port: 0,
      token: TOKEN,
      inMemory: true,
      webDir: join(dir, 'not-built'),
    });

    // Act
    const res = await fetch(`${bare.url}/`);
    const text = await res.text();
    await bare.close();

    // Assess
    expect(res.status).toBe(503);
    expect(text).toContain('run npm run build:web');
  });

  it.each(['/config', '/collections', '/experiments', '/experiments/x'])(
    'answers 401 on %s without the token',
    async (path) => {
      // Act
      const res = await fetch(`${server.url}${path}`);

      // Assess
      expect(res.status).toBe(401);
    },
  );

  it('describes the served collection on /config, and no suggestion before any experiment', async () => {
    // Act
    const res = await call('/config');

    // Assess
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      collection: 'ai4rag_default',
      store: 'pglite (embedded)',
      chunks: 0,
      embedding_model: 'local/feature-hash-v1-384',
      rerank_available: false,
    });
  });

  it.each([
    [{ benchmark: [] }, 400, 'benchmark'],
    [{ benchmark: BENCHMARK, max_evals: 0 }, 400, 'max_evals'],
    [{ benchmark: BENCHMARK, documents_dir: '/no/such/folder' }, 400, '"/no/such/folder"'],
    [{ benchmark: BENCHMARK, documents_dir: '/etc' }, 400, '"/etc" is outside the folders'],
    [{ benchmark: BENCHMARK, documents_dir: `${DOCS}/../..` }, 400, 'is outside the folders'],
    [{ benchmark: BENCHMARK, experiment_id: '../x' }, 400, 'experiment_id'],
    [{ benchmark: BENCHMARK, colour: 'red' }, 400, 'colour'],
    [{ benchmark: BENCHMARK, search_space: { chunk_size: 512 } }, 400, 'search_space'],
  ])('refuses POST /experiments %j with %i naming %s', async (body, status, named) => {
    // Act
    const res = await call('/experiments', { method: 'POST', body: JSON.stringify(body) });
    const list = (await (await call('/experiments')).json()) as { experiments: unknown[] };

    // Assess
    expect(res.status).toBe(status);
    expect(((await res.json()) as { error: { message: string } }).error.message).toContain(named);
    expect(list.experiments).toEqual([]);
  });

  it.each([
    ['a header that is no <experiment>/<pattern>', 'just-one-part', 400],
    ['an experiment that does not exist', 'nope/Pattern1', 404],
  ])('answers a query with %s in X-Ai4rag-Pattern with %i', async (_case, header, status) => {
    // Act
    const res = await call('/search', {
      method: 'POST',
      headers: { 'x-ai4rag-pattern': header },
      body: JSON.stringify({ query: 'leave' }),
    });

    // Assess
    expect(res.status).toBe(status);
  });

  it('runs an experiment started over HTTP, lists it, and answers with its best pattern', async () => {
    // Act
    const started = await call('/experiments', {
      method: 'POST',
      body: JSON.stringify({
        experiment_id: 'web-run',
        documents_dir: DOCS,
        benchmark: BENCHMARK,
        max_evals: 2,
        search_space: { chunk_size: [512], chunk_overlap: [128], search_mode: ['hybrid'] },
      }),
    });
    const again = await call('/experiments', {
      method: 'POST',
      body: JSON.stringify({ benchmark: BENCHMARK }),
    });
    let detail: {
      status: string;
      run?: { status: string };
      leaderboard?: { pattern_name: string; pattern: unknown }[];
    } = { status: 'incomplete' };
    for (let i = 0; i < 240 && detail.run?.status !== 'finished'; i++) {
      await new Promise((r) => setTimeout(r, 250));
      detail = (await (await call('/experiments/web-run')).json()) as typeof detail;
      if (detail.run?.status === 'failed') break;
    }
    const best = detail.leaderboard?.[0]?.pattern_name ?? '';
    const config = (await (await call('/config')).json()) as { suggestion?: unknown };
    const answer = await call('/generate', {
      method: 'POST',
      headers: { 'x-ai4rag-pattern': `web-run/${best}` },
      body: JSON.stringify({ question: 'When was the cooperative founded?', citations: true }),
    });
    const served = await call('/generate', {
      method: 'POST',
      body: JSON.stringify({ question: 'When was the cooperative founded?' }),
    });
    const evaluation = await call(`/experiments/web-run/patterns/${best}/evaluation`);
    const pattern = await call(`/experiments/web-run/patterns/${best}`);
    const collections = (await (await call('/collections')).json()) as {
      collections: { name: string; kind: string; experiments: string[] }[];
    };

    // Assess
    expect(started.status).toBe(202);
    expect(await started.json()).toEqual({ experiment_id: 'web-run', status: 'running' });
    expect(again.status).toBe(409);
    expect(detail.run?.status).toBe('finished');
    expect(detail.status).toBe('finished');
    expect(detail.leaderboard).toHaveLength(2);
    expect(config.suggestion).toMatchObject({ experiment_id: 'web-run', pattern_name: best });
    expect(answer.status).toBe(200);
    const body = (await answer.json()) as {
      answer: string;
      reference_documents: { document_key: string }[];
      citations?: { marker: number; document_key: string }[];
    };
    expect(body.answer).toContain('14 March 1987');
    expect(body.reference_documents[0]?.document_key).toBe('about/company-overview.md');
    expect(body.citations?.[0]?.document_key).toBe('about/company-overview.md');
    // The knowledge base itself is still empty: without the header there is nothing to answer from.
    expect(served.status).toBe(404);
    expect(evaluation.status).toBe(200);
    const records = ((await evaluation.json()) as { records: Record<string, unknown>[] }).records;
    expect(records.map((r) => r.question)).toEqual(BENCHMARK.map((q) => q.question));
    expect(records[0]).not.toHaveProperty('answer_contexts');
    expect(records[0]?.context_documents).toContain('about/company-overview.md');
    expect(pattern.status).toBe(200);
    const index = collections.collections.find((c) => c.kind === 'experiment_index');
    expect(index?.experiments).toEqual(['web-run']);
  }, 120_000);

  async function waitForRun(id: string): Promise<{ run?: { status: string; error?: string } }> {
    let detail: { run?: { status: string; error?: string } } = {};
    for (let i = 0; i < 240; i++) {
      detail = (await (await call(`/experiments/${id}`)).json()) as typeof detail;
      if (detail.run?.status === 'finished' || detail.run?.status === 'failed') break;
      await new Promise((r) => setTimeout(r, 250));
    }
    return detail;
  }

  it('runs an experiment over one file, as experiment --docs FILE', async () => {
    // Act
    const started = await call('/experiments', {
      method: 'POST',
      body: JSON.stringify({
        experiment_id: 'one-file',
        documents_dir: join(DOCS, 'about', 'company-overview.md'),
        // One file's key is its name, as with experiment --docs FILE.
        benchmark: BENCHMARK.map((q) => ({
          ...q,
          correct_answer_document_keys: ['company-overview.md'],
        })),
        max_evals: 1,
      }),
    });
    const detail = await waitForRun('one-file');
    const listed = (await (await call('/experiments')).json()) as {
      experiments: { experiment_id: string; documents?: number }[];
    };

    // Assess
    expect(started.status).toBe(202);
    expect(detail.run?.status).toBe('finished');
    expect(listed.experiments.find((e) => e.experiment_id === 'one-file')?.documents).toBe(1);
  }, 120_000);

  it('lists a run whose prepare step failed, with its error', async () => {
    // Prepare
    const empty = join(dir, 'empty-docs');
    await mkdir(empty);

    // Act
    const started = await call('/experiments', {
      method: 'POST',
      body: JSON.stringify({
        experiment_id: 'no-docs',
        documents_dir: empty,
        benchmark: BENCHMARK,
      }),
    });
    const detail = await waitForRun('no-docs');
    const listed = (await (await call('/experiments')).json()) as {
      experiments: { experiment_id: string; status: string; run?: { status: string } }[];
    };

    // Assess
    expect(started.status).toBe(202);
    expect(detail.run?.status).toBe('failed');
    expect(detail.run?.error).toMatch(/^The experiment state machine failed: /);
    expect(listed.experiments[0]).toMatchObject({
      experiment_id: 'no-docs',
      status: 'incomplete',
      run: { status: 'failed' },
    });
  }, 120_000);

  it('writes one access-log line per request: time, method, path without query, status, ms, bytes; never the token', async () => {
    // Prepare
    log.length = 0;

    // Act
    const res = await call('/documents?limit=5&secret=q');
    const bytes = (await res.arrayBuffer()).byteLength;
    await fetch(`${server.url}/health`);
    await new Promise((r) => setTimeout(r, 50));

    // Assess
    expect(log).toHaveLength(2);
    expect(log[0]).toMatch(
      new RegExp(
        `^\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z GET /documents 200 \\d+\\.\\dms ${bytes}B$`,
      ),
    );
    expect(log[1]).toMatch(/ GET \/health 200 \d+\.\dms \d+B$/);
    expect(log.join('\n')).not.toContain(TOKEN);
    expect(log.join('\n')).not.toContain('secret');
  });

  it('formats log lines and strips query strings', () => {
    // Act & Assess
    expect(
      accessLogLine({
        time: new Date('2026-01-02T03:04:05.678Z'),
        method: 'PUT',
        path: '/uploads/a.md',
        status: 200,
        ms: 12.345,
        bytes: 42,
      }),
    ).toBe('2026-01-02T03:04:05.678Z PUT /uploads/a.md 200 12.3ms 42B');
    expect(pathOnly('/uploads/a.md?expires=1&signature=s')).toBe('/uploads/a.md');
    expect(pathOnly('/x#frag')).toBe('/x');
    expect(pathOnly(undefined)).toBe('/');
  });

  it('appends log lines to a --log-file', async () => {
    // Prepare
    const file = join(dir, 'access.log');
    const sink = fileSink(file);

    // Act
    sink('one');
    sink('two');

    // Assess
    expect(await readFile(file, 'utf8')).toBe('one\ntwo\n');
  });

  it('refuses --log with --log-file (exit 2)', async () => {
    // Prepare
    const err: string[] = [];

    // Act
    const code = await runServe(['--log', '--log-file', join(dir, 'a.log')], {
      out: () => undefined,
      err: (l) => err.push(l),
    });

    // Assess
    expect(code).toBe(2);
    expect(err).toEqual(['ai4rag serve: give --log (stderr) or --log-file FILE, not both']);
  });
});

describe('ai4rag serve: an upload racing a read of the missing collection', () => {
  it("indexes the upload (the reader's NotFoundError is not the writer's)", async () => {
    // Prepare: a fresh server, its store not opened yet
    const dir = await mkdtemp(join(tmpdir(), 'ai4rag-serve-race-'));
    const server = await startServer({ dataDir: dir, port: 0, token: TOKEN, inMemory: true });
    const call = (path: string, init: RequestInit = {}) =>
      fetch(`${server.url}${path}`, {
        ...init,
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      });
    const signed = (await (
      await call('/uploads', { method: 'POST', body: JSON.stringify({ key: 'race.md' }) })
    ).json()) as { url: string };

    // Act: the page loads the stats while the upload is indexed
    const [stats, put] = await Promise.all([
      call('/stats'),
      fetch(signed.url, { method: 'PUT', body: '# Race\n\nThe upload wins the race.\n' }),
    ]);
    const after = (await (await call('/stats')).json()) as { documents: number };
    await server.close();
    await rm(dir, { recursive: true, force: true });

    // Assess
    expect(stats.status).toBe(200);
    expect(put.status).toBe(200);
    expect(((await put.json()) as { status: string }).status).toBe('indexed');
    expect(after.documents).toBe(1);
  });
});

describe('the built web app', () => {
  it('is one page loading its script and styles from this origin, with nothing inline', async () => {
    // Prepare
    const out = await mkdtemp(join(tmpdir(), 'ai4rag-web-build-'));

    // Act
    await buildWeb(out);
    const html = parseHtml(await readFile(join(out, 'index.html'), 'utf8'));
    const js = await readFile(join(out, 'assets', 'app.js'), 'utf8');
    const css = await readFile(join(out, 'assets', 'app.css'), 'utf8');
    await rm(out, { recursive: true, force: true });

    // Assess
    const scripts = html.querySelectorAll('script');
    expect(scripts.map((s) => s.getAttribute('src'))).toEqual(['/assets/app.js']);
    expect(scripts.every((s) => s.text.trim() === '')).toBe(true);
    expect(html.querySelectorAll('style')).toHaveLength(0);
    expect(html.querySelectorAll('[style]')).toHaveLength(0);
    expect(
      html.querySelectorAll('link[rel=stylesheet]').map((l) => l.getAttribute('href')),
    ).toEqual(['/assets/app.css']);
    expect(js).toContain('ai4rag playground');
    expect(js).not.toMatch(/https?:\/\/(?!www\.w3\.org)[a-z]/i);
    expect(css).toContain('.source');
  });
});
