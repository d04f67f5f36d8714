import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chunkDocuments } from '../../../shared/src/chunking/chunker.js';
import { loadDocuments } from '../../../shared/src/documents/load.js';
import { createOfflineEmbedder } from '../../../shared/src/embeddings/local.js';
import { NotFoundError, ValidationError } from '../../../shared/src/errors.js';
import { LocalExtractiveModel } from '../../../shared/src/generation/local-extractive.js';
import { buildMessages, DEFAULT_TEMPLATES } from '../../../shared/src/generation/templates.js';
import { buildTermStats } from '../../../shared/src/generation/term-stats.js';
import {
  type CpuPool,
  createCpuPool,
  PoolClosedError,
  PooledEmbedder,
  PooledExtractiveModel,
  type TermCounts,
  WorkerCrashError,
} from '../../../shared/src/runtime/cpu-pool.js';
import { analyze } from '../../../shared/src/text/analyzer.js';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const CRASH_WORKER = join(ROOT, 'test', 'fixtures', 'runtime', 'crash-worker.mjs');
const SLOW_START_WORKER = join(ROOT, 'test', 'fixtures', 'runtime', 'slow-start-worker.mjs');

/** The bytes of vectors as float64: equal bytes mean equal vectors, bit for bit. */
function bytes(vectors: number[][]): Buffer {
  return Buffer.from(new Float64Array(vectors.flat()).buffer);
}

function countsOf(texts: readonly string[]): TermCounts {
  const df = new Map<string, number>();
  for (const text of texts) {
    for (const term of new Set(analyze(text))) df.set(term, (df.get(term) ?? 0) + 1);
  }
  return { documents: texts.length, df };
}

/** The error a promise rejects with (fails when it resolves). */
async function rejection(promise: Promise<unknown>): Promise<Error> {
  return promise.then(
    () => {
      throw new Error('expected a rejection');
    },
    (error: unknown) => error as Error,
  );
}

/** The chunks sharing most analyzed terms with the question (a deterministic stand-in for retrieval). */
function contextFor(question: string, chunks: readonly string[], k: number): { text: string }[] {
  const terms = new Set(analyze(question));
  return chunks
    .map((text, i) => ({ text, i, score: analyze(text).filter((t) => terms.has(t)).length }))
    .sort((a, b) => b.score - a.score || a.i - b.i)
    .slice(0, k)
    .map(({ text }) => ({ text }));
}

describe('CpuPool adapters on the examples corpus', () => {
  let pool: CpuPool;
  let chunks: string[];
  const questions = (
    JSON.parse(readFileSync(join(ROOT, 'examples', 'benchmark.json'), 'utf8')) as {
      question: string;
    }[]
  ).map((q) => q.question);

  beforeAll(async () => {
    pool = createCpuPool({ size: 2 });
    const { documents } = await loadDocuments([join(ROOT, 'examples', 'docs')]);
    chunks = (
      await chunkDocuments(documents, {
        method: 'recursive',
        chunkSize: 128,
        chunkOverlap: 32,
      })
    ).map((c) => c.text);
  });
  afterAll(() => pool.close());

  it('gives byte-identical document and query embeddings, in order, split across workers', async () => {
    expect(chunks.length).toBeGreaterThan(64); // more than one slice: both workers take part
    const local = createOfflineEmbedder('local');
    const pooled = new PooledEmbedder(pool, local);
    expect([pooled.modelId, pooled.dimension, pooled.contextLength]).toEqual([
      local.modelId,
      local.dimension,
      local.contextLength,
    ]);
    const [inWorkers, inProcess] = [
      await pooled.embedDocuments(chunks),
      await local.embedDocuments(chunks),
    ];
    expect(inWorkers).toHaveLength(chunks.length);
    expect(bytes(inWorkers).equals(bytes(inProcess))).toBe(true);
    const queries = await Promise.all(questions.map((q) => pooled.embedQuery(q)));
    const expected = await Promise.all(questions.map((q) => local.embedQuery(q)));
    expect(bytes(queries).equals(bytes(expected))).toBe(true);
    expect(await pooled.embedDocuments([])).toEqual([]);
  });

  it('gives the same answers and usage as the in-process extractive model, with term statistics', async () => {
    const inProcess = new LocalExtractiveModel({ termStats: buildTermStats(chunks) });
    const pooled = new PooledExtractiveModel(pool, { termCounts: countsOf(chunks) });
    const conversations = questions.map((q) =>
      buildMessages(DEFAULT_TEMPLATES, q, contextFor(q, chunks, 3)),
    );
    const answers = await Promise.all(conversations.map((m) => pooled.chat(m)));
    const expected = await Promise.all(conversations.map((m) => inProcess.chat(m)));
    expect(answers).toEqual(expected);
    // Both kinds of answer occur: extracted sentences and abstentions.
    const abstained = answers.filter((a) => a.content.startsWith('I cannot answer')).length;
    expect(abstained).toBeGreaterThan(0);
    expect(abstained).toBeLessThan(answers.length);
  });

  it('streams the same pieces and reports the same usage as the in-process stream', async () => {
    const messages = buildMessages(
      DEFAULT_TEMPLATES,
      questions[0] as string,
      contextFor(questions[0] as string, chunks, 3),
    );
    const collect = async (model: LocalExtractiveModel | PooledExtractiveModel) => {
      const pieces: string[] = [];
      let usage: unknown;
      for await (const piece of model.chatStream(messages, { onUsage: (u) => (usage = u) })) {
        pieces.push(piece);
      }
      return { pieces, usage };
    };
    const streamed = await collect(new PooledExtractiveModel(pool, { maxCompletionTokens: 8 }));
    expect(streamed).toEqual(await collect(new LocalExtractiveModel({ maxCompletionTokens: 8 })));
    expect(streamed.pieces.length).toBeGreaterThan(1);
  });

  it('rethrows a worker error as the class and message the in-process model throws', async () => {
    const messages = buildMessages(DEFAULT_TEMPLATES, 'Who?', [{ text: 'Ada.' }]);
    const expected = await rejection(
      new LocalExtractiveModel().chat(messages, { maxCompletionTokens: 0 }),
    );
    const thrown = await rejection(
      new PooledExtractiveModel(pool).chat(messages, { maxCompletionTokens: 0 }),
    );
    expect(thrown).toBeInstanceOf(ValidationError);
    expect(thrown.message).toBe(expected.message);
    await expect(pool.run({ kind: 'embed', model: 'local/nope', texts: ['a'] })).rejects.toThrow(
      new ValidationError(
        'unknown local embedding model "local/nope": use "local" or "local/feature-hash-v1-<dimension>"',
      ),
    );
    expect(() => new PooledExtractiveModel(pool, { minCoverage: 2 })).toThrow(ValidationError);
  });

  it('rejects an aborted call with the signal reason, before any work', async () => {
    const controller = new AbortController();
    controller.abort(new NotFoundError('gone'));
    const messages = buildMessages(DEFAULT_TEMPLATES, 'Who?', [{ text: 'Ada.' }]);
    await expect(
      new PooledExtractiveModel(pool).chat(messages, { signal: controller.signal }),
    ).rejects.toThrow(new NotFoundError('gone'));
  });
});

describe('createCpuPool', () => {
  it('refuses a size below 1', () => {
    expect(() => createCpuPool({ size: 0 })).toThrow(
      new RangeError('worker pool size must be an integer ≥ 1, got 0'),
    );
  });

  it('warm() resolves only once every thread has started, and they stay up for the tasks after', async () => {
    // Prepare: threads that take 300 ms to start and report when they became ready
    const pool = createCpuPool({ size: 2, filename: SLOW_START_WORKER, keepWarm: true });
    try {
      // Act
      await pool.warm();
      const warmedAt = Date.now();
      const answers = await Promise.all(
        [1, 2].map(() => pool.run({ kind: 'embed', model: 'local', texts: ['x'] })),
      );
      // Assess: two threads answered, both ready before warm() resolved
      const [a, b] = answers.map((r) => (r.kind === 'embed' ? Array.from(r.vectors) : []));
      expect(new Set([a?.[0], b?.[0]]).size).toBe(2);
      expect(Math.max(a?.[1] ?? Infinity, b?.[1] ?? Infinity)).toBeLessThanOrEqual(warmedAt);
    } finally {
      await pool.close();
    }
  });

  it('warm() on a closed pool rejects with PoolClosedError', async () => {
    const pool = createCpuPool({ size: 1 });
    await pool.close();
    await expect(pool.warm()).rejects.toBeInstanceOf(PoolClosedError);
  });

  it('fails the task of a worker that dies with WorkerCrashError, then runs the next task', async () => {
    const pool = createCpuPool({ size: 1, filename: CRASH_WORKER });
    try {
      const crash = await rejection(
        pool.run({ kind: 'embed', model: 'local', texts: ['__exit__'] }),
      );
      expect(crash).toBeInstanceOf(WorkerCrashError);
      expect(crash.message).toMatch(/^worker thread failed running a embed task: /);
      const after = await pool.run({ kind: 'embed', model: 'local', texts: ['lock gate'] });
      const [expected] = await createOfflineEmbedder('local').embedDocuments(['lock gate']);
      expect(after.kind === 'embed' && Array.from(after.vectors)).toEqual(expected);
    } finally {
      await pool.close();
    }
  });
});
