import { readFile } from 'node:fs/promises';
import { ValidationError } from '../errors.js';

/** One benchmark question, with ai4rag's question id ("q0", "q1", … in file order). */
export interface BenchmarkQuestion {
  questionId: string;
  question: string;
  /** Reference answers; empty for retrieval-only or unanswerable questions. */
  correctAnswers: string[];
  /** Gold document keys as written in the file (ids or keys); empty for unanswerable questions. */
  documentKeys: string[];
}

/** A benchmark file that does not follow the schema. */
export class BenchmarkError extends ValidationError {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'BenchmarkError';
  }
}

const KEY_FIELDS = ['correct_answer_document_keys', 'correct_answer_document_ids'] as const;
const ALLOWED = new Set(['question', 'correct_answers', ...KEY_FIELDS]);

function stringArray(value: unknown, where: string, field: string): string[] {
  if (!Array.isArray(value) || value.some((v) => typeof v !== 'string' || v.trim() === '')) {
    throw new BenchmarkError(`${where}: "${field}" must be an array of non-empty strings`);
  }
  return value as string[];
}

/**
 * Parses benchmark data: a JSON array of `{question, correct_answers, correct_answer_document_keys}` (ai4rag's
 * current schema) or with the older `correct_answer_document_ids`. Unknown keys are rejected, as ai4rag does.
 * Unlike ai4rag, empty answer and key lists are accepted: they mark retrieval-only or unanswerable questions.
 * @throws BenchmarkError naming the record and field at fault
 */
export function parseBenchmark(data: unknown, source = 'benchmark'): BenchmarkQuestion[] {
  if (!Array.isArray(data))
    throw new BenchmarkError(`${source}: expected a JSON array of questions`);
  if (data.length === 0) throw new BenchmarkError(`${source}: the benchmark has no questions`);
  return data.map((record: unknown, index) => {
    const where = `${source}[${index}]`;
    if (typeof record !== 'object' || record === null || Array.isArray(record)) {
      throw new BenchmarkError(`${where}: expected an object`);
    }
    const r = record as Record<string, unknown>;
    const unknown = Object.keys(r).filter((key) => !ALLOWED.has(key));
    if (unknown.length > 0)
      throw new BenchmarkError(`${where}: unknown field(s) ${unknown.join(', ')}`);
    if (typeof r.question !== 'string' || r.question.trim() === '') {
      throw new BenchmarkError(`${where}: "question" must be a non-empty string`);
    }
    const present = KEY_FIELDS.filter((key) => key in r);
    if (present.length === 2) {
      throw new BenchmarkError(
        `${where}: give either correct_answer_document_keys or _ids, not both`,
      );
    }
    const keyField = present[0];
    return {
      questionId: `q${index}`,
      question: r.question,
      correctAnswers:
        'correct_answers' in r ? stringArray(r.correct_answers, where, 'correct_answers') : [],
      documentKeys: keyField ? stringArray(r[keyField], where, keyField) : [],
    };
  });
}

/** Reads and parses a benchmark JSON file. @throws BenchmarkError for unreadable or invalid files */
export async function loadBenchmark(path: string): Promise<BenchmarkQuestion[]> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new BenchmarkError(`cannot read benchmark file ${path}`, { cause: error });
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    throw new BenchmarkError(`${path}: not valid JSON (${(error as Error).message})`, {
      cause: error,
    });
  }
  return parseBenchmark(data, path);
}
