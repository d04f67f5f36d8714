import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { PDFDocument } from 'pdf-lib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DEFAULT_MAX_PDF_PAGES,
  loadBytes,
  loadDocuments,
  MAX_DOCX_ENTRIES,
  parseDocling,
  parseHtml,
  renderBlocks,
} from '#shared/documents/index.js';
import type { LoadedDocument, LoadResult } from '#shared/documents/types.js';
import {
  buildZip,
  DOCUMENT_XML_CLOSE,
  DOCUMENT_XML_OPEN,
  deflatedEntry,
  documentXml,
  flateBombPdf,
  minimalDocx,
  repeatedEntry,
  wordParagraph,
} from './bomb-fixtures.js';
import { DOCLING_SAMPLE, HTML_SAMPLE, MARKDOWN_SAMPLE, makeDocx, makePdf } from './fixtures.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(here, '../../..');
const MiB = 1024 * 1024;
/** Peak RSS the bomb corpus may reach in a fresh process (Node + tsx + mammoth + pdf.js ≈ 150 MiB). */
const RSS_BOUND_BYTES = 512 * MiB;

/** 1 MiB of WordprocessingML paragraphs (cut mid-tag at the end): the repeated piece of the bombs. */
const BOMB_PIECE = Buffer.alloc(MiB, wordParagraph('bomb'));

/** A DOCX whose document.xml really inflates to `mib` MiB and whose directory says `declared` bytes. */
function bombDocx(mib: number, declared?: number): Buffer {
  const entry = repeatedEntry('word/document.xml', BOMB_PIECE, mib);
  return minimalDocx(declared === undefined ? entry : { ...entry, declaredSize: declared });
}

/**
 * A DOCX with an honest 70 MiB media member at ~120:1 (under the ratio bound): only the declared
 * total gives it away. 4 KiB of pseudo-random letters, repeated, deflates about 120:1.
 */
function wideDocx(): Buffer {
  let seed = 7;
  const block = Buffer.from(
    Array.from({ length: 4096 }, () => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return 97 + (seed % 26);
    }),
  );
  const piece = Buffer.concat(Array.from({ length: MiB / block.length }, () => block));
  return minimalDocx(documentXml(['Looks harmless.']), [
    repeatedEntry('word/media/blob.bin', piece, 70),
  ]);
}

/** A PDF of `pages` empty pages. */
async function emptyPagesPdf(pages: number): Promise<Uint8Array> {
  const pdf = await PDFDocument.create();
  for (let i = 0; i < pages; i++) pdf.addPage([200, 200]);
  return pdf.save();
}

/** A DoclingDocument whose groups nest `depth` deep, the innermost holding one text. */
function deepDocling(depth: number): string {
  const groups = Array.from({ length: depth }, (_, i) => ({
    children: [{ $ref: i + 1 < depth ? `#/groups/${i + 1}` : '#/texts/0' }],
  }));
  return JSON.stringify({
    schema_name: 'DoclingDocument',
    body: { children: [{ $ref: '#/groups/0' }] },
    groups,
    texts: [{ label: 'text', text: 'At the bottom.' }],
  });
}

const NUL_TEXT = 'Crew\u0000 list\u0000\u0000 for Monday.\n';

const POISONED_DOCLING = {
  ...DOCLING_SAMPLE,
  texts: DOCLING_SAMPLE.texts.map((t, i) =>
    i === 4 ? { ...t, text: 'Fees are\u0000 invoiced \ud83d monthly.' } : t,
  ),
};

let dir: string;
let result: LoadResult;

function doc(key: string): LoadedDocument {
  const found = result.documents.find((d) => d.key === key);
  if (!found) throw new Error(`document ${key} not loaded`);
  return found;
}

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'ai4rag-poison-'));
  const n = 100_000;
  const files: [string, string | Uint8Array][] = [
    // Good documents, some carrying text PostgreSQL cannot store.
    ['good.md', MARKDOWN_SAMPLE],
    ['good.html', HTML_SAMPLE],
    ['good.pdf', await makePdf()],
    ['good.docx', await makeDocx()],
    ['hand.docx', minimalDocx(documentXml(['Built by hand.', 'Second paragraph.']))],
    ['hand64.docx', minimalDocx(documentXml(['Built as ZIP64.']), [], { zip64: true })],
    ['docling.json', JSON.stringify(POISONED_DOCLING)],
    [
      // JSON nested 100,000 deep where the walk never goes: JSON.parse copes, nothing recurses.
      'nested-json.json',
      `{"schema_name":"DoclingDocument","body":{"children":[{"$ref":"#/texts/0"}]},"texts":[{"label":"text","text":"Shallow text."}],"furniture":${'['.repeat(n)}${']'.repeat(n)}}`,
    ],
    ['nul.txt', NUL_TEXT],
    [
      'corpus.jsonl',
      [
        JSON.stringify({ id: 'nul-record', text: 'a\u0000b' }),
        JSON.stringify({ id: 'lone', title: 'Lone', text: 'x\ud800y' }),
        JSON.stringify({ id: 'bad\u0000id', text: 'fine text' }),
      ].join('\n'),
    ],
    // Poison.
    ['bomb.docx', bombDocx(300)],
    ['liar.docx', bombDocx(300, 1024)],
    ['bomb-gib.docx', bombDocx(1024, 4096)],
    ['wide.docx', wideDocx()],
    ['pages.pdf', await emptyPagesPdf(DEFAULT_MAX_PDF_PAGES + 1)],
    ['bomb.pdf', flateBombPdf(300)],
    ['deep.html', `${'<div>'.repeat(n)}deep${'</div>'.repeat(n)}`],
    ['deep.json', deepDocling(n)],
  ];
  for (const [name, content] of files) await writeFile(path.join(dir, name), content);
  result = await loadDocuments([dir]);
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('loadDocuments over a folder of good and poisoned files', () => {
  it('returns every good document', () => {
    // Assess
    expect(result.documents.map((d) => d.key)).toEqual([
      'nul-record',
      'lone',
      'docling.json',
      'good.docx',
      'good.html',
      'good.md',
      'good.pdf',
      'hand.docx',
      'hand64.docx',
      'nested-json.json',
      'nul.txt',
    ]);
  });

  it('reports one failure per bad file with the right reason', () => {
    // Assess
    expect(result.failures.map((f) => [f.key, f.reason])).toEqual([
      ['bomb-gib.docx', 'bomb'],
      ['bomb.docx', 'bomb'],
      ['bomb.pdf', 'bomb'],
      ['corpus.jsonl:3', 'invalid_record'],
      ['deep.html', 'too_deep'],
      ['deep.json', 'too_deep'],
      ['liar.docx', 'bomb'],
      ['pages.pdf', 'too_large'],
      ['wide.docx', 'bomb'],
    ]);
  });

  it('writes messages that name the file, the bound and what was found', () => {
    // Assess
    const byKey = new Map(result.failures.map((f) => [f.key, f.message]));
    expect(byKey.get('bomb.docx')).toMatch(
      /^bomb\.docx: word\/document\.xml declares a \d+:1 compression ratio \(300 MiB from \d+ KiB, limit 200:1\); refused as a decompression bomb$/,
    );
    expect(byKey.get('liar.docx')).toBe(
      'liar.docx: word/document.xml inflates past its declared 1 KiB (the zip directory lies about its size); refused as a decompression bomb',
    );
    expect(byKey.get('bomb-gib.docx')).toBe(
      'bomb-gib.docx: word/document.xml inflates past its declared 4 KiB (the zip directory lies about its size); refused as a decompression bomb',
    );
    expect(byKey.get('wide.docx')).toBe(
      'wide.docx: inflates past 64 MiB (declared 70 MiB, 70 MiB of it in word/media/blob.bin); refused as a decompression bomb',
    );
    expect(byKey.get('bomb.pdf')).toMatch(
      /^bomb\.pdf: its streams inflate past 128 MiB \(at byte \d+\); refused as a decompression bomb$/,
    );
    expect(byKey.get('pages.pdf')).toBe(
      'pages.pdf: has 2001 pages, over the limit of 2000; refused',
    );
    expect(byKey.get('deep.html')).toBe('deep.html: HTML nested deeper than 512 elements; refused');
    expect(byKey.get('deep.json')).toBe(
      'deep.json: DoclingDocument nested deeper than 512 levels; refused',
    );
    expect(byKey.get('corpus.jsonl:3')).toBe(
      'corpus.jsonl:3: "id" holds a NUL character or an unpaired surrogate',
    );
  });

  it('strips NUL characters, keeps the hash of the original bytes and warns', () => {
    // Assess
    const nul = doc('nul.txt');
    expect(nul.text).toBe('Crew list for Monday.\n');
    expect(nul.blocks).toEqual([{ type: 'paragraph', text: 'Crew list for Monday.' }]);
    expect(nul.contentHash).toBe(createHash('sha256').update(NUL_TEXT).digest('hex'));
    expect(result.warnings).toContainEqual({
      key: 'nul.txt',
      sourcePath: path.join(dir, 'nul.txt'),
      reason: 'nul_stripped',
      message: 'nul.txt: stripped 3 NUL characters (U+0000), which PostgreSQL cannot store',
    });
  });

  it('cleans jsonl records and docling strings the same way, one warning per document', () => {
    // Assess
    expect(doc('nul-record').text).toBe('ab');
    expect(doc('lone').text).toBe('Lone\n\nx\uFFFDy');
    expect(doc('nul-record').contentHash).toBe(
      createHash('sha256').update('\na\u0000b').digest('hex'),
    );
    const docling = doc('docling.json');
    expect(docling.text).toContain('Fees are invoiced \uFFFD monthly.');
    expect(JSON.stringify(docling)).not.toMatch(/\\u0000|\\ud83d/i);
    expect(result.warnings?.map((w) => [w.key, w.reason])).toEqual([
      ['corpus.jsonl:1', 'nul_stripped'],
      ['corpus.jsonl:2', 'invalid_unicode_replaced'],
      ['docling.json', 'nul_stripped'],
      ['docling.json', 'invalid_unicode_replaced'],
      ['nul.txt', 'nul_stripped'],
    ]);
  });

  it('reads hand-built and ZIP64 packages through the bounded zip reader', () => {
    // Assess
    expect(doc('hand.docx').blocks).toEqual([
      { type: 'paragraph', text: 'Built by hand.' },
      { type: 'paragraph', text: 'Second paragraph.' },
    ]);
    expect(doc('hand64.docx').text).toBe('Built as ZIP64.');
    expect(doc('nested-json.json').text).toBe('Shallow text.');
  });

  it('keeps peak memory bounded when the corpus loads in a fresh process', async () => {
    // Act
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', path.join(here, 'bomb-child.ts'), dir],
      { cwd: repoRoot },
    );
    const report = JSON.parse(stdout) as {
      documents: string[];
      failures: [string, string][];
      maxRssBytes: number;
    };

    // Assess
    expect(report.failures).toEqual(result.failures.map((f) => [f.key, f.reason]));
    expect(report.documents).toEqual(result.documents.map((d) => d.key));
    expect(report.maxRssBytes).toBeLessThan(RSS_BOUND_BYTES);
  });
});

describe('DOCX zip guard', () => {
  it('refuses a ZIP64 package that declares gigabytes', async () => {
    // Prepare
    const entry = repeatedEntry('word/document.xml', BOMB_PIECE, 4);
    const bytes = minimalDocx({ ...entry, declaredSize: 5 * 1024 * MiB }, [], { zip64: true });

    // Act
    const { failures } = await loadBytes(bytes, 'big64.docx');

    // Assess
    expect(failures.map((f) => [f.reason, f.message])).toEqual([
      [
        'bomb',
        expect.stringMatching(
          /^big64\.docx: word\/document\.xml declares a \d+:1 compression ratio \(5 GiB from/,
        ),
      ],
    ]);
  });

  it('refuses a package over maxDocxInflatedBytes before inflating anything', async () => {
    // Prepare
    const bytes = minimalDocx(documentXml(['x'.repeat(3000)]));

    // Act
    const { failures } = await loadBytes(bytes, 'small.docx', { maxDocxInflatedBytes: 1000 });

    // Assess
    expect(failures.map((f) => [f.reason, f.message])).toEqual([
      [
        'bomb',
        expect.stringMatching(
          /^small\.docx: inflates past 1000 bytes \(declared 3\.\d KiB, 3\.\d KiB of it in word\/document\.xml\); refused as a decompression bomb$/,
        ),
      ],
    ]);
  });

  it('refuses a package whose XML passes maxDocxXmlBytes as too_large', async () => {
    // Prepare
    const paragraphs = Array.from({ length: 400 }, (_, i) => `Paragraph ${i} about locks.`);
    const bytes = minimalDocx(documentXml(paragraphs));

    // Act
    const { failures } = await loadBytes(bytes, 'long.docx', { maxDocxXmlBytes: 4096 });

    // Assess
    expect(failures.map((f) => [f.reason, f.message])).toEqual([
      [
        'too_large',
        'long.docx: its XML inflates past 4 KiB (at word/document.xml); too large to convert',
      ],
    ]);
  });

  it.each([
    [
      'truncated',
      (zip: Buffer) => zip.subarray(0, zip.length - 30),
      /no zip end-of-central-directory/,
    ],
    [
      'with bytes prepended',
      (zip: Buffer) => Buffer.concat([Buffer.from('junk'), zip]),
      /central directory is not where the end record says/,
    ],
    [
      'with a local header that disagrees',
      (zip: Buffer) => {
        const copy = Buffer.from(zip);
        copy.write('X', copy.indexOf('word/document.xml'));
        return copy;
      },
      /word\/document\.xml: local header disagrees with the central directory/,
    ],
    [
      'with a corrupted member',
      (zip: Buffer) => {
        const copy = Buffer.from(zip);
        const at = copy.indexOf('word/document.xml') + 'word/document.xml'.length + 4;
        copy[at] = (copy[at] ?? 0) ^ 0xff;
        return copy;
      },
      /word\/document\.xml/,
    ],
  ])('reports a zip %s as corrupt', async (_name, damage, pattern) => {
    // Prepare
    const bytes = damage(minimalDocx(documentXml(['Some text in a paragraph.'])));

    // Act
    const { failures } = await loadBytes(bytes, 'damaged.docx');

    // Assess
    expect(failures).toHaveLength(1);
    expect(failures[0]?.reason).toBe('corrupt');
    expect(failures[0]?.message).toMatch(/^damaged\.docx: not a valid DOCX \(/);
    expect(failures[0]?.message).toMatch(pattern);
  });

  it('refuses overlapping members, the non-recursive zip bomb layout', async () => {
    // Prepare: a stored member whose data is itself a complete second member.
    const inner = buildZip([
      deflatedEntry('word/document.xml', DOCUMENT_XML_OPEN + DOCUMENT_XML_CLOSE),
    ]);
    const innerLocal = inner.subarray(0, inner.indexOf(Buffer.from([0x50, 0x4b, 0x01, 0x02])));
    const outer = buildZip([
      { name: 'a.bin', method: 0, data: innerLocal, crc: 0, size: innerLocal.length },
    ]);
    // Add a central entry for the inner member, pointing inside a.bin's data.
    const central = inner.subarray(innerLocal.length, inner.length - 22);
    central.writeUInt32LE(30 + 'a.bin'.length, 42);
    const end = Buffer.from(outer.subarray(outer.length - 22));
    end.writeUInt16LE(2, 8);
    end.writeUInt16LE(2, 10);
    end.writeUInt32LE(end.readUInt32LE(12) + central.length, 12);
    const bytes = Buffer.concat([outer.subarray(0, outer.length - 22), central, end]);

    // Act
    const { failures } = await loadBytes(bytes, 'overlap.docx');

    // Assess
    expect(failures.map((f) => [f.reason, f.message])).toEqual([
      [
        'bomb',
        'overlap.docx: zip members a.bin and word/document.xml overlap; refused as a decompression bomb',
      ],
    ]);
  });

  it(`refuses more than ${MAX_DOCX_ENTRIES} members`, async () => {
    // Prepare
    const tiny = deflatedEntry('x', '');
    const entries = Array.from({ length: MAX_DOCX_ENTRIES + 1 }, (_, i) => ({
      ...tiny,
      name: `m/${i}`,
    }));

    // Act
    const { failures } = await loadBytes(buildZip(entries), 'many.docx');

    // Assess
    expect(failures.map((f) => [f.reason, f.message])).toEqual([
      [
        'too_large',
        `many.docx: has ${MAX_DOCX_ENTRIES + 1} zip members, over the limit of ${MAX_DOCX_ENTRIES}; refused`,
      ],
    ]);
  });
});

describe('PDF bounds', () => {
  it('counts the Flate streams pdf.js would inflate against maxPdfInflatedBytes', async () => {
    // Prepare
    const pdf = await makePdf();

    // Act
    const tight = await loadBytes(pdf, 'report.pdf', { maxPdfInflatedBytes: 100 });
    const roomy = await loadBytes(pdf, 'report.pdf', { maxPdfInflatedBytes: 100_000 });

    // Assess
    expect(tight.failures.map((f) => f.reason)).toEqual(['bomb']);
    expect(roomy.documents.map((d) => d.title)).toEqual(['Quarterly Report']);
  });

  it('stops extraction once the text passes maxTextChars', async () => {
    // Act
    const { failures } = await loadBytes(await makePdf(), 'report.pdf', { maxTextChars: 20 });

    // Assess
    expect(failures.map((f) => [f.reason, f.message])).toEqual([
      [
        'too_large',
        expect.stringMatching(
          /^report\.pdf: extracted text passes 20 characters by page 1 of 1; refused$/,
        ),
      ],
    ]);
  });

  it('checks the page count against maxPdfPages before reading a page', async () => {
    // Act
    const { failures } = await loadBytes(await emptyPagesPdf(3), 'three.pdf', { maxPdfPages: 2 });

    // Assess
    expect(failures.map((f) => f.message)).toEqual([
      'three.pdf: has 3 pages, over the limit of 2; refused',
    ]);
  });
});

describe('nesting and text bounds', () => {
  it('measures HTML nesting exactly against maxDepth', () => {
    // Prepare
    const html = '<div><div>x</div></div>';

    // Act
    const act = (maxDepth: number) => () => parseHtml(html, { label: 'n.html', maxDepth });

    // Assess
    expect(act(2)().blocks).toEqual([{ type: 'paragraph', text: 'x' }]);
    expect(act(1)).toThrow('n.html: HTML nested deeper than 1 elements; refused');
  });

  it('measures Docling group nesting against maxDepth', () => {
    // Act
    const act = (maxDepth: number) => () => parseDocling(deepDocling(3), 'g.json', { maxDepth });

    // Assess
    expect(act(4)().blocks).toEqual([{ type: 'paragraph', text: 'At the bottom.' }]);
    expect(act(3)).toThrow('g.json: DoclingDocument nested deeper than 3 levels; refused');
  });

  it('applies maxNestingDepth to mammoth output too', async () => {
    // Act
    const { failures } = await loadBytes(await makeDocx(), 'memo.docx', { maxNestingDepth: 2 });

    // Assess
    expect(failures.map((f) => [f.reason, f.message])).toEqual([
      ['too_deep', 'memo.docx: HTML nested deeper than 2 elements; refused'],
    ]);
  });

  it.each([
    ['notes.txt', 'a'.repeat(50)],
    ['page.html', `<p>${'a'.repeat(50)}</p>`],
  ])('fails %s whose text passes maxTextChars as too_large', async (key, content) => {
    // Act
    const { documents, failures } = await loadBytes(Buffer.from(content), key, {
      maxTextChars: 40,
    });

    // Assess
    expect(documents).toEqual([]);
    expect(failures.map((f) => f.reason)).toEqual(['too_large']);
    expect(failures[0]?.message).toMatch(
      new RegExp(
        `^${key.replace('.', '\\.')}: extracted text is (at least )?50 characters, over the limit of 40; refused$`,
      ),
    );
  });

  it('cleans the NUL and surrogate a DOCX smuggles in as XML character references', async () => {
    // Prepare
    const bytes = minimalDocx(documentXml(['x&#0;y &#xD800; z']));

    // Act
    const { documents, warnings } = await loadBytes(bytes, 'refs.docx');

    // Assess
    expect(documents.map((d) => d.text)).toEqual(['xy \uFFFD z']);
    expect(warnings?.map((w) => w.reason)).toEqual(['nul_stripped', 'invalid_unicode_replaced']);
  });

  it('strips NUL from HTML text and warns', async () => {
    // Act
    const { documents, warnings } = await loadBytes(Buffer.from('<p>a\u0000b</p>'), 'n.html');

    // Assess
    expect(documents.map((d) => d.text)).toEqual(['ab']);
    expect(warnings?.map((w) => w.message)).toEqual([
      'n.html: stripped 1 NUL character (U+0000), which PostgreSQL cannot store',
    ]);
  });
});

describe('stack safety on large flat input', () => {
  it('renders a 150,000-row table', () => {
    // Prepare
    const rows = Array.from({ length: 150_000 }, (_, i) => [`r${i}`, 'v']);

    // Act
    const text = renderBlocks([{ type: 'table', rows }]);

    // Assess
    expect(text.split('\n')).toHaveLength(150_001);
  });

  it('collects 150,000 bad jsonl lines into failures without overflowing', async () => {
    // Prepare
    const flat = await mkdtemp(path.join(tmpdir(), 'ai4rag-flat-'));
    const file = path.join(flat, 'many.jsonl');
    await writeFile(file, '[1]\n'.repeat(150_000));

    // Act
    const { failures } = await loadDocuments([file]);

    // Assess
    expect(failures).toHaveLength(150_000);
    expect(failures[149_999]?.key).toBe('many.jsonl:150000');
    await rm(flat, { recursive: true, force: true });
  });
});
