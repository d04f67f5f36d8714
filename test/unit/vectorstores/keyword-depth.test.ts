import { describe, expect, it } from 'vitest';
import {
  DEEPER_BUDGET,
  DEEPER_MAX,
  deeperDepth,
  FOLD_COUNT_PAGES,
  FOLD_SAMPLE_PAGES,
  FOLD_SAMPLE_SHARE,
  firstReadMayProve,
  firstReadWanted,
  foldMayBeDue,
  foldSamplePercent,
  LONG_LIST,
  SWAP_MIN_BYTES,
  swapDue,
} from '../../../shared/src/vectorstores/pgvector/keyword-index.js';

describe('the keyword index’s reads (keyword-index.ts)', () => {
  it('deeperDepth shares the budget among the cut lists, between 2 and DEEPER_MAX times the first depth', () => {
    expect([DEEPER_BUDGET, DEEPER_MAX]).toEqual([64, 16]);
    expect(deeperDepth(1000, 1)).toBe(16000);
    expect(deeperDepth(1000, 4)).toBe(16000);
    expect(deeperDepth(1000, 5)).toBe(12800);
    expect(deeperDepth(1000, 7)).toBe(9142);
    expect(deeperDepth(1000, 20)).toBe(3200);
    expect(deeperDepth(1000, 40)).toBe(2000);
    expect(deeperDepth(10, 2)).toBe(160);
    expect(deeperDepth(10, 0)).toBe(160);
  });

  it('firstReadMayProve is false once two lists are over LONG_LIST times the first depth', () => {
    expect(LONG_LIST).toBe(4);
    expect(firstReadMayProve(1000, [])).toBe(true);
    expect(firstReadMayProve(1000, [4000, 4000, 4000])).toBe(true);
    expect(firstReadMayProve(1000, [900, 50_000, 3000])).toBe(true);
    expect(firstReadMayProve(1000, [4001, 5000, 30])).toBe(false);
    expect(firstReadMayProve(10, [41, 41])).toBe(false);
  });

  it('firstReadWanted: a keyword search reads first while it may prove; a hybrid search’s candidates only while no list is cut', () => {
    expect(firstReadWanted(1000, [900, 5000, 3000], true)).toBe(true);
    expect(firstReadWanted(1000, [4001, 5000], true)).toBe(false);
    expect(firstReadWanted(1000, [900, 5000, 3000], false)).toBe(false);
    expect(firstReadWanted(1000, [900, 1001], false)).toBe(false);
    expect(firstReadWanted(1000, [900, 1000], false)).toBe(true);
    expect(firstReadWanted(1000, [], false)).toBe(true);
  });

  it('the fold counts a small fresh table, samples 256 pages of a larger one, and counts only when the sample nears the minimum', () => {
    expect([FOLD_COUNT_PAGES, FOLD_SAMPLE_PAGES, FOLD_SAMPLE_SHARE]).toEqual([1024, 256, 0.8]);
    expect(foldSamplePercent(0)).toBeUndefined();
    expect(foldSamplePercent(1024 * 8192)).toBeUndefined();
    expect(foldSamplePercent(1025 * 8192)).toBeCloseTo(24.9756, 4);
    expect(foldSamplePercent(10_240 * 8192)).toBe(2.5);
    // 2.3M postings in 102,473,728 bytes (12,509 pages), as measured at 1M chunks
    expect(foldSamplePercent(102_473_728)).toBeCloseTo(2.0465, 4);
    expect(foldMayBeDue(20_720, 1, 2_000_000)).toBe(true);
    expect(foldMayBeDue(16_000, 1, 2_000_000)).toBe(true);
    expect(foldMayBeDue(15_999, 1, 2_000_000)).toBe(false);
    expect(foldMayBeDue(0, 2.5, 1)).toBe(false);
  });

  it('a fold swaps the postings tables first when the fresh one holds at least 64 MiB and more than the folded one', () => {
    expect(SWAP_MIN_BYTES).toBe(64 * 1024 * 1024);
    // the 1M bulk load's tables (heap bytes): 104M fresh postings (4.4 GB) against 11.6M folded (491 MB)
    expect(swapDue(4.4e9, 491e6, SWAP_MIN_BYTES)).toBe(true);
    expect(swapDue(491e6, 4.4e9, SWAP_MIN_BYTES)).toBe(false);
    expect(swapDue(SWAP_MIN_BYTES, 0, SWAP_MIN_BYTES)).toBe(true);
    expect(swapDue(SWAP_MIN_BYTES - 1, 0, SWAP_MIN_BYTES)).toBe(false);
    expect(swapDue(100e6, 100e6, SWAP_MIN_BYTES)).toBe(false);
    expect(swapDue(8192, 0, 0)).toBe(true);
    expect(swapDue(0, 0, 0)).toBe(false);
  });
});
