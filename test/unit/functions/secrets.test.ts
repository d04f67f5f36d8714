import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  clearSecretCache,
  getSecretJson,
  getSecretString,
  SECRET_TTL_MS,
  SecretError,
} from '../../../functions/_shared/secrets.js';

const ARN = 'arn:aws:secretsmanager:us-east-1:000000000000:secret:db';

describe('getSecretString (TTL cache)', () => {
  const sm = mockClient(SecretsManagerClient);
  const client = new SecretsManagerClient({ region: 'us-east-1' });

  beforeEach(() => {
    sm.reset();
    vi.useFakeTimers({ now: Date.parse('2026-01-01T00:00:00Z') });
  });
  afterEach(() => {
    vi.useRealTimers();
    clearSecretCache();
  });

  it('serves a cached value within the TTL', async () => {
    // Prepare
    sm.on(GetSecretValueCommand).resolves({ SecretString: 'v1' });

    // Act
    const first = await getSecretString(client, ARN);
    vi.advanceTimersByTime(SECRET_TTL_MS - 1);
    const second = await getSecretString(client, ARN);

    // Assess
    expect([first, second]).toEqual(['v1', 'v1']);
    expect(sm.commandCalls(GetSecretValueCommand)).toHaveLength(1);
  });

  it('picks up a rotated secret after the TTL', async () => {
    // Prepare
    sm.on(GetSecretValueCommand)
      .resolvesOnce({ SecretString: JSON.stringify({ password: 'old' }) })
      .resolves({ SecretString: JSON.stringify({ password: 'new' }) });
    await getSecretJson(client, ARN);

    // Act
    vi.advanceTimersByTime(SECRET_TTL_MS);
    const rotated = await getSecretJson(client, ARN);

    // Assess
    expect(rotated).toEqual({ password: 'new' });
    expect(sm.commandCalls(GetSecretValueCommand)).toHaveLength(2);
  });

  it('shares one fetch between concurrent callers', async () => {
    // Prepare
    sm.on(GetSecretValueCommand).resolves({ SecretString: 'v1' });

    // Act
    const values = await Promise.all([getSecretString(client, ARN), getSecretString(client, ARN)]);
    vi.advanceTimersByTime(SECRET_TTL_MS);
    await Promise.all([getSecretString(client, ARN), getSecretString(client, ARN)]);

    // Assess
    expect(values).toEqual(['v1', 'v1']);
    expect(sm.commandCalls(GetSecretValueCommand)).toHaveLength(2);
  });

  it('serves the last value when a refresh fails, and retries on the next call', async () => {
    // Prepare
    sm.on(GetSecretValueCommand)
      .resolvesOnce({ SecretString: 'v1' })
      .rejectsOnce(new Error('ThrottlingException'))
      .resolves({ SecretString: 'v2' });
    await getSecretString(client, ARN);
    vi.advanceTimersByTime(SECRET_TTL_MS);

    // Act
    const stale = await getSecretString(client, ARN);
    const fresh = await getSecretString(client, ARN);

    // Assess
    expect([stale, fresh]).toEqual(['v1', 'v2']);
    expect(sm.commandCalls(GetSecretValueCommand)).toHaveLength(3);
  });

  it('does not cache a failed first read', async () => {
    // Prepare
    sm.on(GetSecretValueCommand)
      .rejectsOnce(new Error('AccessDenied'))
      .resolves({ SecretString: 'v1' });

    // Act
    const failed = getSecretString(client, ARN);

    // Assess
    await expect(failed).rejects.toThrow(SecretError);
    await expect(failed).rejects.toThrow(`could not read secret ${ARN}`);
    await expect(getSecretString(client, ARN)).resolves.toBe('v1');
  });

  it('reads every time with maxAgeMs 0', async () => {
    // Prepare
    sm.on(GetSecretValueCommand).resolves({ SecretString: 'v1' });

    // Act
    await getSecretString(client, ARN, { maxAgeMs: 0 });
    await getSecretString(client, ARN, { maxAgeMs: 0 });

    // Assess
    expect(sm.commandCalls(GetSecretValueCommand)).toHaveLength(2);
  });

  it('rejects a binary secret', async () => {
    // Prepare
    sm.on(GetSecretValueCommand).resolves({ SecretBinary: new Uint8Array([1]) });

    // Act / Assess
    await expect(getSecretString(client, ARN)).rejects.toThrow('holds no string value');
  });
});
