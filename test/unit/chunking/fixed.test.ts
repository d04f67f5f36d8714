import { describe, expect, it } from 'vitest';
import {
  approxTokens,
  chunkDocument,
  chunkId,
  createChunker,
  splitFixed,
} from '#shared/chunking/index.js';
import type { LoadedDocument } from '#shared/documents/types.js';

function textDoc(key: string, text: string): LoadedDocument {
  return { key, text, blocks: [], contentHash: 'abcdef0123456789'.repeat(4), format: 'txt' };
}

describe('splitFixed', () => {
  it('packs words up to chunkSize tokens and repeats at most chunkOverlap tokens', () => {
    // Act
    const spans = splitFixed('one two three four five six seven', {
      chunkSize: 4,
      chunkOverlap: 2,
    });

    // Assess: 'one two three' is 13 chars = 4 tokens ('one two three four' would be 5); the next window starts
    // at 'three' (2 tokens; 'two three' would repeat 3).
    expect(spans).toEqual([
      { text: 'one two three', startIndex: 0 },
      { text: 'three four five', startIndex: 8 },
      { text: 'five six seven', startIndex: 19 },
    ]);
  });

  it('does not overlap with overlap 0 and keeps the inner whitespace of the text', () => {
    // Act
    const spans = splitFixed('aaaa bbbb\ncccc  dddd eeee', { chunkSize: 3, chunkOverlap: 0 });

    // Assess
    expect(spans).toEqual([
      { text: 'aaaa bbbb', startIndex: 0 },
      { text: 'cccc  dddd', startIndex: 10 },
      { text: 'eeee', startIndex: 21 },
    ]);
  });

  it('repeats exactly one word when it is the overlap budget', () => {
    // Act
    const spans = splitFixed('aaaa bbbb cccc dddd eeee', { chunkSize: 3, chunkOverlap: 1 });

    // Assess
    expect(spans.map((s) => s.text)).toEqual(['aaaa bbbb', 'bbbb cccc', 'cccc dddd', 'dddd eeee']);
    expect(spans.map((s) => s.startIndex)).toEqual([0, 5, 10, 15]);
  });

  it('cuts a word longer than the window by characters, with the overlap in characters', () => {
    // Act: size 2 tokens = 8 characters, step (2 - 1) × 4 = 4 characters.
    const spans = splitFixed('ab abcdefghijklmnopqrst cd', { chunkSize: 2, chunkOverlap: 1 });

    // Assess
    expect(spans).toEqual([
      { text: 'ab', startIndex: 0 },
      { text: 'abcdefgh', startIndex: 3 },
      { text: 'efghijkl', startIndex: 7 },
      { text: 'ijklmnop', startIndex: 11 },
      { text: 'mnopqrst', startIndex: 15 },
      { text: 'cd', startIndex: 24 },
    ]);
  });

  it('never cuts a surrogate pair', () => {
    // Act: 'a' + 4 emoji (8 UTF-16 units) + 'b' in windows of 4 units.
    const word = `a${'😀'.repeat(4)}b`;
    const spans = splitFixed(word, { chunkSize: 1, chunkOverlap: 0 });

    // Assess
    expect(spans.map((s) => s.text)).toEqual(['a😀', '😀😀', '😀b']);
    expect(spans.map((s) => s.text).join('')).toBe(word);
  });

  it('returns nothing for whitespace and rejects sizes it cannot honour', () => {
    // Act / Assess
    expect(splitFixed(' \n\t ', { chunkSize: 4, chunkOverlap: 0 })).toEqual([]);
    expect(() => splitFixed('a', { chunkSize: 2, chunkOverlap: 2 })).toThrow(RangeError);
  });
});

describe('fixed chunking', () => {
  it('chunks a document into windows of at most chunkSize tokens with ids and start_index', () => {
    // Prepare: 300 words "w000 … w299", each 4 characters + a space: 5 characters per word.
    const words = Array.from({ length: 300 }, (_, i) => `w${String(i).padStart(3, '0')}`);
    const doc = textDoc('words.txt', words.join(' '));

    // Act
    const chunks = chunkDocument(doc, { method: 'fixed', chunkSize: 128, chunkOverlap: 16 });

    // Assess: 102 words = 509 chars = 128 tokens; the overlap is the last 13 words (64 chars = 16 tokens).
    expect(chunks.map((c) => c.text.split(' ').length)).toEqual([102, 102, 102, 33]);
    expect(chunks.map((c) => c.metadata.start_index)).toEqual([0, 445, 890, 1335]);
    expect(chunks.map((c) => c.text.split(' ')[0])).toEqual(['w000', 'w089', 'w178', 'w267']);
    for (const c of chunks) {
      expect(approxTokens(c.text)).toBeLessThanOrEqual(128);
      expect(
        doc.text.slice(c.metadata.start_index, (c.metadata.start_index ?? 0) + c.text.length),
      ).toBe(c.text);
    }
    expect(chunks[1]?.metadata).toEqual({
      document_id: 'words.txt',
      sequence_number: 2,
      start_index: 445,
    });
    expect(chunks[1]?.id).toBe(chunkId('words.txt', 2, chunks[1]?.text ?? ''));
  });

  it('chunks the same through createChunker', async () => {
    // Prepare
    const opts = { method: 'fixed', chunkSize: 128, chunkOverlap: 0 } as const;
    const doc = textDoc('a.txt', 'Alpha beta gamma. '.repeat(60));

    // Act
    const chunks = await createChunker(opts).chunk(doc);

    // Assess
    expect(chunks).toEqual(chunkDocument(doc, opts));
    expect(chunks.length).toBe(3);
  });
});
