/**
 * Inline citations: answers carry markers `[n]` that name the n-th document of the prompt (`Document n:` of the
 * context template). The model is asked for them by {@link CITATION_INSTRUCTION}, sent after the template's system
 * message (the templates themselves stay ai4rag's, so experiment payloads and prompts are unchanged); the answer is
 * parsed by {@link parseCitations}, which drops markers to documents that were not given and locates each cited
 * sentence in its chunk, so a UI can highlight the span.
 */
import { answerTokens, tokenOverlap } from '../evaluation/unitxt.js';

/** The instruction appended to the system message when citations are asked for. */
export const CITATION_INSTRUCTION =
  'Cite your sources: after each sentence of your answer, write the number of the document it comes from in ' +
  'square brackets, for example [1] or [2][3]. Cite only the documents provided.';

/** A source of a citation: the text the model saw as `Document n`, and where it comes from. */
export interface CitableChunk {
  text: string;
  documentId: string;
  chunkIds: readonly string[];
}

/** One marker bound to its source, with the cited span as character offsets in that source's text. */
export interface Citation {
  /** The marker's number: 1-based position of the source among the answer's reference documents. */
  marker: number;
  documentId: string;
  /** The first chunk id of the source (a window-merged source holds several). */
  chunkId: string;
  /** Start offset (inclusive) of the cited span in the source's `text`. */
  start: number;
  /** End offset (exclusive) of the cited span in the source's `text`. */
  end: number;
}

/** The result of {@link parseCitations}. */
export interface ParsedCitations {
  /** The answer with the markers to sources that were not given removed (valid markers are kept). */
  answer: string;
  citations: Citation[];
  /** How many markers named a source that was not given (and were removed). */
  removed: number;
}

/** A run of markers (`[1]`, `[1][3]`, `[1, 2]`) and the whitespace before it. */
const MARKER_GROUP = /\s*(?:\[\d{1,4}(?:\s*,\s*\d{1,4})*\])+/g;

function markerNumbers(group: string): number[] {
  return [...group.matchAll(/\d+/g)].map((m) => Number(m[0]));
}

/** The last sentence of a text segment (what a marker right after it cites), trimmed. */
function lastSentence(segment: string): string {
  const pieces = segment
    .split(/\n+|(?<=[.!?])\s+(?=\S)/)
    .map((s) => s.trim())
    .filter((s) => /[\p{L}\p{N}]/u.test(s));
  return pieces[pieces.length - 1] ?? '';
}

interface Cited {
  sentence: string;
  markers: number[];
}

/** The cited sentences of an answer, each with the markers that follow it, and the marker groups' positions. */
function citedSentences(answer: string): { cited: Cited[]; groups: RegExpMatchArray[] } {
  const groups = [...answer.matchAll(MARKER_GROUP)];
  const cited: Cited[] = [];
  let from = 0;
  for (const g of groups) {
    const at = g.index ?? 0;
    const sentence = lastSentence(answer.slice(from, at));
    if (sentence !== '') cited.push({ sentence, markers: markerNumbers(g[0]) });
    from = at + g[0].length;
  }
  return { cited, groups };
}

/** Removes every citation marker (and the whitespace before it). */
export function stripCitations(answer: string): string {
  return answer.replace(MARKER_GROUP, '');
}

const TABLE_LINE = /^\s*\|.*\|\s*$/;
const TABLE_SEPARATOR = /^\s*\|(?:\s*:?-{3,}:?\s*\|)+\s*$/;

/**
 * Sentence spans of a text with their offsets; a table's data row is one span (its header and `---` lines are
 * none, so a row is never located on its header).
 */
function spansOf(text: string): { start: number; end: number }[] {
  const out: { start: number; end: number }[] = [];
  const push = (start: number, raw: string) => {
    const lead = raw.length - raw.trimStart().length;
    const body = raw.trim();
    if (/[\p{L}\p{N}]/u.test(body))
      out.push({ start: start + lead, end: start + lead + body.length });
  };
  const lines = text.split('\n');
  let offset = 0;
  for (const [i, line] of lines.entries()) {
    if (TABLE_LINE.test(line)) {
      const header = TABLE_SEPARATOR.test(lines[i + 1] ?? '');
      if (!header && !TABLE_SEPARATOR.test(line)) push(offset, line);
    } else {
      for (const m of line.matchAll(/[^.!?]+(?:[.!?]+|$)/g)) push(offset + (m.index ?? 0), m[0]);
    }
    offset += line.length + 1;
  }
  return out;
}

/**
 * Where a cited sentence is in its source: the verbatim occurrence, else the source's sentence or line that
 * overlaps it most in unitxt tokens (a table row the model rendered as `Header: cell`), else the whole source.
 */
export function locateSpan(sentence: string, source: string): { start: number; end: number } {
  const at = source.indexOf(sentence);
  if (at >= 0) return { start: at, end: at + sentence.length };
  let best = { start: 0, end: source.length };
  let bestF1 = 0;
  for (const span of spansOf(source)) {
    const f1 = tokenOverlap(sentence, [source.slice(span.start, span.end)]).f1;
    if (f1 > bestF1) {
      bestF1 = f1;
      best = span;
    }
  }
  return best;
}

/**
 * Reads the markers of an answer against the sources it was given (in prompt order): a marker `[n]` with n
 * outside 1..sources.length is removed from the answer and counted; every other marker becomes a citation of the
 * sentence it follows, located in source n.
 * @example parseCitations('Rome. [1] Also [7]', [{ text: 'Rome.', documentId: 'a', chunkIds: ['a-0'] }])
 * // { answer: 'Rome. [1] Also', citations: [{ marker: 1, documentId: 'a', chunkId: 'a-0', start: 0, end: 5 }], removed: 1 }
 */
export function parseCitations(answer: string, sources: readonly CitableChunk[]): ParsedCitations {
  const valid = (n: number) => Number.isInteger(n) && n >= 1 && n <= sources.length;
  let removed = 0;
  const cleaned = answer.replace(MARKER_GROUP, (group) => {
    const numbers = markerNumbers(group);
    const kept = numbers.filter(valid);
    removed += numbers.length - kept.length;
    if (kept.length === numbers.length) return group;
    if (kept.length === 0) return '';
    const space = /^\s*/.exec(group)?.[0] ?? '';
    return `${space}${kept.map((n) => `[${n}]`).join('')}`;
  });
  const citations: Citation[] = [];
  for (const { sentence, markers } of citedSentences(cleaned).cited) {
    for (const marker of new Set(markers)) {
      const source = sources[marker - 1];
      if (source === undefined) continue;
      citations.push({
        marker,
        documentId: source.documentId,
        chunkId: source.chunkIds[0] ?? '',
        ...locateSpan(sentence, source.text),
      });
    }
  }
  return { answer: cleaned, citations, removed };
}

/** A cited sentence is supported when this share of its tokens is in one of its cited chunks. */
export const CITATION_SUPPORT_THRESHOLD = 0.5;

/**
 * `citation_precision` of one answer: the share of its cited sentences that their cited chunk supports, by
 * unitxt's faithfulness rule applied per sentence (token precision of the sentence, markers removed, against the
 * best of its cited chunks, at least {@link CITATION_SUPPORT_THRESHOLD}). A sentence citing only documents that
 * were not given is unsupported. `null` when the answer cites nothing (the metric does not apply).
 * @example citationPrecision('Rome. [1] Paris. [1]', ['Rome is old.']) // 0.5
 */
export function citationPrecision(answer: string, contexts: readonly string[]): number | null {
  const { cited } = citedSentences(answer);
  if (cited.length === 0) return null;
  let supported = 0;
  for (const { sentence, markers } of cited) {
    const chunks = markers.map((n) => contexts[n - 1]).filter((c): c is string => c !== undefined);
    if (chunks.length === 0 || answerTokens(sentence).length === 0) continue;
    if (tokenOverlap(sentence, chunks).precision >= CITATION_SUPPORT_THRESHOLD) supported += 1;
  }
  return supported / cited.length;
}
