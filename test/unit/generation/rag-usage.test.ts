import { afterEach, describe, expect, it } from 'vitest';
import { LocalExtractiveModel } from '../../../shared/src/generation/local-extractive.js';
import { OpenAIFoundationModel } from '../../../shared/src/generation/openai-model.js';
import { type RagStreamEvent, SimpleRAG } from '../../../shared/src/generation/rag-template.js';
import { AUTO_LANGUAGE, type PromptTemplates } from '../../../shared/src/generation/templates.js';
import type { FoundationModel } from '../../../shared/src/generation/types.js';
import { Retriever } from '../../../shared/src/retrieval/retriever.js';
import {
  type FakeFlavor,
  type FakeOpenAI,
  startFakeOpenAI,
} from '../../support/fake-openai-server.js';
import { MemoryStore, testChunk } from '../../support/memory-store.js';

const EIFFEL = 'The Eiffel Tower is located in Paris. It was completed in 1889.';
const FUJI = 'Mount Fuji is the highest mountain in Japan.';
const QUESTION = 'Where is the Eiffel Tower located?';

/**
 * Tiny templates so the prompt is countable by hand: 'SYS' (3 characters) and
 * 'Q=' + question (34) + ' R=[1] ' + EIFFEL (63) = 106 characters, 109 in all: ceil(109 / 4) = 28 tokens.
 */
const TEMPLATES: PromptTemplates = {
  system: 'SYS',
  user: 'Q={question} R={reference_documents}',
  context: '[{doc_number}] {document}',
  language: AUTO_LANGUAGE,
};
const PROMPT_TOKENS = 28;

async function ragWith(model: FoundationModel): Promise<SimpleRAG> {
  const store = new MemoryStore();
  await store.addChunks([testChunk('doc-a', 1, EIFFEL), testChunk('doc-b', 1, FUJI)]);
  return new SimpleRAG({
    retriever: new Retriever(store, { numberOfChunks: 1 }),
    model,
    templates: TEMPLATES,
  });
}

async function collect(stream: AsyncIterable<RagStreamEvent>): Promise<RagStreamEvent[]> {
  const out: RagStreamEvent[] = [];
  for await (const event of stream) out.push(event);
  return out;
}

describe('SimpleRAG reports the tokens of its chat call', () => {
  let fake: FakeOpenAI | undefined;
  afterEach(async () => {
    await fake?.close();
    fake = undefined;
  });

  async function remote(flavor: FakeFlavor): Promise<FoundationModel> {
    // 'The Eiffel Tower is in Paris.' is 29 characters: ceil(29 / 4) = 8 completion tokens.
    fake = await startFakeOpenAI({ flavor, chatResponder: () => 'The Eiffel Tower is in Paris.' });
    return new OpenAIFoundationModel({ baseURL: fake.baseURL, apiKey: 'k', model: 'fake-chat' });
  }

  it.each(['openai', 'ollama', 'vllm'] as const)(
    'takes the usage of a %s chat completion',
    async (flavor) => {
      // Prepare
      const rag = await ragWith(await remote(flavor));
      // Act
      const answer = await rag.generate(QUESTION);
      const chat = await rag.chat([{ role: 'user', content: QUESTION }]);
      // Assess
      expect(answer.usage).toEqual({ promptTokens: PROMPT_TOKENS, completionTokens: 8 });
      expect(chat.usage).toEqual({ promptTokens: PROMPT_TOKENS, completionTokens: 8 });
    },
  );

  it.each(['openai', 'ollama', 'vllm'] as const)(
    'asks a %s stream for its usage chunk and puts it on the done event',
    async (flavor) => {
      // Prepare
      const rag = await ragWith(await remote(flavor));
      // Act
      const events = await collect(rag.generateStream(QUESTION));
      // Assess
      const done = events.at(-1);
      expect(done?.type === 'done' && done.usage).toEqual({
        promptTokens: PROMPT_TOKENS,
        completionTokens: 8,
      });
      expect(
        fake?.requests.map((r) => (r.body as { stream_options?: unknown }).stream_options),
      ).toEqual([{ include_usage: true }]);
    },
  );

  it('counts the local model usage as ceil(characters / 4), streamed or not', async () => {
    // Prepare
    const rag = await ragWith(new LocalExtractiveModel({ templates: TEMPLATES }));
    // Act
    const answer = await rag.generate(QUESTION);
    const events = await collect(rag.generateStream(QUESTION));
    // Assess
    // The answer is the matching sentence, 37 characters: ceil(37 / 4) = 10 tokens.
    expect(answer.answer).toBe('The Eiffel Tower is located in Paris.');
    expect(answer.usage).toEqual({ promptTokens: PROMPT_TOKENS, completionTokens: 10 });
    const done = events.at(-1);
    expect(done?.type === 'done' && done.usage).toEqual({
      promptTokens: PROMPT_TOKENS,
      completionTokens: 10,
    });
  });

  it('leaves usage out when the model reports none', async () => {
    // Prepare
    const silent: FoundationModel = {
      modelId: 'fake/silent',
      chat: async () => ({ content: 'Paris.' }),
      async *chatStream() {
        yield 'Paris.';
      },
    };
    const rag = await ragWith(silent);
    // Act
    const answer = await rag.generate(QUESTION);
    const events = await collect(rag.generateStream(QUESTION));
    // Assess
    expect('usage' in answer).toBe(false);
    expect(events.at(-1)).toEqual({ type: 'done', timing: expect.any(Object) });
  });
});
