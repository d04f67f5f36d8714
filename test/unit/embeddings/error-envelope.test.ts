import { describe, expect, it } from 'vitest';
import {
  toOpenAIErrorEnvelope,
  withOpenAIErrorEnvelope,
} from '../../../shared/src/embeddings/error-envelope.js';

describe('toOpenAIErrorEnvelope', () => {
  it('wraps TEI’s { message, code, type } in the OpenAI envelope', () => {
    // Act
    const out = toOpenAIErrorEnvelope(
      '{"message":"batch size 33 > maximum allowed batch size 32","code":413,"type":"validation"}',
    );

    // Assess
    expect(JSON.parse(out ?? 'null')).toEqual({
      error: {
        message: 'batch size 33 > maximum allowed batch size 32',
        type: 'validation',
        param: null,
        code: 413,
      },
    });
  });

  it('wraps vLLM ≤ 0.9’s top-level error, TEI’s native { error, error_type } and FastAPI’s detail', () => {
    // Act
    const vllm = toOpenAIErrorEnvelope(
      '{"object":"error","message":"too long","type":"BadRequestError","param":null,"code":400}',
    );
    const native = toOpenAIErrorEnvelope(
      '{"error":"Model is overloaded","error_type":"overloaded"}',
    );
    const fastapi = toOpenAIErrorEnvelope('{"detail":"Not Found"}');

    // Assess
    expect(JSON.parse(vllm ?? 'null')).toEqual({
      error: { message: 'too long', type: 'BadRequestError', param: null, code: 400 },
    });
    expect(JSON.parse(native ?? 'null')).toEqual({
      error: { message: 'Model is overloaded', type: 'overloaded', param: null, code: null },
    });
    expect(JSON.parse(fastapi ?? 'null')).toEqual({
      error: { message: 'Not Found', type: null, param: null, code: null },
    });
  });

  it('leaves OpenAI-shaped, message-less and non-JSON bodies alone', () => {
    // Act / Assess
    expect(toOpenAIErrorEnvelope('{"error":{"message":"x","type":"t"}}')).toBeUndefined();
    expect(toOpenAIErrorEnvelope('{"detail":[{"loc":["body"],"msg":"bad"}]}')).toBeUndefined();
    expect(toOpenAIErrorEnvelope('Failed to buffer the request body')).toBeUndefined();
    expect(toOpenAIErrorEnvelope('[1,2]')).toBeUndefined();
  });
});

describe('withOpenAIErrorEnvelope', () => {
  it('rewrites error answers, keeps their status and headers, and passes successes through', async () => {
    // Prepare
    const answers = [
      new Response('{"message":"Model is overloaded","code":429,"type":"overloaded"}', {
        status: 429,
        headers: { 'content-type': 'application/json', 'retry-after': '3' },
      }),
      new Response('{"ok":true}', { status: 200, headers: { 'content-type': 'application/json' } }),
    ];
    const fetchStub = async () => answers.shift() as Response;
    const wrapped = withOpenAIErrorEnvelope(fetchStub);

    // Act
    const refused = await wrapped('http://x/v1/embeddings');
    const ok = await wrapped('http://x/v1/embeddings');

    // Assess
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('3');
    expect(await refused.json()).toEqual({
      error: { message: 'Model is overloaded', type: 'overloaded', param: null, code: 429 },
    });
    expect(await ok.json()).toEqual({ ok: true });
  });
});
