/**
 * `ai4rag ingest` through an OpenAI-compatible embedding server that behaves like Ollama (float arrays whatever
 * `encoding_format` asks for). The CLI reads OPENAI_BASE_URL / OPENAI_API_KEY when its config module loads, so it
 * runs as a child process (the chaos harness's `runCli`).
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CollectionStats } from '../../../shared/src/vectorstores/types.js';
import { type CliRun, lastJson, runCli } from '../../chaos/harness.js';
import { type FakeOpenAI, startFakeOpenAI } from '../../support/fake-openai-server.js';

const MODEL = 'nomic-embed-text';
const MODEL_ID = `${MODEL} [query: "search_query: ", document: "search_document: "]`;

interface EmbeddingsBody {
  input: string[];
  encoding_format?: string;
}

describe('ai4rag ingest with an Ollama-like embedding server (64 dimensions)', () => {
  let root: string;
  let docs: string;
  let data: string;
  let fake: FakeOpenAI;
  /** Requests the CLI spends detecting the dimension and the context length before it embeds anything. */
  let detectionRequests: number;

  const cli = (...args: string[]): Promise<CliRun> =>
    runCli([...args, '--embedding', MODEL, '--store', 'pglite', '--data-dir', data, '--json'], {
      env: { OPENAI_BASE_URL: fake.baseURL, OPENAI_API_KEY: 'ollama' },
    });
  const bodies = (from = 0): EmbeddingsBody[] =>
    fake.requests.slice(from).map((r) => r.body as EmbeddingsBody);
  const documentIds = async (): Promise<string[]> =>
    lastJson<{ document_key: string }[]>(await cli('documents'))
      .map((d) => d.document_key)
      .sort();

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'ai4rag-real-embeddings-'));
    docs = join(root, 'docs');
    data = join(root, 'data');
    await mkdir(docs, { recursive: true });
    await writeFile(join(docs, 'a.md'), '# Ferries\n\nThe ferry Aurora carries 140 passengers.\n');
    await writeFile(join(docs, 'b.md'), '# Leave\n\nEmployees receive 27 days of annual leave.\n');
    fake = await startFakeOpenAI({ flavor: 'ollama', dimension: 64 });
  });

  afterAll(async () => {
    await fake?.close();
    if (root) await rm(root, { recursive: true, force: true });
  });

  it('stores 64-dimensional vectors (not 16) and records the prefixed model id', async () => {
    // Act
    const ingest = await cli('ingest', docs);
    const stats = lastJson<CollectionStats>(await cli('stats'));

    // Assess
    expect(ingest.code).toBe(0);
    expect(lastJson(ingest)).toMatchObject({ documents: 2, indexed: 2, failed: 0 });
    expect(stats).toMatchObject({ documents: 2, dimension: 64, embedding_model: MODEL_ID });
    expect(bodies().every((b) => b.encoding_format === 'float')).toBe(true);
    detectionRequests = bodies().findIndex((b) => b.input[0]?.startsWith('search_document: '));
    expect(bodies()[0]?.input).toEqual(['test']);
    expect(detectionRequests).toBe(9); // "test", then 8 context probes
  });

  it('fails a batch whose vectors come back short, stores none of it, keeps what was committed', async () => {
    // Prepare
    await writeFile(join(docs, 'c.md'), '# Boats\n\nThe Borealis sails at 18 knots.\n');
    await writeFile(join(docs, 'd.md'), '# Lunch\n\nThe canteen opens at noon.\n');
    fake.setCorrupt({ kind: 'short', fromRequest: fake.embeddingRequests + detectionRequests + 1 });

    // Act
    const ingest = await cli('ingest', docs);
    fake.setCorrupt(undefined);
    const stats = lastJson<CollectionStats>(await cli('stats'));

    // Assess
    const error = `Embedding model "${MODEL}" at ${fake.baseURL} returned a vector of length 16 for input 0, expected 64`;
    expect(ingest.code).toBe(1);
    expect(ingest.stderr.split('\n')).toEqual(
      expect.arrayContaining([`failed c.md: ${error}`, `failed d.md: ${error}`]),
    );
    expect(lastJson(ingest)).toMatchObject({ indexed: 0, unchanged: 2, failed: 2 });
    expect(await documentIds()).toEqual(['a.md', 'b.md']);
    expect(stats).toMatchObject({ documents: 2, dimension: 64 });
  });

  it('fails a document whose vector holds a NaN (sent as null), and indexes it once the server is sound', async () => {
    // Prepare
    await rm(join(docs, 'c.md'));
    await rm(join(docs, 'd.md'));
    await writeFile(join(docs, 'e.md'), '# Parking\n\nVisitors park behind building 3.\n');
    const from = fake.requests.length;
    fake.setCorrupt({ kind: 'nan', fromRequest: fake.embeddingRequests + detectionRequests + 1 });

    // Act
    const failed = await cli('ingest', docs);
    fake.setCorrupt(undefined);
    const idsAfterFailure = await documentIds();
    const retried = await cli('ingest', docs);

    // Assess
    expect(failed.code).toBe(1);
    expect(failed.stderr.split('\n')).toContain(
      `failed e.md: Embedding model "${MODEL}" at ${fake.baseURL} returned a non-numeric or non-finite value null at position 0 of the vector for input 0`,
    );
    expect(idsAfterFailure).toEqual(['a.md', 'b.md']);
    expect(retried.code).toBe(0);
    expect(lastJson(retried)).toMatchObject({ indexed: 1, unchanged: 2, failed: 0 });
    expect(await documentIds()).toEqual(['a.md', 'b.md', 'e.md']);
    expect(bodies(from).some((b) => b.input[0]?.startsWith('search_document: # Parking'))).toBe(
      true,
    );
  });
});
