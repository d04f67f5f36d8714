import { describe, expect, it } from 'vitest';
import {
  DEEPER_BUDGET,
  DEEPER_MAX,
  deeperDepth,
  firstReadMayProve,
  LONG_LIST,
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
});
