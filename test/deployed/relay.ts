/**
 * A TCP relay standing in for a network path of the deployed stack: it listens where the template says the
 * endpoint is (e.g. the RDS Proxy on port 5432, a model service URL) and forwards to the local server, but only
 * for connections the caller's network placement allows (a function outside the VPC cannot reach the proxy; a
 * function in isolated subnets cannot reach the internet). For PostgreSQL it can also require TLS, as RDS Proxy
 * does with RequireTLS: it answers the SSLRequest, terminates TLS with its own certificate and forwards the
 * plain protocol, so a client that skips TLS, or does not trust the certificate, fails as it would on AWS.
 */
import { connect, createServer, type Server, type Socket } from 'node:net';
import { TLSSocket } from 'node:tls';

export interface RelayOptions {
  /** Address to listen on (e.g. 127.0.0.7). */
  host: string;
  /** Port to listen on; 0 for any. */
  port: number;
  target: { host: string; port: number };
  /** Asked when a connection arrives: undefined to accept, else the reason it is refused. */
  admit: () => string | undefined;
  /** PostgreSQL only: require the client to start TLS (SSLRequest) and terminate it with this certificate. */
  postgresTls?: { key: string; cert: string };
  /** Terminate TLS from the first byte (HTTPS, gRPC over TLS with ALPN h2) with this certificate. */
  tls?: { key: string; cert: string; alpn?: string[] };
}

export interface Relay {
  host: string;
  port: number;
  /** Connections refused, with their reason. */
  refused: string[];
  close(): Promise<void>;
}

const SSL_REQUEST_CODE = 80877103;

export async function startRelay(options: RelayOptions): Promise<Relay> {
  const refused: string[] = [];
  const sockets = new Set<Socket>();
  const pipe = (client: Socket | TLSSocket, first?: Buffer) => {
    const upstream = connect(options.target.port, options.target.host);
    sockets.add(upstream);
    upstream.on('close', () => sockets.delete(upstream));
    if (first !== undefined && first.length > 0) upstream.write(first);
    client.pipe(upstream).pipe(client);
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end);
    upstream.on('error', end);
    client.on('close', end);
    upstream.on('close', end);
  };
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    const reason = options.admit();
    if (reason !== undefined) {
      refused.push(reason);
      socket.destroy();
      return;
    }
    if (options.tls !== undefined) {
      const secure = new TLSSocket(socket, {
        isServer: true,
        key: options.tls.key,
        cert: options.tls.cert,
        ...(options.tls.alpn && { ALPNProtocols: options.tls.alpn }),
      });
      secure.on('error', () => socket.destroy());
      pipe(secure);
      return;
    }
    const tls = options.postgresTls;
    if (tls === undefined) {
      pipe(socket);
      return;
    }
    socket.once('data', (data: Buffer) => {
      const isSslRequest = data.length >= 8 && data.readInt32BE(4) === SSL_REQUEST_CODE;
      if (!isSslRequest) {
        refused.push('the client did not request TLS (the proxy requires it)');
        // What a TLS-only proxy does with a plain startup message: close.
        socket.destroy();
        return;
      }
      socket.write('S');
      const secure = new TLSSocket(socket, { isServer: true, key: tls.key, cert: tls.cert });
      secure.on('error', () => socket.destroy());
      pipe(secure, data.subarray(8));
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : options.port;
  return {
    host: options.host,
    port,
    refused,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/**
 * A relay on a loopback address of its own at a fixed port (the template's), trying addresses until one is free;
 * `tlsFor` makes the PostgreSQL TLS certificate for the chosen address.
 */
export async function startRelayOnFixedPort(
  options: Omit<RelayOptions, 'host' | 'postgresTls'>,
  tlsFor?: (host: string) => { key: string; cert: string },
): Promise<Relay & { tls?: { key: string; cert: string } }> {
  let lastError: unknown;
  for (let attempt = 0; attempt < 40; attempt += 1) {
    const host = `127.0.${Math.floor(Math.random() * 250) + 1}.${Math.floor(Math.random() * 250) + 2}`;
    try {
      const postgresTls = tlsFor?.(host);
      const relay = await startRelay({ ...options, host, ...(postgresTls && { postgresTls }) });
      return { ...relay, ...(postgresTls && { tls: postgresTls }) };
    } catch (error) {
      lastError = error;
    }
  }
  throw lastError;
}
