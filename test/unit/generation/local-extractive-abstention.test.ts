import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../../shared/src/errors.js';
import {
  CANNOT_ANSWER,
  extractiveAnswer,
  LocalExtractiveModel,
} from '../../../shared/src/generation/local-extractive.js';
import { buildMessages, DEFAULT_TEMPLATES } from '../../../shared/src/generation/templates.js';
import { buildTermStats } from '../../../shared/src/generation/term-stats.js';

const ALLOWANCES = [
  '## Allowances',
  '',
  'Per diem allowances cover meals and small incidentals.',
  '',
  '| Destination | Daily allowance | Hotel cap per night |',
  '| --- | --- | --- |',
  '| Domestic, Brannvik region | 320 crowns | 1,400 crowns |',
  '| Domestic, capital area | 410 crowns | 1,900 crowns |',
  '| Nordic countries | 560 crowns | 2,200 crowns |',
].join('\n');

const SPEED = [
  '## Speed limits',
  '',
  '- Brannvik harbour and low-emission zone: 5 km/h.',
  '- Within 200 m of the Sagfors lock: 4 km/h.',
].join('\n');

const CONTEXT = [
  ALLOWANCES,
  'The Colosseum stands in Rome. Construction began under Emperor Vespasian.',
  'Mount Fuji is the highest mountain in Japan. It is an active volcano.',
  SPEED,
];

/** Corpus statistics over the context plus some unrelated passages, as `buildTermStats` over indexed chunks. */
const STATS = buildTermStats([
  ...CONTEXT,
  'The lock closes for planned maintenance for 14 days each year.',
  'Annual leave entitlement grows with years of continuous service.',
  'The capital budget is approved by the Board every year.',
]);

const ask = (question: string, chunks: string[] = CONTEXT) =>
  buildMessages(
    DEFAULT_TEMPLATES,
    question,
    chunks.map((text) => ({ text })),
  );

/** The context as a retriever would rank it for a question: document `i` first, the others after it. */
const rankedFirst = (i: number): string[] => [
  CONTEXT[i] as string,
  ...CONTEXT.filter((_, j) => j !== i),
];

describe('LocalExtractiveModel abstention', () => {
  it('abstains on "What is the capital of Mongolia?" though a row mentions a capital area', async () => {
    // Prepare
    const withStats = new LocalExtractiveModel({ termStats: STATS });
    const contextOnly = new LocalExtractiveModel();
    // Act
    const a = await withStats.chat(ask('What is the capital of Mongolia?'));
    const b = await contextOnly.chat(ask('What is the capital of Mongolia?'));
    // Assess
    expect(a.content).toBe(CANNOT_ANSWER);
    expect(b.content).toBe(CANNOT_ANSWER);
  });

  it('answers "Which city is the Colosseum in?" although "city" occurs nowhere in the context', async () => {
    // Prepare
    const withStats = new LocalExtractiveModel({ termStats: STATS });
    const contextOnly = new LocalExtractiveModel();
    // Act
    const a = await withStats.chat(ask('Which city is the Colosseum in?', rankedFirst(1)));
    const b = await contextOnly.chat(ask('Which city is the Colosseum in?'));
    // Assess
    expect(a.content).toBe('The Colosseum stands in Rome.');
    expect(b.content).toBe('The Colosseum stands in Rome.');
  });

  it('answers a table lookup with the row rendered under its header', async () => {
    // Prepare
    const model = new LocalExtractiveModel({ termStats: STATS });
    // Act
    const { content } = await model.chat(
      ask('How much is the daily allowance in the Nordic countries?'),
    );
    // Assess
    expect(content).toBe(
      'Destination: Nordic countries; Daily allowance: 560 crowns; Hotel cap per night: 2,200 crowns',
    );
  });

  it('answers a list item through the heading it sits under', async () => {
    // Prepare
    const model = new LocalExtractiveModel({ termStats: STATS });
    // Act
    const { content } = await model.chat(
      ask('What is the speed limit at the Sagfors lock?', rankedFirst(3)),
    );
    // Assess
    expect(content).toBe('Within 200 m of the Sagfors lock: 4 km/h.');
  });

  it('abstains on an unanswerable question over a small context', async () => {
    // Prepare
    const model = new LocalExtractiveModel();
    const chunks = ['The Colosseum stands in Rome. Construction began under Emperor Vespasian.'];
    // Act
    const logo = await model.chat(
      ask('Who designed the logo of the Colosseum museum shop?', chunks),
    );
    const height = await model.chat(ask('How tall is the Eiffel Tower?', chunks));
    // Assess
    expect(logo.content).toBe(CANNOT_ANSWER);
    expect(height.content).toBe(CANNOT_ANSWER);
  });

  it('does not let a table row answer on one generic word, while a sentence still may', () => {
    // Prepare
    const table =
      '| Destination | Daily allowance |\n| --- | --- |\n| Domestic, capital area | 410 crowns |';
    const prose = 'The capital area has its own tariff.';
    // Act
    const fromRow = extractiveAnswer('Where is the capital of the parks?', [table], {
      minCoverage: 0,
    });
    const fromSentence = extractiveAnswer('Where is the capital of the parks?', [prose], {
      minCoverage: 0,
    });
    // Assess
    expect(fromRow).toBe(CANNOT_ANSWER);
    expect(fromSentence).toBe('The capital area has its own tariff.');
  });

  it('renders header-less rows (a chunk cut inside a table) as their cells', () => {
    // Prepare
    const chunk =
      '| Nordic countries | 560 crowns | 2,200 crowns |\n| Rest of Europe | 640 crowns | 2,400 crowns |';
    // Act
    const answer = extractiveAnswer('What about the Nordic countries?', [chunk]);
    // Assess
    expect(answer).toBe('Nordic countries; 560 crowns; 2,200 crowns');
  });

  it('gives the same answers across calls and instances', async () => {
    // Prepare
    const questions: [string, string[]][] = [
      ['What is the capital of Mongolia?', CONTEXT],
      ['Which city is the Colosseum in?', rankedFirst(1)],
      ['How much is the daily allowance in the Nordic countries?', CONTEXT],
      ['Is Mount Fuji a volcano?', rankedFirst(2)],
    ];
    const first = new LocalExtractiveModel({ termStats: STATS });
    const second = new LocalExtractiveModel({ termStats: STATS });
    const answers = (model: LocalExtractiveModel) =>
      Promise.all(questions.map(async ([q, docs]) => (await model.chat(ask(q, docs))).content));
    // Act
    const a = await answers(first);
    const b = await answers(second);
    const c = await answers(first);
    // Assess
    expect(a).toEqual([
      CANNOT_ANSWER,
      'The Colosseum stands in Rome.',
      'Destination: Nordic countries; Daily allowance: 560 crowns; Hotel cap per night: 2,200 crowns',
      'Mount Fuji is the highest mountain in Japan. It is an active volcano.',
    ]);
    expect(b).toEqual(a);
    expect(c).toEqual(a);
  });

  it('abstains more as minCoverage rises', () => {
    // Prepare
    const question = 'When did construction of the Colosseum begin in Rome under Nero?';
    const docs = ['The Colosseum stands in Rome. Construction began under Emperor Vespasian.'];
    // Act
    const lenient = extractiveAnswer(question, docs, {
      termStats: STATS,
      minCoverage: 0.3,
      minDocumentCoverage: 0.3,
    });
    const strict = extractiveAnswer(question, docs, {
      termStats: STATS,
      minCoverage: 0.95,
      minDocumentCoverage: 0.3,
    });
    // Assess
    expect(lenient).toBe(
      'The Colosseum stands in Rome. Construction began under Emperor Vespasian.',
    );
    expect(strict).toBe(CANNOT_ANSWER);
  });

  it('rejects a minCoverage outside [0, 1]', () => {
    // Prepare / Act / Assess
    expect(() => new LocalExtractiveModel({ minCoverage: 1.5 })).toThrow(ValidationError);
    expect(() => new LocalExtractiveModel({ minCoverage: Number.NaN })).toThrow(
      'minCoverage must be a number in [0, 1], got NaN',
    );
  });
});

describe('LocalExtractiveModel top-document coverage, titles and tables', () => {
  const EIFFEL = 'Eiffel Tower\n\nThe tower is located in Paris. It was completed in 1889.';
  const FUJI =
    'Mount Fuji\n\nMount Fuji is the highest mountain in Japan. It is an active volcano.';
  const FEES = [
    '## Harbour fees',
    '',
    'Fees are charged per call.',
    '',
    '| Vessel class | Length | Fee per call |',
    '| --- | --- | --- |',
    '| Pleasure craft | under 12 m | 150 crowns |',
    '| Fishing vessel | 12–24 m | 420 crowns |',
    '| Cargo \\| tanker | over 24 m | 1,850 crowns |',
  ].join('\n');
  const stats = buildTermStats([
    EIFFEL,
    FUJI,
    FEES,
    'The report lists every harbour in the region.',
    'The annual report is published in May.',
    'Each report is reviewed by the board.',
  ]);

  it('answers from the top-ranked document and abstains when it does not cover the question', () => {
    // Prepare
    const question = 'In which year was the Eiffel Tower completed?';
    // Act
    const ranked = extractiveAnswer(question, [EIFFEL, FUJI], { termStats: stats });
    const misranked = extractiveAnswer(question, [FUJI, EIFFEL], { termStats: stats });
    // Assess
    expect(ranked).toBe('The tower is located in Paris. It was completed in 1889.');
    expect(misranked).toBe(CANNOT_ANSWER);
  });

  it('reads a first line followed by a blank line as the title: it is never the answer but covers the question', () => {
    // Act
    const answer = extractiveAnswer('Is Mount Fuji an active volcano?', [FUJI], {
      termStats: stats,
    });
    // Assess
    expect(answer).toBe('Mount Fuji is the highest mountain in Japan. It is an active volcano.');
  });

  it.each([
    [
      'What is the fee per call for a fishing vessel?',
      'Vessel class: Fishing vessel; Length: 12–24 m; Fee per call: 420 crowns',
    ],
    [
      'What is the fee per call for a tanker?',
      'Vessel class: Cargo | tanker; Length: over 24 m; Fee per call: 1,850 crowns',
    ],
  ])('answers "%s" with the matching table row under its header', (question, expected) => {
    // Act
    const answer = extractiveAnswer(question, [FEES], { termStats: stats });
    // Assess
    expect(answer).toBe(expected);
  });
});
