import { ValidationError } from '../errors.js';
import { analyze } from '../text/analyzer.js';
import { CITATION_INSTRUCTION } from './citations.js';
import {
  DEFAULT_TEMPLATES,
  type PromptTemplates,
  parseTemplate,
  type TemplatePart,
} from './templates.js';
import { buildTermStats, type TermStats } from './term-stats.js';
import type { ChatMessage, ChatOptions, ChatResult, ChatUsage, FoundationModel } from './types.js';

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
  /**
   * Corpus-level term statistics (`buildTermStats` over the indexed chunks). They let the model tell an
   * informative question term from a common one, so it abstains when the context lacks what the question is about.
   * Without them the idf is computed over the context's sentences.
   */
  termStats?: TermStats;
  /** Abstention threshold, see {@link ExtractiveOptions.minCoverage}; the defaults suit most corpora. */
  minCoverage?: number;
  /** Abstention threshold, see {@link ExtractiveOptions.minDocumentCoverage}. */
  minDocumentCoverage?: number;
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

/** A candidate answer unit: a sentence of prose, a list item, or a table row rendered with its header. */
interface Unit {
  index: number;
  /** 0-based position of the unit's document in the prompt (`Document doc + 1`). */
  doc: number;
  /** The answer text: the sentence verbatim, or `Header: cell; Header: cell` for a table row. */
  text: string;
  /** Terms the unit matches on: its own, plus its table header or, for a list item, its lead-in line. */
  terms: Set<string>;
  /** For a table row or list item: the analyzed terms of its own text, at least one of which must match. */
  ownTerms?: Set<string>;
  /** A table row, which must match on two terms (see {@link extractiveAnswer}). */
  row: boolean;
}

interface Scored {
  unit: Unit;
  score: number;
  matched: Set<string>;
}

const TABLE_LINE = /^\s*\|.*\|\s*$/;
const TABLE_SEPARATOR = /^\s*\|(?:\s*:?-{3,}:?\s*\|)+\s*$/;
/** Markdown headings, and plain-text ones: upper-case lines ("2. LOADING LIMITS") or "1.2 Hold inspection". */
const HEADING =
  /^(?:\s{0,3}#{1,6}\s.*|[^\p{Ll}]*\p{Lu}{2}[^\p{Ll}]*|\d+(?:\.\d+)+\.?\s+\p{Lu}[^.!?:;]*)$/u;
const BULLET = /^\s*(?:[-*+]|\d+[.)])\s+/;

/**
 * A document's first line is its title (ClapNQ passages and loaded JSONL records start with `title\n\n`) when a
 * blank line follows and it does not end like a sentence: a title is never an answer.
 */
function isTitle(line: string, next: string | undefined): boolean {
  return (
    next !== undefined &&
    next.trim() === '' &&
    line.trim() !== '' &&
    !/[.!?:;]\s*$/.test(line) &&
    !TABLE_LINE.test(line)
  );
}

/** The cells of a pipe-table line; `\|` is a pipe inside a cell (as the chunker escapes it). */
function tableCells(line: string): string[] {
  return line
    .trim()
    .replace(/^\|/, '')
    .replace(/(?<!\\)\|$/, '')
    .split(/(?<!\\)\|/)
    .map((cell) => cell.replace(/\\\|/g, '|').trim());
}

/**
 * Splits a document into answer units. Markdown table rows become one unit each, rendered with their header
 * (`Destination: Nordic countries; Daily allowance: 560 crowns`) so the answer reads as a fact; header and separator
 * lines and headings are not units. A list item also matches on its lead-in (the heading or `…:` line above it),
 * since items such as "Within 200 m of the Sagfors lock: 4 km/h." leave the topic to it. Other lines are split into
 * sentences as {@link splitSentences} does.
 */
function documentUnits(text: string, first: number, doc: number): Unit[] {
  const lines = text.split('\n');
  const out: Unit[] = [];
  let header: string[] | undefined;
  let lead: string[] = [];
  const push = (unitText: string, own?: string, context: readonly string[] = []) => {
    const ownTerms = analyze(own ?? unitText);
    out.push({
      index: first + out.length,
      doc,
      text: unitText,
      terms: new Set([...(own === undefined ? ownTerms : analyze(unitText)), ...context]),
      row: own !== undefined && header !== undefined,
      ...(context.length > 0 || own !== undefined ? { ownTerms: new Set(ownTerms) } : {}),
    });
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? '';
    if (i === 0 && isTitle(line, lines[1])) {
      lead = analyze(line);
      continue;
    }
    if (TABLE_LINE.test(line)) {
      if (TABLE_SEPARATOR.test(line)) continue;
      const cells = tableCells(line);
      if (TABLE_SEPARATOR.test(lines[i + 1] ?? '')) {
        header = cells;
        continue;
      }
      const filled = cells.filter((c) => c !== '');
      if (filled.length === 0) continue;
      // Each cell under its column's header; a ragged row's extra cells stand alone.
      const rendered =
        header !== undefined
          ? cells
              .map((cell, c) => {
                const name = header?.[c] ?? '';
                return cell === '' ? '' : name === '' ? cell : `${name}: ${cell}`;
              })
              .filter((part) => part !== '')
              .join('; ')
          : filled.join('; ');
      push(rendered, filled.join(' '));
      continue;
    }
    header = undefined;
    if (line.trim() === '') continue;
    if (HEADING.test(line.trim())) {
      lead = analyze(line);
      continue;
    }
    if (BULLET.test(line)) {
      const item = line.replace(BULLET, '');
      for (const sentence of splitSentences(item)) push(sentence, sentence, lead);
      continue;
    }
    for (const sentence of splitSentences(line)) push(sentence);
    if (/:\s*$/.test(line)) lead = analyze(line);
  }
  return out;
}

/** Question words and answer-type nouns: they say what kind of answer is wanted, not what it is about. */
const QUESTION_TYPE_WORDS = new Set(
  analyze(
    'many much long old often far big large high wide deep city town country place year years date day time ' +
      'name names called call person people number amount type kind sort percentage per cent show tell give ' +
      'explain describe list mean means meant meaning define definition difference happen happens happened get',
  ),
);

/** Options of {@link extractiveAnswer}. */
export interface ExtractiveOptions {
  /**
   * Corpus-level idf (see `buildTermStats`); without it the idf is computed over the context's sentences, so a
   * term missing from the context counts as maximally rare.
   */
  termStats?: TermStats;
  /**
   * Share of the question's informative weight (sum of idf over its terms, question-type words left out) that the
   * chosen answer sentences must cover; below it the model abstains. Default {@link DEFAULT_MIN_COVERAGE} with
   * `termStats`, {@link DEFAULT_MIN_COVERAGE_CONTEXT_ONLY} without.
   */
  minCoverage?: number;
  /**
   * With `termStats` only: share of the question's informative weight that the first (top-ranked) document, its
   * title included, must contain; below it the model abstains. Default {@link DEFAULT_MIN_DOCUMENT_COVERAGE}.
   */
  minDocumentCoverage?: number;
}

/**
 * Default answer coverage with corpus statistics; there the top document's coverage
 * ({@link DEFAULT_MIN_DOCUMENT_COVERAGE}) does most of the abstaining. Tuned on the tuning half of the ClapNQ dev
 * questions only (`scripts/measure-extractive.ts --split tune`): answer coverage 0.3 with top-document coverage
 * 0.5 abstains on 83.5 % of the unanswerable and 10 % of the answerable questions there; answer coverage 0.6
 * alone (the earlier rule) abstained on 70 % and 10 %, and 0.6 with top-document coverage 0.5 on 88 % and 19 %.
 */
export const DEFAULT_MIN_COVERAGE = 0.3;
/**
 * Default top-document coverage with corpus statistics (tuning half, answer coverage 0.3: 0.45 abstains on
 * 76 % / 6 %, 0.5 on 84 % / 10 %, 0.55 on 86 % / 20 %). It relies on the documents coming ranked, best first,
 * as the RAG template passes them.
 */
export const DEFAULT_MIN_DOCUMENT_COVERAGE = 0.5;
/**
 * Default coverage without corpus statistics: every term absent from the context then weighs the maximum, so the
 * same share abstains more often (ClapNQ 0–89: 0.5 abstains on 58 % / 9 %, 0.6 on 72 % / 21 %).
 */
export const DEFAULT_MIN_COVERAGE_CONTEXT_ONLY = 0.5;

/**
 * Picks the answer: each unit (sentence, or table row with its header) scores the idf of the question terms it
 * contains, plus {@link NUMBER_BONUS} for a digit when the question asks for a quantity or a date. A table row
 * must match the question in its own cells and on at least two terms (one when the question has a single
 * informative term), so a row does not answer on one generic word. Returns the best unit, and the runner-up when
 * it scores at least half as much and covers a question term the best one lacks, in context order. Abstains with
 * {@link CANNOT_ANSWER} when the answer covers less than `minCoverage` of the question's informative weight:
 * rare, entity-like terms weigh most, and question-type words ("which", "city", "how many") are not counted.
 * @example extractiveAnswer('Which city is the Colosseum in?', ['The Colosseum stands in Rome.'])
 * // 'The Colosseum stands in Rome.'
 */
export function extractiveAnswer(
  question: string,
  documents: string[],
  options: ExtractiveOptions = {},
): string {
  const chosen = chooseUnits(question, documents, options);
  return chosen === undefined ? CANNOT_ANSWER : chosen.map((u) => u.text).join(' ');
}

/** One unit of an extractive answer and the 1-based number of the document it comes from. */
export interface ExtractedUnit {
  text: string;
  document: number;
}

/**
 * The units {@link extractiveAnswer} answers with, in context order, each with its document number; `undefined`
 * when it abstains.
 */
export function extractiveUnits(
  question: string,
  documents: string[],
  options: ExtractiveOptions = {},
): ExtractedUnit[] | undefined {
  return chooseUnits(question, documents, options)?.map((u) => ({
    text: u.text,
    document: u.doc + 1,
  }));
}

function chooseUnits(
  question: string,
  documents: string[],
  options: ExtractiveOptions,
): Unit[] | undefined {
  const questionTerms = new Set(analyze(question));
  const units: Unit[] = [];
  for (const [d, doc] of documents.entries()) units.push(...documentUnits(doc, units.length, d));
  if (questionTerms.size === 0 || units.length === 0) return undefined;
  const stats = options.termStats ?? buildTermStats(units.map((u) => u.text));
  const minCoverage =
    options.minCoverage ??
    (options.termStats === undefined ? DEFAULT_MIN_COVERAGE_CONTEXT_ONLY : DEFAULT_MIN_COVERAGE);
  const weight = new Map([...questionTerms].map((t) => [t, stats.idf(t)]));
  const informative = [...questionTerms].filter((t) => !QUESTION_TYPE_WORDS.has(t));
  const content = informative.length > 0 ? informative : [...questionTerms];
  const rowMinTerms = Math.min(2, content.length);

  const numeric = NUMERIC_QUESTION.test(question);
  const ranked: Scored[] = [];
  for (const unit of units) {
    const matched = new Set<string>();
    let score = 0;
    for (const t of unit.terms) {
      const w = weight.get(t);
      if (w === undefined) continue;
      matched.add(t);
      score += w;
    }
    if (matched.size === 0) continue;
    const own = unit.ownTerms;
    if (own !== undefined && ![...matched].some((t) => own.has(t))) continue;
    if (unit.row && matched.size < rowMinTerms) continue;
    if (numeric && /\d/.test(unit.text)) score += NUMBER_BONUS;
    ranked.push({ unit, score, matched });
  }
  ranked.sort((a, b) => b.score - a.score || a.unit.index - b.unit.index);
  const best = ranked[0];
  if (best === undefined) return undefined;
  const second = ranked
    .slice(1)
    .find(
      (s) =>
        s.score >= SECOND_SENTENCE_RATIO * best.score &&
        [...s.matched].some((t) => !best.matched.has(t)),
    );
  const chosen = second === undefined ? [best] : [best, second];
  const covered = new Set(chosen.flatMap((s) => [...s.matched]));
  const total = content.reduce((sum, t) => sum + (weight.get(t) ?? 0), 0);
  const got = content.reduce((sum, t) => sum + (covered.has(t) ? (weight.get(t) ?? 0) : 0), 0);
  if (total > 0 && got / total < minCoverage) return undefined;
  if (options.termStats !== undefined) {
    // With corpus statistics the top-ranked document (title included) must cover the question too.
    const top = new Set(analyze(documents[0] ?? ''));
    const topGot = content.reduce((sum, t) => sum + (top.has(t) ? (weight.get(t) ?? 0) : 0), 0);
    const minDocument = options.minDocumentCoverage ?? DEFAULT_MIN_DOCUMENT_COVERAGE;
    if (total > 0 && topGot / total < minDocument) return undefined;
  }
  return chosen.sort((a, b) => a.unit.index - b.unit.index).map((s) => s.unit);
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

function checkShare(value: number, name: string): number {
  if (!Number.isFinite(value) || value < 0 || value > 1) {
    throw new ValidationError(`${name} must be a number in [0, 1], got ${String(value)}`);
  }
  return value;
}

/** Tokens of a local answer, counted as ai4rag does: ceil(characters / 4) of the messages and of the answer. */
function countedUsage(messages: ChatMessage[], content: string): ChatUsage {
  const promptChars = messages.reduce((n, m) => n + m.content.length, 0);
  const promptTokens = Math.ceil(promptChars / CHARS_PER_TOKEN);
  const completionTokens = Math.ceil(content.length / CHARS_PER_TOKEN);
  return { promptTokens, completionTokens, totalTokens: promptTokens + completionTokens };
}

/**
 * A deterministic, offline foundation model: it answers with the 1–2 context sentences (or table rows, rendered with
 * their header) that best match the question, copied from the context, or abstains with {@link CANNOT_ANSWER} when
 * the context does not cover what the question is about (see {@link extractiveAnswer}). It needs no model files or
 * network, so the whole RAG pipeline and the optimizer run on one machine and in tests with reproducible answers.
 * Temperature is ignored. Pass `termStats` built over the indexed chunks for the better abstention.
 * @example
 * const model = new LocalExtractiveModel({ termStats: buildTermStats(chunks.map((c) => c.text)) });
 * const { content } = await model.chat(buildMessages(DEFAULT_TEMPLATES, 'Who wrote it?', chunks));
 */
export class LocalExtractiveModel implements FoundationModel {
  readonly modelId = LOCAL_EXTRACTIVE_MODEL_ID;
  readonly #templates: PromptTemplates;
  readonly #maxCompletionTokens: number;
  readonly #extractive: ExtractiveOptions;

  /**
   * @throws {ValidationError} for a non-positive `maxCompletionTokens`, or a `minCoverage` or
   * `minDocumentCoverage` outside [0, 1].
   */
  constructor(options: LocalExtractiveModelOptions = {}) {
    this.#templates = options.templates ?? DEFAULT_TEMPLATES;
    this.#maxCompletionTokens = checkTokens(options.maxCompletionTokens, 1024);
    this.#extractive = {
      ...(options.termStats !== undefined && { termStats: options.termStats }),
      ...(options.minCoverage !== undefined && {
        minCoverage: checkShare(options.minCoverage, 'minCoverage'),
      }),
      ...(options.minDocumentCoverage !== undefined && {
        minDocumentCoverage: checkShare(options.minDocumentCoverage, 'minDocumentCoverage'),
      }),
    };
  }

  #answer(messages: ChatMessage[], options: ChatOptions): string {
    options.signal?.throwIfAborted();
    const tokens = checkTokens(options.maxCompletionTokens, this.#maxCompletionTokens);
    const { question, documents } = extractPrompt(messages, this.#templates);
    const units = extractiveUnits(question, documents, this.#extractive);
    if (units === undefined) return truncate(CANNOT_ANSWER, tokens * CHARS_PER_TOKEN);
    // Asked to cite (the instruction follows the system message), it cites every unit with its document number.
    const cite = messages.some(
      (m) => m.role === 'system' && m.content.includes(CITATION_INSTRUCTION),
    );
    const answer = units.map((u) => (cite ? `${u.text} [${u.document}]` : u.text)).join(' ');
    return truncate(answer, tokens * CHARS_PER_TOKEN);
  }

  /**
   * Answers from the context in the last user message.
   * @throws {ValidationError} for a bad `maxCompletionTokens`; the signal's reason when aborted.
   */
  async chat(messages: ChatMessage[], options: ChatOptions = {}): Promise<ChatResult> {
    const content = this.#answer(messages, options);
    return { content, usage: countedUsage(messages, content) };
  }

  /**
   * The same answer as {@link chat}, as word chunks (each word with its trailing whitespace); the counted tokens
   * go to `options.onUsage` after the last chunk.
   * @throws {ValidationError} for a bad `maxCompletionTokens`; the signal's reason when aborted.
   */
  async *chatStream(messages: ChatMessage[], options: ChatOptions = {}): AsyncIterable<string> {
    const content = this.#answer(messages, options);
    for (const piece of content.match(/\S+\s*|\s+/g) ?? []) {
      options.signal?.throwIfAborted();
      yield piece;
    }
    options.onUsage?.(countedUsage(messages, content));
  }
}
