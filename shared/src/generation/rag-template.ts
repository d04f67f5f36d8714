import { Ai4ragError, ValidationError } from '../errors.js';
import type { TokenUsage } from '../pricing.js';
import type { QueryTransformReport } from '../retrieval/query-transform.js';
import { rerankFailureWarning } from '../retrieval/rerank.js';
import type { RetrievedChunk, Retriever } from '../retrieval/retriever.js';
import { CITATION_INSTRUCTION, type Citation, parseCitations } from './citations.js';
import {
  flaggedPassages,
  flaggedPassagesWarning,
  GUARDRAILS_OFF,
  type GuardrailSettings,
  INJECTION_REFUSAL,
  quoteAsData,
  redactionWarning,
  redactPii,
  refusedQuestionWarning,
  screenForInjection,
  screenPassages,
} from './guardrails.js';
import {
  buildMessages,
  DEFAULT_TEMPLATES,
  type PromptTemplates,
  validatePromptTemplates,
} from './templates.js';
import type { ChatMessage, ChatUsage, FoundationModel } from './types.js';

/**
 * The reranker port, declared structurally (same shape as `retrieval/rerank.ts`) so this module does not depend on
 * a concrete reranker. Scores are aligned with the input order; higher is better.
 */
export interface RagReranker {
  readonly modelId: string;
  /** Where the model is served, named in the warning when reranking fails. */
  readonly endpoint?: string;
  rerank(query: string, documents: readonly string[]): Promise<number[]>;
}

/** Reranking settings of {@link SimpleRAG}. */
export interface RagRerankOptions {
  reranker: RagReranker;
  /**
   * Passages fetched before reranking (≥ k). The Retriever has no per-call size, so it must be built with
   * `numberOfChunks: candidates`; this value is only checked against `k` and documents the intent.
   */
  candidates: number;
  /** Passages kept after reranking and sent to the model. */
  k: number;
  /**
   * When the reranker fails (or answers unusable scores), keep the first `k` retrieved passages in retrieval
   * order and report a warning instead of failing the call: serving prefers a degraded answer to an error,
   * while an experiment must not score a non-reranked answer as a reranked configuration. @default false
   */
  fallback?: boolean;
}

/** Options of {@link SimpleRAG}. */
export interface SimpleRAGOptions {
  retriever: Retriever;
  model: FoundationModel;
  /** Validated in the constructor. @default DEFAULT_TEMPLATES */
  templates?: PromptTemplates;
  reranker?: RagRerankOptions;
  /**
   * Prompt-injection screening of the question and the passages, and PII redaction of answers. The query API
   * passes its defaults (`DEFAULT_GUARDRAILS`); experiments leave them off to score what ai4rag would.
   * @default GUARDRAILS_OFF
   */
  guardrails?: GuardrailSettings;
  /** Millisecond clock, injectable for exact timings in tests. @default performance.now */
  now?: () => number;
}

/** A source of an answer, as returned to clients. */
export interface ReferenceDocument {
  documentId: string;
  sequenceNumber: number;
  text: string;
  /** The rerank score when a reranker ran, else the retrieval score (when the store returned one). */
  score?: number;
  chunkIds: string[];
}

/** Wall-clock milliseconds of each step; `totalMs` spans the whole call (≥ the sum of the parts). */
export interface RagTiming {
  retrieveMs: number;
  /** 0 when no reranker is configured. */
  rerankMs: number;
  generateMs: number;
  totalMs: number;
  /** Milliseconds of the query transform, part of `retrieveMs`; present only when the retriever has one. */
  transformMs?: number;
}

/** The result of {@link SimpleRAG.generate}. */
export interface RagAnswer {
  answer: string;
  question: string;
  referenceDocuments: ReferenceDocument[];
  timing: RagTiming;
  /** Degradations of this answer (a reranker failure under `fallback`); absent when there were none. */
  warnings?: string[];
  /**
   * Tokens of the chat call as the model reported them (counted by the local model); absent when the model
   * reported none.
   */
  usage?: TokenUsage;
  /**
   * With `citations: true`: the answer's markers `[n]` bound to `referenceDocuments[n - 1]`, with the cited span;
   * the markers to documents that were not given are removed from `answer` and counted in `removedCitations`.
   */
  citations?: Citation[];
  removedCitations?: number;
  /**
   * What the retriever's query transform did (its time, and the tokens of its own chat call, which `usage`
   * does not count); absent without a transform.
   */
  queryTransform?: QueryTransformReport;
}

/** The result of {@link SimpleRAG.chat}: the caller's messages followed by the assistant's answer. */
export interface RagChatAnswer extends RagAnswer {
  conversation: ChatMessage[];
}

/**
 * One event of {@link SimpleRAG.generateStream}, in the order sources → token* → done; `done` carries the tokens
 * when the model reported them at the end of its stream.
 */
export type RagStreamEvent =
  | {
      type: 'sources';
      referenceDocuments: ReferenceDocument[];
      warnings?: string[];
      queryTransform?: QueryTransformReport;
    }
  | { type: 'token'; text: string }
  | {
      type: 'done';
      timing: RagTiming;
      usage?: TokenUsage;
      /** With `citations: true`, parsed from the whole streamed text (the tokens are sent as generated). */
      citations?: Citation[];
      removedCitations?: number;
      /** What the answer's guardrails changed (PII redaction), known only once the whole text is. */
      warnings?: string[];
    };

/** Per-call options of the RAG template. */
export interface RagCallOptions {
  /** Cancels the call; checked between steps and forwarded to the model. */
  signal?: AbortSignal;
  /**
   * Ask the model for inline markers `[n]` ({@link CITATION_INSTRUCTION} after the system message) and return them
   * parsed and validated. The templates are not changed. @default false
   */
  citations?: boolean;
}

/** A dependency (the reranker) returned something unusable. */
export class RagTemplateError extends Ai4ragError {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'RagTemplateError';
  }
}

interface Ranked {
  chunks: RetrievedChunk[];
  referenceDocuments: ReferenceDocument[];
  t0: number;
  retrieveMs: number;
  rerankMs: number;
  /** Clock reading after ranking, where generation starts. */
  t2: number;
  warnings?: string[];
  queryTransform?: QueryTransformReport;
}

function checkQuestion(question: unknown): string {
  if (typeof question !== 'string' || question.trim() === '') {
    throw new ValidationError('question must be a non-empty string');
  }
  return question;
}

/** The prompt and completion tokens of a model's report; undefined unless it holds both. */
export function tokenUsageOf(usage: ChatUsage | undefined): TokenUsage | undefined {
  const { promptTokens, completionTokens } = usage ?? {};
  if (!Number.isFinite(promptTokens) || !Number.isFinite(completionTokens)) return undefined;
  return { promptTokens: promptTokens as number, completionTokens: completionTokens as number };
}

function toReference(chunk: RetrievedChunk): ReferenceDocument {
  return {
    documentId: chunk.metadata.document_id,
    sequenceNumber: chunk.metadata.sequence_number,
    text: chunk.text,
    ...(chunk.score !== undefined && { score: chunk.score }),
    chunkIds: [...chunk.chunkIds],
  };
}

/**
 * ai4rag's `SimpleRAG`: one retrieval (optionally reranked) and one chat call, with the sources and per-step timing
 * that the query API returns. Prompts are built by `buildMessages`, so local and remote models see the same text.
 * @example
 * const rag = new SimpleRAG({ retriever: new Retriever(store, { numberOfChunks: 5 }), model });
 * const { answer, referenceDocuments, timing } = await rag.generate('How many leave days?');
 */
export class SimpleRAG {
  readonly #retriever: Retriever;
  readonly #model: FoundationModel;
  readonly #templates: PromptTemplates;
  readonly #rerank: RagRerankOptions | undefined;
  readonly #now: () => number;
  readonly #guardrails: GuardrailSettings;

  /**
   * @throws {PromptTemplateError} when the templates break the placeholder rules.
   * @throws {ValidationError} when `reranker.k` is not a positive integer or `candidates < k`.
   */
  constructor(options: SimpleRAGOptions) {
    this.#retriever = options.retriever;
    this.#model = options.model;
    this.#templates = options.templates ?? DEFAULT_TEMPLATES;
    validatePromptTemplates(this.#templates);
    const rr = options.reranker;
    if (rr !== undefined) {
      if (!Number.isInteger(rr.k) || rr.k < 1) {
        throw new ValidationError(`reranker.k must be a positive integer, got ${rr.k}`);
      }
      if (!Number.isInteger(rr.candidates) || rr.candidates < rr.k) {
        throw new ValidationError(
          `reranker.candidates must be an integer ≥ k (${rr.k}), got ${rr.candidates}`,
        );
      }
    }
    this.#rerank = rr;
    this.#now = options.now ?? (() => performance.now());
    this.#guardrails = options.guardrails ?? GUARDRAILS_OFF;
  }

  /** The model's text with personal data redacted under `pii: 'redact'`, and the warning counting what was. */
  #redact(content: string): { content: string; warning?: string } {
    if (this.#guardrails.pii !== 'redact') return { content };
    const { text, redacted } = redactPii(content);
    const warning = redactionWarning(redacted);
    return { content: text, ...(warning !== undefined && { warning }) };
  }

  /**
   * Answers one question from the retrieved passages.
   * @throws {ValidationError} for an empty question.
   * @throws {RagTemplateError} when the reranker returns a wrong number of scores or a non-finite one.
   * @throws the model's or store's error, and the signal's reason when aborted.
   * @example const { answer } = await rag.generate('Who wrote it?');
   */
  async generate(question: string, options: RagCallOptions = {}): Promise<RagAnswer> {
    checkQuestion(question);
    const refusal = this.#refusal(question);
    if (refusal !== undefined) return refusal;
    const ranked = this.#screen(await this.#retrieveAndRank(question, options.signal));
    const messages = withCitations(
      buildMessages(this.#templates, question, ranked.chunks),
      options.citations,
    );
    const result = await this.#model.chat(messages, withSignal(options.signal));
    const t3 = this.#now();
    const usage = tokenUsageOf(result.usage);
    const { content, warning } = this.#redact(result.content);
    const warnings = withWarning(ranked.warnings, warning);
    return {
      ...answerFields(content, ranked.referenceDocuments, options.citations),
      question,
      referenceDocuments: ranked.referenceDocuments,
      timing: this.#timing(ranked, t3),
      ...(warnings && { warnings }),
      ...(usage && { usage }),
      ...(ranked.queryTransform && { queryTransform: ranked.queryTransform }),
    };
  }

  /**
   * Continues a conversation. Reading of the spec ("the history is forwarded as-is and only the last user turn is
   * enriched"; "prepends the system message"): the template's system message is always put first and every
   * earlier message, including a caller's own system message, is forwarded unchanged after it; retrieval uses the
   * last user turn's content, and that turn's content is replaced by the rendered user template.
   * `conversation` is the caller's messages (not enriched) followed by the assistant's answer, ready for the next turn.
   * @throws {ValidationError} for an empty list, a last message that is not a non-empty user turn, or a message with
   * an unknown role or non-string content.
   * @example await rag.chat([{ role: 'user', content: 'Who wrote it?' }]);
   */
  async chat(messages: ChatMessage[], options: RagCallOptions = {}): Promise<RagChatAnswer> {
    if (!Array.isArray(messages) || messages.length === 0) {
      throw new ValidationError('messages must be a non-empty list');
    }
    for (const [i, m] of messages.entries()) {
      if (!['system', 'user', 'assistant'].includes(m?.role) || typeof m.content !== 'string') {
        throw new ValidationError(
          `messages[${i}] must have role system|user|assistant and string content`,
        );
      }
    }
    const last = messages[messages.length - 1] as ChatMessage;
    if (last.role !== 'user') {
      throw new ValidationError(`the last message must be a user turn, got "${last.role}"`);
    }
    const question = checkQuestion(last.content);
    const refusal = this.#refusal(question);
    if (refusal !== undefined) {
      const conversation = [
        ...messages.map((m) => ({ ...m })),
        { role: 'assistant' as const, content: refusal.answer },
      ];
      return { ...refusal, conversation };
    }
    const ranked = this.#screen(await this.#retrieveAndRank(question, options.signal));
    const [system, user] = withCitations(
      buildMessages(this.#templates, question, ranked.chunks),
      options.citations,
    );
    const sent: ChatMessage[] = [system, ...messages.slice(0, -1).map((m) => ({ ...m })), user];
    const result = await this.#model.chat(sent, withSignal(options.signal));
    const t3 = this.#now();
    const usage = tokenUsageOf(result.usage);
    const { content, warning } = this.#redact(result.content);
    const warnings = withWarning(ranked.warnings, warning);
    const answered = answerFields(content, ranked.referenceDocuments, options.citations);
    return {
      ...answered,
      question,
      referenceDocuments: ranked.referenceDocuments,
      timing: this.#timing(ranked, t3),
      ...(warnings && { warnings }),
      ...(usage && { usage }),
      ...(ranked.queryTransform && { queryTransform: ranked.queryTransform }),
      conversation: [
        ...messages.map((m) => ({ ...m })),
        { role: 'assistant', content: answered.answer },
      ],
    };
  }

  /**
   * Streams an answer: the sources first (so a client can show them at once), then the model's text deltas, then
   * the timing (and the tokens, when the model reported them). `generateMs` spans from the end of ranking to the last token, including the consumer's pauses.
   * @throws {ValidationError} for an empty question (on the first iteration), and as {@link generate}.
   * @example for await (const e of rag.generateStream('Who wrote it?')) if (e.type === 'token') write(e.text);
   */
  async *generateStream(
    question: string,
    options: RagCallOptions = {},
  ): AsyncIterable<RagStreamEvent> {
    checkQuestion(question);
    const refusal = this.#refusal(question);
    if (refusal !== undefined) {
      yield { type: 'sources', referenceDocuments: [], warnings: refusal.warnings ?? [] };
      yield { type: 'token', text: refusal.answer };
      yield { type: 'done', timing: refusal.timing };
      return;
    }
    const ranked = this.#screen(await this.#retrieveAndRank(question, options.signal));
    const messages = withCitations(
      buildMessages(this.#templates, question, ranked.chunks),
      options.citations,
    );
    yield {
      type: 'sources',
      referenceDocuments: ranked.referenceDocuments,
      ...(ranked.warnings && { warnings: ranked.warnings }),
      ...(ranked.queryTransform && { queryTransform: ranked.queryTransform }),
    };
    let reported: ChatUsage | undefined;
    const chatOptions = {
      ...withSignal(options.signal),
      onUsage: (u: ChatUsage) => {
        reported = u;
      },
    };
    let streamed = '';
    // Under PII redaction the text is sent as one delta once complete: a phone or card number can span deltas
    // and would leak half-redacted otherwise.
    const redacting = this.#guardrails.pii === 'redact';
    for await (const text of this.#model.chatStream(messages, chatOptions)) {
      streamed += text;
      if (!redacting) yield { type: 'token', text };
    }
    const { content, warning } = this.#redact(streamed);
    if (redacting && content !== '') yield { type: 'token', text: content };
    const usage = tokenUsageOf(reported);
    const timing = this.#timing(ranked, this.#now());
    const { answer: _, ...cited } = answerFields(
      content,
      ranked.referenceDocuments,
      options.citations,
    );
    yield {
      type: 'done',
      timing,
      ...(usage && { usage }),
      ...cited,
      ...(warning !== undefined && { warnings: [warning] }),
    };
  }

  #timing(ranked: Ranked, t3: number): RagTiming {
    return {
      retrieveMs: ranked.retrieveMs,
      rerankMs: ranked.rerankMs,
      generateMs: t3 - ranked.t2,
      totalMs: t3 - ranked.t0,
      ...(ranked.queryTransform && { transformMs: ranked.queryTransform.ms }),
    };
  }

  /** The answer to a question the injection screener flags: a refusal, with no retrieval and no model call. */
  #refusal(question: string): RagAnswer | undefined {
    if (this.#guardrails.injection === 'off') return undefined;
    const verdict = screenForInjection(question);
    if (!verdict.flagged) return undefined;
    return {
      answer: INJECTION_REFUSAL,
      question,
      referenceDocuments: [],
      timing: { retrieveMs: 0, rerankMs: 0, generateMs: 0, totalMs: 0 },
      warnings: [refusedQuestionWarning(verdict.rules)],
    };
  }

  /**
   * The ranked passages without (`exclude`) or with quoted (`quote`) flagged ones, and a warning naming them.
   * Passages are screened one by one and at each seam between two that follow each other in their document
   * (`screenPassages`), so an attempt cut by a chunk boundary is caught too.
   */
  #screen(ranked: Ranked): Ranked {
    const policy = this.#guardrails.injection;
    if (policy === 'off') return ranked;
    const verdicts = screenPassages(ranked.chunks);
    if (verdicts.every((v) => v === undefined)) return ranked;
    const chunks: RetrievedChunk[] = [];
    const referenceDocuments: ReferenceDocument[] = [];
    ranked.chunks.forEach((chunk, i) => {
      const verdict = verdicts[i];
      if (verdict !== undefined && policy === 'exclude') return;
      chunks.push(
        verdict === undefined ? chunk : { ...chunk, text: quoteAsData(chunk.text, verdict.rules) },
      );
      referenceDocuments.push(ranked.referenceDocuments[i] as ReferenceDocument);
    });
    const warning = flaggedPassagesWarning(policy, flaggedPassages(ranked.chunks, verdicts));
    return {
      ...ranked,
      chunks,
      referenceDocuments,
      warnings: [...(ranked.warnings ?? []), warning],
    };
  }

  async #retrieveAndRank(question: string, signal: AbortSignal | undefined): Promise<Ranked> {
    signal?.throwIfAborted();
    const t0 = this.#now();
    const { chunks: retrieved, queryTransform } =
      await this.#retriever.retrieveWithReport(question);
    const t1 = this.#now();
    const qt = queryTransform && { queryTransform };
    signal?.throwIfAborted();
    const rr = this.#rerank;
    if (rr === undefined) {
      return {
        chunks: retrieved,
        referenceDocuments: retrieved.map(toReference),
        t0,
        retrieveMs: t1 - t0,
        rerankMs: 0,
        t2: t1,
        ...qt,
      };
    }
    let chunks: RetrievedChunk[];
    let warnings: string[] | undefined;
    try {
      chunks = await rerankChunks(rr, question, retrieved);
    } catch (error) {
      if (rr.fallback !== true) throw error;
      chunks = retrieved.slice(0, rr.k);
      warnings = [rerankFailureWarning(rr.reranker, error)];
    }
    const t2 = this.#now();
    signal?.throwIfAborted();
    return {
      chunks,
      referenceDocuments: chunks.map(toReference),
      t0,
      retrieveMs: t1 - t0,
      rerankMs: t2 - t1,
      t2,
      ...(warnings && { warnings }),
      ...qt,
    };
  }
}

/** The warnings with one more, when there is one; undefined when there are none. */
function withWarning(
  warnings: string[] | undefined,
  warning: string | undefined,
): string[] | undefined {
  if (warning === undefined) return warnings;
  return [...(warnings ?? []), warning];
}

/** The messages with {@link CITATION_INSTRUCTION} after the system message, when citations are asked for. */
function withCitations(
  messages: [ChatMessage, ChatMessage],
  citations: boolean | undefined,
): [ChatMessage, ChatMessage] {
  if (citations !== true) return messages;
  const [system, user] = messages;
  return [{ ...system, content: `${system.content}\n\n${CITATION_INSTRUCTION}` }, user];
}

/** The answer, and with citations its parsed markers (invalid ones removed from the text). */
function answerFields(
  content: string,
  sources: readonly ReferenceDocument[],
  citations: boolean | undefined,
): Pick<RagAnswer, 'answer' | 'citations' | 'removedCitations'> {
  if (citations !== true) return { answer: content };
  const parsed = parseCitations(content, sources);
  return { answer: parsed.answer, citations: parsed.citations, removedCitations: parsed.removed };
}

function withSignal(signal: AbortSignal | undefined): { signal?: AbortSignal } {
  return signal === undefined ? {} : { signal };
}

/** Scores the passages, orders them by score (stable on ties) and keeps `k`, carrying the rerank score. */
async function rerankChunks(
  rr: RagRerankOptions,
  question: string,
  chunks: RetrievedChunk[],
): Promise<RetrievedChunk[]> {
  if (chunks.length === 0) return [];
  let scores: number[];
  try {
    scores = await rr.reranker.rerank(
      question,
      chunks.map((c) => c.text),
    );
  } catch (error) {
    throw new RagTemplateError(`reranker ${rr.reranker.modelId} failed`, { cause: error });
  }
  if (!Array.isArray(scores) || scores.length !== chunks.length) {
    throw new RagTemplateError(
      `reranker ${rr.reranker.modelId} returned ${Array.isArray(scores) ? scores.length : 'no'} scores for ${chunks.length} documents`,
    );
  }
  // -Infinity is how TeiReranker scores a text the server left out of its answer: it ranks last.
  if (!scores.every((s) => typeof s === 'number' && (Number.isFinite(s) || s === -Infinity))) {
    throw new RagTemplateError(`reranker ${rr.reranker.modelId} returned a non-finite score`);
  }
  return chunks
    .map((chunk, i) => ({ chunk, score: scores[i] as number, i }))
    .sort((a, b) => b.score - a.score || a.i - b.i)
    .slice(0, rr.k)
    .map(({ chunk, score }) => ({ ...chunk, score }));
}
