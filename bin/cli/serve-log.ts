/**
 * The access log of `ai4rag serve --log` / `--log-file FILE`: one line per request with its time, method, path
 * (never the query string: upload URLs carry their signature there), status, duration and bytes sent. The bearer
 * token travels in a header and is never logged.
 */
import { appendFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';

/** Receives one access-log line (no newline). */
export type AccessLogSink = (line: string) => void;

/** One access-log line: `2026-12-01T16:45:49.123Z GET /documents 200 3.2ms 512B`. */
export function accessLogLine(entry: {
  time: Date;
  method: string;
  path: string;
  status: number;
  ms: number;
  bytes: number;
}): string {
  return `${entry.time.toISOString()} ${entry.method} ${entry.path} ${entry.status} ${entry.ms.toFixed(1)}ms ${entry.bytes}B`;
}

/** The path of a request URL without its query string or fragment. */
export function pathOnly(url: string | undefined): string {
  const raw = url ?? '/';
  const cut = raw.search(/[?#]/);
  return cut === -1 ? raw : raw.slice(0, cut);
}

/**
 * Counts the bytes a response sends and writes its line to `sink` when it finishes (or the client goes away).
 * @example server.on('request', (req, res) => logAccess(req, res, (l) => process.stderr.write(`${l}\n`)));
 */
export function logAccess(req: IncomingMessage, res: ServerResponse, sink: AccessLogSink): void {
  const started = performance.now();
  const time = new Date();
  let bytes = 0;
  const count = (chunk: unknown, encoding?: unknown) => {
    if (typeof chunk === 'string') {
      bytes += Buffer.byteLength(
        chunk,
        typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8',
      );
    } else if (chunk instanceof Uint8Array) bytes += chunk.byteLength;
  };
  const write = res.write.bind(res);
  const end = res.end.bind(res);
  res.write = ((chunk: unknown, ...rest: unknown[]) => {
    count(chunk, rest[0]);
    return (write as (...a: unknown[]) => boolean)(chunk, ...rest);
  }) as typeof res.write;
  res.end = ((chunk?: unknown, ...rest: unknown[]) => {
    if (chunk !== undefined && typeof chunk !== 'function') count(chunk, rest[0]);
    return (end as (...a: unknown[]) => ServerResponse)(chunk, ...rest);
  }) as typeof res.end;
  let done = false;
  const finish = () => {
    if (done) return;
    done = true;
    sink(
      accessLogLine({
        time,
        method: req.method ?? 'GET',
        path: pathOnly(req.url),
        status: res.statusCode,
        ms: performance.now() - started,
        bytes,
      }),
    );
  };
  res.once('finish', finish);
  res.once('close', finish);
}

/** A sink appending to a file (created when missing). */
export function fileSink(file: string): AccessLogSink {
  return (line) => appendFileSync(file, `${line}\n`);
}
