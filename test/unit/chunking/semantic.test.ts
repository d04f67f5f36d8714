import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  type AI4RAGChunk,
  approxTokens,
  breakpointIndices,
  type ChunkingOptions,
  ChunkingValidationError,
  chunkDocument,
  chunkId,
  createChunker,
  gradient,
  percentile,
  splitSentences,
} from '#shared/chunking/index.js';
import type { LoadedDocument } from '#shared/documents/types.js';
import { createEmbedder, DEFAULT_EMBEDDING_MODEL } from '#shared/embeddings/index.js';
import type { Embedder } from '#shared/embeddings/types.js';

function textDoc(key: string, text: string): LoadedDocument {
  return { key, text, blocks: [], contentHash: 'abcdef0123456789'.repeat(4), format: 'txt' };
}

/**
 * A test embedder: the vector of a text is the hand-chosen vector of its first word; it records every call, and
 * fails on a word it does not know (so only the expected groups are embedded).
 */
class TableEmbedder implements Embedder {
  readonly modelId = 'test/table';
  readonly dimension: number;
  readonly contextLength = 8192;
  readonly calls: string[][] = [];
  constructor(private readonly table: Record<string, number[]>) {
    this.dimension = Object.values(table)[0]?.length ?? 0;
  }
  async embedDocuments(texts: string[]): Promise<number[][]> {
    this.calls.push([...texts]);
    return texts.map((t) => {
      const v = this.table[t.split(/[\s.]/u)[0] ?? ''];
      if (v === undefined) throw new Error(`no vector for "${t}"`);
      return v;
    });
  }
  async embedQuery(text: string): Promise<number[]> {
    return (await this.embedDocuments([text]))[0] as number[];
  }
}

/**
 * Seven sentences whose vectors give the distances (1 − cosine) between neighbours
 * d = [0.00496, 0.90050, 0.00496, 0.22604, 0.00138, 1.59767] and the gradient
 * [0.89553, 0, −0.33723, −0.00179, 0.68581, 1.59628].
 */
const VECTORS: Record<string, number[]> = {
  Ant: [1, 0],
  Bee: [1, 0.1],
  Cat: [0, 1],
  Dog: [0.1, 1],
  Eel: [1, 1],
  Fox: [1, 0.9],
  Gnu: [-1, 0.2],
};
const SENTENCES = [
  'Ant one.',
  'Bee two.',
  'Cat three.',
  'Dog four.',
  'Eel five.',
  'Fox six.',
  'Gnu seven.',
];
const TEXT = SENTENCES.join(' ');

function semantic(extra: Partial<ChunkingOptions>): ChunkingOptions {
  return {
    method: 'semantic',
    chunkSize: 128,
    chunkOverlap: 0,
    bufferSize: 0,
    minChunkSize: 0,
    ...extra,
  };
}

async function chunkTexts(opts: ChunkingOptions, text = TEXT): Promise<string[]> {
  const chunker = createChunker(opts, { embedder: new TableEmbedder(VECTORS) });
  return (await chunker.chunk(textDoc('s.txt', text))).map((c) => c.text);
}

describe('semantic helpers', () => {
  it('splits sentences after . ? ! (closing quotes kept) and at blank lines', () => {
    // Prepare
    const text = 'One. Two? "Three!" Four\n\n# Head\nline\n \n';

    // Act
    const spans = splitSentences(text).map((s) => text.slice(s.start, s.end));

    // Assess
    expect(spans).toEqual(['One.', 'Two?', '"Three!"', 'Four', '# Head\nline']);
    expect(splitSentences(' \n ')).toEqual([]);
  });

  it('computes percentiles and gradients as numpy', () => {
    // Act / Assess
    expect(percentile([4, 1, 3, 2], 50)).toBe(2.5);
    expect(percentile([1, 2, 3, 4, 5], 95)).toBeCloseTo(4.8, 12);
    expect(gradient([1, 4, 9, 16])).toEqual([3, 4, 6, 7]);
    expect(gradient([1])).toEqual([]);
  });

  it('picks breakpoints above each threshold type', () => {
    // Prepare
    const d = [0.1, 0.9, 0.2, 0.3];

    // Act / Assess: percentile 50 = 0.25; mean + 1 std = 0.375 + 0.311; gradient [0.8, 0.05, -0.3, 0.1], p50 0.075.
    expect(breakpointIndices(d, 'percentile', 50)).toEqual([1, 3]);
    expect(breakpointIndices(d, 'standard_deviation', 1)).toEqual([1]);
    expect(breakpointIndices(d, 'gradient', 50)).toEqual([0, 3]);
    expect(breakpointIndices([0.5], 'gradient', 50)).toEqual([]);
    expect(breakpointIndices([], 'percentile', 95)).toEqual([]);
  });
});

describe('semantic chunking with a fixed embedder', () => {
  it('breaks where the distance exceeds the percentile', async () => {
    // Act / Assess: p95 = 1.3747 (only d5); p50 = 0.00496 (d1, d3, d5 are above it).
    expect(await chunkTexts(semantic({ breakpoint: 'percentile' }))).toEqual([
      'Ant one. Bee two. Cat three. Dog four. Eel five. Fox six.',
      'Gnu seven.',
    ]);
    expect(await chunkTexts(semantic({ breakpoint: 'percentile', breakpointAmount: 50 }))).toEqual([
      'Ant one. Bee two.',
      'Cat three. Dog four.',
      'Eel five. Fox six.',
      'Gnu seven.',
    ]);
  });

  it('breaks where the distance exceeds mean + amount × standard deviation', async () => {
    // Act / Assess: mean 0.4559, std 0.6044: 0.5 std → 0.7581 (d1, d5); the default 3 std → none.
    expect(
      await chunkTexts(semantic({ breakpoint: 'standard_deviation', breakpointAmount: 0.5 })),
    ).toEqual(['Ant one. Bee two.', 'Cat three. Dog four. Eel five. Fox six.', 'Gnu seven.']);
    expect(await chunkTexts(semantic({ breakpoint: 'standard_deviation' }))).toEqual([TEXT]);
  });

  it('breaks where the gradient of the distances exceeds its percentile', async () => {
    // Act / Assess: gradient p50 = 0.34290: indices 0, 4, 5.
    expect(await chunkTexts(semantic({ breakpoint: 'gradient', breakpointAmount: 50 }))).toEqual([
      'Ant one.',
      'Bee two. Cat three. Dog four. Eel five.',
      'Fox six.',
      'Gnu seven.',
    ]);
  });

  it('embeds each sentence with bufferSize neighbours on each side, once per distinct group', async () => {
    // Prepare
    const embedder = new TableEmbedder(VECTORS);
    const chunker = createChunker(semantic({ bufferSize: 1 }), { embedder });
    const doc = textDoc('a.txt', 'Ant one. Bee two. Cat three.');

    // Act
    await chunker.chunk(doc);
    await chunker.chunk(textDoc('b.txt', doc.text));

    // Assess: the second document's groups all come from the cache.
    expect(embedder.calls).toEqual([
      ['Ant one. Bee two.', 'Ant one. Bee two. Cat three.', 'Bee two. Cat three.'],
    ]);
    const cost = chunker.cost();
    expect({ ...cost, ms: 0 }).toEqual({
      groups: 6,
      embedded: 3,
      cacheHits: 3,
      tokens: approxTokens('Ant one. Bee two.') * 2 + approxTokens('Ant one. Bee two. Cat three.'),
      ms: 0,
    });
    expect(cost.ms).toBeGreaterThanOrEqual(0);
  });

  it('evicts the least recently used group when the cache is full', async () => {
    // Prepare
    const embedder = new TableEmbedder(VECTORS);
    const chunker = createChunker(semantic({}), { embedder, cacheEntries: 2 });

    // Act: Ant, Bee fill the cache; Cat evicts Ant; so Ant is embedded again, Cat is not.
    await chunker.chunk(textDoc('1.txt', 'Ant one. Bee two.'));
    await chunker.chunk(textDoc('2.txt', 'Cat three.\n\nBee two.'));
    await chunker.chunk(textDoc('3.txt', 'Ant one. Cat three.'));

    // Assess
    expect(embedder.calls).toEqual([['Ant one.', 'Bee two.'], ['Cat three.'], ['Ant one.']]);
    expect(chunker.cost()).toMatchObject({ groups: 6, embedded: 4, cacheHits: 2 });
  });

  it('cuts a segment over chunkSize at its largest inner distance, and an over-long sentence by the recursive splitter', async () => {
    // Prepare: every sentence is 150 characters; a chunk holds at most 512 characters (128 tokens).
    const long = SENTENCES.map((s) => `${s.split(' ')[0]} ${'x'.repeat(141)} end.`);
    const text = long.join(' ');
    const giant = `Eel ${'word '.repeat(150)}end.`;

    // Act
    const chunks = await chunkTexts(semantic({}), text);
    const giantChunks = await chunkTexts(semantic({}), `Ant one. ${giant}`);

    // Assess: p95 keeps only the break before Gnu; Ant–Fox (905 chars) is cut at d1 (Bee|Cat), then Cat–Fox at
    // d3 (Dog|Eel).
    expect(chunks).toEqual([
      `${long[0]} ${long[1]}`,
      `${long[2]} ${long[3]}`,
      `${long[4]} ${long[5]}`,
      long[6],
    ]);
    expect(giantChunks[0]).toBe('Ant one.');
    expect(giantChunks.slice(1).join(' ')).toBe(giant);
    for (const c of giantChunks) expect(approxTokens(c)).toBeLessThanOrEqual(128);
    expect(giantChunks.length).toBe(4);
  });

  it('merges a chunk under minChunkSize into the neighbour it is closer to', async () => {
    // Prepare: gradient p50 gives 'Ant one.' | 'Bee two. … Eel five.' | 'Fox six.' | 'Gnu seven.'; the minimum is
    // 3 tokens (9+ characters).
    const opts = semantic({ breakpoint: 'gradient', breakpointAmount: 50, minChunkSize: 3 });

    // Act
    const texts = await chunkTexts(opts);

    // Assess: 'Ant one.' (2 tokens) has only a right neighbour; 'Fox six.' (2) is closer to Eel (d4 0.00138) than
    // to Gnu (d5 1.598); 'Gnu seven.' (3 tokens) stays.
    expect(texts).toEqual([
      'Ant one. Bee two. Cat three. Dog four. Eel five. Fox six.',
      'Gnu seven.',
    ]);
  });

  it('lets a small chunk take sentences from its closer neighbour when no neighbour has room', async () => {
    // Prepare: Ant (260 chars) + Asp (240) = 501 chars (126 tokens), Bee 20 chars, Cat 500 chars. Distances
    // [0, 1, 1]; p40 = 0.8 breaks before Bee and before Cat; Bee (5 tokens) is under the minimum 64 and neither
    // neighbour has room for it (522 and 521 chars > 512).
    const ant = `Ant ${'a'.repeat(255)}.`;
    const asp = `Asp ${'s'.repeat(235)}.`;
    const bee = `Bee ${'b'.repeat(15)}.`;
    const cat = `Cat ${'c'.repeat(495)}.`;
    const embedder = new TableEmbedder({ Ant: [1, 0], Asp: [1, 0], Bee: [0, 1], Cat: [1, 0] });
    const chunker = createChunker(semantic({ breakpointAmount: 40, minChunkSize: 64 }), {
      embedder,
    });

    // Act
    const chunks = await chunker.chunk(textDoc('r.txt', [ant, asp, bee, cat].join(' ')));

    // Assess: re-cut after Ant (65 tokens | 66 tokens); the only other cut (after Asp) leaves Bee alone.
    expect(chunks.map((c) => c.text)).toEqual([ant, `${asp} ${bee}`, cat]);
    expect(chunks.map((c) => approxTokens(c.text))).toEqual([65, 66, 125]);
  });

  it('numbers chunks with ids, start_index and user metadata', async () => {
    // Prepare
    const doc = { ...textDoc('m.txt', `  ${TEXT}\n`), metadata: { team: 'hr' } };
    const chunker = createChunker(semantic({ breakpointAmount: 50 }), {
      embedder: new TableEmbedder(VECTORS),
    });

    // Act
    const chunks = await chunker.chunk(doc);

    // Assess
    expect(chunks.map((c) => c.metadata.start_index)).toEqual([2, 20, 41, 60]);
    expect(chunks[1]?.metadata).toEqual({
      document_id: 'm.txt',
      sequence_number: 2,
      start_index: 20,
      user: { team: 'hr' },
    });
    expect(chunks[1]?.id).toBe(chunkId('m.txt', 2, 'Cat three. Dog four.'));
    expect(await chunker.chunk(textDoc('e.txt', ' \n'))).toEqual([]);
  });

  it('needs an embedder and overlap 0', () => {
    // Act / Assess
    expect(() => createChunker(semantic({}))).toThrow(/Semantic chunking needs an embedder/);
    expect(() => chunkDocument(textDoc('a.txt', TEXT), semantic({}))).toThrow(
      ChunkingValidationError,
    );
    expect(() => createChunker(semantic({ chunkOverlap: 16 }), {})).toThrow(
      'Semantic chunking does not support overlap: chunkOverlap must be 0, got 16.',
    );
  });
});

/** Every .md / .txt file under a folder, in path order. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir)
    .sort()
    .flatMap((name) => {
      const path = join(dir, name);
      return statSync(path).isDirectory() ? filesUnder(path) : [path];
    });
}

describe('semantic chunking with the local embedder', () => {
  const docs = filesUnder(join(import.meta.dirname, '../../../examples/docs'))
    .filter((p) => /\.(md|txt)$/u.test(p))
    .map((p) => textDoc(p, readFileSync(p, 'utf8')));

  it('keeps the bounds, covers the text in order and is deterministic on examples/docs', async () => {
    // Prepare
    const opts = semantic({ chunkSize: 128, bufferSize: 1, minChunkSize: 16 });
    const embedder = await createEmbedder(DEFAULT_EMBEDDING_MODEL);
    const run = async () => {
      const chunker = createChunker(opts, { embedder });
      const all: AI4RAGChunk[][] = [];
      for (const doc of docs) all.push(await chunker.chunk(doc));
      return { all, cost: chunker.cost() };
    };

    // Act
    const first = await run();
    const second = await run();

    // Assess
    expect(docs.length).toBeGreaterThan(3);
    expect(second.all).toEqual(first.all);
    let multi = 0;
    for (const [i, chunks] of first.all.entries()) {
      const text = (docs[i] as LoadedDocument).text;
      const tokens = approxTokens(text.trim());
      if (chunks.length > 1) multi += 1;
      let end = 0;
      for (const c of chunks) {
        const start = c.metadata.start_index ?? -1;
        expect(text.slice(start, start + c.text.length)).toBe(c.text);
        // Only whitespace between consecutive chunks: together they cover the text.
        expect(text.slice(end, start).trim()).toBe('');
        end = start + c.text.length;
        expect(approxTokens(c.text)).toBeLessThanOrEqual(128);
        if (tokens >= 16) expect(approxTokens(c.text)).toBeGreaterThanOrEqual(16);
      }
      expect(text.slice(end).trim()).toBe('');
    }
    expect(multi).toBeGreaterThan(0);
    expect(first.cost.groups).toBe(first.cost.embedded + first.cost.cacheHits);
    expect(first.cost.embedded).toBeGreaterThan(0);
  });
});
