/**
 * Secrets Manager reads, cached per container with a TTL ({@link SECRET_TTL_MS}, 5 minutes by default): a warm
 * Lambda fetches each secret at most once per TTL (never from plain env), and a rotated secret is picked up by
 * running containers within one TTL.
 *
 * Stale-if-error: when a refresh after the TTL fails (Secrets Manager throttled or briefly unreachable), the
 * last value read is returned and the next call tries again; a secret never read successfully fails. A value
 * that is stale because of rotation then fails at the database, whose error the caller surfaces.
 */
import { GetSecretValueCommand, type SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { Ai4ragError } from '../../shared/src/errors.js';

/** A secret could not be read or has an unexpected shape. */
export class SecretError extends Ai4ragError {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'SecretError';
  }
}

/** How long a secret value is served from the cache before it is read again (5 minutes). */
export const SECRET_TTL_MS = 5 * 60_000;

interface CacheEntry {
  /** The value being served (a fetch in flight on a cold cache). */
  value: Promise<string>;
  /** When `value` was fetched (ms since the epoch); 0 while the first fetch is in flight. */
  fetchedAt: number;
  /** A refresh in flight, shared by concurrent callers. */
  refresh?: Promise<string>;
}

const cache = new Map<string, CacheEntry>();

function fetchSecret(client: SecretsManagerClient, arn: string): Promise<string> {
  return client.send(new GetSecretValueCommand({ SecretId: arn })).then(
    (out) => {
      if (typeof out.SecretString !== 'string') {
        throw new SecretError(`secret ${arn} holds no string value`);
      }
      return out.SecretString;
    },
    (error: unknown) => {
      throw new SecretError(`could not read secret ${arn}`, { cause: error });
    },
  );
}

/** Options of {@link getSecretString}. */
export interface SecretCacheOptions {
  /** How long a value is served before it is read again, in ms (0: every call reads). @default SECRET_TTL_MS */
  maxAgeMs?: number;
}

/**
 * The secret's string value, cached per container and ARN for `maxAgeMs`. A failed first fetch is not cached
 * (the next call retries); a failed refresh serves the last value read (see the module note).
 * @throws {SecretError} when the secret cannot be read or holds no string.
 * @example const password = await getSecretString(client, arn);
 */
export function getSecretString(
  client: SecretsManagerClient,
  arn: string,
  options: SecretCacheOptions = {},
): Promise<string> {
  const maxAgeMs = options.maxAgeMs ?? SECRET_TTL_MS;
  const entry = cache.get(arn);
  if (entry === undefined) {
    const created: CacheEntry = { value: Promise.resolve(''), fetchedAt: 0 };
    created.value = fetchSecret(client, arn).then(
      (value) => {
        created.fetchedAt = Date.now();
        return value;
      },
      (error: unknown) => {
        if (cache.get(arn) === created) cache.delete(arn);
        throw error;
      },
    );
    cache.set(arn, created);
    return created.value;
  }
  if (entry.fetchedAt === 0 || Date.now() - entry.fetchedAt < maxAgeMs) return entry.value;
  entry.refresh ??= fetchSecret(client, arn)
    .then(
      (value) => {
        entry.value = Promise.resolve(value);
        entry.fetchedAt = Date.now();
        return value;
      },
      // Stale-if-error: keep serving the last value; fetchedAt is unchanged, so the next call retries.
      () => entry.value,
    )
    .finally(() => {
      entry.refresh = undefined;
    });
  return entry.refresh;
}

/**
 * A JSON secret (e.g. the RDS secret `{username, password, host, port, dbname}`).
 * @throws {SecretError} when it is not a JSON object.
 */
export async function getSecretJson(
  client: SecretsManagerClient,
  arn: string,
  options: SecretCacheOptions = {},
): Promise<Record<string, unknown>> {
  const text = await getSecretString(client, arn, options);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new SecretError(`secret ${arn} is not JSON`, { cause: error });
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new SecretError(`secret ${arn} is not a JSON object`);
  }
  return value as Record<string, unknown>;
}

/**
 * An API key or token secret: either the plain string, or a JSON object holding it under one of `keys`.
 * @throws {SecretError} when a JSON secret has none of the keys.
 */
export async function getSecretToken(
  client: SecretsManagerClient,
  arn: string,
  keys: readonly string[],
): Promise<string> {
  const text = (await getSecretString(client, arn)).trim();
  if (!text.startsWith('{')) return text;
  const json = await getSecretJson(client, arn);
  for (const k of keys) if (typeof json[k] === 'string') return json[k] as string;
  throw new SecretError(`secret ${arn} has none of the fields ${keys.join(', ')}`);
}

/** Forgets cached secrets (tests; a rotated secret is otherwise picked up after {@link SECRET_TTL_MS}). */
export function clearSecretCache(): void {
  cache.clear();
}
