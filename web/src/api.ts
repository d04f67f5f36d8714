/**
 * The page's client of the local API: same origin, the bearer token from sessionStorage (it arrives in the URL
 * fragment, which browsers never send), and the experiment pattern the Ask page answers with, if any.
 */

const TOKEN_KEY = 'ai4rag.token';
const PATTERN_KEY = 'ai4rag.pattern';

/** The pattern the query routes answer with (`X-Ai4rag-Pattern`). */
export interface ServedPattern {
  experiment_id: string;
  pattern_name: string;
  collection: string;
  /** Chosen automatically because the knowledge base is empty. */
  auto?: boolean;
}

/** Takes `#token=…` out of the address (into sessionStorage) and returns the token known, if any. */
export function takeTokenFromFragment(): string | undefined {
  const hash = window.location.hash;
  const m = /(?:^#|&)token=([^&]*)/.exec(hash);
  if (m?.[1] !== undefined) {
    sessionStorage.setItem(TOKEN_KEY, decodeURIComponent(m[1]));
    history.replaceState(null, '', `${window.location.pathname}#/ask`);
  }
  return token();
}

export function token(): string | undefined {
  return sessionStorage.getItem(TOKEN_KEY) ?? undefined;
}

export function setToken(value: string): void {
  sessionStorage.setItem(TOKEN_KEY, value);
}

export function clearToken(): void {
  sessionStorage.removeItem(TOKEN_KEY);
}

export function servedPattern(): ServedPattern | undefined {
  const raw = sessionStorage.getItem(PATTERN_KEY);
  if (raw === null) return undefined;
  try {
    return JSON.parse(raw) as ServedPattern;
  } catch {
    return undefined;
  }
}

/** null: answer from the knowledge base (and do not pick a pattern automatically again). */
export function setServedPattern(p: ServedPattern | null): void {
  sessionStorage.setItem(PATTERN_KEY, p === null ? 'null' : JSON.stringify(p));
}

export function patternChosen(): boolean {
  return sessionStorage.getItem(PATTERN_KEY) !== null;
}

/** An API error: its status and the server's message. */
export class ApiError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
  }
}

function headers(json: boolean, withPattern: boolean): Record<string, string> {
  const h: Record<string, string> = {};
  const t = token();
  if (t !== undefined) h.authorization = `Bearer ${t}`;
  if (json) h['content-type'] = 'application/json';
  const p = withPattern ? servedPattern() : undefined;
  if (p) h['x-ai4rag-pattern'] = `${p.experiment_id}/${p.pattern_name}`;
  return h;
}

async function failure(res: Response): Promise<ApiError> {
  let message = `${res.status} ${res.statusText}`;
  try {
    const body = (await res.json()) as { error?: { message?: string } };
    if (body.error?.message) message = body.error.message;
  } catch {
    // not JSON: keep the status line
  }
  return new ApiError(res.status, message);
}

/** Sends a request; `pattern` adds the served pattern's header (query routes). */
export async function api<T>(
  method: string,
  path: string,
  body?: unknown,
  options: { pattern?: boolean } = {},
): Promise<T> {
  const res = await fetch(path, {
    method,
    headers: headers(body !== undefined, options.pattern === true),
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  if (!res.ok) throw await failure(res);
  return (await res.json()) as T;
}

/** One server-sent event of POST /stream. */
export interface StreamEvent {
  event: string;
  data: unknown;
}

/** POST /stream: calls `onEvent` for each frame (sources, token*, done or error). */
export async function stream(
  body: unknown,
  onEvent: (e: StreamEvent) => void,
  signal?: AbortSignal,
): Promise<void> {
  const res = await fetch('/stream', {
    method: 'POST',
    headers: headers(true, true),
    body: JSON.stringify(body),
    ...(signal && { signal }),
  });
  if (!res.ok || res.body === null) throw await failure(res);
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value;
    for (let cut = buffer.indexOf('\n\n'); cut !== -1; cut = buffer.indexOf('\n\n')) {
      const frame = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      let event = 'message';
      const data: string[] = [];
      for (const line of frame.split('\n')) {
        if (line.startsWith('event: ')) event = line.slice(7);
        else if (line.startsWith('data: ')) data.push(line.slice(6));
      }
      if (data.length > 0) onEvent({ event, data: JSON.parse(data.join('\n')) });
    }
  }
}

/** Uploads one file: POST /uploads for a signed URL, then PUT the bytes (indexed before the PUT answers). */
export async function upload(
  file: File,
  key: string,
): Promise<{ status: string; chunks?: number; error?: string }> {
  const contentType = file.type || 'application/octet-stream';
  const signed = await api<{ url: string; headers: Record<string, string> }>('POST', '/uploads', {
    key,
    content_type: contentType,
  });
  // The signed URL names the server's own host; the path and query are what matter here (same origin).
  const target = new URL(signed.url, window.location.href);
  const res = await fetch(`${target.pathname}${target.search}`, {
    method: 'PUT',
    headers: signed.headers,
    body: file,
  });
  const body = (await res.json().catch(() => ({}))) as {
    status?: string;
    chunks?: number;
    error?: { message?: string };
  };
  if (!res.ok) {
    return { status: 'failed', error: body.error?.message ?? `${res.status} ${res.statusText}` };
  }
  return {
    status: body.status ?? 'indexed',
    ...(body.chunks !== undefined && { chunks: body.chunks }),
  };
}
