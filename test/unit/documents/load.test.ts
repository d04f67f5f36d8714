import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadDocuments, loadFile } from '#shared/documents/index.js';
import type { LoadedDocument, LoadResult } from '#shared/documents/types.js';
import { ValidationError } from '#shared/errors.js';
import { writeFixtures } from './fixtures.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

let dir: string;
let result: LoadResult;

function doc(key: string): LoadedDocument {
  const found = result.documents.find((d) => d.key === key);
  if (!found) throw new Error(`document ${key} not loaded`);
  return found;
}

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'ai4rag-docs-'));
  await writeFixtures(dir);
  result = await loadDocuments([dir], { concurrency: 3 });
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('loadDocuments over a folder', () => {
  it('loads the good files under sorted relative POSIX keys and skips hidden entries', () => {
    // Assess
    expect(result.documents.map((d) => d.key)).toEqual([
      'alpha',
      'beta',
      'guide/intro.md',
      'guide/page.html',
      'hello.txt',
      'manual.json',
      'memo.docx',
      'notes.txt',
      'report.pdf',
    ]);
  });

  it('reports every bad file with its exact reason', () => {
    // Assess
    const failures = result.failures.map((f) => [f.key, f.reason]);
    expect(failures).toEqual([
      ['broken.pdf', 'corrupt'],
      ['corpus.jsonl:2', 'invalid_record'],
      ['corpus.jsonl:4', 'invalid_record'],
      ['data.xyz', 'unsupported_type'],
      ['empty.md', 'empty'],
      ['latin1.txt', 'not_utf8'],
      ['not-docling.json', 'corrupt'],
    ]);
  });

  it('writes messages that name the file and the problem', () => {
    // Assess
    const byKey = new Map(result.failures.map((f) => [f.key, f]));
    expect(byKey.get('broken.pdf')?.message).toMatch(/^broken\.pdf: not a valid PDF \(.+\)$/);
    expect(byKey.get('data.xyz')?.message).toMatch(/^data\.xyz: unsupported file type "\.xyz"/);
    expect(byKey.get('empty.md')?.message).toBe('empty.md: file is empty (0 bytes)');
    expect(byKey.get('latin1.txt')?.message).toBe('latin1.txt: not valid UTF-8 text');
    expect(byKey.get('not-docling.json')?.message).toBe(
      'not-docling.json: JSON is not a DoclingDocument (expected schema_name "DoclingDocument" with a body)',
    );
    expect(byKey.get('corpus.jsonl:4')?.message).toBe('corpus.jsonl:4: missing a string "text"');
    expect(byKey.get('corpus.jsonl:2')?.sourcePath).toBe(path.join(dir, 'corpus.jsonl'));
  });

  it('hashes the source bytes with SHA-256', () => {
    // Assess
    expect(doc('hello.txt').contentHash).toBe(
      'b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9',
    );
  });

  it('keeps txt text verbatim apart from the BOM and CRLF, and splits paragraphs on blank lines', () => {
    // Assess
    const notes = doc('notes.txt');
    expect(notes.text).toBe('First paragraph\nstill first.\n\nSecond paragraph.\n');
    expect(notes.blocks).toEqual([
      { type: 'paragraph', text: 'First paragraph still first.' },
      { type: 'paragraph', text: 'Second paragraph.' },
    ]);
    expect(notes.format).toBe('txt');
    expect(notes.sourcePath).toBe(path.join(dir, 'notes.txt'));
  });

  it('parses markdown headings, lists, tables and code while keeping the source text', () => {
    // Assess
    const intro = doc('guide/intro.md');
    expect(intro.title).toBe('Guide');
    expect(intro.text.startsWith('# Guide\n\nIntro line one\nand line two.')).toBe(true);
    expect(intro.blocks).toEqual([
      { type: 'heading', level: 1, text: 'Guide' },
      { type: 'paragraph', text: 'Intro line one and line two.' },
      { type: 'heading', level: 2, text: 'Limits' },
      { type: 'list', items: ['first item', 'second item', 'third item'] },
      {
        type: 'table',
        rows: [
          ['Name', 'Limit'],
          ['Wind', '15 m/s'],
          ['Ice', '10 cm'],
        ],
      },
      { type: 'code', text: 'const x = 1;' },
    ]);
  });

  it('parses HTML without script, style, nav, header or footer and renders it as markdown', () => {
    // Assess
    const page = doc('guide/page.html');
    expect(page.title).toBe('Leave Page');
    expect(page.blocks).toEqual([
      { type: 'heading', level: 1, text: 'Leave' },
      { type: 'paragraph', text: 'Annual leave is 25 days.' },
      { type: 'heading', level: 2, text: 'Table' },
      {
        type: 'table',
        rows: [
          ['Years', 'Days'],
          ['0-4', '25'],
          ['5+', '27'],
        ],
      },
      { type: 'list', items: ['Request early', 'Carry over 5 days'] },
      { type: 'code', text: 'code  block' },
    ]);
    expect(page.text).toBe(
      [
        '# Leave',
        'Annual leave is 25 days.',
        '## Table',
        '| Years | Days |\n| --- | --- |\n| 0-4 | 25 |\n| 5+ | 27 |',
        '- Request early\n- Carry over 5 days',
        '```\ncode  block\n```',
      ].join('\n\n'),
    );
  });

  it('keeps DOCX headings and tables through mammoth', () => {
    // Assess
    const memo = doc('memo.docx');
    expect(memo.title).toBe('Crew Handbook');
    expect(memo.blocks).toEqual([
      { type: 'heading', level: 1, text: 'Crew Handbook' },
      { type: 'heading', level: 2, text: 'Shifts' },
      { type: 'paragraph', text: 'Shifts last 12 hours.' },
      {
        type: 'table',
        rows: [
          ['Role', 'Minimum'],
          ['Captain', '1'],
          ['Deckhand', '2'],
        ],
      },
    ]);
  });

  it('rebuilds PDF headings, paragraphs and tables from the text layout', () => {
    // Assess
    const report = doc('report.pdf');
    expect(report.title).toBe('Quarterly Report');
    expect(report.blocks).toEqual([
      { type: 'heading', level: 1, text: 'Quarterly Report' },
      { type: 'heading', level: 2, text: 'Fuel use' },
      {
        type: 'paragraph',
        text: 'The fleet used 1,234 litres of fuel this quarter. This line continues the same paragraph.',
      },
      {
        type: 'table',
        rows: [
          ['Vessel', 'Litres'],
          ['Eira', '800'],
          ['Tova', '434'],
        ],
      },
    ]);
  });

  it('reads a DoclingDocument in body order, skipping page furniture', () => {
    // Assess
    const manual = doc('manual.json');
    expect(manual.format).toBe('docling');
    expect(manual.title).toBe('Lock Manual');
    expect(manual.text).toBe(
      [
        '# Lock Manual',
        '## Opening hours',
        '- Summer: 05:00-23:00\n- Winter: 06:00-20:00',
        '| Vessel | Fee |\n| --- | --- |\n| Barge | 1,150 |',
        'Fees are invoiced monthly.',
      ].join('\n\n'),
    );
  });

  it('loads each jsonl line as a document keyed by its id', () => {
    // Assess
    const alpha = doc('alpha');
    expect(alpha.text).toBe('Alpha\n\nAlpha body.');
    expect(alpha.title).toBe('Alpha');
    expect(alpha.contentHash).toBe(createHash('sha256').update('Alpha\nAlpha body.').digest('hex'));
    expect(alpha.blocks).toEqual([
      { type: 'heading', level: 1, text: 'Alpha' },
      { type: 'paragraph', text: 'Alpha body.' },
    ]);
    const beta = doc('beta');
    expect(beta.title).toBeUndefined();
    expect(beta.text).toBe('Beta body.\n\nSecond part.');
    expect(beta.format).toBe('jsonl');
  });
});

describe('loadDocuments limits and errors', () => {
  it('reports a file over maxFileBytes as too_large without reading it', async () => {
    // Prepare
    const big = path.join(dir, 'guide', 'intro.md');

    // Act
    const { documents, failures } = await loadDocuments([big], { maxFileBytes: 10 });

    // Assess
    expect(documents).toEqual([]);
    expect(failures).toHaveLength(1);
    expect(failures[0]?.key).toBe('intro.md');
    expect(failures[0]?.reason).toBe('too_large');
    expect(failures[0]?.message).toMatch(
      /^intro\.md: file is \d+ bytes, over the limit of 10 bytes$/,
    );
  });

  it('keeps the first of two documents with the same key', async () => {
    // Prepare
    const other = path.join(dir, 'guide', 'hello.txt');
    await writeFile(other, 'second hello');

    // Act
    const { documents, failures } = await loadDocuments([path.join(dir, 'hello.txt'), other]);

    // Assess
    expect(documents.map((d) => d.text)).toEqual(['hello world']);
    expect(failures.map((f) => [f.key, f.reason, f.sourcePath])).toEqual([
      ['hello.txt', 'duplicate_key', other],
    ]);
    await rm(other);
  });

  it('throws a ValidationError for a path that does not exist', async () => {
    // Act
    const act = loadDocuments([path.join(dir, 'missing-folder')]);

    // Assess
    await expect(act).rejects.toBeInstanceOf(ValidationError);
    await expect(act).rejects.toThrow(/missing-folder/);
  });

  it.each([0, 33, 1.5])('rejects a concurrency of %s', async (concurrency) => {
    // Act
    const act = loadDocuments([dir], { concurrency });

    // Assess
    await expect(act).rejects.toBeInstanceOf(ValidationError);
  });

  it('reports a missing file given to loadFile as read_error', async () => {
    // Act
    const { failures } = await loadFile(path.join(dir, 'gone.md'), 'gone.md');

    // Assess
    expect(failures.map((f) => f.reason)).toEqual(['read_error']);
  });

  it('reports an HTML file with no text as empty', async () => {
    // Prepare
    const file = path.join(dir, 'blank.html');
    await writeFile(file, '<html><head><script>x()</script></head><body> </body></html>');

    // Act
    const { documents, failures } = await loadFile(file, 'blank.html');

    // Assess
    expect(documents).toEqual([]);
    expect(failures.map((f) => [f.reason, f.message])).toEqual([
      ['empty', 'blank.html: no text found after extraction'],
    ]);
    await rm(file);
  });
});

describe('sample corpora', () => {
  it('loads every example document with headings, and tables where the format has them', async () => {
    // Act
    const { documents, failures } = await loadDocuments([path.join(repoRoot, 'examples/docs')]);

    // Assess
    expect(failures).toEqual([]);
    expect(documents.length).toBeGreaterThanOrEqual(16);
    const formats = documents.map((d) => d.format);
    for (const format of ['md', 'html', 'txt', 'pdf', 'docx'] as const) {
      expect(formats.filter((f) => f === format).length).toBeGreaterThanOrEqual(3);
    }
    for (const d of documents.filter((x) => x.format !== 'txt')) {
      expect(
        d.blocks.some((b) => b.type === 'heading' && b.level === 2),
        d.key,
      ).toBe(true);
      expect(
        d.blocks.some((b) => b.type === 'table'),
        d.key,
      ).toBe(true);
    }
    expect(
      documents.filter((d) => d.blocks.some((b) => b.type === 'table')).length,
    ).toBeGreaterThanOrEqual(6);
  });

  it('reads the example PDF and DOCX tables back cell for cell', async () => {
    // Act
    const { documents } = await loadDocuments([
      path.join(repoRoot, 'examples/docs/policies/procurement-policy.pdf'),
      path.join(repoRoot, 'examples/docs/operations/lock-scheduling.docx'),
    ]);

    // Assess
    const tables = documents.map((d) => d.blocks.find((b) => b.type === 'table'));
    expect(tables).toEqual([
      {
        type: 'table',
        rows: [
          ['Contract value', 'Quotes needed', 'Approved by'],
          ['Up to 20,000 crowns', '1 quote', 'Budget holder'],
          ['20,001 to 150,000 crowns', '3 written quotes', 'Department head'],
          ['150,001 to 750,000 crowns', '3 quotes + evaluation', 'Director and CFO'],
          ['Above 750,000 crowns', 'Open tender', 'Board of Directors'],
        ],
      },
      {
        type: 'table',
        rows: [
          ['Chamber', 'Length', 'Width', 'Depth over sill', 'Lift'],
          ['Upstream chamber', '135 m', '12.5 m', '3.5 m', '7.2 m'],
          ['Downstream chamber', '95 m', '10.0 m', '3.2 m', '7.2 m'],
        ],
      },
    ]);
  });

  const squadDocs = path.resolve(repoRoot, '../shared/data/squad_docs/docs');
  it.skipIf(!existsSync(squadDocs))('loads the 48 SQuAD documents without failures', async () => {
    // Act
    const { documents, failures } = await loadDocuments([squadDocs]);

    // Assess
    expect(failures).toEqual([]);
    expect(documents).toHaveLength(48);
  });
});
