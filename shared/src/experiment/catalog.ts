/**
 * The catalog of experiments in an artifacts store: which experiments exist, how far each got, what it produced
 * (leaderboard, patterns, per-question results, events), the collections they and the knowledge base use, and
 * the removal of an experiment together with the indexes no other experiment uses. Read by
 * `ai4rag experiments list|remove` and by the web app of `ai4rag serve`.
 */
import { NotFoundError, ValidationError } from '../errors.js';
import { getJson, type ObjectStore } from '../ports/object-store.js';
import type { CatalogTrial, CollectionInfo } from './catalog-types.js';
import { EXPERIMENT_ID } from './input.js';
import {
  EXPERIMENTS_PREFIX,
  type ExperimentState,
  experimentPrefix,
  INDEX_MARKERS_PREFIX,
  ledgerKeys,
  RESULT_CACHE_PREFIX,
  readEvents,
} from './ledger.js';
import type {
  EvaluationRecord,
  LeaderboardEntry,
  PatternPayload,
  ReportData,
  StatusEvent,
} from './types.js';

export type { CatalogTrial, CollectionInfo };

/** How far an experiment got: `finished` has its artefacts; `incomplete` stopped (or still runs) before them. */
export type ExperimentProgress = 'finished' | 'incomplete';

/** One experiment as listed. */
export interface ExperimentSummary {
  experiment_id: string;
  created_at: string;
  status: ExperimentProgress;
  optimizer: string;
  optimization_metric: string;
  /** The trial budget of the input (at most the number of valid configurations). */
  max_evals: number;
  /** Trials recorded so far: done (cached ones included), failed and running. */
  trials: { done: number; failed: number; running: number; cached: number };
  best?: { pattern_name: string; score: number };
  questions: number;
  documents: number;
  /** The indexes (collections) the experiment's trials built or reused. */
  collections: string[];
}

/** Everything the experiment view shows. */
export interface ExperimentDetail extends ExperimentSummary {
  trials_list: CatalogTrial[];
  /** Present once the experiment finished. */
  leaderboard?: LeaderboardEntry[];
  events: StatusEvent[];
}

/** What {@link removeExperiment} did. */
export interface RemovalReport {
  experiment_id: string;
  /** Objects of the experiment deleted (its artefacts, ledger, trials and inputs). */
  objects_deleted: number;
  /** Indexes dropped: used by this experiment only. */
  collections_dropped: string[];
  /** Indexes kept because other experiments use them, with those experiments. */
  collections_kept: { name: string; used_by: string[] }[];
  /** Result-cache entries whose pattern served a dropped index (a later run would bind to a missing index). */
  cache_entries_deleted: number;
}

/** Options of {@link removeExperiment}. */
export interface RemoveExperimentOptions {
  /**
   * Drops one collection of the vector store (built with the embedding model named by its index marker, when
   * known); resolves false when it did not exist.
   */
  dropCollection(collection: string, embeddingModel: string | undefined): Promise<boolean>;
}

const STATE_FILE = 'state.json';

/**
 * Checks an experiment id as a user typed it.
 * @throws {ValidationError} naming the id when it cannot be one.
 */
export function checkExperimentId(id: string): string {
  if (!EXPERIMENT_ID.test(id)) {
    throw new ValidationError(
      `experiment id "${id}" is not valid (letters, digits, - and _ only, at most 63)`,
    );
  }
  return id;
}

async function readOptional<T>(store: ObjectStore, key: string): Promise<T | undefined> {
  try {
    return await getJson<T>(store, key);
  } catch (error) {
    if (error instanceof NotFoundError) return undefined;
    throw error;
  }
}

/** Ids of the experiments that have a ledger, sorted. */
export async function listExperimentIds(store: ObjectStore): Promise<string[]> {
  const ids = new Set<string>();
  for (const key of await store.list(EXPERIMENTS_PREFIX)) {
    const rest = key.slice(EXPERIMENTS_PREFIX.length);
    const slash = rest.indexOf('/');
    if (slash > 0 && rest.slice(slash + 1) === STATE_FILE) ids.add(rest.slice(0, slash));
  }
  return [...ids].sort();
}

function collectionsOf(state: ExperimentState): string[] {
  const names = new Set(Object.keys(state.indexes ?? {}));
  for (const t of state.trials) if (t.collection !== undefined) names.add(t.collection);
  return [...names].sort();
}

function summarize(
  state: ExperimentState,
  leaderboard: LeaderboardEntry[] | undefined,
): ExperimentSummary {
  const trials = { done: 0, failed: 0, running: 0, cached: 0 };
  let best: { pattern_name: string; score: number } | undefined;
  for (const t of state.trials) {
    trials[t.status] += 1;
    if (t.cached === true) trials.cached += 1;
    if (t.status === 'done' && t.score !== null && (best === undefined || t.score > best.score)) {
      best = { pattern_name: t.pattern_name, score: t.score };
    }
  }
  const top = leaderboard?.[0];
  if (top !== undefined) best = { pattern_name: top.pattern_name, score: top.score };
  return {
    experiment_id: state.experimentId,
    created_at: state.createdAt,
    status: state.finished && leaderboard !== undefined ? 'finished' : 'incomplete',
    optimizer: state.optimizer,
    optimization_metric: state.input.optimizationMetric,
    max_evals: Math.min(state.input.maxEvals, state.candidates.length),
    trials,
    ...(best !== undefined && { best }),
    questions: state.benchmark.questions,
    documents: state.corpus.documents,
    collections: collectionsOf(state),
  };
}

async function readLedger(store: ObjectStore, id: string): Promise<ExperimentState> {
  checkExperimentId(id);
  const state = await readOptional<ExperimentState>(store, ledgerKeys(experimentPrefix(id)).state);
  if (state === undefined) throw new NotFoundError(`no experiment "${id}"`);
  return state;
}

/**
 * Every experiment of the store, newest first.
 * @example const experiments = await listExperiments(runtime.objectStore);
 */
export async function listExperiments(store: ObjectStore): Promise<ExperimentSummary[]> {
  const out: ExperimentSummary[] = [];
  for (const id of await listExperimentIds(store)) {
    const keys = ledgerKeys(experimentPrefix(id));
    const state = await readOptional<ExperimentState>(store, keys.state);
    if (state === undefined) continue;
    out.push(summarize(state, await readOptional<LeaderboardEntry[]>(store, keys.leaderboard)));
  }
  return out.sort(
    (a, b) =>
      b.created_at.localeCompare(a.created_at) || a.experiment_id.localeCompare(b.experiment_id),
  );
}

/**
 * One experiment: its summary, trials (running ones included), leaderboard once finished, and status events.
 * @throws {NotFoundError} when the store has no such experiment.
 * @throws {ValidationError} when the id cannot be an experiment id.
 */
export async function readExperiment(store: ObjectStore, id: string): Promise<ExperimentDetail> {
  const state = await readLedger(store, id);
  const keys = ledgerKeys(experimentPrefix(id));
  const leaderboard = await readOptional<LeaderboardEntry[]>(store, keys.leaderboard);
  return {
    ...summarize(state, leaderboard),
    trials_list: state.trials.map((t) => ({
      trial_id: t.trialId,
      pattern_name: t.pattern_name,
      iteration: t.iteration,
      status: t.status,
      score: t.score,
      cached: t.cached === true,
      config: t.config,
      duration_seconds: t.duration_seconds,
      ...(t.collection !== undefined && { collection: t.collection }),
      ...(t.error !== undefined && { error: t.error }),
    })),
    ...(leaderboard !== undefined && { leaderboard }),
    events: await readEvents(store, experimentPrefix(id)),
  };
}

/** The report data of a finished experiment, or undefined before it finished. */
export async function readReportData(
  store: ObjectStore,
  id: string,
): Promise<ReportData | undefined> {
  await readLedger(store, id);
  return readOptional<ReportData>(store, ledgerKeys(experimentPrefix(id)).reportData);
}

function checkPatternName(name: string): string {
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(name)) {
    throw new ValidationError(`pattern name "${name}" is not valid (e.g. Pattern3)`);
  }
  return name;
}

/**
 * A pattern of an experiment (`patterns/<name>/pattern.json`).
 * @throws {NotFoundError} when the experiment or the pattern does not exist.
 */
export async function readPattern(
  store: ObjectStore,
  id: string,
  patternName: string,
): Promise<PatternPayload> {
  await readLedger(store, id);
  const key = ledgerKeys(experimentPrefix(id)).pattern(checkPatternName(patternName));
  const pattern = await readOptional<PatternPayload>(store, key);
  if (pattern === undefined) throw new NotFoundError(`experiment "${id}" has no ${patternName}`);
  return pattern;
}

/**
 * The per-question results of one pattern (`patterns/<name>/evaluation_results.json`).
 * @throws {NotFoundError} when the experiment or the pattern does not exist.
 */
export async function readPatternEvaluation(
  store: ObjectStore,
  id: string,
  patternName: string,
): Promise<EvaluationRecord[]> {
  await readLedger(store, id);
  const key = ledgerKeys(experimentPrefix(id)).patternEvaluation(checkPatternName(patternName));
  const records = await readOptional<EvaluationRecord[]>(store, key);
  if (records === undefined) throw new NotFoundError(`experiment "${id}" has no ${patternName}`);
  return records;
}

interface IndexMarker {
  collection: string;
  chunks?: number;
  indexing?: { embedding?: { model_id?: string } };
}

/** Which experiments use each index collection. */
async function indexUsers(store: ObjectStore): Promise<Map<string, string[]>> {
  const users = new Map<string, string[]>();
  for (const id of await listExperimentIds(store)) {
    const state = await readOptional<ExperimentState>(
      store,
      ledgerKeys(experimentPrefix(id)).state,
    );
    if (state === undefined) continue;
    for (const c of collectionsOf(state)) users.set(c, [...(users.get(c) ?? []), id]);
  }
  return users;
}

/**
 * The collections the store knows: the served one, every collection with document statuses (knowledge bases)
 * and every experiment index (its marker), with the experiments using it.
 * @example const collections = await listCollections(runtime.objectStore, runtime.config.collection);
 */
export async function listCollections(
  store: ObjectStore,
  served: string,
): Promise<CollectionInfo[]> {
  const kb = new Set<string>([served]);
  for (const key of await store.list('status/')) {
    const name = key.split('/')[1];
    if (name !== undefined && name !== '' && !name.startsWith('.')) kb.add(name);
  }
  const users = await indexUsers(store);
  const out: CollectionInfo[] = [...kb]
    .sort()
    .map((name) => ({ name, kind: 'knowledge_base', experiments: users.get(name) ?? [] }));
  for (const key of await store.list(INDEX_MARKERS_PREFIX)) {
    if (!key.endsWith('.json')) continue;
    const marker = await readOptional<IndexMarker>(store, key);
    const name = marker?.collection ?? key.slice(INDEX_MARKERS_PREFIX.length, -'.json'.length);
    if (kb.has(name)) continue;
    const model = marker?.indexing?.embedding?.model_id;
    out.push({
      name,
      kind: 'experiment_index',
      ...(marker?.chunks !== undefined && { chunks: marker.chunks }),
      ...(model !== undefined && { embedding_model: model }),
      experiments: users.get(name) ?? [],
    });
  }
  return out;
}

/**
 * Removes an experiment: drops the indexes only it uses (others keep theirs), deletes their index markers and
 * the result-cache entries bound to them, then the experiment's objects — its `state.json` last, so an
 * interrupted removal is still listed and can be run again.
 * @throws {NotFoundError} when the store has no such experiment.
 * @throws {ValidationError} when the id cannot be an experiment id.
 * @example await removeExperiment(runtime.objectStore, 'exp-1', { dropCollection });
 */
export async function removeExperiment(
  store: ObjectStore,
  id: string,
  options: RemoveExperimentOptions,
): Promise<RemovalReport> {
  const state = await readLedger(store, id);
  const users = await indexUsers(store);
  const dropped: string[] = [];
  const kept: { name: string; used_by: string[] }[] = [];
  for (const collection of collectionsOf(state)) {
    const others = (users.get(collection) ?? []).filter((other) => other !== id);
    if (others.length > 0) {
      kept.push({ name: collection, used_by: others });
      continue;
    }
    const markerKey = `${INDEX_MARKERS_PREFIX}${collection}.json`;
    const marker = await readOptional<IndexMarker>(store, markerKey);
    await options.dropCollection(collection, marker?.indexing?.embedding?.model_id);
    await store.delete(markerKey);
    dropped.push(collection);
  }
  let cacheDeleted = 0;
  if (dropped.length > 0) {
    const gone = new Set(dropped);
    for (const key of await store.list(RESULT_CACHE_PREFIX)) {
      const entry = await readOptional<{ pattern?: PatternPayload }>(store, key);
      const bound = entry?.pattern?.settings?.vector_store_binding?.collection_name;
      if (bound !== undefined && gone.has(bound)) {
        await store.delete(key);
        cacheDeleted += 1;
      }
    }
  }
  const prefix = experimentPrefix(id);
  const stateKey = ledgerKeys(prefix).state;
  const keys = (await store.list(prefix)).filter((k) => k !== stateKey);
  for (const key of keys) await store.delete(key);
  await store.delete(stateKey);
  return {
    experiment_id: id,
    objects_deleted: keys.length + 1,
    collections_dropped: dropped,
    collections_kept: kept,
    cache_entries_deleted: cacheDeleted,
  };
}
