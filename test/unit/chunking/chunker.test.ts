import { describe, expect, it } from 'vitest';
import {
  approxTokens,
  ChunkingValidationError,
  chunkDocument,
  chunkDocuments,
  chunkId,
  createChunker,
} from '#shared/chunking/index.js';
import type { DocBlock, LoadedDocument } from '#shared/documents/types.js';

function textDoc(key: string, text: string, blocks: DocBlock[] = []): LoadedDocument {
  return { key, text, blocks, contentHash: 'abcdef0123456789'.repeat(4), format: 'txt' };
}

describe('chunkDocuments', () => {
  it('concatenates chunks in document order with per-document sequence numbers', () => {
    // Prepare
    const docs = [textDoc('a.txt', 'Alpha one.'), textDoc('b.txt', 'Beta two.')];

    // Act
    const chunks = chunkDocuments(docs, { method: 'recursive', chunkSize: 128, chunkOverlap: 16 });

    // Assess
    expect(chunks).toEqual([
      {
        id: chunkId('a.txt', 1, 'Alpha one.'),
        text: 'Alpha one.',
        metadata: { document_id: 'a.txt', sequence_number: 1, start_index: 0 },
      },
      {
        id: chunkId('b.txt', 1, 'Beta two.'),
        text: 'Beta two.',
        metadata: { document_id: 'b.txt', sequence_number: 1, start_index: 0 },
      },
    ]);
  });

  it('rejects invalid options even when there is no document to chunk', () => {
    // Act / Assess
    expect(() =>
      chunkDocuments([], { method: 'hybrid', chunkSize: 512, chunkOverlap: 64 }),
    ).toThrow(ChunkingValidationError);
  });

  it('uses the first 16 hex of the content hash when a document has no key', () => {
    // Act
    const [chunk] = chunkDocument(textDoc('', 'Text.'), {
      method: 'recursive',
      chunkSize: 128,
      chunkOverlap: 0,
    });

    // Assess
    expect(chunk?.metadata.document_id).toBe('abcdef0123456789');
  });
});

describe('createChunker', () => {
  it('validates once up front and chunks like chunkDocument', async () => {
    // Prepare
    const opts = { method: 'hybrid', chunkSize: 256, chunkOverlap: 0 } as const;
    const doc = textDoc('h.md', '', [
      { type: 'heading', level: 1, text: 'Title' },
      { type: 'paragraph', text: 'Body.' },
    ]);

    // Act
    const chunker = createChunker(opts);

    // Assess
    expect(Object.isFrozen(chunker.options)).toBe(true);
    expect(chunker.options).toEqual(opts);
    expect(await chunker.chunk(doc)).toEqual(chunkDocument(doc, opts));
    expect((await chunker.chunk(doc))[0]?.text).toBe('Title\nBody.');
    expect(chunker.cost()).toEqual({ groups: 0, embedded: 0, cacheHits: 0, tokens: 0, ms: 0 });
    expect(() => createChunker({ method: 'recursive', chunkSize: 64, chunkOverlap: 0 })).toThrow(
      /chunkSize 64 is invalid/,
    );
  });
});

describe('chunking 1 MB of text', () => {
  // Over 1 MB: sentences, paragraphs and one 20 kB unbroken token.
  const sentencesText = Array.from(
    { length: 22_000 },
    (_, i) => `Sentence ${i} talks about topic ${i % 97} in detail.${i % 9 === 8 ? '\n\n' : ' '}`,
  ).join('');
  const text = `${sentencesText}\n\n${'z'.repeat(20_000)}`;

  it('chunks it recursively without error and within budget', () => {
    // Prepare
    expect(text.length).toBeGreaterThanOrEqual(1_000_000);

    // Act
    const chunks = chunkDocument(textDoc('big.txt', text), {
      method: 'recursive',
      chunkSize: 512,
      chunkOverlap: 128,
    });

    // Assess
    expect(chunks.length).toBeGreaterThan(400);
    for (const c of chunks) {
      expect(approxTokens(c.text)).toBeLessThanOrEqual(512);
      const start = c.metadata.start_index ?? -1;
      expect(text.slice(start, start + c.text.length)).toBe(c.text);
    }
  });

  it('chunks it with the hybrid method without error and within budget', () => {
    // Prepare: no blocks, so the hybrid chunker falls back to paragraphs.
    const doc = textDoc('big.md', text);

    // Act
    const chunks = chunkDocument(doc, { method: 'hybrid', chunkSize: 128, chunkOverlap: 0 });

    // Assess
    expect(chunks.length).toBeGreaterThan(1000);
    for (const c of chunks) expect(approxTokens(c.text)).toBeLessThanOrEqual(128);
  });
});
