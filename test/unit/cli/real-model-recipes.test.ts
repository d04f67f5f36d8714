/**
 * The README's "Use real models" recipes, each run as written (the environment it names, `ai4rag ingest` then
 * `ai4rag ask`) against the fake that imitates its server: OpenAI, Ollama, vLLM + TEI, and a hosted reranker.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lastJson, runCli } from '../../chaos/harness.js';
import { startFakeOpenAI } from '../../support/fake-openai-server.js';
import { startFakeTei } from '../../support/fake-tei-server.js';

interface Answer {
  answer: string;
  timing: { rerank_ms?: number; rerankMs?: number };
}

describe('README recipes: real model servers', () => {
  let root: string;
  let docs: string;
  const fakes: { close(): Promise<void> }[] = [];
  let counter = 0;

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'ai4rag-recipes-'));
    docs = join(root, 'docs');
    await mkdir(docs, { recursive: true });
    await writeFile(
      join(docs, 'ferry.md'),
      '# Ferries\n\nThe ferry Aurora carries 140 passengers.\n',
    );
    await writeFile(
      join(docs, 'leave.md'),
      '# Leave\n\nEmployees receive 27 days of annual leave.\n',
    );
    await writeFile(
      join(docs, 'cargo.md'),
      '# Cargo\n\nThe barge Tern moves 900 tonnes of grain.\n',
    );
  });
  afterAll(async () => {
    for (const f of fakes) await f.close();
    if (root) await rm(root, { recursive: true, force: true });
  });

  /** Ingests the sample and asks one question with `env`; returns both runs. */
  async function recipe(env: Record<string, string>, embedding: string, ask: string[]) {
    counter += 1;
    const data = join(root, `data${counter}`);
    const common = ['--data-dir', data, '--embedding', embedding];
    const ingest = await runCli(['ingest', docs, ...common, '--json'], { env });
    const answer = await runCli(
      ['ask', 'How many passengers does the Aurora carry?', ...common, ...ask, '--json'],
      { env },
    );
    return { ingest, answer };
  }

  const chatResponder = () => 'The Aurora carries 140 passengers [1].';

  it('OpenAI (or any OpenAI-compatible service): OPENAI_BASE_URL and OPENAI_API_KEY', async () => {
    // Prepare
    const openai = await startFakeOpenAI({ flavor: 'openai', dimension: 32, chatResponder });
    fakes.push(openai);
    // Act
    const { ingest, answer } = await recipe(
      { OPENAI_BASE_URL: openai.baseURL, OPENAI_API_KEY: 'sk-test' },
      'text-embedding-3-small',
      ['--model', 'gpt-4o-mini'],
    );
    // Assess
    expect(ingest.code, ingest.stderr).toBe(0);
    expect(answer.code, answer.stderr).toBe(0);
    expect(lastJson<Answer>(answer).answer).toContain('140 passengers');
    const auth = new Set(openai.requests.map((r) => r.headers.authorization));
    expect(auth).toEqual(new Set(['Bearer sk-test']));
  }, 60_000);

  it('Ollama: one local server, no key', async () => {
    // Prepare
    const ollama = await startFakeOpenAI({ flavor: 'ollama', dimension: 48, chatResponder });
    fakes.push(ollama);
    // Act
    const { ingest, answer } = await recipe(
      { AI4RAG_ENDPOINT_OLLAMA_BASE_URL: ollama.baseURL },
      'nomic-embed-text@ollama',
      ['--model', 'llama3.1:8b@ollama'],
    );
    // Assess
    expect(ingest.code, ingest.stderr).toBe(0);
    expect(answer.code, answer.stderr).toBe(0);
    expect(lastJson<Answer>(answer).answer).toContain('140 passengers');
    const models = new Set(ollama.requests.map((r) => (r.body as { model?: string }).model));
    expect(models).toEqual(new Set(['nomic-embed-text', 'llama3.1:8b']));
  }, 60_000);

  it('vLLM for chat + TEI for embeddings and reranking', async () => {
    // Prepare
    const vllm = await startFakeOpenAI({ flavor: 'vllm', chatResponder });
    const teiEmbed = await startFakeOpenAI({ flavor: 'tei', dimension: 24 });
    const teiRerank = await startFakeTei();
    fakes.push(vllm, teiEmbed, teiRerank);
    // Act
    const { ingest, answer } = await recipe(
      {
        AI4RAG_EMBEDDING_BASE_URL: teiEmbed.baseURL,
        AI4RAG_CHAT_BASE_URL: vllm.baseURL,
        AI4RAG_CHAT_API_KEY: 'vllm-token',
        AI4RAG_RERANK_BASE_URL: teiRerank.baseURL,
      },
      'BAAI/bge-small-en-v1.5',
      ['--model', 'meta-llama/Llama-3.1-8B-Instruct', '--rerank', 'BAAI/bge-reranker-base'],
    );
    // Assess
    expect(ingest.code, ingest.stderr).toBe(0);
    expect(answer.code, answer.stderr).toBe(0);
    expect(lastJson<Answer>(answer).answer).toContain('140 passengers');
    expect(new Set(vllm.requests.map((r) => r.path))).toEqual(new Set(['/v1/chat/completions']));
    expect(new Set(teiEmbed.requests.map((r) => r.path))).toEqual(new Set(['/v1/embeddings']));
    expect(teiRerank.requests.some((r) => r.path === '/rerank')).toBe(true);
    expect(new Set(vllm.requests.map((r) => r.headers.authorization))).toEqual(
      new Set(['Bearer vllm-token']),
    );
  }, 60_000);

  it('a hosted reranker with a key', async () => {
    // Prepare
    const tei = await startFakeTei();
    fakes.push(tei);
    // Act
    const { ingest, answer } = await recipe(
      { AI4RAG_RERANK_BASE_URL: tei.baseURL, AI4RAG_RERANK_API_KEY: 'rr-key' },
      'local/feature-hash-v1-384',
      ['--rerank', 'rerank-english-v3'],
    );
    // Assess
    expect(ingest.code, ingest.stderr).toBe(0);
    expect(answer.code, answer.stderr).toBe(0);
    const rerank = tei.requests.filter((r) => r.path === '/rerank');
    expect(rerank.length).toBeGreaterThan(0);
    expect(new Set(rerank.map((r) => r.authorization))).toEqual(new Set(['Bearer rr-key']));
  }, 60_000);

  it('Ollama with prefixes turned off: the bare model id, texts sent as they are', async () => {
    // Prepare
    const ollama = await startFakeOpenAI({ flavor: 'ollama', dimension: 48 });
    fakes.push(ollama);
    const data = join(root, 'data-noprefix');
    // Act
    const ingest = await runCli(
      [
        'ingest',
        docs,
        '--data-dir',
        data,
        '--embedding',
        'nomic-embed-text',
        '--embedding-prefixes',
        'none',
      ],
      { env: { OPENAI_BASE_URL: ollama.baseURL } },
    );
    const stats = await runCli(
      [
        'stats',
        '--data-dir',
        data,
        '--embedding',
        'nomic-embed-text',
        '--embedding-prefixes',
        'none',
        '--json',
      ],
      { env: { OPENAI_BASE_URL: ollama.baseURL } },
    );
    // Assess
    expect(ingest.code, ingest.stderr).toBe(0);
    expect(lastJson<{ embedding_model: string }>(stats).embedding_model).toBe('nomic-embed-text');
    const inputs = ollama.requests.flatMap((r) => (r.body as { input?: string[] }).input ?? []);
    expect(inputs.some((t) => t.startsWith('search_document: '))).toBe(false);
    expect(inputs.some((t) => t.includes('Aurora'))).toBe(true);
  }, 60_000);
});
