/**
 * `npm run bench -- --segments`: the pgvector store's HNSW segment policy (`wantsSegment`, `planMerges` in
 * `ann-index.ts`) replayed on a growing collection, beside the policy it replaced (a new segment at 1/16 of the
 * indexed rows without a cap, at most four segments, the adjacent pair with the fewest rows merged). A replay of the
 * rules, not a timing: it counts what a build after every `step` new rows does. Per scenario and policy it prints the
 * rows put into graphs per row stored (the build work), and the segments a search probes and the rows it scans
 * exactly (after the last segment), as the mean and the most over the builds. The costs those counts stand for are
 * measured by `npm run bench -- --hnsw` (a probe) and `--scale` / `--probe` (searches at each size).
 *
 * Scenarios: a fresh collection grown to 1M rows, and a collection of 1M rows in one segment grown to 2M; builds
 * after every 20,000 and every 5,000 rows; without a budget (the CLI's `ai4rag ingest` and `ai4rag index`), with
 * the 100,000 rows a commit's index step may build (`COMMIT_INDEX_ROWS`, the deployed embed-batch function), and
 * with that plus the deployment's scheduled step (`SCHEDULED_INDEX_ROWS`) after every 100,000 rows stored.
 */
import { COMMIT_INDEX_ROWS, SCHEDULED_INDEX_ROWS } from '../shared/src/ingest/knowledge-base.js';
import {
  cheapestPair,
  planMerges,
  SEGMENT_GROWTH,
  SEGMENT_MIN_ROWS,
  wantsSegment,
} from '../shared/src/vectorstores/pgvector/ann-index.js';

/** A segment policy: whether the tail becomes a segment, and the merges (positions) after it. */
interface Policy {
  label: string;
  wants(tail: number, indexed: number, segments: number): boolean;
  merges(rows: readonly number[], budget: number): number[];
}

const CURRENT: Policy = {
  label: 'now',
  wants: (tail, indexed, segments) => wantsSegment(tail, indexed, segments, false),
  merges: planMerges,
};

/** The policy before (commit d91f282), as the baseline. */
const FORMER: Policy = {
  label: 'before',
  wants: (tail, indexed, segments) =>
    tail > 0 && (segments === 0 || tail >= Math.max(SEGMENT_MIN_ROWS, indexed / SEGMENT_GROWTH)),
  merges(rows, budget) {
    const sizes = [...rows];
    const plan: number[] = [];
    let used = 0;
    while (sizes.length > 4) {
      const at = cheapestPair(sizes);
      const sum = (sizes[at] as number) + (sizes[at + 1] as number);
      if (used + sum > budget) break;
      used += sum;
      sizes.splice(at, 2, sum);
      plan.push(at);
    }
    return plan;
  },
};

/** What a replay counted. */
export interface Replay {
  rebuiltPerRow: number;
  meanSegments: number;
  mostSegments: number;
  meanTail: number;
  mostTail: number;
  segments: number[];
}

/**
 * Grows a collection from `start` rows (one segment) to `end` by `step` rows, a build after each step putting at most
 * `budget` rows into graphs (the oldest rows of the tail first, as the store does), under `policy`.
 */
export function replay(
  policy: Policy,
  start: number,
  end: number,
  step: number,
  budget: number,
  scheduled?: { every: number; budget: number },
): Replay {
  const segments = start > 0 ? [start] : [];
  let tail = 0;
  let rebuilt = 0;
  let builds = 0;
  let sumSegments = 0;
  let mostSegments = 0;
  let sumTail = 0;
  let mostTail = 0;
  const build = (total: number, limit: number): void => {
    let used = 0;
    if (policy.wants(tail, total - tail, segments.length)) {
      const take = Math.min(tail, limit);
      segments.push(take);
      tail -= take;
      used = take;
    }
    for (const at of policy.merges(segments, limit - used)) {
      const merged = (segments[at] as number) + (segments[at + 1] as number);
      segments.splice(at, 2, merged);
      used += merged;
    }
    rebuilt += used;
  };
  for (let total = start + step; total <= end; total += step) {
    tail += step;
    build(total, budget);
    if (scheduled !== undefined && (total - start) % scheduled.every === 0) {
      build(total, scheduled.budget);
    }
    builds++;
    sumSegments += segments.length;
    mostSegments = Math.max(mostSegments, segments.length);
    sumTail += tail;
    mostTail = Math.max(mostTail, tail);
  }
  return {
    rebuiltPerRow: rebuilt / (end - start),
    meanSegments: sumSegments / builds,
    mostSegments,
    meanTail: sumTail / builds,
    mostTail,
    segments,
  };
}

const f = (n: number, digits = 2) => n.toFixed(digits);
const k = (n: number) => `${Math.round(n / 1000)}k`;

/** Prints the replays of both policies, side by side per scenario. */
export function runSegments(): void {
  const scenarios = [
    { label: '0 → 1M', start: 0, end: 1_000_000 },
    { label: '1M → 2M', start: 1_000_000, end: 2_000_000 },
  ];
  // Without a budget (the CLI); with a commit's; with a commit's and the scheduled step's every 100,000 rows stored
  // (an hour's uploads, say).
  const settings = [
    { budget: Number.POSITIVE_INFINITY, label: 'none' },
    { budget: COMMIT_INDEX_ROWS, label: `${k(COMMIT_INDEX_ROWS)} rows a build` },
    {
      budget: COMMIT_INDEX_ROWS,
      label: `${k(COMMIT_INDEX_ROWS)} rows a build, and ${k(SCHEDULED_INDEX_ROWS)} every 100k rows (scheduled step)`,
      scheduled: { every: 100_000, budget: SCHEDULED_INDEX_ROWS },
    },
  ];
  for (const setting of settings) {
    for (const step of [20_000, 5_000]) {
      for (const s of scenarios) {
        const [before, now] = [FORMER, CURRENT].map((p) =>
          replay(p, s.start, s.end, step, setting.budget, setting.scheduled),
        ) as [Replay, Replay];
        const line = (p: Policy, r: Replay) =>
          `${p.label.padEnd(6)} rows built per row ${f(r.rebuiltPerRow).padStart(5)}  segments probed mean ${f(r.meanSegments, 1).padStart(4)} / most ${String(r.mostSegments).padStart(2)}  rows scanned exactly mean ${k(r.meanTail).padStart(4)} / most ${k(r.mostTail).padStart(4)}  segments at the end ${r.segments.map(k).join(' ')}`;
        console.log(
          `segments ${s.label.padEnd(8)} build every ${k(step)} rows, budget ${setting.label}`,
        );
        console.log(`  ${line(FORMER, before)}`);
        console.log(`  ${line(CURRENT, now)}`);
      }
    }
  }
}
