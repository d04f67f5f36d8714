import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../../shared/src/errors.js';
import {
  CANNOT_ANSWER,
  extractPrompt,
  LocalExtractiveModel,
  splitSentences,
} from '../../../shared/src/generation/local-extractive.js';
import {
  buildMessages,
  DEFAULT_TEMPLATES,
  type PromptTemplates,
} from '../../../shared/src/generation/templates.js';

const CHUNKS = [
  {
    text: 'The Eiffel Tower is located in Paris. It was completed in 1889 for the World Fair.\nIt is made of wrought iron.',
  },
  { text: 'The Colosseum stands in Rome. Construction began under Emperor Vespasian.' },
  { text: 'Mount Fuji is the highest mountain in Japan. It is an active volcano.' },
];

const ask = (question: string, chunks = CHUNKS, templates: PromptTemplates = DEFAULT_TEMPLATES) =>
  buildMessages(templates, question, chunks);

async function collect(stream: AsyncIterable<string>): Promise<string[]> {
  const out: string[] = [];
  for await (const piece of stream) out.push(piece);
  return out;
}

describe('LocalExtractiveModel', () => {
  it('has the stable model id', () => {
    // Prepare / Act / Assess
    expect(new LocalExtractiveModel().modelId).toBe('local/extractive-v1');
  });

  it('picks the matching sentence from a multi-document context', async () => {
    // Prepare
    const model = new LocalExtractiveModel();
    // Act
    const { content } = await model.chat(ask('Which city is the Colosseum in?'));
    // Assess
    expect(content).toBe('The Colosseum stands in Rome.');
  });

  it('prefers the sentence with a number for a "when" question', async () => {
    // Prepare
    const model = new LocalExtractiveModel();
    const chunks = [
      { text: 'The bridge opening was celebrated by the whole city.' },
      { text: 'The bridge opened in 1932.' },
    ];
    // Act
    const when = await model.chat(ask('When did the bridge open?', chunks));
    const what = await model.chat(ask('What did the bridge open?', chunks));
    // Assess
    expect(when.content).toBe('The bridge opened in 1932.');
    expect(what.content).toBe('The bridge opening was celebrated by the whole city.');
  });

  it('adds a second sentence covering another question term, in context order', async () => {
    // Prepare
    const model = new LocalExtractiveModel();
    // Act
    const { content } = await model.chat(ask('Is Mount Fuji a volcano?'));
    // Assess
    expect(content).toBe('Mount Fuji is the highest mountain in Japan. It is an active volcano.');
  });

  it('abstains on an unrelated question', async () => {
    // Prepare
    const model = new LocalExtractiveModel();
    // Act
    const { content } = await model.chat(ask('What is the boiling point of nitrogen?'));
    // Assess
    expect(content).toBe(CANNOT_ANSWER);
    expect(CANNOT_ANSWER).toBe('I cannot answer this question based on the provided documents.');
  });

  it('abstains without documents and on a message that does not follow the templates', async () => {
    // Prepare
    const model = new LocalExtractiveModel();
    // Act
    const empty = await model.chat(ask('Where is the Colosseum?', []));
    const raw = await model.chat([{ role: 'user', content: 'Where is the Colosseum?' }]);
    // Assess
    expect(empty.content).toBe(CANNOT_ANSWER);
    expect(raw.content).toBe(CANNOT_ANSWER);
  });

  it('is deterministic', async () => {
    // Prepare
    const model = new LocalExtractiveModel();
    const messages = ask('What is the Eiffel Tower made of?');
    // Act
    const answers = await Promise.all([1, 2, 3].map(() => model.chat(messages)));
    // Assess
    expect(answers.map((a) => a.content)).toEqual(
      Array(3).fill('The Eiffel Tower is located in Paris. It is made of wrought iron.'),
    );
  });

  it('truncates to maxCompletionTokens at about 4 characters per token', async () => {
    // Prepare
    const model = new LocalExtractiveModel({ maxCompletionTokens: 4 });
    // Act
    const byDefault = await model.chat(ask('Which city is the Colosseum in?'));
    const perCall = await model.chat(ask('Which city is the Colosseum in?'), {
      maxCompletionTokens: 2,
    });
    // Assess
    expect(byDefault.content).toBe('The Colosseum');
    expect(perCall.content).toBe('The');
  });

  it('rejects a non-positive maxCompletionTokens', () => {
    // Prepare / Act / Assess
    expect(() => new LocalExtractiveModel({ maxCompletionTokens: 0 })).toThrow(ValidationError);
  });

  it('reports approximate usage', async () => {
    // Prepare
    const model = new LocalExtractiveModel();
    const messages = ask('Which city is the Colosseum in?');
    const promptChars = messages[0].content.length + messages[1].content.length;
    // Act
    const { usage } = await model.chat(messages);
    // Assess
    expect(usage).toEqual({
      promptTokens: Math.ceil(promptChars / 4),
      completionTokens: 8,
      totalTokens: Math.ceil(promptChars / 4) + 8,
    });
  });

  it('streams the answer in word chunks', async () => {
    // Prepare
    const model = new LocalExtractiveModel();
    // Act
    const pieces = await collect(model.chatStream(ask('Which city is the Colosseum in?')));
    // Assess
    expect(pieces).toEqual(['The ', 'Colosseum ', 'stands ', 'in ', 'Rome.']);
  });

  it('stops on an aborted signal', async () => {
    // Prepare
    const model = new LocalExtractiveModel();
    const controller = new AbortController();
    controller.abort(new Error('stop'));
    // Act / Assess
    await expect(model.chat(ask('Where?'), { signal: controller.signal })).rejects.toThrow('stop');
  });

  it('reads messages built with custom templates', async () => {
    // Prepare
    const templates: PromptTemplates = {
      ...DEFAULT_TEMPLATES,
      user: 'Docs:\n{reference_documents}\nQ: {question}\n{multilingual_support}',
      context: '[{doc_number}] {document}',
      language: { code: 'en', name: 'English' },
    };
    const model = new LocalExtractiveModel({ templates });
    // Act
    const { content } = await model.chat(ask('Which city is the Colosseum in?', CHUNKS, templates));
    // Assess
    expect(content).toBe('The Colosseum stands in Rome.');
  });
});

describe('extractPrompt', () => {
  it('recovers the question and the chunk texts from a built message', () => {
    // Prepare
    const chunks = [{ text: 'First {document}\n\nwith a blank line.' }, { text: 'Second.' }];
    // Act
    const parsed = extractPrompt(ask('Why {x}?', chunks), DEFAULT_TEMPLATES);
    // Assess
    expect(parsed).toEqual({
      question: 'Why {x}?',
      documents: ['First {document}\n\nwith a blank line.', 'Second.'],
    });
  });
});

describe('splitSentences', () => {
  it('splits on line breaks and sentence ends, verbatim', () => {
    // Prepare / Act / Assess
    expect(splitSentences('One. Two!  Three?\n\nFour\n- \n')).toEqual([
      'One.',
      'Two!',
      'Three?',
      'Four',
    ]);
  });
});
