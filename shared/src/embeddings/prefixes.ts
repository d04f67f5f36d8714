import { ValidationError } from '../errors.js';

/**
 * Instruction prefixes that some embedding models were trained with: the text is embedded as `prefix + text`,
 * with one prefix for queries and another for the documents (passages) they are matched against. Vectors made
 * with a prefix differ from vectors made without it, so the prefixes are part of an embedder's identity.
 */
export interface EmbeddingPrefixes {
  /** Prepended to each query (`embedQuery`); `''` for none. */
  query?: string;
  /** Prepended to each document chunk (`embedDocuments`); `''` for none. */
  document?: string;
}

/** One row of {@link KNOWN_EMBEDDING_PREFIXES}. */
export interface KnownEmbeddingPrefixes {
  /** Family name, for documentation and messages. */
  family: string;
  /** Tested against the model id, lower-cased (so `BAAI/…`, Ollama `name:tag` and LM Studio names all match). */
  pattern: RegExp;
  /** Model ids that look like the family but must not get its prefixes (e.g. instruction-tuned variants). */
  exclude?: RegExp;
  prefixes: Required<EmbeddingPrefixes>;
  /** Where the prefixes are documented. */
  source: string;
}

const BGE_QUERY = 'Represent this sentence for searching relevant passages: ';

/**
 * Model-name patterns whose prefixes are applied when none are configured (first match wins). Deliberately
 * small: only families whose model cards ask for fixed retrieval prefixes. A model that is not listed gets none;
 * configure `prefixes` explicitly for others (or `{}` to turn a listed family's prefixes off).
 *
 * | family | matches | query | document |
 * | --- | --- | --- | --- |
 * | E5 (v1, v2, multilingual; not `-instruct`, not `e5-mistral`) | `e5-small`, `e5-base`, `e5-large` | `query: ` | `passage: ` |
 * | BGE English v1 / v1.5 | `bge-small-en`, `bge-base-en`, `bge-large-en` (optionally `-v1.5`) | `Represent this sentence for searching relevant passages: ` | none |
 * | Nomic Embed Text | `nomic-embed-text` | `search_query: ` | `search_document: ` |
 * | mxbai-embed-large | `mxbai-embed-large` | `Represent this sentence for searching relevant passages: ` | none |
 */
export const KNOWN_EMBEDDING_PREFIXES: readonly KnownEmbeddingPrefixes[] = Object.freeze([
  {
    family: 'E5',
    pattern: /\be5-(small|base|large)\b/,
    exclude: /instruct|mistral/,
    prefixes: { query: 'query: ', document: 'passage: ' },
    source: 'https://huggingface.co/intfloat/e5-base-v2',
  },
  {
    family: 'BGE English v1/v1.5',
    pattern: /\bbge-(small|base|large)-en(-v1\.5)?\b/,
    prefixes: { query: BGE_QUERY, document: '' },
    source: 'https://huggingface.co/BAAI/bge-base-en-v1.5',
  },
  {
    family: 'Nomic Embed Text',
    pattern: /\bnomic-embed-text\b/,
    prefixes: { query: 'search_query: ', document: 'search_document: ' },
    source: 'https://huggingface.co/nomic-ai/nomic-embed-text-v1.5',
  },
  {
    family: 'mxbai-embed-large',
    pattern: /\bmxbai-embed-large\b/,
    prefixes: { query: BGE_QUERY, document: '' },
    source: 'https://huggingface.co/mixedbread-ai/mxbai-embed-large-v1',
  },
]);

const NONE: Readonly<Required<EmbeddingPrefixes>> = Object.freeze({ query: '', document: '' });

/**
 * The prefixes an embedder uses for `model`: the explicit ones when given (missing fields are `''`, so `{}`
 * means none), otherwise the first matching row of {@link KNOWN_EMBEDDING_PREFIXES}, otherwise none.
 * @example
 * resolvePrefixes('intfloat/e5-base-v2'); // { query: 'query: ', document: 'passage: ' }
 * resolvePrefixes('intfloat/e5-base-v2', {}); // { query: '', document: '' }
 */
export function resolvePrefixes(
  model: string,
  explicit?: EmbeddingPrefixes,
): Readonly<Required<EmbeddingPrefixes>> {
  if (explicit !== undefined) {
    return Object.freeze({ query: explicit.query ?? '', document: explicit.document ?? '' });
  }
  const name = model.toLowerCase();
  const known = KNOWN_EMBEDDING_PREFIXES.find(
    (row) => row.pattern.test(name) && !row.exclude?.test(name),
  );
  return known ? Object.freeze({ ...known.prefixes }) : NONE;
}

/**
 * The id an embedder reports (and a collection records as its `embedding_model`): the model name when no prefix
 * is applied, otherwise the name followed by the prefixes, e.g.
 * `intfloat/e5-base-v2 [query: "query: ", document: "passage: "]`. So a collection built without prefixes (or
 * with others) refuses an embedder that uses them instead of silently mixing two kinds of vectors.
 */
export function prefixedModelId(model: string, prefixes: EmbeddingPrefixes): string {
  const parts = [
    prefixes.query ? `query: ${JSON.stringify(prefixes.query)}` : undefined,
    prefixes.document ? `document: ${JSON.stringify(prefixes.document)}` : undefined,
  ].filter((p) => p !== undefined);
  return parts.length === 0 ? model : `${model} [${parts.join(', ')}]`;
}

/**
 * Parses a prefixes setting as users write it (`--embedding-prefixes`, `AI4RAG_EMBEDDING_PREFIXES`): `auto` (or
 * empty) for the known families' defaults, `none` for no prefixes, or JSON `{"query": "…", "document": "…"}`.
 * Returns undefined for `auto` (the embedder then applies {@link KNOWN_EMBEDDING_PREFIXES}).
 * @throws {ValidationError} naming the setting and what it must be.
 * @example parseEmbeddingPrefixes('none') // {}
 */
export function parseEmbeddingPrefixes(
  value: string | undefined,
  source = '--embedding-prefixes',
): EmbeddingPrefixes | undefined {
  const v = value?.trim();
  if (v === undefined || v === '' || v === 'auto') return undefined;
  if (v === 'none') return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(v);
  } catch {
    parsed = undefined;
  }
  const ok =
    parsed !== null &&
    typeof parsed === 'object' &&
    !Array.isArray(parsed) &&
    Object.entries(parsed).every(
      ([k, x]) => (k === 'query' || k === 'document') && typeof x === 'string',
    );
  if (!ok) {
    throw new ValidationError(
      `${source} must be auto, none or JSON {"query": "...", "document": "..."}, got ${JSON.stringify(v.slice(0, 80))}`,
    );
  }
  return parsed as EmbeddingPrefixes;
}
