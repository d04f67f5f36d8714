import { describe, expect, it } from 'vitest';
import { approxTokens, chunkDocument, chunkId } from '#shared/chunking/index.js';
import type { DocBlock, LoadedDocument } from '#shared/documents/types.js';

const HYBRID_128 = { method: 'hybrid', chunkSize: 128, chunkOverlap: 0 } as const;

function blockDoc(key: string, blocks: DocBlock[], text = ''): LoadedDocument {
  return { key, text, blocks, contentHash: '0'.repeat(64), format: 'md' };
}

function h(level: number, text: string): DocBlock {
  return { type: 'heading', level, text };
}

function p(text: string): DocBlock {
  return { type: 'paragraph', text };
}

/** A 32-character sentence (8 approximate tokens) including its trailing space. */
function sentence(i: number): string {
  return `Sentence ${String(i).padStart(2, '0')} sits in gold texts. `;
}

function sentences(from: number, to: number): string {
  let out = '';
  for (let i = from; i <= to; i += 1) out += sentence(i);
  return out.trimEnd();
}

describe('hybrid chunking: golden sections', () => {
  const doc = blockDoc('guide.md', [
    p('Preface.'),
    h(1, 'Guide'),
    p('Intro text.'),
    h(2, 'Install'),
    p('Run the installer.'),
    { type: 'list', items: ['first', 'second'] },
    h(2, 'Use'),
    p('Start it.'),
    { type: 'code', text: 'npm start\n' },
    h(1, 'Appendix'),
    h(3, 'Deep'),
    p('Extra.'),
    h(2, 'Side'),
    p('Aside.'),
  ]);

  it('prepends the heading path and merges peers under the same path', () => {
    // Act
    const chunks = chunkDocument(doc, HYBRID_128);

    // Assess
    expect(chunks.map((c) => [c.text, c.metadata.headings])).toEqual([
      ['Preface.', undefined],
      ['Guide\nIntro text.', 'Guide'],
      ['Guide\nInstall\nRun the installer.\n\n- first\n- second', 'Guide > Install'],
      ['Guide\nUse\nStart it.\n\n```\nnpm start\n```', 'Guide > Use'],
      ['Appendix\nDeep\nExtra.', 'Appendix > Deep'],
      ['Appendix\nSide\nAside.', 'Appendix > Side'],
    ]);
  });

  it('numbers chunks from 1, omits empty headings and derives ids', () => {
    // Act
    const chunks = chunkDocument(doc, HYBRID_128);

    // Assess
    expect(chunks[0]?.metadata).toStrictEqual({ document_id: 'guide.md', sequence_number: 1 });
    expect(chunks[1]?.metadata).toStrictEqual({
      document_id: 'guide.md',
      sequence_number: 2,
      headings: 'Guide',
    });
    expect(chunks.map((c) => c.metadata.sequence_number)).toEqual([1, 2, 3, 4, 5, 6]);
    for (const c of chunks) {
      expect(c.id).toBe(chunkId('guide.md', c.metadata.sequence_number, c.text));
      expect(c.metadata.start_index).toBeUndefined();
    }
  });
});

describe('hybrid chunking: tables', () => {
  it('keeps a small table whole as a markdown pipe table', () => {
    // Prepare
    const doc = blockDoc('t.md', [
      h(1, 'Prices'),
      {
        type: 'table',
        rows: [
          ['Item', 'Price'],
          ['Tea | green', '3'],
          ['Coffee', '4', 'extra'],
        ],
      },
    ]);

    // Act
    const chunks = chunkDocument(doc, HYBRID_128);

    // Assess
    expect(chunks.map((c) => c.text)).toEqual([
      [
        'Prices',
        '| Item | Price |  |',
        '| --- | --- | --- |',
        '| Tea \\| green | 3 |  |',
        '| Coffee | 4 | extra |',
      ].join('\n'),
    ]);
  });

  it('splits a large table by rows and repeats the header in every piece', () => {
    // Prepare: 60 rows of about 34 chars cannot fit 128 tokens (512 chars).
    const rows = Array.from({ length: 60 }, (_, i) => [String(i), `row number ${i} of the table`]);
    const doc = blockDoc('big.md', [
      h(1, 'Data'),
      { type: 'table', rows: [['Id', 'Text'], ...rows] },
    ]);
    const header = 'Data\n| Id | Text |\n| --- | --- |\n';

    // Act
    const chunks = chunkDocument(doc, HYBRID_128);

    // Assess
    expect(chunks.length).toBeGreaterThan(3);
    const seen: string[] = [];
    for (const c of chunks) {
      expect(c.text.startsWith(header)).toBe(true);
      expect(approxTokens(c.text)).toBeLessThanOrEqual(128);
      expect(c.metadata.headings).toBe('Data');
      seen.push(...c.text.slice(header.length).split('\n'));
    }
    expect(seen).toEqual(rows.map(([id, text]) => `| ${id} | ${text} |`));
    expect(chunks[0]?.text).toBe(
      header +
        Array.from({ length: 13 }, (_, i) => `| ${i} | row number ${i} of the table |`).join('\n'),
    );
  });
});

describe('hybrid chunking: peers and oversized blocks', () => {
  it('merges undersized peers only while the merged text fits', () => {
    // Prepare: "S\n" + 200 + "\n\n" + 200 = 404 chars fits 512; a third paragraph does not.
    const paragraphs = Array.from({ length: 5 }, (_, i) => String(i).repeat(200));
    const doc = blockDoc('m.md', [h(1, 'S'), ...paragraphs.map(p)]);

    // Act
    const chunks = chunkDocument(doc, HYBRID_128);

    // Assess
    expect(chunks.map((c) => c.text)).toEqual([
      `S\n${paragraphs[0]}\n\n${paragraphs[1]}`,
      `S\n${paragraphs[2]}\n\n${paragraphs[3]}`,
      `S\n${paragraphs[4]}`,
    ]);
  });

  it('does not merge peers under different heading paths even when they would fit', () => {
    // Prepare
    const doc = blockDoc('d.md', [
      h(1, 'A'),
      h(2, 'Notes'),
      p('one'),
      h(1, 'B'),
      h(2, 'Notes'),
      p('two'),
    ]);

    // Act
    const chunks = chunkDocument(doc, HYBRID_128);

    // Assess
    expect(chunks.map((c) => [c.text, c.metadata.headings])).toEqual([
      ['A\nNotes\none', 'A > Notes'],
      ['B\nNotes\ntwo', 'B > Notes'],
    ]);
  });

  it('splits an oversized paragraph with the recursive splitter within the heading budget', () => {
    // Prepare: prefix "Long\n" costs 2 tokens, leaving 126: 15 sentences of 8 tokens per piece.
    const doc = blockDoc('o.md', [h(1, 'Long'), p(sentences(1, 40))]);

    // Act
    const chunks = chunkDocument(doc, HYBRID_128);

    // Assess
    expect(chunks.map((c) => c.text)).toEqual([
      `Long\n${sentences(1, 15)}`,
      `Long\n${sentences(16, 30)}`,
      `Long\n${sentences(31, 40)}`,
    ]);
    for (const c of chunks) expect(approxTokens(c.text)).toBeLessThanOrEqual(128);
  });

  it('never re-joins the pieces of one split block, but merges its last piece with a next peer', () => {
    // Prepare: an unbroken 600-char word splits per character (1 token each) into 127-char pieces.
    const doc = blockDoc('w.md', [h(1, 'W'), p('x'.repeat(600)), p('Tail.')]);

    // Act
    const chunks = chunkDocument(doc, HYBRID_128);

    // Assess
    expect(chunks.map((c) => c.text)).toEqual([
      ...Array.from({ length: 4 }, () => `W\n${'x'.repeat(127)}`),
      `W\n${'x'.repeat(92)}\n\nTail.`,
    ]);
  });

  it('packs list items and splits an oversized list between items', () => {
    // Prepare: 30 lines "- item NN with some words" of 25 chars, joined by newlines.
    const items = Array.from(
      { length: 30 },
      (_, i) => `item ${String(i).padStart(2, '0')} with some words`,
    );
    const doc = blockDoc('l.md', [{ type: 'list', items }]);

    // Act
    const chunks = chunkDocument(doc, HYBRID_128);

    // Assess: 19 lines = 19 × 25 + 18 = 493 chars fit 512; 20 lines = 519 chars do not.
    expect(chunks.map((c) => c.text.split('\n').length)).toEqual([19, 11]);
    expect(chunks.flatMap((c) => c.text.split('\n'))).toEqual(items.map((i) => `- ${i}`));
  });

  it('drops outer headings from the text when the heading path would crowd out the body', () => {
    // Prepare: a 300-char title alone takes 76 tokens, more than half of 128.
    const long = 'T'.repeat(300);
    const doc = blockDoc('x.md', [h(1, long), h(2, 'Short'), p('Body.')]);

    // Act
    const chunks = chunkDocument(doc, HYBRID_128);

    // Assess
    expect(chunks.map((c) => [c.text, c.metadata.headings])).toEqual([
      ['Short\nBody.', `${long} > Short`],
    ]);
  });

  it('falls back to the paragraphs of the text when the document has no blocks', () => {
    // Prepare
    const doc = blockDoc('plain.txt', [], 'First para.\n\n  \n\nSecond\npara.\n');

    // Act
    const chunks = chunkDocument(doc, HYBRID_128);

    // Assess
    expect(chunks.map((c) => c.text)).toEqual(['First para.\n\nSecond\npara.']);
    expect('headings' in (chunks[0]?.metadata ?? {})).toBe(false);
  });

  it('keeps every chunk within budget on a mixed large document', () => {
    // Prepare
    const blocks: DocBlock[] = [];
    for (let s = 0; s < 20; s += 1) {
      blocks.push(h(1 + (s % 3), `Section ${s}`));
      blocks.push(p(sentences(1, 1 + ((s * 7) % 40))));
      blocks.push({ type: 'list', items: Array.from({ length: s * 3 }, (_, i) => `point ${i}`) });
      blocks.push({
        type: 'table',
        rows: Array.from({ length: 1 + s * 4 }, (_, r) => [`r${r}`, 'cell '.repeat(s)]),
      });
      blocks.push({ type: 'code', text: 'const x = 1;\n'.repeat(s * 5) });
    }

    for (const chunkSize of [128, 512, 2048]) {
      // Act
      const chunks = chunkDocument(blockDoc('mix.md', blocks), {
        method: 'hybrid',
        chunkSize,
        chunkOverlap: 0,
      });

      // Assess
      expect(chunks.length).toBeGreaterThan(1);
      for (const c of chunks) {
        expect(approxTokens(c.text)).toBeLessThanOrEqual(chunkSize);
        expect(c.text.trim()).not.toBe('');
      }
    }
  });
});
