import { describe, expect, it } from 'vitest';
import {
  mergeCandidates,
  POSTING_BYTES,
  packPostings,
} from '../../../shared/src/vectorstores/pgvector/postings-merge.js';
import {
  CLIENT_MERGE_MAX,
  clientMergeFits,
} from '../../../shared/src/vectorstores/pgvector/search.js';

describe('mergeCandidates (the deeper keyword read, summed in the client)', () => {
  it('sums a chunk over terms and bounds what the terms it was not read under can add', () => {
    // Prepare: depth 2. Term a (qw 1) is cut in both tables (lowest 4 and 2: it adds at most 4 to an unread
    // chunk); term b (qw 2) is cut in the folded table (lowest 1: at most 2)
    const reads = [
      {
        qw: 1,
        lists: [
          packPostings([
            [10, 5],
            [11, 4],
          ]),
          packPostings([
            [12, 3],
            [13, 2],
          ]),
        ],
      },
      {
        qw: 2,
        lists: [
          packPostings([
            [12, 1],
            [14, 3],
          ]),
          null,
        ],
      },
    ];

    // Act
    const got = mergeCandidates(reads, 2, 4);

    // Assert: 14 = 2·3 (+4 possible from a), 10 = 5 (+2 from b), 12 = 3 + 2·1 (seen under both), 11 = 4 (+2);
    // 13 (2) is fifth
    expect(got).toEqual({
      rids: [14, 10, 12, 11],
      partials: [6, 5, 5, 4],
      uppers: [10, 7, 5, 6],
    });
  });

  it('a list shorter than the depth was read whole and adds nothing to chunks it does not hold', () => {
    const reads = [
      {
        qw: 2,
        lists: [
          packPostings([
            [1, 3],
            [2, 1],
          ]),
        ],
      },
      { qw: 1, lists: [packPostings([[2, 4]])] },
    ];
    expect(mergeCandidates(reads, 2, 10)).toEqual({
      rids: [1, 2],
      partials: [6, 6],
      uppers: [6, 6],
    });
  });

  it('keeps the best `limit` with ties broken by row id, and decodes row ids past 2^32 exactly', () => {
    const big = 2 ** 33 + 5;
    const reads = [
      {
        qw: 1,
        lists: [
          packPostings([
            [big, 2],
            [7, 2],
            [3, 2],
            [9, 1],
          ]),
        ],
      },
    ];
    expect(mergeCandidates(reads, 10, 2).rids).toEqual([3, 7]);
    expect(mergeCandidates(reads, 10, 3).rids).toEqual([3, 7, big]);
    expect(mergeCandidates(reads, 10, 9).rids).toEqual([3, 7, big, 9]);
  });

  it('reads nothing from empty or missing lists, and stays correct when its tables grow between calls', () => {
    expect(mergeCandidates([{ qw: 1, lists: [null, new Uint8Array(0)] }], 5, 10)).toEqual({
      rids: [],
      partials: [],
      uppers: [],
    });
    // 5,000 chunks, each under two terms: the tables grow past their first size, and every sum is exact
    const pairs = (w: number) =>
      Array.from({ length: 5000 }, (_, i) => [i + 1, w] as [number, number]);
    const got = mergeCandidates(
      [
        { qw: 1, lists: [packPostings(pairs(1))] },
        { qw: 2, lists: [packPostings(pairs(0.5))] },
      ],
      10_000,
      5000,
    );
    expect(got.rids).toEqual(Array.from({ length: 5000 }, (_, i) => i + 1));
    expect(new Set(got.partials)).toEqual(new Set([2]));
    expect(POSTING_BYTES).toBe(12);
    // A read past the kept table's size gets a table of its own; the next small read is still exact
    const many = Array.from(
      { length: 150_000 },
      (_, i) => [i + 1, 1 + (i % 7)] as [number, number],
    );
    const wide = mergeCandidates([{ qw: 1, lists: [packPostings(many)] }], 200_000, 3);
    expect(wide.rids).toEqual([7, 14, 21]);
    expect(wide.partials).toEqual([7, 7, 7]);
    expect(mergeCandidates([{ qw: 3, lists: [packPostings([[5, 1]])] }], 10, 3)).toEqual({
      rids: [5],
      partials: [3],
      uppers: [3],
    });
  });

  it('sends the client a read of at most CLIENT_MERGE_MAX postings; a longer one is summed by the server', () => {
    // A term's read is at most its df, and at most the depth from each of its two tables
    expect(CLIENT_MERGE_MAX).toBe(131_072);
    expect(clientMergeFits([50_000, 3_000], 16_000)).toBe(true);
    expect(clientMergeFits([1_000_000, 1_000_000, 1_000_000, 1_000_000], 16_000)).toBe(true);
    expect(clientMergeFits([1_000_000, 1_000_000, 1_000_000, 1_000_000, 10_000], 16_000)).toBe(
      false,
    );
    expect(clientMergeFits(Array(100).fill(9_000), 2_000)).toBe(false);
    expect(clientMergeFits(Array(100).fill(1_300), 2_000)).toBe(true);
  });
});
