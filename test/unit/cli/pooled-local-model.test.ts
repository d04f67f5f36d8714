import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pooledLocalModel, usePool } from '../../../bin/cli/cpu-runtime.js';
import { experimentDeps } from '../../../functions/_shared/experiment.js';
import { bindLocalQueues, s3Notification } from '../../../functions/_shared/local.js';
import { createLocalRuntime, type LocalRuntime } from '../../../functions/_shared/runtime.js';
import { createGenerateHandler } from '../../../functions/generate/handler.js';
import {
  CANNOT_ANSWER,
  LocalExtractiveModel,
} from '../../../shared/src/generation/local-extractive.js';
import { buildMessages, DEFAULT_TEMPLATES } from '../../../shared/src/generation/templates.js';
import { buildTermStats } from '../../../shared/src/generation/term-stats.js';
import { type CpuPool, createCpuPool } from '../../../shared/src/runtime/cpu-pool.js';
import type { CpuTask } from '../../../shared/src/runtime/cpu-tasks.js';
import { analyze } from '../../../shared/src/text/analyzer.js';
import { context, getTestEvent } from '../functions/helpers.js';

type Handler = (event: APIGatewayProxyEvent, ctx: typeof context) => Promise<APIGatewayProxyResult>;

const ROOT = resolve(import.meta.dirname, '../../..');
const DOCS = join(ROOT, 'examples/docs');
const QUESTIONS = (
  JSON.parse(readFileSync(join(ROOT, 'examples/benchmark.json'), 'utf8')) as { question: string }[]
).map((q) => q.question);

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(join(dir, e.name)) : [join(dir, e.name)],
  );
}

/** A pool that records the chat tasks it runs. */
function recording(pool: CpuPool): { pool: CpuPool; chats: Extract<CpuTask, { kind: 'chat' }>[] } {
  const chats: Extract<CpuTask, { kind: 'chat' }>[] = [];
  return {
    chats,
    pool: {
      size: pool.size,
      run: (task, signal) => {
        if (task.kind === 'chat') chats.push(task);
        return pool.run(task, signal);
      },
      warm: () => pool.warm(),
      close: () => pool.close(),
    },
  };
}

/** A /generate answer without its timing (the only field that differs between two runs). */
function answerOf(result: APIGatewayProxyResult): Record<string, unknown> {
  expect(result.statusCode).toBe(200);
  const { timing: _, ...rest } = JSON.parse(result.body) as Record<string, unknown>;
  return rest;
}

let rt: LocalRuntime;
let pool: CpuPool;
beforeAll(async () => {
  rt = createLocalRuntime({
    dataDir: mkdtempSync(join(tmpdir(), 'ai4rag-pooled-model-')),
    documentsDir: DOCS,
    inMemory: true,
    env: { AI4RAG_COLLECTION: 'ai4rag_pooled_model' },
  });
  await bindLocalQueues(rt);
  await rt
    .queue('ingest')
    .send(
      files(DOCS).map((f) =>
        s3Notification('ObjectCreated:Put', 'local', relative(DOCS, f).split('\\').join('/')),
      ),
    );
  pool = createCpuPool({ size: 2 });
}, 120_000);
afterAll(async () => {
  await rt?.close();
  await pool?.close();
});

describe('the local extractive model on the worker pool', () => {
  it('answers /generate on the examples corpus byte for byte as in process, from the pool', async () => {
    // Arrange: the same runtime in process and with the pool (a view, so both read the one index)
    const inProcess = createGenerateHandler(rt) as unknown as Handler;
    const recorder = recording(pool);
    const pooled = createGenerateHandler(
      usePool(Object.create(rt) as LocalRuntime, recorder.pool),
    ) as unknown as Handler;
    const event = (question: string): APIGatewayProxyEvent => {
      const e = getTestEvent<APIGatewayProxyEvent>('apigw-generate');
      e.body = JSON.stringify({ question });
      return e;
    };
    // Act
    const local: Record<string, unknown>[] = [];
    const remote: Record<string, unknown>[] = [];
    for (const q of QUESTIONS) {
      local.push(answerOf(await inProcess(event(q), context)));
      remote.push(answerOf(await pooled(event(q), context)));
    }
    // Assess: identical bodies; every pooled answer came from a worker, with the question's term counts
    expect(JSON.stringify(remote)).toBe(JSON.stringify(local));
    expect(recorder.chats).toHaveLength(QUESTIONS.length);
    for (const task of recorder.chats) {
      expect(task.model.termCounts?.documents).toBeGreaterThan(0);
      expect(task.model.templates).toBeDefined();
    }
    // The term statistics matter here: some questions are abstained on, most answered.
    const abstained = local.filter((a) => a.answer === CANNOT_ANSWER).length;
    expect(abstained).toBeGreaterThan(0);
    expect(abstained).toBeLessThan(QUESTIONS.length / 2);
  }, 120_000);

  it("gives experiments the runtime's pooled model, answering as the in-process one", async () => {
    // Arrange
    const recorder = recording(pool);
    const deps = experimentDeps(usePool(Object.create(rt) as LocalRuntime, recorder.pool));
    const texts = files(DOCS)
      .filter((f) => /\.(md|txt)$/.test(f))
      .map((f) => readFileSync(f, 'utf8'));
    const termStats = buildTermStats(texts);
    const question = 'How many annual leave days does an employee get?';
    const messages = buildMessages(
      DEFAULT_TEMPLATES,
      question,
      texts.map((text) => ({ text })),
    );
    // Act
    const model = deps.localModel?.({ termStats });
    const answer = await model?.chat(messages);
    // Assess
    expect(answer).toEqual(await new LocalExtractiveModel({ termStats }).chat(messages));
    expect(recorder.chats).toHaveLength(1);
    expect(recorder.chats[0]?.model.termCounts?.df).toEqual(
      new Map(analyze(question).map((t) => [t, termStats.documentFrequency?.(t)])),
    );
    expect(recorder.chats[0]?.model.termCounts?.documents).toBe(texts.length);
  });

  it('keeps statistics without counts in process, and refuses bad options like the model', () => {
    // Arrange
    const stats = { documents: 3, idf: () => 1 };
    // Act / Assess
    expect(pooledLocalModel(pool, { termStats: stats })).toBeInstanceOf(LocalExtractiveModel);
    expect(() => pooledLocalModel(pool, { maxCompletionTokens: 0 })).toThrow(
      'maxCompletionTokens must be a positive integer, got 0',
    );
  });
});
