import { describe, expect, it } from 'vitest';
import {
  EndpointConfigError,
  modelName,
  parseEndpoints,
  resolveModel,
} from '../../shared/src/endpoints.js';

describe('parseEndpoints', () => {
  it('gives every OpenAI-compatible role the OPENAI_* endpoint when nothing else is set', () => {
    // Act
    const e = parseEndpoints({
      OPENAI_BASE_URL: 'https://api.example.com/v1/',
      OPENAI_API_KEY: 'sk-1',
    });
    // Assess
    const openai = { name: 'openai', baseURL: 'https://api.example.com/v1', apiKey: 'sk-1' };
    expect(e.roles).toEqual({ embedding: openai, chat: openai, judge: openai });
    expect(e.named).toEqual({});
  });

  it('lets each role have its own endpoint; the judge falls back to chat, then OPENAI_*', () => {
    // Act
    const e = parseEndpoints({
      OPENAI_BASE_URL: 'https://api.openai.com/v1',
      OPENAI_API_KEY: 'sk-openai',
      AI4RAG_EMBEDDING_BASE_URL: 'http://127.0.0.1:8080/v1',
      AI4RAG_CHAT_BASE_URL: 'http://127.0.0.1:8000/v1',
      AI4RAG_CHAT_API_KEY: 'vllm-key',
      AI4RAG_RERANK_BASE_URL: 'http://127.0.0.1:8081',
    });
    // Assess
    expect(e.roles.embedding).toEqual({ name: 'embedding', baseURL: 'http://127.0.0.1:8080/v1' });
    expect(e.roles.chat).toEqual({
      name: 'chat',
      baseURL: 'http://127.0.0.1:8000/v1',
      apiKey: 'vllm-key',
    });
    expect(e.roles.judge).toEqual(e.roles.chat);
    expect(e.roles.rerank).toEqual({ name: 'rerank', baseURL: 'http://127.0.0.1:8081' });
  });

  it('reads named endpoints for model@name', () => {
    // Act
    const e = parseEndpoints({
      AI4RAG_ENDPOINT_OLLAMA_BASE_URL: 'http://127.0.0.1:11434/v1',
      AI4RAG_ENDPOINT_HOSTED_AI_BASE_URL: 'https://llm.example.com/v1',
      AI4RAG_ENDPOINT_HOSTED_AI_API_KEY: 'k',
    });
    // Assess
    expect(e.named).toEqual({
      'hosted-ai': { name: 'hosted-ai', baseURL: 'https://llm.example.com/v1', apiKey: 'k' },
      ollama: { name: 'ollama', baseURL: 'http://127.0.0.1:11434/v1' },
    });
    expect(e.roles).toEqual({});
  });

  it('names every bad variable in one error', () => {
    // Act
    const call = () =>
      parseEndpoints({
        AI4RAG_CHAT_API_KEY: 'k',
        AI4RAG_EMBEDDING_BASE_URL: 'localhost:8080',
        AI4RAG_ENDPOINT_X_BASE_URL: 'ftp://example.com',
      });
    // Assess
    expect(call).toThrow(EndpointConfigError);
    expect(call).toThrow(
      'model endpoints: AI4RAG_EMBEDDING_BASE_URL="localhost:8080" must be an http(s) URL; ' +
        'AI4RAG_CHAT_API_KEY is set but AI4RAG_CHAT_BASE_URL is not; ' +
        'AI4RAG_ENDPOINT_X_BASE_URL="ftp://example.com" must be an http(s) URL',
    );
  });
});

describe('resolveModel', () => {
  const endpoints = parseEndpoints({
    AI4RAG_EMBEDDING_BASE_URL: 'http://127.0.0.1:8080/v1',
    AI4RAG_ENDPOINT_VLLM_BASE_URL: 'http://127.0.0.1:8000/v1',
  });

  it.each([
    ['embedding', 'local/feature-hash-v1-384', { model: 'local/feature-hash-v1-384' }],
    [
      'embedding',
      'BAAI/bge-small-en-v1.5',
      {
        model: 'BAAI/bge-small-en-v1.5',
        endpoint: { name: 'embedding', baseURL: 'http://127.0.0.1:8080/v1' },
      },
    ],
    [
      'chat',
      'llama3:8b@vllm',
      { model: 'llama3:8b', endpoint: { name: 'vllm', baseURL: 'http://127.0.0.1:8000/v1' } },
    ],
  ] as const)('%s %s', (role, spec, expected) => {
    // Act / Assess
    expect(resolveModel(endpoints, role, spec)).toEqual(expected);
  });

  it('says which variables to set for a role without an endpoint, and which names exist', () => {
    // Act / Assess
    expect(() => resolveModel(endpoints, 'judge', 'gpt-4o-mini')).toThrow(
      'the judge model "gpt-4o-mini" needs an endpoint: set AI4RAG_JUDGE_BASE_URL or AI4RAG_CHAT_BASE_URL or ' +
        'OPENAI_BASE_URL, or name one with "gpt-4o-mini@<endpoint>"',
    );
    expect(() => resolveModel(endpoints, 'chat', 'x@nope')).toThrow(
      'model "x@nope" names endpoint "nope", which is not defined: set AI4RAG_ENDPOINT_NOPE_BASE_URL (defined: vllm)',
    );
  });

  it('strips the endpoint from the model name', () => {
    expect(modelName('llama3:8b@vllm')).toBe('llama3:8b');
    expect(modelName('org@team/model')).toBe('org@team/model');
    expect(modelName('local/feature-hash-v1-384')).toBe('local/feature-hash-v1-384');
  });
});
