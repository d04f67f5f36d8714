import { describe, expect, it } from 'vitest';
import {
  approxTokens,
  ChunkingValidationError,
  chunkDocument,
  chunkId,
  createChunker,
  splitHierarchical,
} from '#shared/chunking/index.js';
import type { LoadedDocument } from '#shared/documents/types.js';

function textDoc(key: string, text: string): LoadedDocument {
  return { key, text, blocks: [], contentHash: 'abcdef0123456789'.repeat(4), format: 'txt' };
}

/** `n` sentences "<w>i is a sentence about <w>." joined by spaces. */
function para(n: number, w: string): string {
  return Array.from({ length: n }, (_, i) => `${w}${i} is a sentence about ${w}.`).join(' ');
}

const TEXT = [para(20, 'alpha'), para(20, 'beta'), para(5, 'gamma')].join('\n\n');
const OPTS = {
  method: 'hierarchical',
  chunkSize: 128,
  chunkOverlap: 0,
  parentChunkSize: 200,
} as const;

describe('hierarchical chunking', () => {
  it('returns children numbered across the document, each carrying its parent', () => {
    // Prepare
    const doc = textDoc('h.txt', TEXT);
    const alpha = para(20, 'alpha');
    const beta = para(20, 'beta');

    // Act
    const chunks = chunkDocument(doc, OPTS);

    // Assess: each paragraph (≤ 200 tokens) is a parent; children are ≤ 128 tokens, cut at sentences.
    expect(
      chunks.map((c) => [
        c.metadata.sequence_number,
        c.metadata.start_index,
        c.text.length,
        c.metadata.parent_sequence_number,
        c.metadata.parent_start_index,
      ]),
    ).toEqual([
      [1, 0, 479, 1, 0],
      [2, 480, 209, 1, 0],
      [3, 691, 484, 2, 691],
      [4, 1176, 164, 2, 691],
      [5, 1342, 169, 3, 1342],
    ]);
    expect(chunks.map((c) => c.metadata.parent_text)).toEqual([
      alpha,
      alpha,
      beta,
      beta,
      para(5, 'gamma'),
    ]);
    expect(chunks[1]?.text.startsWith('alpha14 is')).toBe(true);
    for (const c of chunks) {
      const start = c.metadata.start_index ?? -1;
      expect(TEXT.slice(start, start + c.text.length)).toBe(c.text);
      expect(approxTokens(c.text)).toBeLessThanOrEqual(128);
      expect(c.id).toBe(chunkId('h.txt', c.metadata.sequence_number, c.text));
      expect(c.metadata.parent_id).toBe(
        chunkId('h.txt', c.metadata.parent_sequence_number ?? 0, c.metadata.parent_text as string),
      );
    }
    expect(new Set(chunks.map((c) => c.metadata.parent_id)).size).toBe(3);
  });

  it('splits parents with the recursive splitter and children with the child overlap', () => {
    // Act
    const pieces = splitHierarchical('Aa bb. Cc dd. Ee ff. Gg hh.', {
      chunkSize: 3,
      chunkOverlap: 1,
      parentChunkSize: 5,
    });

    // Assess: a sentence with its space is 2 tokens (sum of ceilings), so a parent (≤ 5) holds two, a child (≤ 3)
    // one; a 2-token sentence is more than the overlap, so none repeats.
    expect(pieces).toEqual([
      {
        parent: { text: 'Aa bb. Cc dd.', startIndex: 0 },
        children: [
          { text: 'Aa bb.', startIndex: 0 },
          { text: 'Cc dd.', startIndex: 7 },
        ],
      },
      {
        parent: { text: 'Ee ff. Gg hh.', startIndex: 14 },
        children: [
          { text: 'Ee ff.', startIndex: 14 },
          { text: 'Gg hh.', startIndex: 21 },
        ],
      },
    ]);
  });

  it('keeps the user metadata and chunks the same through createChunker', async () => {
    // Prepare
    const doc = { ...textDoc('u.txt', TEXT), metadata: { team: 'hr' } };

    // Act
    const chunks = await createChunker(OPTS).chunk(doc);

    // Assess
    expect(chunks).toEqual(chunkDocument(doc, OPTS));
    expect(chunks[0]?.metadata.user).toEqual({ team: 'hr' });
  });

  it('needs a parent chunk size greater than the child size', () => {
    // Act / Assess
    expect(() =>
      chunkDocument(textDoc('a.txt', 'A.'), {
        method: 'hierarchical',
        chunkSize: 256,
        chunkOverlap: 0,
      }),
    ).toThrow(ChunkingValidationError);
    expect(() => chunkDocument(textDoc('a.txt', 'A.'), { ...OPTS, parentChunkSize: 128 })).toThrow(
      'parentChunkSize 128 is invalid; it must be an integer in 129..8192',
    );
  });
});
