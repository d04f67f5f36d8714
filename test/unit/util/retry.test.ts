import {
  APIConnectionError,
  APIConnectionTimeoutError,
  APIError,
  APIUserAbortError,
  AuthenticationError,
  BadRequestError,
  InternalServerError,
  NotFoundError,
  PermissionDeniedError,
  RateLimitError,
  UnprocessableEntityError,
} from 'openai';
import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../../shared/src/errors.js';
import { isTransientOpenAIError } from '../../../shared/src/util/openai-errors.js';
import { type RetryOptions, retryAfterMs, withRetry } from '../../../shared/src/util/retry.js';

function recorder() {
  const sleeps: number[] = [];
  return { sleeps, sleep: async (ms: number) => void sleeps.push(ms) };
}

function failing(failures: unknown[], value = 'ok') {
  let calls = 0;
  const fn = async () => {
    const failure = failures[calls++];
    if (failure !== undefined) throw failure;
    return value;
  };
  return { fn, calls: () => calls };
}

const always = (): boolean => true;

describe('withRetry', () => {
  it('retries with full-jitter exponential backoff and returns the eventual value', async () => {
    // Prepare
    const { sleeps, sleep } = recorder();
    const op = failing([new Error('a'), new Error('b'), new Error('c')]);
    const options: RetryOptions = {
      maxRetries: 5,
      baseDelayMs: 100,
      maxDelayMs: 250,
      isRetryable: always,
      sleep,
      random: () => 0.5,
    };

    // Act
    const result = await withRetry(op.fn, options);

    // Assess: caps are 100, 200, min(250, 400) = 250; jitter 0.5
    expect(result).toBe('ok');
    expect(op.calls()).toBe(4);
    expect(sleeps).toEqual([50, 100, 125]);
  });

  it('rethrows the last error once the retries are exhausted', async () => {
    // Prepare
    const { sleeps, sleep } = recorder();
    const errors = [new Error('1'), new Error('2'), new Error('3'), new Error('4')];
    const op = failing(errors);

    // Act
    const outcome = withRetry(op.fn, {
      maxRetries: 2,
      baseDelayMs: 10,
      maxDelayMs: 100,
      isRetryable: always,
      sleep,
      random: () => 1,
    });

    // Assess
    await expect(outcome).rejects.toBe(errors[2]);
    expect(op.calls()).toBe(3);
    expect(sleeps).toEqual([10, 20]);
  });

  it('does not retry an error the predicate refuses', async () => {
    // Prepare
    const { sleeps, sleep } = recorder();
    const fatal = new Error('fatal');
    const op = failing([fatal]);

    // Act
    const outcome = withRetry(op.fn, {
      maxRetries: 5,
      baseDelayMs: 10,
      maxDelayMs: 100,
      isRetryable: (err) => err !== fatal,
      sleep,
    });

    // Assess
    await expect(outcome).rejects.toBe(fatal);
    expect(op.calls()).toBe(1);
    expect(sleeps).toEqual([]);
  });

  it('honours a retry-after hint instead of the jittered delay, and reports it', async () => {
    // Prepare
    const { sleeps, sleep } = recorder();
    const limited = new RateLimitError(
      429,
      undefined,
      'slow down',
      new Headers({ 'retry-after': '3' }),
    );
    const op = failing([limited]);
    const seen: Array<{ attempt: number; delayMs: number; fromRetryAfter: boolean }> = [];

    // Act
    await withRetry(op.fn, {
      maxRetries: 1,
      baseDelayMs: 10,
      maxDelayMs: 100,
      isRetryable: always,
      sleep,
      random: () => 0,
      onRetry: ({ attempt, delayMs, fromRetryAfter }) =>
        seen.push({ attempt, delayMs, fromRetryAfter }),
    });

    // Assess
    expect(sleeps).toEqual([3000]);
    expect(seen).toEqual([{ attempt: 1, delayMs: 3000, fromRetryAfter: true }]);
  });

  it('caps a huge retry-after hint at maxRetryAfterMs', async () => {
    // Prepare
    const { sleeps, sleep } = recorder();
    const op = failing([{ headers: { 'retry-after': '3600' } }]);

    // Act
    await withRetry(op.fn, {
      maxRetries: 1,
      baseDelayMs: 10,
      maxDelayMs: 100,
      isRetryable: always,
      maxRetryAfterMs: 5000,
      sleep,
    });

    // Assess
    expect(sleeps).toEqual([5000]);
  });

  it('makes a single attempt with maxRetries 0 and rejects invalid options', async () => {
    // Prepare
    const op = failing([new Error('once')]);

    // Act / Assess
    await expect(
      withRetry(op.fn, { maxRetries: 0, baseDelayMs: 1, maxDelayMs: 1, isRetryable: always }),
    ).rejects.toThrow('once');
    expect(op.calls()).toBe(1);
    await expect(
      withRetry(op.fn, { maxRetries: -1, baseDelayMs: 1, maxDelayMs: 1, isRetryable: always }),
    ).rejects.toThrow(ValidationError);
  });
});

describe('retryAfterMs', () => {
  it('reads retry-after-ms, retry-after seconds and retry-after dates', () => {
    // Prepare
    const now = Date.parse('2026-01-01T00:00:00Z');

    // Act / Assess
    expect(retryAfterMs({ headers: new Headers({ 'retry-after-ms': '250' }) })).toBe(250);
    expect(retryAfterMs({ headers: { 'retry-after': '1.5' } })).toBe(1500);
    expect(retryAfterMs({ headers: { 'retry-after': 'Thu, 01 Jan 2026 00:00:04 GMT' } }, now)).toBe(
      4000,
    );
  });

  it('ignores missing, negative and unparseable hints', () => {
    // Act / Assess
    expect(retryAfterMs(new Error('plain'))).toBeUndefined();
    expect(retryAfterMs({ headers: { 'retry-after': '-2' } })).toBeUndefined();
    expect(retryAfterMs({ headers: { 'retry-after': 'soon' } })).toBeUndefined();
    expect(retryAfterMs(null)).toBeUndefined();
  });
});

describe('isTransientOpenAIError', () => {
  const headers = new Headers();

  it('accepts rate limits, server errors, timeouts and connection errors', () => {
    // Act / Assess
    expect(isTransientOpenAIError(new RateLimitError(429, undefined, 'x', headers))).toBe(true);
    expect(isTransientOpenAIError(new InternalServerError(500, undefined, 'x', headers))).toBe(
      true,
    );
    expect(isTransientOpenAIError(new InternalServerError(503, undefined, 'x', headers))).toBe(
      true,
    );
    expect(isTransientOpenAIError(APIError.generate(502, undefined, 'x', headers))).toBe(true);
    expect(isTransientOpenAIError(APIError.generate(408, undefined, 'x', headers))).toBe(true);
    expect(isTransientOpenAIError(new APIConnectionTimeoutError())).toBe(true);
    expect(isTransientOpenAIError(new APIConnectionError({ message: 'ECONNRESET' }))).toBe(true);
  });

  it('refuses client errors, aborts and non-API errors', () => {
    // Act / Assess
    expect(isTransientOpenAIError(new BadRequestError(400, undefined, 'x', headers))).toBe(false);
    expect(isTransientOpenAIError(new AuthenticationError(401, undefined, 'x', headers))).toBe(
      false,
    );
    expect(isTransientOpenAIError(new PermissionDeniedError(403, undefined, 'x', headers))).toBe(
      false,
    );
    expect(isTransientOpenAIError(new NotFoundError(404, undefined, 'x', headers))).toBe(false);
    expect(isTransientOpenAIError(new UnprocessableEntityError(422, undefined, 'x', headers))).toBe(
      false,
    );
    expect(isTransientOpenAIError(new APIUserAbortError())).toBe(false);
    expect(isTransientOpenAIError(new Error('ECONNRESET'))).toBe(false);
    expect(isTransientOpenAIError({ status: 500 })).toBe(false);
  });
});
