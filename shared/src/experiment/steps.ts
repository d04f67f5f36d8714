/**
 * The steps of an optimization experiment, one function per state of the experiment state machine:
 * prepare → loop { propose → for each trial (index → embed batches → evaluate) → record } → finalize.
 * Every step reads what it needs from the ledger in the object store and writes what it decided back, so the
 * same functions run as Lambdas (S3) and locally (a folder), and a re-run with the same experiment id resumes.
 */
import { randomBytes } from 'node:crypto';
import { createChunker } from '../chunking/chunker.js';
import type { AI4RAGChunk, ChunkingOptions } from '../chunking/types.js';
import { buildKeyIndex, resolveDocumentKey, unmatchedKeyMessage } from '../documents/keys.js';
import { loadBytes } from '../documents/load.js';
import type { LoadedDocument } from '../documents/types.js';
import type { Embedder } from '../embeddings/types.js';
import { Ai4ragError, NotFoundError, toError, ValidationError } from '../errors.js';
import { type BenchmarkQuestion, parseBenchmark } from '../evaluation/benchmark.js';
import { bootstrapCi } from '../evaluation/bootstrap.js';
import { type JudgeUsage, judgeAnswerRelevance } from '../evaluation/judge.js';
import { questionMetrics } from '../evaluation/retrieval-metrics.js';
import { round4, scoreEvaluationData } from '../evaluation/score.js';
import { GenerationError } from '../generation/errors.js';
import {
  LOCAL_EXTRACTIVE_MODEL_ID,
  LocalExtractiveModel,
  type LocalExtractiveModelOptions,
} from '../generation/local-extractive.js';
import { SimpleRAG } from '../generation/rag-template.js';
import { DEFAULT_TEMPLATES } from '../generation/templates.js';
import { buildTermStats, type TermStats } from '../generation/term-stats.js';
import type { FoundationModel } from '../generation/types.js';
import { writeChunkBatches } from '../ingest/batches.js';
import { DEFAULT_OPTIMIZER, OPTIMIZER_NAMES, proposeTrials } from '../optimizer/optimizers.js';
import { needsPreSelection } from '../optimizer/preselection.js';
import {
  combinationKey,
  createSearchSpace,
  defaultSearchSpace,
  type ModelRef,
  mergeSearchSpace,
  type Parameter,
  parseSearchSpaceOverrides,
} from '../optimizer/search-space.js';
import { getJson, type ObjectStore, putJson } from '../ports/object-store.js';
import type { QueryTransformReport } from '../retrieval/query-transform.js';
import type { Reranker } from '../retrieval/rerank.js';
import { Retriever } from '../retrieval/retriever.js';
import { mapLimit } from '../util/concurrency.js';
import { mulberry32 } from '../util/random.js';
import type { VectorStore } from '../vectorstores/types.js';
import { type ExperimentInput, parseExperimentInput } from './input.js';
import {
  type ExperimentState,
  experimentPrefix,
  INDEX_MARKERS_PREFIX,
  type LedgerTrial,
  ledgerKeys,
  RESULT_CACHE_PREFIX,
  readBenchmark,
  readDocuments,
  readEvents,
  readState,
  type TrialPlan,
  type TrialResultFile,
  writeState,
} from './ledger.js';
import {
  evaluationItem,
  indexCollectionName,
  indexingParams,
  patternSettings,
  ragParams,
  resultCacheKey,
  retrieverOptions,
  sha256Hex,
  stableStringify,
  type TrialSettings,
  trialSettings,
} from './params.js';
import { preselectModels } from './preselect.js';
import type {
  EvaluationRecord,
  ExperimentStep,
  LogLevel,
  Observation,
  PatternMetric,
  PatternPayload,
  StatusEvent,
  TrialConfig,
  UsageSummary,
} from './types.js';
import {
  embeddingUsage,
  experimentUsage,
  type ModelUsageInput,
  priceTrials,
  summarizeUsage,
} from './usage.js';

/** What the steps need from their environment (the Lambda runtime, or the local one). */
export interface ExperimentDeps {
  /** Where the ledger, batches and artefacts live. */
  artifacts: ObjectStore;
  /** Where the documents live (`documentsPrefix` selects them). */
  documents: ObjectStore;
  /** `provider_type` of the pattern's vector-store binding (pgvector, milvus, pglite). */
  storeKind: string;
  embedder(modelId: string): Promise<Embedder>;
  /** A chat model; `role` `judge` for the evaluation judge (it may have an endpoint of its own). */
  model(modelId: string, role?: 'chat' | 'judge'): Promise<FoundationModel>;
  /**
   * The local extractive model with the corpus' term statistics (the runtime's: on its worker pool when it has
   * one); default: in process.
   */
  localModel?(options: LocalExtractiveModelOptions): FoundationModel;
  /**
   * The reranker of a search space's `reranker` value (its model id); needed only when the space reranks, and
   * expected to reject with a ValidationError when no reranker endpoint is configured.
   */
  reranker?(modelId: string): Promise<Reranker>;
  /** A store the runtime owns (cached, closed by the runtime): do not close it. */
  openStore(
    collection: string,
    embedder: Embedder,
    options?: { createIfMissing?: boolean },
  ): Promise<VectorStore>;
  /**
   * The models an experiment compares when its input names none: the deployment's configured embedding and
   * foundation models (default: the local ones).
   */
  defaultModels?: { foundationModels?: readonly string[]; embeddingModels?: readonly string[] };
  /** Live status callback (the terminal's progress); events are persisted regardless. */
  onEvent?: (event: StatusEvent) => void;
  /** Called with each finished pattern (ai4rag's `on_pattern_creation`). */
  onPattern?: (payload: PatternPayload, evaluation: EvaluationRecord[]) => void;
  /** Live per-question progress inside a trial (the terminal's progress); not persisted. */
  onQuestion?: (progress: { pattern: string; done: number; total: number }) => void;
  now?: () => Date;
}

/** A reference to an experiment: what the state machine carries between states. */
export interface ExperimentRef {
  experimentId: string;
  prefix: string;
  trialConcurrency: number;
}

/** The output of propose. */
export interface Proposal {
  done: boolean;
  trials: { trialId: string }[];
}

/** The output of the per-trial steps, as the state machine's Map collects them. */
export type TrialOutcome =
  | { trialId: string; ok: true; score: number | null }
  | { trialId: string; ok: false; error: unknown };

/** The output of finalize. */
export interface ExperimentArtefacts {
  experimentId: string;
  leaderboardKey: string;
  patternKey: string | null;
  evaluationResultsKey: string | null;
  reportKey: string;
  best: { pattern_name: string; score: number } | null;
  trials: number;
  failed: number;
}

/** The experiment cannot produce a single successful trial (ai4rag's RAGExperimentError). */
export class ExperimentError extends Ai4ragError {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'ExperimentError';
  }
}

/** A trial failed; the optimizer records it as null and goes on. */
export class TrialError extends Ai4ragError {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'TrialError';
  }
}

const DEFAULT_FOUNDATION_MODELS = [LOCAL_EXTRACTIVE_MODEL_ID];
const DEFAULT_EMBEDDING_MODELS = ['local/feature-hash-v1-384'];

/** Collects status events of one step and persists them once, even when the step fails. */
class EventLog {
  readonly events: StatusEvent[] = [];
  readonly #deps: ExperimentDeps;
  readonly #prefix: string;
  readonly #name: string;

  constructor(deps: ExperimentDeps, prefix: string, name: string) {
    this.#deps = deps;
    this.#prefix = prefix;
    this.#name = name;
  }

  emit(level: LogLevel, message: string, step?: ExperimentStep): void {
    const event: StatusEvent = {
      level,
      message,
      ...(step !== undefined && { step }),
      time: (this.#deps.now?.() ?? new Date()).toISOString(),
    };
    this.events.push(event);
    this.#deps.onEvent?.(event);
  }

  async flush(): Promise<void> {
    if (this.events.length === 0) return;
    const first = this.events[0] as StatusEvent;
    const key = `${ledgerKeys(this.#prefix).events}${first.time.replace(/[:.]/g, '-')}-${this.#name}-${randomBytes(3).toString('hex')}.json`;
    await putJson(this.#deps.artifacts, key, this.events.splice(0));
  }
}

async function withEvents<T>(
  deps: ExperimentDeps,
  prefix: string,
  name: string,
  fn: (log: EventLog) => Promise<T>,
): Promise<T> {
  const log = new EventLog(deps, prefix, name);
  try {
    return await fn(log);
  } finally {
    await log.flush();
  }
}

function describeError(error: unknown): string {
  const e = toError(error);
  return `${e.name}: ${e.message}`;
}

/**
 * The message of a failure caught by the state machine (`{Error, Cause}`, where Cause is the Lambda's JSON error),
 * or of a thrown error.
 */
export function failureMessage(error: unknown): string {
  if (typeof error === 'object' && error !== null && 'Error' in error) {
    const { Error: name, Cause: cause } = error as { Error?: unknown; Cause?: unknown };
    if (typeof cause === 'string') {
      try {
        const parsed = JSON.parse(cause) as { errorType?: string; errorMessage?: string };
        if (parsed.errorMessage !== undefined) {
          return `${parsed.errorType ?? String(name)}: ${parsed.errorMessage}`;
        }
      } catch {
        // Not JSON: use it as is.
      }
      return `${String(name)}: ${cause}`;
    }
    return String(name);
  }
  return describeError(error);
}

function shuffleSeeded<T>(items: readonly T[], seed: number): T[] {
  const out = [...items];
  const rand = mulberry32(seed);
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out;
}

function generatedExperimentId(now: Date): string {
  const ts = now.toISOString().replace(/[-:]/g, '').replace(/\..*$/, '').replace('T', '-');
  return `exp-${ts}-${randomBytes(3).toString('hex')}`;
}

async function loadCorpus(
  deps: ExperimentDeps,
  prefix: string,
  log: EventLog,
): Promise<LoadedDocument[]> {
  const keys = (await deps.documents.list(prefix)).filter((k) => !k.endsWith('/'));
  if (keys.length === 0) {
    throw new ValidationError(`No documents found under '${prefix || '(root)'}'.`);
  }
  const loaded = await mapLimit(keys, 4, async (key) =>
    loadBytes(await deps.documents.get(key), key.slice(prefix.length) || key),
  );
  const documents: LoadedDocument[] = [];
  const seen = new Set<string>();
  for (const result of loaded) {
    for (const failure of result.failures) log.emit('warning', `Skipped ${failure.message}`);
    for (const doc of result.documents) {
      if (seen.has(doc.key)) continue;
      seen.add(doc.key);
      const { sourcePath: _drop, ...rest } = doc;
      documents.push(rest);
    }
  }
  if (documents.length === 0) {
    throw new ValidationError(
      `None of the ${keys.length} files under '${prefix}' could be loaded.`,
    );
  }
  return documents;
}

/**
 * Resolves the benchmark's gold keys to document keys (exact, without the extension, or an unambiguous bare file
 * name); a key that names no document is an error, as in `eval-retrieval`: it would silently score zero.
 * @throws {ValidationError} listing the unmatched keys with the documents they may have meant.
 */
function matchBenchmarkKeys(
  questions: BenchmarkQuestion[],
  documentKeys: readonly string[],
): BenchmarkQuestion[] {
  const index = buildKeyIndex(documentKeys);
  const unmatched = new Map<string, string>();
  const out = questions.map((q) => ({
    ...q,
    documentKeys: q.documentKeys.map((key) => {
      const r = resolveDocumentKey(key, index, documentKeys);
      if (r.match === undefined && !unmatched.has(key)) {
        unmatched.set(key, `${q.questionId}: ${unmatchedKeyMessage(key, r)}`);
      }
      return r.match ?? key;
    }),
  }));
  if (unmatched.size > 0) {
    const list = [...unmatched.values()].slice(0, 5).join('; ');
    throw new ValidationError(
      `${unmatched.size} benchmark gold document key(s) name no single document: ${list}${unmatched.size > 5 ? '; …' : ''}.`,
    );
  }
  return out;
}

function knownObservations(input: ExperimentInput): Observation[] {
  return input.knownObservations.map((o, i) => {
    const { score, ...config } = o;
    if (score !== null && (typeof score !== 'number' || !Number.isFinite(score))) {
      throw new ValidationError(`knownObservations[${i}]: "score" must be a number or null.`);
    }
    for (const name of ['foundation_model', 'embedding_model']) {
      const v = config[name];
      if (typeof v === 'string') config[name] = { modelId: v };
    }
    return { config, score: score as number | null };
  });
}

/**
 * The prepare state: validates the input, loads and parses the documents, loads the benchmark, builds the search
 * space and writes the ledger. With an existing ledger for the id it resumes: recorded trials are kept, trials that
 * were running are dropped (they are proposed again).
 * @throws {ValidationError} for a bad input, no loadable documents, a bad benchmark or search space.
 */
export async function prepareExperiment(
  deps: ExperimentDeps,
  rawInput: unknown,
): Promise<ExperimentRef> {
  const input = parseExperimentInput(rawInput);
  const now = deps.now?.() ?? new Date();
  const experimentId = input.experimentId ?? generatedExperimentId(now);
  const prefix = experimentPrefix(experimentId);
  const keys = ledgerKeys(prefix);
  return withEvents(deps, prefix, 'prepare', async (log) => {
    if (await deps.artifacts.exists(keys.state)) {
      const state = await readState(deps.artifacts, prefix);
      const dropped = state.trials.filter((t) => t.status === 'running').length;
      state.trials = state.trials.filter((t) => t.status !== 'running');
      state.finished = false;
      // A resume may change the budget and the concurrency, given explicitly; the documents, benchmark and search
      // space stay those the recorded trials were scored on.
      const given = rawInput as Record<string, unknown>;
      for (const key of ['maxEvals', 'trialConcurrency', 'questionConcurrency'] as const) {
        if (key in given && input[key] !== state.input[key]) {
          log.emit('info', `Resuming with ${key} ${input[key]} (was ${state.input[key]}).`);
          state.input[key] = input[key];
        }
      }
      // Prices only turn tokens into USD (at finalize), so a resume may bring a new table.
      if (input.prices !== undefined) state.input.prices = input.prices;
      await writeState(deps.artifacts, prefix, state);
      log.emit(
        'info',
        `Resuming experiment ${experimentId}: ${state.trials.length} recorded trial(s) kept${dropped > 0 ? `, ${dropped} unfinished dropped` : ''}.`,
      );
      return { experimentId, prefix, trialConcurrency: state.input.trialConcurrency };
    }

    const documents = await loadCorpus(deps, input.documentsPrefix, log);
    const benchmarkRaw = await getJson<unknown>(deps.artifacts, input.benchmarkKey).catch(
      (error: unknown) => {
        if (error instanceof NotFoundError) {
          throw new ValidationError(`Benchmark '${input.benchmarkKey}' does not exist.`);
        }
        throw error;
      },
    );
    let questions = sampleBenchmark(
      parseBenchmark(benchmarkRaw, input.benchmarkKey),
      input.benchmarkSampleSize,
    );
    questions = matchBenchmarkKeys(
      questions,
      documents.map((d) => d.key),
    );

    // Without models in the input, the deployment's own (a local run: the local ones).
    let foundationModels =
      input.foundationModels ?? deps.defaultModels?.foundationModels ?? DEFAULT_FOUNDATION_MODELS;
    let embeddingIds =
      input.embeddingModels ?? deps.defaultModels?.embeddingModels ?? DEFAULT_EMBEDDING_MODELS;
    if (
      !input.skipPreSelection &&
      needsPreSelection(foundationModels.length, embeddingIds.length, {
        foundation: input.nPreSelectFoundationModels,
        embedding: input.nPreSelectEmbeddingModels,
      })
    ) {
      log.emit(
        'info',
        `Starting foundation models pre-selection with following foundation models: [${foundationModels.join(', ')}] and following embedding models: [${embeddingIds.join(', ')}].`,
        'model selection',
      );
      const selected = await preselectModels({
        deps,
        experimentId,
        documents,
        questions,
        foundationModels,
        embeddingModels: embeddingIds,
        nFoundation: input.nPreSelectFoundationModels,
        nEmbedding: input.nPreSelectEmbeddingModels,
        log: (level, message) => log.emit(level, message, 'model selection'),
      });
      foundationModels = selected.foundationModels;
      embeddingIds = selected.embeddingModels;
      log.emit(
        'info',
        `Pre-selected foundation models: [${foundationModels.join(', ')}]; embedding models: [${embeddingIds.join(', ')}].`,
        'model selection',
      );
    }
    const embeddingDimensions: Record<string, number> = {};
    const embeddingModels: ModelRef[] = [];
    for (const id of embeddingIds) {
      const embedder = await deps.embedder(id);
      embeddingDimensions[id] = embedder.dimension;
      embeddingModels.push({ modelId: id, contextLength: embedder.contextLength });
    }
    const optimizer = input.optimizer ?? DEFAULT_OPTIMIZER;
    if (!(OPTIMIZER_NAMES as readonly string[]).includes(optimizer)) {
      throw new ValidationError(
        `Unknown optimizer '${optimizer}'; use one of ${OPTIMIZER_NAMES.join(', ')}.`,
      );
    }
    const candidates = experimentCandidates(
      input,
      foundationModels,
      embeddingModels,
      deps.storeKind,
    );
    await checkRerankers(deps, candidates, log);
    const corpusHash = sha256Hex(
      stableStringify(documents.map((d) => [d.key, d.contentHash]).sort()),
    );
    const state: ExperimentState = {
      version: 1,
      experimentId,
      createdAt: now.toISOString(),
      input,
      optimizer,
      storeKind: deps.storeKind,
      corpus: { hash: corpusHash, documents: documents.length, keys: documents.length },
      benchmark: { hash: sha256Hex(stableStringify(questions)), questions: questions.length },
      candidates,
      maxCombinations: candidates.length,
      knownObservations: knownObservations(input),
      embeddingDimensions,
      trials: [],
      indexes: {},
      rounds: 0,
      finished: false,
    };
    await putJson(deps.artifacts, keys.documents, documents);
    await putJson(deps.artifacts, keys.benchmark, questions);
    await writeState(deps.artifacts, prefix, state);
    log.emit(
      'info',
      `Experiment ${experimentId}: ${documents.length} documents, ${questions.length} questions, ${candidates.length} valid configurations, optimizer ${optimizer}, up to ${Math.min(input.maxEvals, candidates.length)} trials.`,
      'optimization',
    );
    return { experimentId, prefix, trialConcurrency: input.trialConcurrency };
  });
}

/**
 * ai4rag's seeded sample (seed 42) of `size` benchmark questions, in their original order; all when `size` is 0
 * or not smaller than the benchmark.
 */
export function sampleBenchmark<T>(questions: readonly T[], size: number): T[] {
  if (size <= 0 || questions.length <= size) return [...questions];
  const picked = new Set(
    shuffleSeeded(
      questions.map((_, i) => i),
      42,
    ).slice(0, size),
  );
  return questions.filter((_, i) => picked.has(i));
}

/**
 * The valid configurations of an experiment's search space: the default space for its models (embedding models
 * with their context length when known), merged with the input's overrides, sampled to `maxCombinations`.
 * @throws {ValidationError} for bad overrides or a space without a valid combination.
 */
export function experimentCandidates(
  input: ExperimentInput,
  foundationModels: readonly string[],
  embeddingModels: readonly ModelRef[],
  storeKind: string,
): TrialConfig[] {
  let params: Parameter[] = defaultSearchSpace({
    foundationModels: foundationModels.map((modelId) => ({ modelId })),
    embeddingModels,
    vectorStore: storeKind === 'milvus' ? 'milvus' : 'pgvector',
  });
  if (input.searchSpace !== undefined) {
    params = mergeSearchSpace(params, parseSearchSpaceOverrides(input.searchSpace));
  }
  const candidates = createSearchSpace(params, {
    ...(input.maxCombinations !== undefined && { maxCombinations: input.maxCombinations }),
    seed: input.seed,
  }).combinations();
  if (candidates.length === 0) {
    throw new ValidationError('The search space has no valid combination.');
  }
  return candidates;
}

/** The experiment's foundation models when the input names none. */
export const DEFAULT_EXPERIMENT_FOUNDATION_MODELS: readonly string[] = DEFAULT_FOUNDATION_MODELS;
/** The experiment's embedding models when the input names none. */
export const DEFAULT_EXPERIMENT_EMBEDDING_MODELS: readonly string[] = DEFAULT_EMBEDDING_MODELS;

/**
 * Resolves every reranker the search space names before any trial runs, so a missing endpoint fails the
 * experiment at once instead of failing every reranked trial.
 */
async function checkRerankers(
  deps: ExperimentDeps,
  candidates: readonly TrialConfig[],
  log: EventLog,
): Promise<void> {
  const models = new Set<string>();
  for (const c of candidates) {
    const reranker = trialSettings(c).retrieval.reranker;
    if (reranker !== undefined) models.add(reranker.model);
  }
  if (models.size === 0) return;
  if (deps.reranker === undefined) {
    throw new ValidationError(
      `The search space reranks with ${[...models].map((m) => `'${m}'`).join(', ')}, but this runtime has no reranker.`,
    );
  }
  for (const model of models) {
    const reranker = await deps.reranker(model);
    log.emit(
      'info',
      `Reranking candidates with '${model}'${reranker.endpoint ? ` at ${reranker.endpoint}` : ''}.`,
      'optimization',
    );
  }
}

function planFor(state: ExperimentState, config: TrialConfig, n: number): TrialPlan {
  const settings = trialSettings(config);
  const dimension = state.embeddingDimensions[settings.embeddingModel] ?? 0;
  const indexing = indexingParams(settings, dimension);
  const rag = ragParams(settings);
  const iteration = state.knownObservations.length + n;
  return {
    trialId: `t${String(n + 1).padStart(4, '0')}`,
    patternName: `Pattern${iteration + 1}`,
    iteration,
    config,
    collection: indexCollectionName(state.corpus.hash, indexing),
    indexing,
    rag,
    // Answers with citations are other answers; without, the key stays ai4rag's.
    cacheKey: resultCacheKey(
      state.corpus.hash,
      state.benchmark.hash,
      indexing,
      state.input.citations === true ? { rag, citations: true } : rag,
    ),
  };
}

interface CachedResult {
  score: number;
  pattern: PatternPayload;
  evaluation: EvaluationRecord[];
  /** The tokens the evaluation cost (absent in entries written before tokens were recorded). */
  usage?: UsageSummary;
}

/**
 * The propose state: asks the optimizer for the next trials (up to the trial concurrency and the budget left),
 * answers those the result cache already knows without work, and returns the rest for the Map state. Two trials
 * of one round never build the same index: the second waits for a later round.
 */
export async function proposeRound(deps: ExperimentDeps, ref: ExperimentRef): Promise<Proposal> {
  return withEvents(deps, ref.prefix, 'propose', async (log) => {
    const state = await readState(deps.artifacts, ref.prefix);
    const keys = ledgerKeys(ref.prefix);
    const input = state.input;
    const budget = Math.min(input.maxEvals, state.candidates.length);
    while (true) {
      const left = budget - state.trials.length;
      const observed = new Set(
        [...state.knownObservations.map((o) => o.config), ...state.trials.map((t) => t.config)].map(
          combinationKey,
        ),
      );
      if (left <= 0 || state.candidates.every((c) => observed.has(combinationKey(c)))) {
        state.finished = true;
        await writeState(deps.artifacts, ref.prefix, state);
        return { done: true, trials: [] };
      }
      const observations: Observation[] = [
        ...state.knownObservations,
        ...state.trials.map((t) => ({ config: t.config, score: t.score })),
      ];
      const wanted = Math.min(input.trialConcurrency, left);
      const proposed = proposeTrials(state.optimizer as never, {
        candidates: state.candidates,
        observations,
        count: wanted,
        seed: input.seed,
        nRandomNodes: input.nRandomNodes,
      });
      if (proposed.length === 0) {
        state.finished = true;
        await writeState(deps.artifacts, ref.prefix, state);
        return { done: true, trials: [] };
      }
      const toRun: LedgerTrial[] = [];
      const building = new Set<string>();
      let anyCached = false;
      for (const config of proposed) {
        const plan = planFor(state, config, state.trials.length);
        // The index rule applies to cached trials too, so a re-run forms the same rounds as the first run and the
        // optimizer proposes the same configurations (everything then comes from the cache).
        const needsIndex = state.indexes[plan.collection] !== true;
        if (needsIndex && building.has(plan.collection)) continue;
        if (needsIndex) building.add(plan.collection);
        const cacheObject = `${RESULT_CACHE_PREFIX}${plan.cacheKey}.json`;
        if (await deps.artifacts.exists(cacheObject)) {
          const cached = await getJson<CachedResult>(deps.artifacts, cacheObject);
          const pattern = { ...cached.pattern, name: plan.patternName, iteration: plan.iteration };
          state.trials.push({
            trialId: plan.trialId,
            pattern_name: plan.patternName,
            iteration: plan.iteration,
            config,
            score: cached.score,
            pattern,
            cached: true,
            duration_seconds: 0,
            // What the original evaluation cost; `cached` says nothing was spent again.
            ...(cached.usage !== undefined && { usage: cached.usage }),
            status: 'done',
            collection: plan.collection,
          });
          await putJson(deps.artifacts, keys.pattern(plan.patternName), pattern);
          await putJson(
            deps.artifacts,
            keys.patternEvaluation(plan.patternName),
            cached.evaluation,
          );
          log.emit(
            'info',
            `${plan.patternName}: same indexing and RAG parameters as an earlier evaluation; cached score ${cached.score}.`,
            'optimization',
          );
          anyCached = true;
          continue;
        }
        await putJson(deps.artifacts, keys.trial(plan.trialId), plan);
        const trial: LedgerTrial = {
          trialId: plan.trialId,
          pattern_name: plan.patternName,
          iteration: plan.iteration,
          config,
          score: null,
          duration_seconds: 0,
          status: 'running',
          collection: plan.collection,
        };
        state.trials.push(trial);
        toRun.push(trial);
      }
      if (toRun.length > 0) {
        state.rounds += 1;
        await writeState(deps.artifacts, ref.prefix, state);
        log.emit(
          'info',
          `Round ${state.rounds}: evaluating ${toRun.map((t) => t.pattern_name).join(', ')} (${state.trials.length}/${budget}).`,
          'optimization',
        );
        return { done: false, trials: toRun.map((t) => ({ trialId: t.trialId })) };
      }
      if (!anyCached) {
        // Every proposal conflicted on an index being built: cannot happen with ≥ 1 proposal, guard anyway.
        throw new ExperimentError('The optimizer proposed no runnable trial.');
      }
      // A round answered entirely from the cache: its indexes exist, as after a recorded round.
      for (const t of state.trials) {
        if (t.status === 'done' && t.collection !== undefined) state.indexes[t.collection] = true;
      }
      await writeState(deps.artifacts, ref.prefix, state);
    }
  });
}

/** Input of the per-trial states. */
export interface TrialRef {
  experimentId: string;
  prefix: string;
  trialId: string;
}

async function indexUsable(
  deps: ExperimentDeps,
  collection: string,
  embedder: Embedder,
): Promise<boolean> {
  if (!(await deps.artifacts.exists(`${INDEX_MARKERS_PREFIX}${collection}.json`))) return false;
  try {
    const store = await deps.openStore(collection, embedder, { createIfMissing: false });
    return (await store.stats()).chunks > 0;
  } catch (error) {
    if (error instanceof NotFoundError) return false;
    throw error;
  }
}

/** The method parameters of a trial's chunking, for its log line (hierarchical parents, semantic breakpoints). */
function chunkingDetails(c: ChunkingOptions): string {
  if (c.method === 'hierarchical') return `, parent_chunk_size: ${c.parentChunkSize}`;
  if (c.method !== 'semantic') return '';
  const bp = c.breakpoint ?? 'percentile (default)';
  return `, breakpoint: ${bp}${c.breakpointAmount === undefined ? '' : ` ${c.breakpointAmount}`}`;
}

/**
 * The index state of a trial: reuses the index of equal indexing params (this experiment's or an earlier one's on
 * the same documents), or chunks the documents and writes the chunk batches that the embed-batch function embeds
 * and upserts (the state machine fans them out).
 */
export async function indexTrial(
  deps: ExperimentDeps,
  ref: TrialRef,
): Promise<{ collection: string; batches: string[] }> {
  return withEvents(deps, ref.prefix, `index-${ref.trialId}`, async (log) => {
    const keys = ledgerKeys(ref.prefix);
    const plan = await getJson<TrialPlan>(deps.artifacts, keys.trial(ref.trialId));
    const settings = trialSettings(plan.config);
    const embedder = await deps.embedder(settings.embeddingModel);
    if (await indexUsable(deps, plan.collection, embedder)) {
      log.emit('info', `Using index ${plan.collection}.`, 'embedding');
      // Written even when nothing is embedded, so a resumed trial of the same id never counts a stale build.
      await putJson(
        deps.artifacts,
        keys.indexUsage(ref.trialId),
        embeddingUsage(settings.embeddingModel, []),
      );
      return { collection: plan.collection, batches: [] };
    }
    const documents = await readDocuments(deps.artifacts, ref.prefix);
    const chunks: AI4RAGChunk[] = [];
    const chunker = createChunker(settings.chunking, { embedder });
    for (const doc of documents) chunks.push(...(await chunker.chunk(doc)));
    // Semantic chunking embeds sentence groups before the chunks: their texts and tokens are this index's too.
    const usage = embeddingUsage(
      settings.embeddingModel,
      chunks.map((c) => c.text),
    );
    const chunkingCost = chunker.cost();
    usage.calls += chunkingCost.embedded;
    usage.promptTokens += chunkingCost.tokens;
    await putJson(deps.artifacts, keys.indexUsage(ref.trialId), usage);
    const c = settings.chunking;
    log.emit(
      'info',
      `Chunking documents using the ${c.method} method, chunk_size: ${c.chunkSize} and chunk_overlap: ${c.chunkOverlap}${chunkingDetails(c)}.`,
      'chunking',
    );
    // Creates the collection once, before batches are embedded concurrently.
    await deps.openStore(plan.collection, embedder, { createIfMissing: true });
    const batches = await writeChunkBatches(
      deps.artifacts,
      keys.batches(ref.trialId),
      {
        collection: plan.collection,
        embeddingModel: settings.embeddingModel,
        chunking: settings.chunking,
      },
      chunks,
    );
    log.emit(
      'info',
      `Embedding chunks using the ${settings.embeddingModel} model. Building index: ${plan.collection}.`,
      'embedding',
    );
    return { collection: plan.collection, batches };
  });
}

/** Term statistics per corpus, built once per process (a Lambda container evaluates many trials). */
const termStatsCache = new Map<string, Promise<TermStats>>();

/**
 * The local extractive model with the corpus' term statistics, so it abstains when the question's rare terms are
 * not in the retrieved context (without them it only sees the context).
 */
async function localModelFor(
  deps: ExperimentDeps,
  prefix: string,
  corpusHash: string,
): Promise<FoundationModel> {
  let stats = termStatsCache.get(corpusHash);
  if (!stats) {
    stats = readDocuments(deps.artifacts, prefix).then((docs) =>
      buildTermStats(docs.map((d) => d.text)),
    );
    stats.catch(() => termStatsCache.delete(corpusHash));
    termStatsCache.set(corpusHash, stats);
  }
  const options = { termStats: await stats };
  return deps.localModel?.(options) ?? new LocalExtractiveModel(options);
}

const CANNOT_ANSWER_PATTERN = /\b(cannot|can't|can not|unable to) answer\b/i;

function metricEntry(
  name: string,
  evaluator: string,
  values: readonly (number | null)[],
): PatternMetric {
  const valid = values.filter((v): v is number => v !== null && Number.isFinite(v));
  if (valid.length === 0) {
    return { name, evaluator, scores: { mean: null, ci_low: null, ci_high: null } };
  }
  const mean = valid.reduce((a, b) => a + b, 0) / valid.length;
  const ci = valid.length > 1 ? bootstrapCi(valid, { seed: 42 }) : undefined;
  return {
    name,
    evaluator,
    scores: {
      mean: round4(mean),
      ci_low: round4(ci?.low ?? null),
      ci_high: round4(ci?.high ?? null),
    },
  };
}

/** Descriptions shown with metrics (ai4rag's payload carries one per metric). */
const METRIC_DESCRIPTIONS: Record<string, string> = {
  answer_correctness: 'Token recall of the best-matching reference answer in the answer (unitxt).',
  faithfulness: 'Token precision of the answer against the retrieved contexts (unitxt).',
  context_correctness: 'MRR of the first gold document among the retrieved contexts (unitxt).',
  overall_score: 'Mean of the other metrics means (ai4rag custom).',
  answer_relevance: 'LLM judge: does the answer address the question (1-5 mapped to 0-1).',
  abstention_accuracy:
    'Unanswerable questions answered with "cannot answer" and answerable ones answered.',
  'recall@5': 'Fraction of gold documents among the first 5 distinct retrieved documents.',
  'mrr@10': 'Reciprocal rank of the first gold document (document level).',
  'ndcg@10': 'Binary-gain nDCG over distinct retrieved documents.',
  citation_precision:
    'Share of cited sentences supported by their cited chunk (token overlap); not in overall_score.',
};

/**
 * The tokens of a trial's evaluation: the answers (as the chat model reported them), the judge's calls, and the
 * embeddings — of the index when this trial built it (its index step counted the chunks) and of every question —
 * approximated as ceil(characters / 4). Unpriced: finalize prices them.
 */
async function trialUsage(
  deps: ExperimentDeps,
  ref: TrialRef,
  settings: TrialSettings,
  questions: readonly BenchmarkQuestion[],
  answers: readonly (
    | {
        ok: true;
        usage?: { promptTokens: number; completionTokens: number } | undefined;
        transform?: QueryTransformReport;
      }
    | { ok: false }
  )[],
  judge: { modelId: string; usage: JudgeUsage } | undefined,
): Promise<UsageSummary> {
  const answered = answers.filter((a) => a.ok);
  const reported = answered.flatMap((a) => (a.usage === undefined ? [] : [a.usage]));
  const rows: ModelUsageInput[] = [
    {
      modelId: settings.foundationModel,
      role: 'generation',
      calls: answered.length,
      promptTokens: reported.reduce((n, u) => n + u.promptTokens, 0),
      completionTokens: reported.reduce((n, u) => n + u.completionTokens, 0),
      unreportedCalls: answered.length - reported.length,
    },
  ];
  // The chat calls of multi_query / hyde, made by the trial's foundation model.
  const transformed = answered.flatMap((a) =>
    a.transform?.kind === 'hyde' || a.transform?.kind === 'multi_query' ? [a.transform] : [],
  );
  if (transformed.length > 0) {
    const tReported = transformed.flatMap((t) => (t.usage === undefined ? [] : [t.usage]));
    rows.push({
      modelId: settings.foundationModel,
      role: 'query_transform',
      calls: transformed.length,
      promptTokens: tReported.reduce((n, u) => n + u.promptTokens, 0),
      completionTokens: tReported.reduce((n, u) => n + u.completionTokens, 0),
      unreportedCalls: transformed.length - tReported.length,
    });
  }
  if (judge !== undefined) {
    rows.push({
      modelId: judge.modelId,
      role: 'judge',
      calls: judge.usage.calls,
      promptTokens: judge.usage.promptTokens,
      completionTokens: judge.usage.completionTokens,
      unreportedCalls: judge.usage.unreportedCalls,
    });
  }
  const index = await getJson<ModelUsageInput>(
    deps.artifacts,
    ledgerKeys(ref.prefix).indexUsage(ref.trialId),
  ).catch((error: unknown) => {
    if (error instanceof NotFoundError) return undefined;
    throw error;
  });
  if (index !== undefined && index.calls > 0) rows.push(index);
  rows.push(
    embeddingUsage(
      settings.embeddingModel,
      questions.map((q) => q.question),
    ),
  );
  return summarizeUsage(rows.filter((r) => r.calls > 0));
}

/**
 * The evaluate state of a trial: answers every benchmark question with the trial's retrieval and generation
 * settings (bounded concurrency), scores the answers with the unitxt metrics and the document-level retrieval
 * metrics, writes the pattern and its per-question results, and feeds the result cache. A question that fails is
 * recorded with its error and left out of the scores; the trial fails only when every question fails.
 * @throws {GenerationError} when no question could be answered (ai4rag's message).
 * @throws {TrialError} when the optimization metric has no value.
 */
export async function evaluateTrial(deps: ExperimentDeps, ref: TrialRef): Promise<TrialOutcome> {
  return withEvents(deps, ref.prefix, `evaluate-${ref.trialId}`, async (log) => {
    const started = Date.now();
    const keys = ledgerKeys(ref.prefix);
    const state = await readState(deps.artifacts, ref.prefix);
    const plan = await getJson<TrialPlan>(deps.artifacts, keys.trial(ref.trialId));
    const questions = await readBenchmark(deps.artifacts, ref.prefix);
    const settings = trialSettings(plan.config);
    const embedder = await deps.embedder(settings.embeddingModel);
    const markerKey = `${INDEX_MARKERS_PREFIX}${plan.collection}.json`;
    const store = await deps.openStore(plan.collection, embedder, { createIfMissing: false });
    if (!(await deps.artifacts.exists(markerKey))) {
      const stats = await store.stats();
      await putJson(deps.artifacts, markerKey, {
        collection: plan.collection,
        indexing: plan.indexing,
        corpus: state.corpus.hash,
        chunks: stats.chunks,
        builtAt: new Date().toISOString(),
      });
    }
    const model =
      settings.foundationModel === LOCAL_EXTRACTIVE_MODEL_ID
        ? await localModelFor(deps, ref.prefix, state.corpus.hash)
        : await deps.model(settings.foundationModel);
    log.emit(
      'info',
      `Retrieval and generation using collection: '${plan.collection}' and foundation model: '${settings.foundationModel}'${settings.retrieval.reranker ? `, reranking ${settings.retrieval.reranker.candidates} candidates with '${settings.retrieval.reranker.model}'` : ''}.`,
      'generation',
    );
    const rr = settings.retrieval.reranker;
    if (rr !== undefined && deps.reranker === undefined) {
      throw new TrialError(
        `${plan.patternName} reranks with '${rr.model}', but this runtime has no reranker.`,
      );
    }
    const reranker = rr === undefined ? undefined : await deps.reranker?.(rr.model);
    const rag = new SimpleRAG({
      retriever: new Retriever(store, retrieverOptions(settings, model)),
      model,
      templates: DEFAULT_TEMPLATES,
      // No fallback: a question the reranker failed on fails (and is recorded), rather than being scored as if
      // this configuration had been reranked.
      ...(rr !== undefined &&
        reranker !== undefined && {
          reranker: { reranker, candidates: rr.candidates, k: settings.retrieval.numberOfChunks },
        }),
    });
    let answeredSoFar = 0;
    const questionDone = () =>
      deps.onQuestion?.({
        pattern: plan.patternName,
        done: ++answeredSoFar,
        total: questions.length,
      });
    const answers = await mapLimit(questions, state.input.questionConcurrency, async (q) => {
      try {
        const a = await rag.generate(
          q.question,
          state.input.citations === true ? { citations: true } : {},
        );
        questionDone();
        return {
          ok: true as const,
          answer: a.answer,
          refs: a.referenceDocuments,
          usage: a.usage,
          ...(a.queryTransform && { transform: a.queryTransform }),
        };
      } catch (error) {
        questionDone();
        return { ok: false as const, error: describeError(error) };
      }
    });
    const answered = answers.filter((a) => a.ok).length;
    if (answered === 0) {
      const first = answers.find((a) => !a.ok);
      // ai4rag's message, so tools that read its warnings read ours.
      throw new GenerationError(
        `Unable to retrieve chunks and generate answers for foundation model: '${settings.foundationModel}' due to: ${first && !first.ok ? first.error : 'no questions'}`,
      );
    }
    log.emit(
      'info',
      `Evaluating RAG Pattern '${plan.patternName}' using ['unitxt', 'retrieval'${state.input.judgeModel === undefined ? '' : ", 'judge'"}].`,
      'evaluation',
    );
    const okIdx = answers.flatMap((a, i) => (a.ok ? [i] : []));
    const scored = scoreEvaluationData(
      okIdx.map((i) => {
        const a = answers[i] as { answer: string; refs: { documentId: string; text: string }[] };
        return evaluationItem(questions[i] as BenchmarkQuestion, a.answer, a.refs);
      }),
    );
    const perQuestion = new Map(scored.question_scores.map((s) => [s.question_id, s.metrics]));
    const retrievalValues: Record<'recall@5' | 'mrr@10' | 'ndcg@10', (number | null)[]> = {
      'recall@5': [],
      'mrr@10': [],
      'ndcg@10': [],
    };
    const abstention: (number | null)[] = [];
    const evaluation: EvaluationRecord[] = questions.map((q, i) => {
      const a = answers[i] as (typeof answers)[number];
      if (!a.ok) {
        return {
          question_id: q.questionId,
          question: q.question,
          correct_answers: q.correctAnswers,
          answer: '',
          answer_contexts: [],
          metrics: [],
          error: a.error,
        };
      }
      const ranked = a.refs.map((r) => r.documentId);
      const rm = q.documentKeys.length > 0 ? questionMetrics(ranked, q.documentKeys) : undefined;
      const extra = (['recall@5', 'mrr@10', 'ndcg@10'] as const).map((name) => {
        const v = rm ? round4(rm[name]) : null;
        retrievalValues[name].push(v);
        return { name, evaluator: 'retrieval', score: v };
      });
      const abstained = CANNOT_ANSWER_PATTERN.test(a.answer);
      const unanswerable = q.correctAnswers.length === 0;
      const abst = unanswerable === abstained ? 1 : 0;
      abstention.push(abst);
      return {
        question_id: q.questionId,
        question: q.question,
        correct_answers: q.correctAnswers,
        answer: a.answer,
        answer_contexts: a.refs.map((r) => ({ text: r.text, document_key: r.documentId })),
        metrics: [
          ...(perQuestion.get(q.questionId) ?? []).map((m) => ({
            name: m.name,
            evaluator: m.evaluator,
            score: m.value,
          })),
          ...extra,
          { name: 'abstention_accuracy', evaluator: 'custom', score: abst },
        ],
      };
    });
    const judged =
      state.input.judgeModel === undefined
        ? undefined
        : await judgeAnswerRelevance(
            await deps.model(state.input.judgeModel, 'judge'),
            okIdx.map((i) => ({
              question: (questions[i] as BenchmarkQuestion).question,
              answer: (answers[i] as { answer: string }).answer,
            })),
          );
    if (judged !== undefined) {
      okIdx.forEach((qi, j) => {
        evaluation[qi]?.metrics.push({
          name: 'answer_relevance',
          evaluator: 'judge',
          score: judged.values[j] ?? null,
        });
      });
    }
    const metrics: PatternMetric[] = [
      ...scored.metrics.map((m) => ({ ...m })),
      ...(judged === undefined
        ? []
        : [
            {
              name: 'answer_relevance',
              evaluator: 'judge',
              scores: judged.scores,
              model_id: state.input.judgeModel,
            } as PatternMetric,
          ]),
      metricEntry('abstention_accuracy', 'custom', abstention),
      ...(['recall@5', 'mrr@10', 'ndcg@10'] as const).map((name) =>
        metricEntry(name, 'retrieval', retrievalValues[name]),
      ),
    ];
    for (const m of metrics) {
      const description = METRIC_DESCRIPTIONS[m.name];
      if (description !== undefined) m.description = description;
      if (m.name === state.input.optimizationMetric) m.optimization_metric = true;
    }
    const objective = metrics.find((m) => m.name === state.input.optimizationMetric);
    const score = objective?.scores.mean ?? null;
    if (score === null) {
      throw new TrialError(
        `The optimization metric '${state.input.optimizationMetric}' has no value for ${plan.patternName} (no question has what it needs).`,
      );
    }
    if (answered < questions.length) {
      log.emit(
        'warning',
        `${plan.patternName}: ${questions.length - answered} of ${questions.length} question(s) failed and are left out of the scores.`,
        'evaluation',
      );
    }
    const usage = await trialUsage(
      deps,
      ref,
      settings,
      questions,
      answers,
      judged && state.input.judgeModel !== undefined
        ? { modelId: state.input.judgeModel, usage: judged.usage }
        : undefined,
    );
    const durationSeconds = Math.max(0, Math.round((Date.now() - started) / 1000));
    const pattern: PatternPayload = {
      name: plan.patternName,
      max_combinations: state.maxCombinations,
      evaluation: { metrics },
      duration_seconds: durationSeconds,
      settings: patternSettings(
        settings,
        state.storeKind,
        plan.collection,
        embedder.dimension,
        DEFAULT_TEMPLATES,
      ),
      iteration: plan.iteration,
    };
    const result: TrialResultFile = {
      trialId: ref.trialId,
      score,
      pattern,
      evaluation,
      durationSeconds,
      usage,
    };
    await putJson(deps.artifacts, keys.trialResult(ref.trialId), result);
    await putJson(deps.artifacts, keys.pattern(plan.patternName), pattern);
    await putJson(deps.artifacts, keys.patternEvaluation(plan.patternName), evaluation);
    const cache: CachedResult = { score, pattern, evaluation, usage };
    await putJson(deps.artifacts, `${RESULT_CACHE_PREFIX}${plan.cacheKey}.json`, cache);
    deps.onPattern?.(pattern, evaluation);
    return { trialId: ref.trialId, ok: true, score };
  });
}

/**
 * The record state: folds the round's outcomes into the ledger (scores, failures with their message, built
 * indexes). Failed trials score null, as ai4rag's optimizer records them.
 */
export async function recordTrials(
  deps: ExperimentDeps,
  ref: ExperimentRef,
  outcomes: readonly TrialOutcome[],
): Promise<{ recorded: number; failed: number }> {
  return withEvents(deps, ref.prefix, 'record', async (log) => {
    const state = await readState(deps.artifacts, ref.prefix);
    const keys = ledgerKeys(ref.prefix);
    let failed = 0;
    for (const outcome of outcomes) {
      const trial = state.trials.find((t) => t.trialId === outcome.trialId);
      if (trial === undefined || trial.status !== 'running') continue;
      if (outcome.ok) {
        const result = await getJson<TrialResultFile>(
          deps.artifacts,
          keys.trialResult(outcome.trialId),
        );
        trial.status = 'done';
        trial.score = result.score;
        trial.pattern = result.pattern;
        trial.duration_seconds = result.durationSeconds;
        if (result.usage !== undefined) trial.usage = result.usage;
        if (trial.collection !== undefined) state.indexes[trial.collection] = true;
      } else {
        failed += 1;
        trial.status = 'failed';
        trial.score = null;
        trial.error = failureMessage(outcome.error);
        log.emit('warning', trial.error);
      }
    }
    // Cached trials of the round count as built indexes too (their index exists from the run that scored them).
    for (const t of state.trials) {
      if (t.status === 'done' && t.collection !== undefined) state.indexes[t.collection] = true;
    }
    await writeState(deps.artifacts, ref.prefix, state);
    return { recorded: outcomes.length, failed };
  });
}

function mostFrequentError(trials: readonly LedgerTrial[]): string {
  const counts = new Map<string, { n: number; first: string }>();
  for (const t of trials) {
    if (t.error === undefined) continue;
    const cls = t.error.split(':')[0] ?? t.error;
    const entry = counts.get(cls);
    if (entry) entry.n += 1;
    else counts.set(cls, { n: 1, first: t.error });
  }
  let best: { n: number; first: string } | undefined;
  for (const e of counts.values()) if (!best || e.n > best.n) best = e;
  return best?.first ?? 'no trial was run';
}

/** Renders the report; injected so this module does not import the HTML renderer's size into every step. */
export type ReportRenderer = (data: import('./types.js').ReportData) => string;
/** Orders successful trials into the leaderboard. */
export type LeaderboardBuilder = (
  trials: readonly import('./types.js').TrialRecord[],
) => import('./types.js').LeaderboardEntry[];

/**
 * The finalize state: writes `leaderboard.json`, `pattern.json` (the best pattern), `evaluation_results.json`
 * (its per-question results) and the self-contained `report.html`.
 * @throws {ExperimentError} after writing the report when no trial succeeded (with the most frequent error).
 */
export async function finalizeExperiment(
  deps: ExperimentDeps,
  ref: ExperimentRef,
  render: { report: ReportRenderer; leaderboard: LeaderboardBuilder },
): Promise<ExperimentArtefacts> {
  const keys = ledgerKeys(ref.prefix);
  const log = new EventLog(deps, ref.prefix, 'finalize');
  const state = await readState(deps.artifacts, ref.prefix);
  // Tokens are recorded per trial; the experiment's price table turns them into USD here, for every trial alike.
  const prices = state.input.prices;
  const trials = priceTrials(
    state.trials.filter((t) => t.status !== 'running'),
    prices,
  );
  const leaderboard = render.leaderboard(trials);
  const best = leaderboard[0];
  let bestEvaluation: EvaluationRecord[] = [];
  if (best !== undefined) {
    bestEvaluation = await getJson<EvaluationRecord[]>(
      deps.artifacts,
      keys.patternEvaluation(best.pattern_name),
    );
    const documentsPrefix = state.input.documentsPrefix;
    await putJson(deps.artifacts, keys.bestPattern, {
      ...best.pattern,
      indexing: {
        documents_prefix: documentsPrefix,
        collection_name: best.pattern.settings.vector_store_binding.collection_name,
        chunking: best.pattern.settings.chunking,
        embedding: best.pattern.settings.embedding,
      },
    });
    await putJson(deps.artifacts, keys.evaluationResults, bestEvaluation);
  }
  await putJson(deps.artifacts, keys.leaderboard, leaderboard);
  // The report compares the two best patterns question by question.
  const runnerUp = leaderboard[1];
  const runnerUpEvaluation =
    runnerUp === undefined
      ? undefined
      : await getJson<EvaluationRecord[]>(
          deps.artifacts,
          keys.patternEvaluation(runnerUp.pattern_name),
        );
  const failed = trials.filter((t) => t.status === 'failed').length;
  log.emit(
    best ? 'info' : 'error',
    best
      ? `Best pattern: ${best.pattern_name} (${state.input.optimizationMetric} ${best.score}) after ${trials.length} trial(s), ${failed} failed.`
      : `All ${trials.length} trial(s) failed: ${mostFrequentError(trials)}`,
    'optimization',
  );
  log.emit('info', 'Experiment optimization process finished.');
  await log.flush();
  const events = await readEvents(deps.artifacts, ref.prefix);
  const data = {
    experiment_id: state.experimentId,
    created_at: state.createdAt,
    optimizer: state.optimizer,
    optimization_metric: state.input.optimizationMetric,
    max_combinations: state.maxCombinations,
    trials: trials.map(({ trialId: _t, status: _s, collection: _c, ...t }) => t),
    leaderboard,
    best_evaluation: bestEvaluation,
    ...(runnerUpEvaluation !== undefined && { runner_up_evaluation: runnerUpEvaluation }),
    events,
    questions: state.benchmark.questions,
    documents: state.corpus.documents,
    usage: experimentUsage(trials, prices),
  };
  await putJson(deps.artifacts, keys.reportData, data);
  await deps.artifacts.put(keys.report, render.report(data), 'text/html; charset=utf-8');
  if (best === undefined) {
    throw new ExperimentError(mostFrequentError(trials));
  }
  return {
    experimentId: state.experimentId,
    leaderboardKey: keys.leaderboard,
    patternKey: keys.bestPattern,
    evaluationResultsKey: keys.evaluationResults,
    reportKey: keys.report,
    best: { pattern_name: best.pattern_name, score: best.score },
    trials: trials.length,
    failed,
  };
}
