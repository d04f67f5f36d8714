import { ValidationError } from '../../shared/src/errors.js';
import type { FoundationModel } from '../../shared/src/generation/types.js';
import {
  DEFAULT_MULTI_QUERY_COUNT,
  MAX_MULTI_QUERY_COUNT,
  QUERY_TRANSFORMS,
  type QueryTransformKind,
  type QueryTransformOptions,
} from '../../shared/src/retrieval/query-transform.js';
import type { RetrieverOptions } from '../../shared/src/retrieval/retriever.js';
import { RM3_DEFAULTS, rm3Options } from '../../shared/src/retrieval/rm3.js';
import { type OptionSpec, optInt, optNum, type Parsed, str } from './args.js';

/** The query-transform flags of `search`, `ask` and `eval-retrieval`. */
export const QUERY_TRANSFORM_OPTIONS: OptionSpec = {
  'query-transform': { type: 'string' },
  'multi-queries': { type: 'string' },
  'rm3-fb-docs': { type: 'string' },
  'rm3-fb-terms': { type: 'string' },
  'rm3-weight': { type: 'string' },
  model: { type: 'string' },
};

export const QUERY_TRANSFORM_HELP = `Query transforms (search, ask, eval-retrieval), fused (RRF) with the original query's results:
  --query-transform none|multi_query|hyde|rm3   (default none)
                           multi_query: the chat model (--model) writes rewrites, each is searched;
                           hyde: the chat model writes a hypothetical answer passage, searched densely;
                           rm3: pseudo-relevance feedback from the keyword hits (needs --search-mode hybrid; no model)
  --multi-queries N        multi_query rewrites, 1..${MAX_MULTI_QUERY_COUNT} (default ${DEFAULT_MULTI_QUERY_COUNT})
  --rm3-fb-docs N          rm3 feedback documents (default ${RM3_DEFAULTS.fbDocs})
  --rm3-fb-terms N         rm3 expansion terms (default ${RM3_DEFAULTS.fbTerms})
  --rm3-weight X           rm3 weight of the original query, [0, 1] (default ${RM3_DEFAULTS.originalQueryWeight})
  --model ID               chat model of multi_query / hyde (ask: also the answering model)`;

const RM3_FLAGS = ['rm3-fb-docs', 'rm3-fb-terms', 'rm3-weight'] as const;

/**
 * The query transform of the flags, validated against the retrieval options so that a misuse is a usage error
 * (exit 2) naming the flag.
 * @param chatModel gives the chat model of multi_query / hyde (called only for them).
 * @throws {ValidationError} for an unknown transform, rm3 without `--search-mode hybrid`, a chat transform on
 * the local extractive model, a parameter flag of another transform, or an out-of-range value.
 */
export function queryTransformFrom(
  p: Parsed,
  options: RetrieverOptions,
  chatModel: () => FoundationModel,
): QueryTransformOptions | undefined {
  const raw = str(p, 'query-transform') ?? 'none';
  if (!(QUERY_TRANSFORMS as readonly string[]).includes(raw)) {
    throw new ValidationError(
      `--query-transform must be one of ${QUERY_TRANSFORMS.join(', ')}; got "${raw}"`,
    );
  }
  const kind = raw as QueryTransformKind;
  const stray = [
    ...(kind === 'multi_query' ? [] : ['multi-queries']),
    ...(kind === 'rm3' ? [] : RM3_FLAGS),
  ].filter((name) => str(p, name) !== undefined);
  if (stray.length > 0) {
    throw new ValidationError(
      `--${stray[0]} applies only to --query-transform ${stray[0] === 'multi-queries' ? 'multi_query' : 'rm3'}`,
    );
  }
  if (kind === 'none') return undefined;
  if (kind === 'rm3') {
    if (options.searchMode !== 'hybrid') {
      throw new ValidationError(
        '--query-transform rm3 needs a keyword leg: use --search-mode hybrid',
      );
    }
    const rm3 = {
      ...(str(p, 'rm3-fb-docs') !== undefined && { fbDocs: optInt(p, 'rm3-fb-docs') }),
      ...(str(p, 'rm3-fb-terms') !== undefined && { fbTerms: optInt(p, 'rm3-fb-terms') }),
      ...(str(p, 'rm3-weight') !== undefined && { originalQueryWeight: optNum(p, 'rm3-weight') }),
    };
    try {
      rm3Options(rm3);
    } catch (error: unknown) {
      const name = /fbDocs/.test((error as Error).message)
        ? 'rm3-fb-docs'
        : /fbTerms/.test((error as Error).message)
          ? 'rm3-fb-terms'
          : 'rm3-weight';
      // The flag, not the option's internal name: `rm3 originalQueryWeight must be …` → `--rm3-weight must be …`.
      const text = (error as Error).message.replace(
        /^(rm3 )?(fbDocs|fbTerms|originalQueryWeight) /,
        '',
      );
      throw new ValidationError(`--${name} ${text}`, { cause: error });
    }
    return { kind, rm3 };
  }
  const queries = optInt(p, 'multi-queries');
  if (queries !== undefined && (queries < 1 || queries > MAX_MULTI_QUERY_COUNT)) {
    throw new ValidationError(
      `--multi-queries must be an integer in 1..${MAX_MULTI_QUERY_COUNT}, got ${queries}`,
    );
  }
  const model = chatModel();
  if (model.modelId.startsWith('local/') || model.modelId === 'local') {
    throw new ValidationError(
      `--query-transform ${kind} needs a chat model: give --model with an OpenAI-compatible endpoint (the local model '${model.modelId}' cannot write ${kind === 'hyde' ? 'a passage' : 'queries'})`,
    );
  }
  return { kind, model, ...(queries !== undefined && { queries }) };
}
