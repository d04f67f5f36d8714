import { VectorStoreConfigError } from '../errors.js';

/** Connection settings of a Milvus / Zilliz Cloud server (ai4rag's `MilvusConfig`). */
export interface MilvusConfig {
  /** `http://host:port` or `https://host:port` (https turns TLS on). */
  uri: string;
  /** API key (Zilliz Cloud) or `user:password`. */
  token?: string;
  /** PEM text of the CA certificate that signs the server's certificate (private deployments). */
  serverCert?: string;
}

/**
 * Validates Milvus connection settings. ai4rag insists on an explicit scheme so that a bare `host:port`
 * (which the SDK would silently treat as plaintext) or a `grpc://` URI is rejected with a clear message.
 * @throws {VectorStoreConfigError} when `uri` is not an http(s) URL with a host, or token/serverCert are not strings.
 * @example parseMilvusConfig({ uri: 'https://in03-xxx.zillizcloud.com', token: 'key' })
 */
export function parseMilvusConfig(input: unknown): MilvusConfig {
  if (input === null || typeof input !== 'object') {
    throw new VectorStoreConfigError('Milvus config must be an object with a uri');
  }
  const { uri, token, serverCert } = input as Record<string, unknown>;
  if (typeof uri !== 'string' || uri.trim() === '') {
    throw new VectorStoreConfigError(
      'Milvus uri is required (e.g. http://localhost:19530 or https://<cluster>.zillizcloud.com)',
    );
  }
  let url: URL | undefined;
  try {
    url = new URL(uri.trim());
  } catch {
    url = undefined;
  }
  if (
    url === undefined ||
    (url.protocol !== 'http:' && url.protocol !== 'https:') ||
    !url.hostname
  ) {
    throw new VectorStoreConfigError(
      `Milvus uri must start with http:// or https:// and name a host, got ${JSON.stringify(uri.slice(0, 100))}`,
    );
  }
  if (token !== undefined && typeof token !== 'string') {
    throw new VectorStoreConfigError('Milvus token must be a string');
  }
  if (serverCert !== undefined && typeof serverCert !== 'string') {
    throw new VectorStoreConfigError('Milvus serverCert must be PEM text');
  }
  return {
    uri: uri.trim(),
    ...(token ? { token } : {}),
    ...(serverCert ? { serverCert } : {}),
  };
}

/**
 * Reads Milvus settings from an environment map (`MILVUS_URI`, `MILVUS_TOKEN`, `MILVUS_SERVER_CERT`, falling
 * back to `MILVUS_CA_CERT` as ai4rag does). The caller passes the map, so `shared/` never reads `process.env`.
 * @throws {VectorStoreConfigError} when MILVUS_URI is missing or not an http(s) URL.
 * @example milvusConfigFromEnv({ MILVUS_URI: 'http://localhost:19530' })
 */
export function milvusConfigFromEnv(env: Record<string, string | undefined>): MilvusConfig {
  const cert = env.MILVUS_SERVER_CERT || env.MILVUS_CA_CERT;
  return parseMilvusConfig({
    uri: env.MILVUS_URI,
    ...(env.MILVUS_TOKEN ? { token: env.MILVUS_TOKEN } : {}),
    ...(cert ? { serverCert: cert } : {}),
  });
}
