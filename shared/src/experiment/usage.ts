/**
 * Tokens and cost of an experiment's trials: what each model spent in each role (answer generation, the judge,
 * embeddings of the index and of the questions), summed per trial and for the experiment, priced by the
 * experiment's price table. Pure and synchronous.
 *
 * Cached trials (answered from the result cache) carry the tokens their original evaluation cost, so a trial
 * always shows what its configuration costs; the experiment totals keep them apart (`cached`), as nothing was
 * spent again.
 */
import { approxTextTokens, costOf, type PriceTable } from '../pricing.js';
import type { ExperimentUsage, ModelUsage, TrialRecord, UsageRole, UsageSummary } from './types.js';

/** Order of the roles in a summary. */
const ROLE_ORDER: readonly UsageRole[] = ['generation', 'query_transform', 'judge', 'embedding'];

/** One model's tokens in one role, before pricing. */
export interface ModelUsageInput {
  modelId: string;
  role: UsageRole;
  calls: number;
  promptTokens: number;
  completionTokens: number;
  /** Calls whose tokens the model did not report (left out of the counts). */
  unreportedCalls?: number;
  /** Counted from the texts (ceil(characters / 4)) rather than reported by the model. */
  approximate?: boolean;
}

/**
 * Approximate embedding tokens of texts: ceil(characters / 4) each, as the chunkers count (the embedding port does
 * not return the endpoint's counts).
 * @example embeddingUsage('local/feature-hash-v1-384', ['hello', 'world!']) // { calls: 2, promptTokens: 4, … }
 */
export function embeddingUsage(modelId: string, texts: readonly string[]): ModelUsageInput {
  return {
    modelId,
    role: 'embedding',
    calls: texts.length,
    promptTokens: texts.reduce((n, t) => n + approxTextTokens(t), 0),
    completionTokens: 0,
    approximate: true,
  };
}

function key(u: { model_id: string; role: UsageRole }): string {
  return `${u.role}\u0000${u.model_id}`;
}

function merge(a: ModelUsage, b: ModelUsage): ModelUsage {
  const unreported = (a.unreported_calls ?? 0) + (b.unreported_calls ?? 0);
  return {
    model_id: a.model_id,
    role: a.role,
    calls: a.calls + b.calls,
    prompt_tokens: a.prompt_tokens + b.prompt_tokens,
    completion_tokens: a.completion_tokens + b.completion_tokens,
    ...(unreported > 0 && { unreported_calls: unreported }),
    ...((a.approximate === true || b.approximate === true) && { approximate: true as const }),
  };
}

/** Sums rows of the same (role, model) and orders them generation → judge → embedding, then by model id. */
function combine(rows: readonly ModelUsage[]): ModelUsage[] {
  const byKey = new Map<string, ModelUsage>();
  for (const row of rows) {
    const { cost_usd: _drop, ...bare } = row;
    const seen = byKey.get(key(bare));
    byKey.set(key(bare), seen === undefined ? bare : merge(seen, bare));
  }
  return [...byKey.values()].sort(
    (a, b) =>
      ROLE_ORDER.indexOf(a.role) - ROLE_ORDER.indexOf(b.role) ||
      (a.model_id < b.model_id ? -1 : a.model_id > b.model_id ? 1 : 0),
  );
}

/**
 * A summary of model rows: rows of the same (role, model) summed, totals, and — with a price table — each row's
 * `cost_usd` (local models 0) and the total `cost_usd` when every row is priced. Without a table nothing is priced
 * (not even local rows), so a summary never shows a partial cost as if it were the whole.
 * @example summarizeUsage([embeddingUsage('local/feature-hash-v1-384', ['hi'])], {}).cost_usd // 0
 */
export function summarizeUsage(
  rows: readonly (ModelUsageInput | ModelUsage)[],
  prices?: PriceTable,
): UsageSummary {
  const models = combine(rows.map(toRow)).map((row) => {
    const cost =
      prices === undefined
        ? undefined
        : costOf(
            { promptTokens: row.prompt_tokens, completionTokens: row.completion_tokens },
            row.model_id,
            prices,
          );
    return cost === undefined ? row : { ...row, cost_usd: cost };
  });
  const priced = prices !== undefined && models.every((m) => m.cost_usd !== undefined);
  return {
    models,
    prompt_tokens: models.reduce((n, m) => n + m.prompt_tokens, 0),
    completion_tokens: models.reduce((n, m) => n + m.completion_tokens, 0),
    ...(priced && { cost_usd: roundUsd(models.reduce((n, m) => n + (m.cost_usd ?? 0), 0)) }),
  };
}

function toRow(u: ModelUsageInput | ModelUsage): ModelUsage {
  if ('model_id' in u) return u;
  return {
    model_id: u.modelId,
    role: u.role,
    calls: u.calls,
    prompt_tokens: u.promptTokens,
    completion_tokens: u.completionTokens,
    ...((u.unreportedCalls ?? 0) > 0 && { unreported_calls: u.unreportedCalls }),
    ...(u.approximate === true && { approximate: true as const }),
  };
}

/** USD to a millionth of a cent's precision (as {@link costOf}), so sums print without float noise. */
function roundUsd(usd: number): number {
  return Math.round(usd * 1e6) / 1e6;
}

/**
 * The tokens and cost of an experiment: `spent` sums the trials evaluated in this run, `cached` what the trials
 * answered from the result cache originally cost (not spent again). Trials without a usage record (failed, or
 * cached from before tokens were recorded) are counted in `trials_without_usage`.
 */
export function experimentUsage(
  trials: readonly TrialRecord[],
  prices?: PriceTable,
): ExperimentUsage {
  const spent: ModelUsage[] = [];
  const cached: ModelUsage[] = [];
  let without = 0;
  for (const t of trials) {
    if (t.usage === undefined) without += 1;
    else (t.cached === true ? cached : spent).push(...t.usage.models);
  }
  return {
    spent: summarizeUsage(spent, prices),
    cached: summarizeUsage(cached, prices),
    trials_without_usage: without,
    priced: prices !== undefined,
  };
}

/** Prices every trial's usage with the experiment's table (finalize runs it over the recorded tokens). */
export function priceTrials<T extends TrialRecord>(trials: readonly T[], prices?: PriceTable): T[] {
  return trials.map((t) =>
    t.usage === undefined ? t : { ...t, usage: summarizeUsage(t.usage.models, prices) },
  );
}
