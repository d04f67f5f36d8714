import { describe, expect, it } from 'vitest';
import { scoreEvaluationData } from '../../../shared/src/evaluation/score.js';
import {
  CITATION_INSTRUCTION,
  citationPrecision,
  locateSpan,
  parseCitations,
  stripCitations,
} from '../../../shared/src/generation/citations.js';
import { LocalExtractiveModel } from '../../../shared/src/generation/local-extractive.js';
import { type RagStreamEvent, SimpleRAG } from '../../../shared/src/generation/rag-template.js';
import { buildMessages, DEFAULT_TEMPLATES } from '../../../shared/src/generation/templates.js';
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
const SOURCES = [
  { text: EIFFEL, documentId: 'doc-a', chunkIds: ['doc-a#1'] },
  { text: FUJI, documentId: 'doc-b', chunkIds: ['doc-b#1'] },
];

/** A model that answers a fixed text and records the conversations it receives. */
class FixedModel implements FoundationModel {
  readonly modelId = 'fake/fixed';
  readonly received: ChatMessage[][] = [];
  constructor(private readonly pieces: string[]) {}
  async chat(messages: ChatMessage[], _options?: ChatOptions): Promise<ChatResult> {
    this.received.push(messages);
    return { content: this.pieces.join('') };
  }
  async *chatStream(messages: ChatMessage[], _options?: ChatOptions): AsyncIterable<string> {
    this.received.push(messages);
    yield* this.pieces;
  }
}

async function makeRag(model: FoundationModel): Promise<SimpleRAG> {
  const store = new MemoryStore();
  await store.addChunks([testChunk('doc-a', 1, EIFFEL), testChunk('doc-b', 1, FUJI)]);
  return new SimpleRAG({ retriever: new Retriever(store, { numberOfChunks: 2 }), model });
}

describe('parseCitations', () => {
  it('binds each marker to its source with the cited sentence offsets', () => {
    // Act
    const parsed = parseCitations(
      'The Eiffel Tower is located in Paris. [1] It was completed in 1889. [1][2]',
      SOURCES,
    );

    // Assess
    expect(parsed).toEqual({
      answer: 'The Eiffel Tower is located in Paris. [1] It was completed in 1889. [1][2]',
      citations: [
        { marker: 1, documentId: 'doc-a', chunkId: 'doc-a#1', start: 0, end: 37 },
        { marker: 1, documentId: 'doc-a', chunkId: 'doc-a#1', start: 38, end: 63 },
        { marker: 2, documentId: 'doc-b', chunkId: 'doc-b#1', start: 0, end: 44 },
      ],
      removed: 0,
    });
    expect(EIFFEL.slice(38, 63)).toBe('It was completed in 1889.');
  });

  it('removes and counts markers to sources that were not given', () => {
    // Act
    const parsed = parseCitations('Paris. [3] Japan [2, 0].', SOURCES);

    // Assess
    expect(parsed.answer).toBe('Paris. Japan [2].');
    expect(parsed.removed).toBe(2);
    expect(parsed.citations).toEqual([
      { marker: 2, documentId: 'doc-b', chunkId: 'doc-b#1', start: 38, end: 43 },
    ]);
    expect(FUJI.slice(38, 43)).toBe('Japan');
  });

  it('locates a table row the model rendered as header: cell in the row line', () => {
    // Prepare
    const table = '| City | Population |\n| --- | --- |\n| Oslo | 709,000 |\n| Bergen | 291,000 |';

    // Act
    const span = locateSpan('City: Bergen; Population: 291,000', table);

    // Assess
    expect(table.slice(span.start, span.end)).toBe('| Bergen | 291,000 |');
  });

  it('strips markers for display or scoring', () => {
    expect(stripCitations('Paris. [1] Tokyo [1, 2].')).toBe('Paris. Tokyo.');
  });
});

describe('citationPrecision', () => {
  it.each([
    ['every cited sentence is in its chunk', 'The Eiffel Tower is located in Paris. [1]', 1],
    [
      'one of two cites the wrong chunk',
      'Paris has the tower. [1] It was completed in 1889. [2]',
      0.5,
    ],
    ['a sentence cites a chunk that was not given', 'Mount Fuji is in Japan. [5]', 0],
    ['the answer cites nothing', 'The Eiffel Tower is located in Paris.', null],
  ])('scores %s', (_name, answer, expected) => {
    expect(citationPrecision(answer, [EIFFEL, FUJI])).toBe(expected);
  });

  it('is reported after overall_score without changing it, and unitxt scores the text without markers', () => {
    // Prepare
    const item = {
      contexts: [EIFFEL, FUJI],
      context_ids: ['doc-a', 'doc-b'],
      ground_truths: ['The Eiffel Tower is in Paris.'],
      ground_truths_context_ids: ['doc-a'],
    };
    const plain = scoreEvaluationData([
      { ...item, answer: 'The Eiffel Tower is located in Paris.' },
    ]);

    // Act
    const cited = scoreEvaluationData([
      { ...item, answer: 'The Eiffel Tower is located in Paris. [1]' },
    ]);

    // Assess
    expect(plain.metrics.map((m) => m.name)).toEqual([
      'answer_correctness',
      'faithfulness',
      'context_correctness',
      'overall_score',
    ]);
    expect(cited.metrics.slice(0, 4)).toEqual(plain.metrics);
    expect(cited.metrics[4]).toEqual({
      name: 'citation_precision',
      evaluator: 'custom',
      scores: { mean: 1, ci_low: null, ci_high: null },
    });
    expect(cited.question_scores[0]?.metrics.at(-1)).toEqual({
      name: 'citation_precision',
      evaluator: 'custom',
      value: 1,
    });
  });
});

describe('citations through the RAG template', () => {
  it('asks for markers after the system message and returns them parsed and validated', async () => {
    // Prepare
    const model = new FixedModel(['It is in Paris. [1] Also [9]']);
    const rag = await makeRag(model);

    // Act
    const answer = await rag.generate('Where is the Eiffel Tower?', { citations: true });

    // Assess
    expect(model.received[0]?.[0]?.content).toBe(
      `${DEFAULT_TEMPLATES.system}\n\n${CITATION_INSTRUCTION}`,
    );
    expect(answer.answer).toBe('It is in Paris. [1] Also');
    expect(answer.removedCitations).toBe(1);
    expect(answer.citations).toEqual([
      { marker: 1, documentId: 'doc-a', chunkId: 'doc-a#1', start: 0, end: 37 },
    ]);
  });

  it('leaves the prompt and the answer unchanged without citations', async () => {
    // Prepare
    const model = new FixedModel(['Paris [1]']);
    const rag = await makeRag(model);

    // Act
    const answer = await rag.generate('Where is the Eiffel Tower?');

    // Assess
    expect(model.received[0]?.[0]?.content).toBe(DEFAULT_TEMPLATES.system);
    expect(answer.answer).toBe('Paris [1]');
    expect(answer).not.toHaveProperty('citations');
  });

  it('puts the citations of a streamed answer on the done event', async () => {
    // Prepare
    const rag = await makeRag(
      new FixedModel(['Mount Fuji is the highest ', 'mountain in Japan. ', '[1]']),
    );

    // Act
    const events: RagStreamEvent[] = [];
    for await (const e of rag.generateStream('How high is Mount Fuji?', { citations: true })) {
      events.push(e);
    }

    // Assess
    const sources = events[0]?.type === 'sources' ? events[0].referenceDocuments : [];
    expect(sources.map((d) => d.documentId)).toEqual(['doc-b', 'doc-a']);
    const done = events.at(-1);
    expect(done?.type === 'done' && done.citations).toEqual([
      { marker: 1, documentId: 'doc-b', chunkId: 'doc-b#1', start: 0, end: 44 },
    ]);
    expect(done?.type === 'done' && done.removedCitations).toBe(0);
  });

  it('the local model cites every unit it extracts when asked', async () => {
    // Prepare
    const model = new LocalExtractiveModel();
    const [system, user] = buildMessages(
      DEFAULT_TEMPLATES,
      'When was the Eiffel Tower completed?',
      [{ text: FUJI }, { text: EIFFEL }],
    );

    // Act
    const plain = await model.chat([system, user]);
    const cited = await model.chat([
      { role: 'system', content: `${system.content}\n\n${CITATION_INSTRUCTION}` },
      user,
    ]);

    // Assess
    expect(plain.content).toBe('The Eiffel Tower is located in Paris. It was completed in 1889.');
    expect(cited.content).toBe(
      'The Eiffel Tower is located in Paris. [2] It was completed in 1889. [2]',
    );
  });
});

describe('a cited table row', () => {
  it('cites the row rendered with its header and locates the row line in the chunk', async () => {
    // Prepare
    const table = [
      '| Destination | Daily allowance |',
      '| --- | --- |',
      '| Domestic | 320 crowns |',
      '| Nordic countries | 560 crowns |',
    ].join('\n');
    const [system, user] = buildMessages(
      DEFAULT_TEMPLATES,
      'What is the daily allowance in the Nordic countries?',
      [{ text: table }],
    );
    const model = new LocalExtractiveModel();

    // Act
    const { content } = await model.chat([
      { role: 'system', content: `${system.content}\n\n${CITATION_INSTRUCTION}` },
      user,
    ]);
    const parsed = parseCitations(content, [{ text: table, documentId: 'd', chunkIds: ['d#0'] }]);

    // Assess
    expect(content).toBe('Destination: Nordic countries; Daily allowance: 560 crowns [1]');
    const [citation] = parsed.citations;
    expect(table.slice(citation?.start, citation?.end)).toBe('| Nordic countries | 560 crowns |');
  });
});
