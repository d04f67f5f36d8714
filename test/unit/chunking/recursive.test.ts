import { describe, expect, it } from 'vitest';
import {
  approxTokens,
  chunkDocument,
  chunkId,
  splitTextRecursive,
  splitTextWithStartIndex,
} from '#shared/chunking/index.js';
import type { LoadedDocument } from '#shared/documents/types.js';

function textDoc(key: string, text: string): LoadedDocument {
  return { key, text, blocks: [], contentHash: 'f'.repeat(64), format: 'txt' };
}

/** A 32-character sentence (8 approximate tokens) including its trailing space. */
function sentence(i: number): string {
  return `Sentence ${String(i).padStart(2, '0')} sits in gold texts. `;
}

/** Deterministic pseudo-random prose with paragraphs, sentences and line breaks. */
function prose(seed: number, paragraphs: number): string {
  let state = seed;
  const next = (n: number): number => {
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
    return state % n;
  };
  const vocabulary = ['alpha', 'beta', 'gamma', 'delta', 'pipeline', 'vector', 'index', 'a', 'of'];
  const out: string[] = [];
  for (let p = 0; p < paragraphs; p += 1) {
    const sentences: string[] = [];
    for (let s = 0, n = 1 + next(12); s < n; s += 1) {
      const words: string[] = [];
      for (let w = 0, m = 3 + next(40); w < m; w += 1) {
        words.push(`${vocabulary[next(vocabulary.length)]}${next(1000)}`);
      }
      sentences.push(`${words.join(next(9) === 0 ? '\n' : ' ')}.`);
    }
    out.push(sentences.join(' '));
  }
  return out.join('\n\n');
}

describe('recursive chunking: golden sentences', () => {
  // 40 sentences of 32 chars (8 tokens): 16 fit in 128 tokens; an overlap of 20 tokens keeps 2 sentences.
  const text = Array.from({ length: 40 }, (_, i) => sentence(i + 1))
    .join('')
    .trimEnd();
  const doc = textDoc('golden.txt', text);
  const chunks = chunkDocument(doc, { method: 'recursive', chunkSize: 128, chunkOverlap: 20 });

  it('splits after ". " and packs 16 sentences per 128-token chunk', () => {
    // Prepare
    const expectedFirst = Array.from({ length: 16 }, (_, i) => sentence(i + 1))
      .join('')
      .trimEnd();
    const expectedSecond = Array.from({ length: 16 }, (_, i) => sentence(i + 15))
      .join('')
      .trimEnd();

    // Assess
    expect(sentence(1)).toHaveLength(32);
    expect(chunks).toHaveLength(3);
    expect(chunks[0]?.text).toBe(expectedFirst);
    expect(chunks[1]?.text).toBe(expectedSecond);
    expect(chunks[2]?.text.startsWith('Sentence 29 ')).toBe(true);
    expect(chunks[2]?.text.endsWith('Sentence 40 sits in gold texts.')).toBe(true);
  });

  it('carries the last two sentences of a chunk into the next one as overlap', () => {
    // Prepare
    const overlap = `${sentence(15)}${sentence(16)}`.trimEnd();

    // Assess
    expect(chunks[0]?.text.endsWith(overlap)).toBe(true);
    expect(chunks[1]?.text.startsWith(overlap)).toBe(true);
    expect(chunks[1]?.text.endsWith(sentence(29) + sentence(30).trimEnd())).toBe(true);
    expect(chunks[2]?.text.startsWith(sentence(29) + sentence(30))).toBe(true);
  });

  it('records start_index as the offset of each chunk in the document text', () => {
    // Assess
    expect(chunks.map((c) => c.metadata.start_index)).toEqual([0, 14 * 32, 28 * 32]);
    for (const c of chunks) {
      expect(c.metadata.start_index).toBe(text.indexOf(c.text));
    }
  });

  it('numbers chunks from 1 and derives ids from document id, sequence number and text', () => {
    // Assess
    expect(chunks.map((c) => c.metadata)).toEqual([
      { document_id: 'golden.txt', sequence_number: 1, start_index: 0 },
      { document_id: 'golden.txt', sequence_number: 2, start_index: 448 },
      { document_id: 'golden.txt', sequence_number: 3, start_index: 896 },
    ]);
    for (const c of chunks) {
      expect(c.id).toBe(chunkId('golden.txt', c.metadata.sequence_number, c.text));
    }
  });

  it('keeps every chunk within the token budget', () => {
    // Assess
    for (const c of chunks) expect(approxTokens(c.text)).toBeLessThanOrEqual(128);
  });
});

describe('recursive chunking: separators', () => {
  it('keeps the period with its sentence (regex lookbehind separator)', () => {
    // Act
    const chunks = splitTextRecursive('Alpha beta. Gamma delta. Epsilon zeta.', {
      chunkSize: 5,
      chunkOverlap: 0,
    });

    // Assess
    expect(chunks).toEqual(['Alpha beta.', 'Gamma delta.', 'Epsilon zeta.']);
  });

  it('merges paragraphs while they fit and keeps the blank line inside a chunk', () => {
    // Prepare: three 200-char paragraphs; "\n\n" + paragraph is 202 chars = 51 tokens.
    const [p1, p2, p3] = ['a', 'b', 'c'].map((ch) => `${ch.repeat(99)} ${ch.repeat(100)}`);
    const text = `${p1}\n\n${p2}\n\n${p3}`;

    // Act
    const chunks = chunkDocument(textDoc('p.txt', text), {
      method: 'recursive',
      chunkSize: 128,
      chunkOverlap: 0,
    });

    // Assess
    expect(chunks.map((c) => c.text)).toEqual([`${p1}\n\n${p2}`, p3]);
    expect(chunks.map((c) => c.metadata.start_index)).toEqual([0, 404]);
  });

  it('falls back to words for an oversized sentence, counting tokens per piece', () => {
    // Prepare: "w001 w002 ... w150": the first word is 1 token, each " wNNN" piece 5 chars = 2 tokens.
    const words = Array.from({ length: 150 }, (_, i) => `w${String(i + 1).padStart(3, '0')}`);
    const text = words.join(' ');

    // Act
    const chunks = chunkDocument(textDoc('w.txt', text), {
      method: 'recursive',
      chunkSize: 128,
      chunkOverlap: 10,
    });

    // Assess: 1 + 63 × 2 = 127 tokens, then 5 words (10 tokens) of overlap.
    expect(chunks.map((c) => c.text)).toEqual([
      words.slice(0, 64).join(' '),
      words.slice(59, 123).join(' '),
      words.slice(118).join(' '),
    ]);
    // Python LangChain would search from 0 + 319 - 10 = 309 > 295 and report -1 here.
    expect(chunks.map((c) => c.metadata.start_index)).toEqual([0, 59 * 5, 118 * 5]);
  });

  it('splits a text without separators into characters, one token each', () => {
    // Prepare: 300 distinct CJK characters, no spaces.
    const text = Array.from({ length: 300 }, (_, i) => String.fromCharCode(0x4e00 + i)).join('');

    // Act
    const spans = splitTextWithStartIndex(text, { chunkSize: 128, chunkOverlap: 16 });

    // Assess
    expect(spans.map((s) => [s.startIndex, s.text.length])).toEqual([
      [0, 128],
      [112, 128],
      [224, 76],
    ]);
    expect(spans[1]?.text).toBe(text.slice(112, 240));
  });

  it('drops whitespace-only input', () => {
    // Act / Assess
    const opts = { method: 'recursive', chunkSize: 128, chunkOverlap: 0 } as const;
    expect(chunkDocument(textDoc('e.txt', ''), opts)).toEqual([]);
    expect(chunkDocument(textDoc('w.txt', ' \n\n \n\t '), opts)).toEqual([]);
  });
});

describe('recursive chunking: invariants on varied prose', () => {
  it('keeps chunks within budget, locatable at start_index, ordered and covering the text', () => {
    // Prepare
    const text = prose(7, 40);

    for (const [chunkSize, chunkOverlap] of [
      [128, 0],
      [256, 64],
      [512, 128],
    ] as const) {
      // Act
      const chunks = chunkDocument(textDoc('prose.txt', text), {
        method: 'recursive',
        chunkSize,
        chunkOverlap,
      });

      // Assess
      expect(chunks.length).toBeGreaterThan(1);
      let previous = -1;
      const covered = new Uint8Array(text.length);
      for (const [i, c] of chunks.entries()) {
        const start = c.metadata.start_index ?? -1;
        expect(c.metadata.sequence_number).toBe(i + 1);
        expect(approxTokens(c.text)).toBeLessThanOrEqual(chunkSize);
        expect(c.text.trim()).toBe(c.text);
        expect(text.slice(start, start + c.text.length)).toBe(c.text);
        expect(start).toBeGreaterThan(previous);
        previous = start;
        covered.fill(1, start, start + c.text.length);
      }
      for (let i = 0; i < text.length; i += 1) {
        if (covered[i] === 0) expect(text[i]).toMatch(/\s/);
      }
    }
  });
});
