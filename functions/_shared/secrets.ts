/**
 * Secrets Manager reads, cached per container: a warm Lambda fetches each secret once (never from plain env).
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

const cache = new Map<string, Promise<string>>();

/**
 * The secret's string value, fetched once per container and ARN (a failed fetch is not cached, so the next
 * invocation retries).
 * @throws {SecretError} when the secret cannot be read or holds no string.
 * @example const password = await getSecretString(client, arn);
 */
export function getSecretString(client: SecretsManagerClient, arn: string): Promise<string> {
  let value = cache.get(arn);
  if (!value) {
    value = client
      .send(new GetSecretValueCommand({ SecretId: arn }))
      .then((out) => {
        if (typeof out.SecretString !== 'string') {
          throw new SecretError(`secret ${arn} holds no string value`);
        }
        return out.SecretString;
      })
      .catch((error: unknown) => {
        cache.delete(arn);
        if (error instanceof SecretError) throw error;
        throw new SecretError(`could not read secret ${arn}`, { cause: error });
      });
    cache.set(arn, value);
  }
  return value;
}

/**
 * A JSON secret (e.g. the RDS secret `{username, password, host, port, dbname}`).
 * @throws {SecretError} when it is not a JSON object.
 */
export async function getSecretJson(
  client: SecretsManagerClient,
  arn: string,
): Promise<Record<string, unknown>> {
  const text = await getSecretString(client, arn);
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

/** Forgets cached secrets (tests; a rotated secret is otherwise picked up by new containers). */
export function clearSecretCache(): void {
  cache.clear();
}
