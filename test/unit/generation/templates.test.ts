import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../../shared/src/errors.js';
import { PromptTemplateError } from '../../../shared/src/generation/errors.js';
import {
  buildMessages,
  DEFAULT_TEMPLATES,
  MULTILINGUAL_AUTO_TEXT,
  type PromptTemplates,
  validatePromptTemplates,
} from '../../../shared/src/generation/templates.js';

const SYSTEM =
  'Please answer the question I provide in the Question section below, based solely on the information I ' +
  'provide in the Context section. If the question is unanswerable, please say you cannot answer.';
const AGAIN =
  '. \nAgain, please answer the question based on the context provided only. If the context is not related ' +
  'to the question, just say you cannot answer. ';

const templates = (overrides: Partial<PromptTemplates> = {}): PromptTemplates => ({
  ...DEFAULT_TEMPLATES,
  ...overrides,
});

describe('validatePromptTemplates', () => {
  it('accepts the default templates', () => {
    // Prepare / Act / Assess
    expect(() => validatePromptTemplates(DEFAULT_TEMPLATES)).not.toThrow();
  });

  it.each([
    ['{reference_documents}', 'user template: must contain exactly 1 {question}, found 0'],
    [
      '{question} {question} {reference_documents}',
      'user template: must contain exactly 1 {question}, found 2',
    ],
    ['{question}', 'user template: must contain exactly 1 {reference_documents}, found 0'],
    [
      '{question} {reference_documents} {context}',
      'user template: unknown placeholder {context} (allowed: {question}, {reference_documents}, {multilingual_support})',
    ],
    [
      '{question} {reference_documents} {multilingual_support}{multilingual_support}',
      'user template: must contain at most 1 {multilingual_support}, found 2',
    ],
    [
      '{question} {reference_documents} {}',
      'user template: invalid placeholder at position 33 (use {name}, or {{ and }} for literal braces)',
    ],
    [
      '{question} } {reference_documents}',
      "user template: single '}' at position 11 (use }} for a literal brace)",
    ],
  ])('rejects the user template %j', (user, message) => {
    // Prepare
    const t = templates({ user });
    // Act
    const act = () => validatePromptTemplates(t);
    // Assess
    expect(act).toThrow(PromptTemplateError);
    expect(act).toThrow(message);
  });

  it.each([
    ['Document {doc_number}', 'context template: must contain exactly 1 {document}, found 0'],
    ['{document} {document}', 'context template: must contain exactly 1 {document}, found 2'],
    [
      '{doc_number} {doc_number} {document}',
      'context template: must contain at most 1 {doc_number}, found 2',
    ],
    [
      '{document} {question}',
      'context template: unknown placeholder {question} (allowed: {document}, {doc_number})',
    ],
  ])('rejects the context template %j', (context, message) => {
    // Prepare
    const t = templates({ context });
    // Act
    const act = () => validatePromptTemplates(t);
    // Assess
    expect(act).toThrow(message);
  });

  it('accepts a user template without {multilingual_support} and escaped braces', () => {
    // Prepare
    const t = templates({
      user: 'Q: {question} {{json}} R: {reference_documents}',
      context: '{document}',
    });
    // Act / Assess
    expect(() => validatePromptTemplates(t)).not.toThrow();
  });

  it('reports a PromptTemplateError that is a ValidationError', () => {
    // Prepare
    const t = templates({ context: 'nothing' });
    // Act
    let caught: unknown;
    try {
      validatePromptTemplates(t);
    } catch (err) {
      caught = err;
    }
    // Assess
    expect(caught).toBeInstanceOf(ValidationError);
    expect((caught as Error).name).toBe('PromptTemplateError');
  });

  it('rejects an empty language name', () => {
    // Prepare
    const t = templates({ language: { code: 'de', name: ' ' } });
    // Act / Assess
    expect(() => validatePromptTemplates(t)).toThrow('language: name must be a non-empty string');
  });
});

describe('buildMessages', () => {
  it('assembles the default prompt exactly (golden)', () => {
    // Prepare
    const chunks = [{ text: 'Paris is the capital of France.' }, { text: 'Berlin is in Germany.' }];
    // Act
    const messages = buildMessages(DEFAULT_TEMPLATES, 'What is the capital of France?', chunks);
    // Assess
    expect(messages).toEqual([
      { role: 'system', content: SYSTEM },
      {
        role: 'user',
        content:
          '\n\nContext:\nDocument 1:\nParis is the capital of France.\n\n\nDocument 2:\nBerlin is in Germany.\n' +
          ':\n\nQuestion: What is the capital of France?' +
          AGAIN +
          MULTILINGUAL_AUTO_TEXT,
      },
    ]);
  });

  it('uses the spec sentence for language auto', () => {
    // Prepare / Act / Assess
    expect(MULTILINGUAL_AUTO_TEXT).toBe(
      'You MUST write your entire answer in the same language as the question. Do NOT respond in any other ' +
        "language, even if the documents use a different language. Every word of your answer must match the question's language.",
    );
  });

  it('asks for an explicit language by name', () => {
    // Prepare
    const t = templates({ language: { code: 'de', name: 'German' } });
    // Act
    const [, user] = buildMessages(t, 'Wo?', [{ text: 'Hier.' }]);
    // Assess
    expect(user.content).toBe(
      '\n\nContext:\nDocument 1:\nHier.\n:\n\nQuestion: Wo?' +
        AGAIN +
        'You MUST respond in German.',
    );
  });

  it('does not interpret braces inside the question or the chunks', () => {
    // Prepare
    const t = templates({
      user: '{question}|{reference_documents}|{multilingual_support}',
      context: '[{doc_number}] {document}',
    });
    // Act
    const [, user] = buildMessages(t, 'Why {document}?', [
      { text: 'a {question} b {{x}}' },
      { text: '{doc_number}' },
    ]);
    // Assess
    expect(user.content).toBe(
      `Why {document}?|[1] a {question} b {{x}}\n\n[2] {doc_number}|${MULTILINGUAL_AUTO_TEXT}`,
    );
  });

  it('renders literal braces of the templates and an empty context', () => {
    // Prepare
    const t = templates({ user: '{{{question}}} {reference_documents}.', context: '{document}' });
    // Act
    const [, user] = buildMessages(t, 'q', []);
    // Assess
    expect(user.content).toBe('{q} .');
  });

  it('refuses invalid templates before building', () => {
    // Prepare
    const t = templates({ user: '{question}' });
    // Act / Assess
    expect(() => buildMessages(t, 'q', [])).toThrow(PromptTemplateError);
  });
});
