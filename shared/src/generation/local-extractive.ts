import { ValidationError } from '../errors.js';
import { analyze } from '../text/analyzer.js';
import {
  DEFAULT_TEMPLATES,
  type PromptTemplates,
  parseTemplate,
  type TemplatePart,
} from './templates.js';
import type { ChatMessage, ChatOptions, ChatResult, FoundationModel } from './types.js';

/** The exact abstention answer of {@link LocalExtractiveModel}. */
export const CANNOT_ANSWER = 'I cannot answer this question based on the provided documents.';

/** Model id of {@link LocalExtractiveModel}; bump the version when the answers change. */
export const LOCAL_EXTRACTIVE_MODEL_ID = 'local/extractive-v1';

/** Approximate characters per token used for the completion budget (as everywhere in the project). */
const CHARS_PER_TOKEN = 4;

/** Questions whose answer is usually a number or a date, so sentences with digits get a small bonus. */
const NUMERIC_QUESTION =
  /\b(how\s+(many|much|long|old|often|far)|when|what\s+year|which\s+year)\b/i;
const NUMBER_BONUS = 0.5;

/** A second sentence is added only when it scores at least this share of the best one. */
const SECOND_SENTENCE_RATIO = 0.5;

/** Options of {@link LocalExtractiveModel}. */
export interface LocalExtractiveModelOptions {
  /**
   * The templates the messages were built with (by `buildMessages`); the model reverses them to find the question
   * and the documents. Default: {@link DEFAULT_TEMPLATES}.
   */
  templates?: PromptTemplates;
  /** Default completion budget in tokens (4 chars each), default 1024. */
  maxCompletionTokens?: number;
}

/** What the model reads out of a user message. */
export interface ExtractedPrompt {
  question: string;
  documents: string[];
}

const escapeRegExp = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

function partsRegex(parts: TemplatePart[], fields: Record<string, string>): string {
  return parts
    .map((p) => (p.kind === 'text' ? escapeRegExp(p.text) : (fields[p.name] ?? '[\\s\\S]*?')))
    .join('');
}

/** Splits `{reference_documents}` back into the chunk texts, using the context template's literal parts. */
function splitDocuments(references: string, contextParts: TemplatePart[]): string[] {
  if (references.length === 0) return [];
  const at = contextParts.findIndex((p) => p.kind === 'field' && p.name === 'document');
  const fields = { doc_number: '\\d+' };
  const pre = partsRegex(contextParts.slice(0, at), fields);
  const post = partsRegex(contextParts.slice(at + 1), fields);
  // Without a literal before {document} the boundaries are ambiguous: read everything as one document.
  if (pre === '') return [references];
  const re = new RegExp(`${pre}([\\s\\S]*?)${post}(?:\\n\\n(?=${pre})|$)`, 'y');
  const out: string[] = [];
  while (re.lastIndex < references.length) {
    const match = re.exec(references);
    if (match === null) return [references];
    out.push(match[1] ?? '');
  }
  return out;
}

/**
 * Reverses `buildMessages`: reads the question and the chunk texts out of the last user message. When the message
 * does not follow the templates, the whole message is taken as the question with no documents (so the model
 * abstains instead of guessing).
 */
export function extractPrompt(
  messages: ChatMessage[],
  templates: PromptTemplates,
): ExtractedPrompt {
  const user = [...messages].reverse().find((m) => m.role === 'user')?.content ?? '';
  const userParts = parseTemplate(templates.user, 'user');
  const pattern = partsRegex(userParts, {
    question: '(?<question>[\\s\\S]*?)',
    reference_documents: '(?<refs>[\\s\\S]*)',
  });
  const match = new RegExp(`^${pattern}$`).exec(user);
  if (match?.groups === undefined) return { question: user, documents: [] };
  const contextParts = parseTemplate(templates.context, 'context');
  return {
    question: match.groups.question ?? '',
    documents: splitDocuments(match.groups.refs ?? '', contextParts),
  };
}

/** Splits a document into sentences (line breaks, then `.`, `!` or `?` followed by whitespace), verbatim. */
export function splitSentences(text: string): string[] {
  const out: string[] = [];
  for (const line of text.split(/\n+/)) {
    for (const piece of line.split(/(?<=[.!?])\s+/)) {
      const sentence = piece.trim();
      if (/[\p{L}\p{N}]/u.test(sentence)) out.push(sentence);
    }
  }
  return out;
}

interface Scored {
  index: number;
  sentence: string;
  score: number;
  matched: Set<string>;
}

/**
 * Picks the answer sentences: overlap of analyzed question terms, each weighted by an IDF over the candidate
 * sentences (`ln(1 + N / df)`), plus {@link NUMBER_BONUS} for a sentence with a digit when the question asks for a
 * quantity or a date. Returns the best sentence, and the runner-up when it scores at least half as much and covers a
 * question term the best one lacks, in context order; or {@link CANNOT_ANSWER} when no question term occurs.
 */
export function extractiveAnswer(question: string, documents: string[]): string {
  const questionTerms = new Set(analyze(question));
  const sentences = documents.flatMap(splitSentences);
  if (questionTerms.size === 0 || sentences.length === 0) return CANNOT_ANSWER;
  const termSets = sentences.map((s) => new Set(analyze(s)));
  const df = new Map<string, number>();
  for (const terms of termSets) {
    for (const t of terms) if (questionTerms.has(t)) df.set(t, (df.get(t) ?? 0) + 1);
  }
  const numeric = NUMERIC_QUESTION.test(question);
  const scored: Scored[] = sentences.map((sentence, index) => {
    const matched = new Set<string>();
    let score = 0;
    for (const t of termSets[index] ?? []) {
      const n = df.get(t);
      if (n === undefined) continue;
      matched.add(t);
      score += Math.log(1 + sentences.length / n);
    }
    if (numeric && matched.size > 0 && /\d/.test(sentence)) score += NUMBER_BONUS;
    return { index, sentence, score, matched };
  });
  const ranked = scored
    .filter((s) => s.matched.size > 0)
    .sort((a, b) => b.score - a.score || a.index - b.index);
  const best = ranked[0];
  if (best === undefined) return CANNOT_ANSWER;
  const second = ranked
    .slice(1)
    .find(
      (s) =>
        s.score >= SECOND_SENTENCE_RATIO * best.score &&
        [...s.matched].some((t) => !best.matched.has(t)),
    );
  const chosen = second === undefined ? [best] : [best, second].sort((a, b) => a.index - b.index);
  return chosen.map((s) => s.sentence).join(' ');
}

/** Cuts text to `maxChars`, at the last whitespace when there is one. */
function truncate(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  const cut = text.slice(0, maxChars);
  const space = cut.search(/\s\S*$/);
  return (space > 0 ? cut.slice(0, space) : cut).trimEnd();
}

function checkTokens(value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 1) {
    throw new ValidationError(
      `maxCompletionTokens must be a positive integer, got ${String(value)}`,
    );
  }
  return value;
}

/**
 * A deterministic, offline foundation model: it answers with the 1–2 context sentences that best match the question,
 * verbatim, or abstains with {@link CANNOT_ANSWER}. It needs no model files or network, so the whole RAG pipeline and
 * the optimizer run on one machine and in tests with reproducible answers. Temperature is ignored.
 * @example
 * const model = new LocalExtractiveModel();
 * const { content } = await model.chat(buildMessages(DEFAULT_TEMPLATES, 'Who wrote it?', chunks));
 */
export class LocalExtractiveModel implements FoundationModel {
  readonly modelId = LOCAL_EXTRACTIVE_MODEL_ID;
  readonly #templates: PromptTemplates;
  readonly #maxCompletionTokens: number;

  /** @throws {ValidationError} for a non-positive `maxCompletionTokens`. */
  constructor(options: LocalExtractiveModelOptions = {}) {
    this.#templates = options.templates ?? DEFAULT_TEMPLATES;
    this.#maxCompletionTokens = checkTokens(options.maxCompletionTokens, 1024);
  }

  #answer(messages: ChatMessage[], options: ChatOptions): string {
    options.signal?.throwIfAborted();
    const tokens = checkTokens(options.maxCompletionTokens, this.#maxCompletionTokens);
    const { question, documents } = extractPrompt(messages, this.#templates);
    return truncate(extractiveAnswer(question, documents), tokens * CHARS_PER_TOKEN);
  }

  /**
   * Answers from the context in the last user message.
   * @throws {ValidationError} for a bad `maxCompletionTokens`; the signal's reason when aborted.
   */
  async chat(messages: ChatMessage[], options: ChatOptions = {}): Promise<ChatResult> {
    const content = this.#answer(messages, options);
    const promptChars = messages.reduce((n, m) => n + m.content.length, 0);
    const promptTokens = Math.ceil(promptChars / CHARS_PER_TOKEN);
    const completionTokens = Math.ceil(content.length / CHARS_PER_TOKEN);
    return {
      content,
      usage: { promptTokens, completionTokens, totalTokens: promptTokens + completionTokens },
    };
  }

  /**
   * The same answer as {@link chat}, as word chunks (each word with its trailing whitespace).
   * @throws {ValidationError} for a bad `maxCompletionTokens`; the signal's reason when aborted.
   */
  async *chatStream(messages: ChatMessage[], options: ChatOptions = {}): AsyncIterable<string> {
    const content = this.#answer(messages, options);
    for (const piece of content.match(/\S+\s*|\s+/g) ?? []) {
      options.signal?.throwIfAborted();
      yield piece;
    }
  }
}
