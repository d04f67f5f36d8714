import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request the fake received, in arrival order (failed ones included). */
export interface TeiRecordedRequest {
  method: string;
  /** Path without the query string, e.g. `/rerank`. */
  path: string;
  /** Parsed JSON body, or undefined when there was none / it was not JSON. */
  body: unknown;
  /** The HTTP status the fake answered with. */
  status?: number;
  /** The `authorization` header, when one was sent. */
  authorization?: string;
}

/** Options of {@link startFakeTei}. */
export interface FakeTeiOptions {
  /** The first `count` requests (any route) answer `status` with a TEI-style error body. */
  failNext?: { status: number; count: number };
  /** Requests without `Authorization: Bearer <apiKey>` answer 401 (TEI's `--api-key`). */
  apiKey?: string;
}

/** A running fake TEI server (see {@link startFakeTei}). */
export interface FakeTei {
  /** `http://127.0.0.1:PORT`. */
  baseURL: string;
  requests: TeiRecordedRequest[];
  close(): Promise<void>;
  /** The next `count` requests (any route) answer `status` with a TEI-style error body. */
  failNext(status: number, count: number): void;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    req.on('data', (chunk: Buffer) => parts.push(chunk));
    req.on('end', () => resolve(Buffer.concat(parts).toString('utf8')));
    req.on('error', reject);
  });
}

function lowerWords(text: string): string[] {
  return text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
}

/**
 * The fake's deterministic relevance: distinct lowercase query words found in the text, divided by
 * (1 + number of words in the text), so shorter texts with the same matches rank higher.
 */
export function fakeTeiScore(query: string, text: string): number {
  const textWords = lowerWords(text);
  const present = new Set(textWords);
  let hits = 0;
  for (const word of new Set(lowerWords(query))) if (present.has(word)) hits++;
  return hits / (1 + textWords.length);
}

/**
 * Starts a TEI-compatible fake on 127.0.0.1 (random port): `POST /rerank` answers `[{ index, score }]` sorted by
 * score descending as TEI does ({@link fakeTeiScore}), `GET /health` answers 200.
 */
export async function startFakeTei(options: FakeTeiOptions = {}): Promise<FakeTei> {
  const requests: TeiRecordedRequest[] = [];
  let failStatus = options.failNext?.status ?? 0;
  let failCount = options.failNext?.count ?? 0;

  const send = (res: ServerResponse, record: TeiRecordedRequest, status: number, body: unknown) => {
    record.status = status;
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };

  const server = createServer((req, res) => {
    void (async () => {
      const raw = await readBody(req);
      let body: unknown;
      try {
        body = raw === '' ? undefined : JSON.parse(raw);
      } catch {
        body = undefined;
      }
      const path = (req.url ?? '/').split('?')[0] ?? '/';
      const record: TeiRecordedRequest = { method: req.method ?? 'GET', path, body };
      if (req.headers.authorization !== undefined) record.authorization = req.headers.authorization;
      requests.push(record);

      if (failCount > 0) {
        failCount--;
        send(res, record, failStatus, {
          error: `injected failure ${failStatus}`,
          error_type: 'fake',
        });
        return;
      }
      if (options.apiKey !== undefined && record.authorization !== `Bearer ${options.apiKey}`) {
        send(res, record, 401, { error: 'Unauthorized', error_type: 'Unauthorized' });
        return;
      }
      if (req.method === 'GET' && path === '/health') {
        record.status = 200;
        res.writeHead(200);
        res.end();
        return;
      }
      if (req.method === 'POST' && path === '/rerank') {
        const { query, texts } = (body ?? {}) as { query?: unknown; texts?: unknown };
        if (
          typeof query !== 'string' ||
          !Array.isArray(texts) ||
          !texts.every((t) => typeof t === 'string')
        ) {
          send(res, record, 422, {
            error: 'query and texts are required',
            error_type: 'Validation',
          });
          return;
        }
        const ranked = (texts as string[])
          .map((text, index) => ({ index, score: fakeTeiScore(query, text) }))
          .sort((a, b) => b.score - a.score || a.index - b.index);
        send(res, record, 200, ranked);
        return;
      }
      send(res, record, 404, { error: 'not found', error_type: 'NotFound' });
    })();
  });

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseURL: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((err) => (err ? reject(err) : resolve()));
      }),
    failNext(status: number, count: number) {
      failStatus = status;
      failCount = count;
    },
  };
}
