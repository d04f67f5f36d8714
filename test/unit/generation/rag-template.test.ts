import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../../shared/src/errors.js';
import { PromptTemplateError } from '../../../shared/src/generation/errors.js';
import {
  CANNOT_ANSWER,
  LocalExtractiveModel,
} from '../../../shared/src/generation/local-extractive.js';
import {
  type RagReranker,
  type RagStreamEvent,
  RagTemplateError,
  SimpleRAG,
} from '../../../shared/src/generation/rag-template.js';
import { AUTO_LANGUAGE, type PromptTemplates } from '../../../shared/src/generation/templates.js';
import type {
  ChatMessage,
  ChatOptions,
  ChatResult,
  FoundationModel,
} from '../../../shared/src/generation/types.js';
import { Retriever } from '../../../shared/src/retrieval/retriever.js';
import { MemoryStore, testChunk } from '../../support/memory-store.js';

const EIFFEL = 'The Eiffel Tower is located in Paris. It was completed in 1889.';
const FUJI = 'Mount Fuji is the highest mountain in Japan.';
const ROME = 'The Colosseum stands in Rome.';
const QUESTION = 'Where is the Eiffel Tower located?';

/** Simple templates so the exact prompt text can be asserted. */
const TEMPLATES: PromptTemplates = {
  system: 'SYS',
  user: 'Q={question} R={reference_documents}',
  context: '[{doc_number}] {document}',
  language: AUTO_LANGUAGE,
};

async function makeStore(): Promise<MemoryStore> {
  const store = new MemoryStore();
  await store.addChunks([
    testChunk('doc-a', 1, EIFFEL),
    testChunk('doc-b', 1, FUJI),
    testChunk('doc-c', 1, ROME),
  ]);
  return store;
}

/** A scripted model that records every conversation it receives. */
class FakeModel implements FoundationModel {
  readonly modelId = 'fake/scripted';
  readonly received: ChatMessage[][] = [];
  constructor(private readonly pieces: string[] = ['Paris', '.']) {}
  async chat(messages: ChatMessage[], _options?: ChatOptions): Promise<ChatResult> {
    this.received.push(messages);
    return { content: this.pieces.join('') };
  }
  async *chatStream(messages: ChatMessage[], _options?: ChatOptions): AsyncIterable<string> {
    this.received.push(messages);
    for (const piece of this.pieces) yield piece;
  }
}

class FakeReranker implements RagReranker {
  readonly modelId = 'fake/reranker';
  readonly calls: { query: string; documents: readonly string[] }[] = [];
  constructor(private readonly scores: number[]) {}
  async rerank(query: string, documents: readonly string[]): Promise<number[]> {
    this.calls.push({ query, documents });
    return this.scores;
  }
}

/** A reranker whose endpoint is down. */
class FailingReranker implements RagReranker {
  readonly modelId = 'fake/down';
  readonly endpoint = 'http://127.0.0.1:9';
  async rerank(): Promise<number[]> {
    throw new Error('TEI /rerank answered HTTP 503');
  }
}

/** A clock returning the given readings in order. */
function scriptedClock(readings: number[]): () => number {
  let i = 0;
  return () => {
    const value = readings[i];
    i += 1;
    if (value === undefined) throw new Error('clock read too often');
    return value;
  };
}

async function collect(stream: AsyncIterable<RagStreamEvent>): Promise<RagStreamEvent[]> {
  const out: RagStreamEvent[] = [];
  for await (const event of stream) out.push(event);
  return out;
}

describe('SimpleRAG.generate', () => {
  it('answers from the retrieved chunk with the local model and cites the sources', async () => {
    // Prepare
    const retriever = new Retriever(await makeStore(), { numberOfChunks: 2 });
    const rag = new SimpleRAG({ retriever, model: new LocalExtractiveModel() });

    // Act
    const result = await rag.generate(QUESTION);

    // Assess
    expect(result.answer).toBe('The Eiffel Tower is located in Paris.');
    expect(result.question).toBe(QUESTION);
    expect(result.referenceDocuments).toEqual([
      { documentId: 'doc-a', sequenceNumber: 1, text: EIFFEL, score: 5, chunkIds: ['doc-a#1'] },
      { documentId: 'doc-b', sequenceNumber: 1, text: FUJI, score: 2, chunkIds: ['doc-b#1'] },
    ]);
    for (const value of Object.values(result.timing)) {
      expect(typeof value).toBe('number');
      expect(value).toBeGreaterThanOrEqual(0);
    }
    const { retrieveMs, rerankMs, generateMs, totalMs } = result.timing;
    expect(rerankMs).toBe(0);
    expect(totalMs).toBeGreaterThanOrEqual(retrieveMs + rerankMs + generateMs - 1e-9);
  });

  it('sends the system and rendered user messages and times each step with the injected clock', async () => {
    // Prepare
    const model = new FakeModel();
    const rag = new SimpleRAG({
      retriever: new Retriever(await makeStore(), { numberOfChunks: 2 }),
      model,
      templates: TEMPLATES,
      now: scriptedClock([100, 110, 160]),
    });

    // Act
    const result = await rag.generate(QUESTION);

    // Assess
    expect(model.received).toEqual([
      [
        { role: 'system', content: 'SYS' },
        { role: 'user', content: `Q=${QUESTION} R=[1] ${EIFFEL}\n\n[2] ${FUJI}` },
      ],
    ]);
    expect(result.answer).toBe('Paris.');
    expect(result.timing).toEqual({ retrieveMs: 10, rerankMs: 0, generateMs: 50, totalMs: 60 });
  });

  it('says it cannot answer an unrelated question with the local model', async () => {
    // Prepare
    const rag = new SimpleRAG({
      retriever: new Retriever(await makeStore(), { numberOfChunks: 3 }),
      model: new LocalExtractiveModel(),
    });

    // Act
    const result = await rag.generate('What is the capital of Brazil?');

    // Assess
    expect(result.answer).toBe(CANNOT_ANSWER);
  });

  it('rejects an empty or whitespace question before retrieving', async () => {
    // Prepare
    const model = new FakeModel();
    const rag = new SimpleRAG({
      retriever: new Retriever(await makeStore(), { numberOfChunks: 2 }),
      model,
    });

    // Act / Assess
    await expect(rag.generate('')).rejects.toBeInstanceOf(ValidationError);
    await expect(rag.generate(' \n\t')).rejects.toBeInstanceOf(ValidationError);
    expect(model.received).toEqual([]);
  });

  it('rejects an already aborted call with the signal reason', async () => {
    // Prepare
    const rag = new SimpleRAG({
      retriever: new Retriever(await makeStore(), { numberOfChunks: 2 }),
      model: new FakeModel(),
    });
    const controller = new AbortController();
    controller.abort(new Error('stop'));

    // Act / Assess
    await expect(rag.generate(QUESTION, { signal: controller.signal })).rejects.toThrow('stop');
  });
});

describe('SimpleRAG with a reranker', () => {
  it('orders the sources by rerank score, keeps k and times the rerank step', async () => {
    // Prepare
    const model = new FakeModel();
    const reranker = new FakeReranker([0.1, 0.9, 0.5]);
    const rag = new SimpleRAG({
      retriever: new Retriever(await makeStore(), { numberOfChunks: 3 }),
      model,
      templates: TEMPLATES,
      reranker: { reranker, candidates: 3, k: 2 },
      now: scriptedClock([0, 4, 11, 30]),
    });

    // Act
    const result = await rag.generate(QUESTION);

    // Assess
    expect(reranker.calls).toEqual([{ query: QUESTION, documents: [EIFFEL, FUJI, ROME] }]);
    expect(result.referenceDocuments.map((d) => [d.documentId, d.score])).toEqual([
      ['doc-b', 0.9],
      ['doc-c', 0.5],
    ]);
    expect(model.received[0]?.[1]?.content).toBe(`Q=${QUESTION} R=[1] ${FUJI}\n\n[2] ${ROME}`);
    expect(result.timing).toEqual({ retrieveMs: 4, rerankMs: 7, generateMs: 19, totalMs: 30 });
  });

  it('keeps the retrieval order on equal rerank scores', async () => {
    // Prepare
    const rag = new SimpleRAG({
      retriever: new Retriever(await makeStore(), { numberOfChunks: 3 }),
      model: new FakeModel(),
      reranker: { reranker: new FakeReranker([0.2, 0.7, 0.7]), candidates: 3, k: 3 },
    });

    // Act
    const result = await rag.generate(QUESTION);

    // Assess
    expect(result.referenceDocuments.map((d) => d.documentId)).toEqual(['doc-b', 'doc-c', 'doc-a']);
  });

  it('fails when the reranker returns a score count different from the documents', async () => {
    // Prepare
    const rag = new SimpleRAG({
      retriever: new Retriever(await makeStore(), { numberOfChunks: 3 }),
      model: new FakeModel(),
      reranker: { reranker: new FakeReranker([0.2, 0.7]), candidates: 3, k: 2 },
    });

    // Act / Assess
    await expect(rag.generate(QUESTION)).rejects.toThrow(
      new RagTemplateError('reranker fake/reranker returned 2 scores for 3 documents'),
    );
  });

  it('ranks a text the reranker left out (-Infinity) last', async () => {
    // Prepare
    const rag = new SimpleRAG({
      retriever: new Retriever(await makeStore(), { numberOfChunks: 3 }),
      model: new FakeModel(),
      reranker: {
        reranker: new FakeReranker([Number.NEGATIVE_INFINITY, 0.2, 0.7]),
        candidates: 3,
        k: 3,
      },
    });

    // Act
    const result = await rag.generate(QUESTION);

    // Assess
    expect(result.referenceDocuments.map((d) => d.documentId)).toEqual(['doc-c', 'doc-b', 'doc-a']);
  });

  it('fails with the reranker named when it throws and fallback is off', async () => {
    // Prepare
    const rag = new SimpleRAG({
      retriever: new Retriever(await makeStore(), { numberOfChunks: 3 }),
      model: new FakeModel(),
      reranker: { reranker: new FailingReranker(), candidates: 3, k: 2 },
    });

    // Act / Assess
    await expect(rag.generate(QUESTION)).rejects.toThrow(
      new RagTemplateError('reranker fake/down failed'),
    );
  });

  it('keeps the first k in retrieval order with a warning when the reranker fails under fallback', async () => {
    // Prepare
    const model = new FakeModel();
    const rag = new SimpleRAG({
      retriever: new Retriever(await makeStore(), { numberOfChunks: 3 }),
      model,
      templates: TEMPLATES,
      reranker: { reranker: new FailingReranker(), candidates: 3, k: 2, fallback: true },
      now: scriptedClock([0, 4, 9, 30]),
    });

    // Act
    const result = await rag.generate(QUESTION);

    // Assess
    expect(result.referenceDocuments.map((d) => d.documentId)).toEqual(['doc-a', 'doc-b']);
    expect(result.warnings).toEqual([
      'reranker fake/down at http://127.0.0.1:9: TEI /rerank answered HTTP 503; results in retrieval order, not reranked',
    ]);
    expect(model.received[0]?.[1]?.content).toBe(`Q=${QUESTION} R=[1] ${EIFFEL}\n\n[2] ${FUJI}`);
    expect(result.timing).toEqual({ retrieveMs: 4, rerankMs: 5, generateMs: 21, totalMs: 30 });
  });

  it('reports the fallback warning on chat and with the streamed sources', async () => {
    // Prepare
    const options = {
      retriever: new Retriever(await makeStore(), { numberOfChunks: 3 }),
      model: new FakeModel(['a']),
      reranker: { reranker: new FailingReranker(), candidates: 3, k: 1, fallback: true },
    };
    const warning =
      'reranker fake/down at http://127.0.0.1:9: TEI /rerank answered HTTP 503; results in retrieval order, not reranked';

    // Act
    const chat = await new SimpleRAG(options).chat([{ role: 'user', content: QUESTION }]);
    const events = await collect(new SimpleRAG(options).generateStream(QUESTION));

    // Assess
    expect(chat.warnings).toEqual([warning]);
    expect(events[0]).toEqual({
      type: 'sources',
      referenceDocuments: chat.referenceDocuments,
      warnings: [warning],
    });
  });

  it('answers without warnings when the reranker works', async () => {
    // Prepare
    const rag = new SimpleRAG({
      retriever: new Retriever(await makeStore(), { numberOfChunks: 3 }),
      model: new FakeModel(),
      reranker: {
        reranker: new FakeReranker([0.1, 0.9, 0.5]),
        candidates: 3,
        k: 2,
        fallback: true,
      },
    });

    // Act
    const result = await rag.generate(QUESTION);

    // Assess
    expect('warnings' in result).toBe(false);
  });

  it('rejects a candidate count smaller than k', async () => {
    // Prepare
    const retriever = new Retriever(await makeStore(), { numberOfChunks: 3 });
    const reranker = new FakeReranker([]);

    // Act / Assess
    expect(
      () =>
        new SimpleRAG({
          retriever,
          model: new FakeModel(),
          reranker: { reranker, candidates: 1, k: 2 },
        }),
    ).toThrow(ValidationError);
  });
});

describe('SimpleRAG constructor', () => {
  it('rejects invalid templates', async () => {
    // Prepare
    const retriever = new Retriever(await makeStore(), { numberOfChunks: 1 });

    // Act / Assess
    expect(
      () =>
        new SimpleRAG({
          retriever,
          model: new FakeModel(),
          templates: { ...TEMPLATES, user: 'no placeholders' },
        }),
    ).toThrow(PromptTemplateError);
  });
});

describe('SimpleRAG.chat', () => {
  it('forwards the history as-is after the system message and enriches only the last user turn', async () => {
    // Prepare
    const model = new FakeModel();
    const rag = new SimpleRAG({
      retriever: new Retriever(await makeStore(), { numberOfChunks: 2 }),
      model,
      templates: TEMPLATES,
    });
    const history: ChatMessage[] = [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Tell me about Japan' },
      { role: 'assistant', content: 'Japan is in Asia.' },
      { role: 'user', content: QUESTION },
    ];

    // Act
    const result = await rag.chat(history);

    // Assess
    expect(model.received).toEqual([
      [
        { role: 'system', content: 'SYS' },
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Tell me about Japan' },
        { role: 'assistant', content: 'Japan is in Asia.' },
        { role: 'user', content: `Q=${QUESTION} R=[1] ${EIFFEL}\n\n[2] ${FUJI}` },
      ],
    ]);
    expect(result.question).toBe(QUESTION);
    expect(result.answer).toBe('Paris.');
    expect(result.referenceDocuments.map((d) => d.documentId)).toEqual(['doc-a', 'doc-b']);
    expect(result.conversation).toEqual([...history, { role: 'assistant', content: 'Paris.' }]);
    expect(history[3]).toEqual({ role: 'user', content: QUESTION });
  });

  it('rejects an empty message list', async () => {
    // Prepare
    const rag = new SimpleRAG({
      retriever: new Retriever(await makeStore(), { numberOfChunks: 2 }),
      model: new FakeModel(),
    });

    // Act / Assess
    await expect(rag.chat([])).rejects.toThrow(
      new ValidationError('messages must be a non-empty list'),
    );
  });

  it('rejects a conversation whose last message is not a user turn', async () => {
    // Prepare
    const rag = new SimpleRAG({
      retriever: new Retriever(await makeStore(), { numberOfChunks: 2 }),
      model: new FakeModel(),
    });

    // Act / Assess
    await expect(
      rag.chat([
        { role: 'user', content: QUESTION },
        { role: 'assistant', content: 'Paris.' },
      ]),
    ).rejects.toThrow(new ValidationError('the last message must be a user turn, got "assistant"'));
  });
});

describe('SimpleRAG.generateStream', () => {
  it('emits sources, then tokens, then done, and the tokens spell the generate answer', async () => {
    // Prepare
    const rag = new SimpleRAG({
      retriever: new Retriever(await makeStore(), { numberOfChunks: 2 }),
      model: new LocalExtractiveModel(),
    });
    const expected = await rag.generate(QUESTION);

    // Act
    const events = await collect(rag.generateStream(QUESTION));

    // Assess
    const types = events.map((e) => e.type);
    expect(types[0]).toBe('sources');
    expect(types.at(-1)).toBe('done');
    expect(types.slice(1, -1).every((t) => t === 'token')).toBe(true);
    expect(types.length).toBeGreaterThan(3);
    const first = events[0];
    expect(first?.type === 'sources' && first.referenceDocuments).toEqual(
      expected.referenceDocuments,
    );
    const text = events.map((e) => (e.type === 'token' ? e.text : '')).join('');
    expect(text).toBe(expected.answer);
  });

  it('reports the timing of the stream with the injected clock', async () => {
    // Prepare
    const rag = new SimpleRAG({
      retriever: new Retriever(await makeStore(), { numberOfChunks: 2 }),
      model: new FakeModel(['a', 'b']),
      now: scriptedClock([5, 8, 20]),
    });

    // Act
    const events = await collect(rag.generateStream(QUESTION));

    // Assess
    expect(events.slice(1)).toEqual([
      { type: 'token', text: 'a' },
      { type: 'token', text: 'b' },
      { type: 'done', timing: { retrieveMs: 3, rerankMs: 0, generateMs: 12, totalMs: 15 } },
    ]);
  });

  it('rejects an empty question on the first iteration', async () => {
    // Prepare
    const rag = new SimpleRAG({
      retriever: new Retriever(await makeStore(), { numberOfChunks: 2 }),
      model: new FakeModel(),
    });

    // Act / Assess
    await expect(collect(rag.generateStream('  '))).rejects.toBeInstanceOf(ValidationError);
  });
});
