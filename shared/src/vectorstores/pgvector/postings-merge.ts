/**
 * The client half of the keyword index's deeper read (`keyword-index.ts`, {@link keywordPostingsRead}): the server
 * sends each query term's top postings packed, this sums them per chunk and picks the candidates to rescore, each
 * with an upper bound on its exact score, so the rescoring can skip those that cannot reach the top k.
 *
 * Summing here instead of in SQL: at 1M chunks a deeper read takes about 28,000 postings, 99 % of whose chunks match
 * one term only, and the SQL hash aggregate and sort over them cost more than reading them (README, "Summing the
 * deeper read in the client"). Pure and synchronous; its tables are reused between calls and grow with the largest read.
 *
 * @see keywordPostingsRead for the packing: per posting, the row id as a big-endian int8 and the weight as a
 * big-endian float4 (`int8send(rid) || float4send(w)`), in any order.
 */

/** Bytes per packed posting: int8 row id, float4 weight. */
export const POSTING_BYTES = 12;

/** One query term's read: its query weight and its packed postings from each postings table (null: none). */
export interface TermRead {
  qw: number;
  lists: readonly (Uint8Array | null)[];
}

/** Candidates best first by partial score (ties by row id), with upper bounds on their exact scores. */
export interface Candidates {
  rids: number[];
  partials: number[];
  uppers: number[];
}

/** The open-addressing table: row ids, partial sums, and the cut floors of the terms each was read under. */
interface Table {
  keys: Float64Array;
  sums: Float64Array;
  seen: Float64Array;
  stamps: Int32Array;
  stamp: number;
}

/** Largest table kept between calls (slots; 28 bytes each, 7 MiB): a larger read gets a table of its own. */
export const RETAINED_SLOTS = 1 << 18;

let kept: Table | undefined;

/** A table of at least twice `postings` slots, cleared (by a new stamp), reused when it is small enough to keep. */
function tableFor(postings: number): Table {
  let size = 1024;
  while (size < 2 * postings) size *= 2;
  const make = (): Table => ({
    keys: new Float64Array(size),
    sums: new Float64Array(size),
    seen: new Float64Array(size),
    stamps: new Int32Array(size),
    stamp: 0,
  });
  if (size > RETAINED_SLOTS) return { ...make(), stamp: 1 };
  if (kept === undefined || kept.keys.length < size) kept = make();
  kept.stamp = kept.stamp >= 0x7fffffff ? 1 : kept.stamp + 1;
  if (kept.stamp === 1) kept.stamps.fill(0);
  return kept;
}

/** The k-th largest value (1-based) of `a`, reordering it (quickselect). */
function kthLargest(a: Float64Array, k: number): number {
  let lo = 0;
  let hi = a.length - 1;
  const want = k - 1;
  while (lo < hi) {
    const pivot = a[(lo + hi) >>> 1] as number;
    let i = lo;
    let j = hi;
    while (i <= j) {
      while ((a[i] as number) > pivot) i += 1;
      while ((a[j] as number) < pivot) j -= 1;
      if (i <= j) {
        const t = a[i] as number;
        a[i] = a[j] as number;
        a[j] = t;
        i += 1;
        j -= 1;
      }
    }
    if (want <= j) hi = j;
    else if (want >= i) lo = i;
    else break;
  }
  return a[want] as number;
}

/**
 * Sums the postings read (`reads`, each list at most `depth` postings) per chunk and returns the best `limit`
 * chunks by that partial score, ties by row id (as `ORDER BY sum DESC, rid` would). A chunk's upper bound is its
 * partial score plus, for each term it was not read under, the most that term can add: the query weight times the
 * lowest weight read from the term's lists that were cut (`depth` postings read, so more may exist; the larger
 * lowest when both were), 0 when no list was cut. A chunk's posting for a term is in one list, and a posting not
 * read weighs at most the lowest read from its list, so the bound holds for every chunk, read or not.
 * @example
 * // term a (qw 2): chunk 1 w 3, chunk 2 w 1 (list cut at depth 2); term b (qw 1): chunk 2 w 4 (not cut)
 * mergeCandidates(
 *   [{ qw: 2, lists: [packPostings([[1, 3], [2, 1]])] }, { qw: 1, lists: [packPostings([[2, 4]])] }], 2, 10)
 * // { rids: [1, 2], partials: [6, 6], uppers: [6, 6] }: b's list was read whole, so chunk 1 has no b to add
 */
export function mergeCandidates(
  reads: readonly TermRead[],
  depth: number,
  limit: number,
): Candidates {
  let total = 0;
  const cutFloor: number[] = [];
  for (const r of reads) {
    let floor = 0;
    for (const list of r.lists) {
      if (list === null) continue;
      const n = Math.floor(list.byteLength / POSTING_BYTES);
      total += n;
      if (n < depth || n === 0) continue;
      const view = new DataView(list.buffer, list.byteOffset, list.byteLength);
      let low = Number.POSITIVE_INFINITY;
      for (let i = 0; i < n; i += 1) low = Math.min(low, view.getFloat32(i * POSTING_BYTES + 8));
      floor = Math.max(floor, r.qw * low);
    }
    cutFloor.push(floor);
  }
  const allFloors = cutFloor.reduce((a, b) => a + b, 0);
  const { keys, sums, seen, stamps, stamp } = tableFor(total);
  const size = keys.length;
  const mask = size - 1;
  const shift = 32 - Math.log2(size);
  const slots = new Int32Array(total);
  let count = 0;
  reads.forEach((r, t) => {
    const floor = cutFloor[t] as number;
    for (const list of r.lists) {
      if (list === null) continue;
      const view = new DataView(list.buffer, list.byteOffset, list.byteLength);
      const n = Math.floor(list.byteLength / POSTING_BYTES);
      for (let i = 0; i < n; i += 1) {
        const o = i * POSTING_BYTES;
        const hi = view.getUint32(o);
        const lo = view.getUint32(o + 4);
        const rid = hi * 4294967296 + lo;
        const s = r.qw * view.getFloat32(o + 8);
        let h = Math.imul(lo ^ Math.imul(hi, 0x85ebca6b), 0x9e3779b1) >>> shift;
        for (;;) {
          if (stamps[h] !== stamp) {
            stamps[h] = stamp;
            keys[h] = rid;
            sums[h] = s;
            seen[h] = floor;
            slots[count] = h;
            count += 1;
            break;
          }
          if (keys[h] === rid) {
            sums[h] = (sums[h] as number) + s;
            seen[h] = (seen[h] as number) + floor;
            break;
          }
          h = (h + 1) & mask;
        }
      }
    }
  });
  // The best `limit` by partial score: those above the limit-th score, then ties at it.
  const take = Math.min(limit, count);
  if (take === 0) return { rids: [], partials: [], uppers: [] };
  const scores = new Float64Array(count);
  for (let i = 0; i < count; i += 1) scores[i] = sums[slots[i] as number] as number;
  const bar = kthLargest(scores.slice(), take);
  const picked: number[] = [];
  for (let i = 0; i < count; i += 1)
    if ((scores[i] as number) >= bar) picked.push(slots[i] as number);
  picked.sort(
    (a, b) =>
      (sums[b] as number) - (sums[a] as number) || (keys[a] as number) - (keys[b] as number),
  );
  const out: Candidates = { rids: [], partials: [], uppers: [] };
  for (const h of picked.slice(0, take)) {
    out.rids.push(keys[h] as number);
    out.partials.push(sums[h] as number);
    out.uppers.push((sums[h] as number) + allFloors - (seen[h] as number));
  }
  return out;
}

/** Packs `[rid, weight]` pairs as the server does (tests and examples). */
export function packPostings(pairs: readonly (readonly [number, number])[]): Uint8Array {
  const out = new Uint8Array(pairs.length * POSTING_BYTES);
  const view = new DataView(out.buffer);
  pairs.forEach(([rid, w], i) => {
    view.setUint32(i * POSTING_BYTES, Math.floor(rid / 4294967296));
    view.setUint32(i * POSTING_BYTES + 4, rid % 4294967296);
    view.setFloat32(i * POSTING_BYTES + 8, w);
  });
  return out;
}
