import { ValidationError } from '../errors.js';

/** One entry of a ranked list: a chunk id and its backend score (higher is better). */
export interface ScoredId {
  id: string;
  score: number;
}

/** A ranked list, best first. Fusion keys entries by chunk id, never by text. */
export type RankedList = readonly ScoredId[];

interface Acc {
  score: number;
  bestRank: number;
}

function finish(acc: Map<string, Acc>): ScoredId[] {
  return [...acc.entries()]
    .sort(
      ([ida, a], [idb, b]) =>
        b.score - a.score || a.bestRank - b.bestRank || (ida < idb ? -1 : ida > idb ? 1 : 0),
    )
    .map(([id, a]) => ({ id, score: a.score }));
}

function add(acc: Map<string, Acc>, id: string, score: number, rank: number): void {
  const cur = acc.get(id);
  if (cur === undefined) acc.set(id, { score, bestRank: rank });
  else {
    cur.score += score;
    if (rank < cur.bestRank) cur.bestRank = rank;
  }
}

/** Within one list, the first occurrence of an id counts (a list should not repeat ids; be lenient). */
function* uniqueRanked(list: RankedList): Generator<[ScoredId, number]> {
  const seen = new Set<string>();
  let rank = 0;
  for (const item of list) {
    if (seen.has(item.id)) continue;
    seen.add(item.id);
    rank += 1;
    yield [item, rank];
  }
}

/**
 * Reciprocal rank fusion: score(id) = Σ over lists of 1 / (k + rank), rank starting at 1, a missing entry
 * contributing nothing. Ties are broken by the best single rank, then by id, so the output is deterministic.
 * @throws {ValidationError} when `k` is not a finite number ≥ 0.
 * @example rrfFuse([[{ id: 'a', score: 0.9 }], [{ id: 'b', score: 3 }, { id: 'a', score: 1 }]], 60)
 * // [{ id: 'a', score: 1/61 + 1/62 }, { id: 'b', score: 1/61 }]
 */
export function rrfFuse(lists: readonly RankedList[], k = 60): ScoredId[] {
  if (!Number.isFinite(k) || k < 0) throw new ValidationError(`RRF k must be ≥ 0, got ${k}`);
  const acc = new Map<string, Acc>();
  for (const list of lists) {
    for (const [item, rank] of uniqueRanked(list)) add(acc, item.id, 1 / (k + rank), rank);
  }
  return finish(acc);
}

function minMax(list: RankedList): Map<string, number> {
  const out = new Map<string, number>();
  let min = Number.POSITIVE_INFINITY;
  let max = Number.NEGATIVE_INFINITY;
  for (const { score } of list) {
    if (score < min) min = score;
    if (score > max) max = score;
  }
  for (const [item] of uniqueRanked(list)) {
    out.set(item.id, max === min ? 1 : (item.score - min) / (max - min));
  }
  return out;
}

/**
 * Weighted score fusion (ai4rag's in-memory aggregator): score = α·minmax(dense) + (1 − α)·minmax(keyword).
 * Min-max maps each list to [0, 1]; a list whose scores are all equal maps to 1.0; a missing entry counts 0.
 * @throws {ValidationError} when `alpha` is outside [0, 1].
 * @example weightedFuse([{ id: 'a', score: 0.9 }, { id: 'b', score: 0.5 }], [{ id: 'b', score: 7 }], 0.5)
 * // [{ id: 'a', score: 0.5 }, { id: 'b', score: 0.5 }]  (tie: both best rank 1, then id order)
 */
export function weightedFuse(dense: RankedList, keyword: RankedList, alpha: number): ScoredId[] {
  if (!Number.isFinite(alpha) || alpha < 0 || alpha > 1) {
    throw new ValidationError(`weighted fusion alpha must be in [0, 1], got ${alpha}`);
  }
  const acc = new Map<string, Acc>();
  const sides: [RankedList, number][] = [
    [dense, alpha],
    [keyword, 1 - alpha],
  ];
  for (const [list, weight] of sides) {
    const norm = minMax(list);
    for (const [item, rank] of uniqueRanked(list))
      add(acc, item.id, weight * (norm.get(item.id) ?? 0), rank);
  }
  return finish(acc);
}

/**
 * Distribution-based score fusion ("normalized"). Each list's scores are mapped to [0, 1] by
 * (s − (μ − 3σ)) / 6σ, clipped, with μ and σ the list's mean and population standard deviation (σ = 0 → 1.0),
 * then summed across lists (missing → 0). ai4rag's "normalized" silently fell through to RRF; this is a real one.
 * @example normalizedFuse([[{ id: 'a', score: 2 }, { id: 'b', score: 0 }]])
 * // μ 1, σ 1: a → (2 − (−2)) / 6 = 0.6667, b → 0.3333
 */
export function normalizedFuse(lists: readonly RankedList[]): ScoredId[] {
  const acc = new Map<string, Acc>();
  for (const list of lists) {
    const items = [...uniqueRanked(list)];
    if (items.length === 0) continue;
    const mean = items.reduce((s, [it]) => s + it.score, 0) / items.length;
    const variance = items.reduce((s, [it]) => s + (it.score - mean) ** 2, 0) / items.length;
    // Treat float noise around identical scores as σ = 0.
    const raw = Math.sqrt(variance);
    const sigma = raw <= 1e-12 * Math.max(1, Math.abs(mean)) ? 0 : raw;
    for (const [item, rank] of items) {
      const norm =
        sigma === 0 ? 1 : Math.min(1, Math.max(0, (item.score - (mean - 3 * sigma)) / (6 * sigma)));
      add(acc, item.id, norm, rank);
    }
  }
  return finish(acc);
}
