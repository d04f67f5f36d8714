import { describe, expect, it } from 'vitest';
import {
  DocumentParseError,
  detectFormat,
  parseDocling,
  parseDocx,
  parseHtml,
  parseJsonl,
  parseMarkdown,
  parsePlainText,
  renderBlocks,
} from '#shared/documents/index.js';

describe('parseMarkdown', () => {
  it('handles closing hashes, list continuations, blockquotes and tilde fences', () => {
    // Prepare
    const source = [
      '## Limits ##',
      '- long item',
      '  continued here',
      '- short',
      '> quoted text',
      '~~~ts',
      'a  |  b',
      '~~~',
      '####### not a heading',
    ].join('\n');

    // Act
    const { blocks, title } = parseMarkdown(source);

    // Assess
    expect(title).toBeUndefined();
    expect(blocks).toEqual([
      { type: 'heading', level: 2, text: 'Limits' },
      { type: 'list', items: ['long item continued here', 'short'] },
      { type: 'paragraph', text: 'quoted text' },
      { type: 'code', text: 'a  |  b' },
      { type: 'paragraph', text: '####### not a heading' },
    ]);
  });

  it('reads a table without outer pipes and with an escaped pipe', () => {
    // Act
    const { blocks } = parseMarkdown('a | b\n--- | ---\nx \\| y | z');

    // Assess
    expect(blocks).toEqual([
      {
        type: 'table',
        rows: [
          ['a', 'b'],
          ['x | y', 'z'],
        ],
      },
    ]);
  });
});

describe('renderBlocks', () => {
  it('pads ragged table rows, escapes pipes and clamps heading levels', () => {
    // Act
    const text = renderBlocks([
      { type: 'heading', level: 9, text: 'Deep' },
      {
        type: 'table',
        rows: [['a', 'b|c'], ['only']],
      },
      { type: 'list', items: [] },
    ]);

    // Assess
    expect(text).toBe('###### Deep\n\n| a | b\\|c |\n| --- | --- |\n| only |  |');
  });
});

describe('parsePlainText', () => {
  it('splits on blank lines that contain spaces and drops empty paragraphs', () => {
    // Act
    const blocks = parsePlainText('one\n   \n\n\ntwo\nlines\n \t\n');

    // Assess
    expect(blocks).toEqual([
      { type: 'paragraph', text: 'one' },
      { type: 'paragraph', text: 'two lines' },
    ]);
  });
});

describe('parseHtml', () => {
  it('flattens nested lists and takes the title from the first h1 when there is no <title>', () => {
    // Act
    const { blocks, title } = parseHtml(
      '<div>Loose <i>inline</i> text<h1>Main</h1><ol><li>One<ul><li>One.a</li></ul></li><li>Two</li></ol></div>',
    );

    // Assess
    expect(title).toBe('Main');
    expect(blocks).toEqual([
      { type: 'paragraph', text: 'Loose inline text' },
      { type: 'heading', level: 1, text: 'Main' },
      { type: 'list', items: ['One', 'One.a', 'Two'] },
    ]);
  });
});

describe('parseDocling', () => {
  it('walks nested groups and maps section levels below the title', () => {
    // Prepare
    const json = JSON.stringify({
      schema_name: 'DoclingDocument',
      body: { children: [{ $ref: '#/groups/0' }, { $ref: '#/texts/2' }] },
      groups: [{ label: 'chapter', children: [{ $ref: '#/texts/0' }, { $ref: '#/texts/1' }] }],
      texts: [
        { label: 'section_header', level: 2, text: 'Deeper' },
        { label: 'code', text: '  x = 1\n  y = 2  ' },
        { label: 'caption', text: 'Figure 1' },
      ],
    });

    // Act
    const { blocks, title } = parseDocling(json, 'doc.json');

    // Assess
    expect(title).toBeUndefined();
    expect(blocks).toEqual([
      { type: 'heading', level: 3, text: 'Deeper' },
      { type: 'code', text: 'x = 1\n  y = 2' },
      { type: 'paragraph', text: 'Figure 1' },
    ]);
  });

  it('rejects invalid JSON as corrupt', () => {
    // Act
    const act = (): unknown => parseDocling('{oops', 'bad.json');

    // Assess
    expect(act).toThrow(DocumentParseError);
    expect(act).toThrow(/^bad\.json: invalid JSON \(/);
  });
});

describe('parseJsonl', () => {
  it('accepts numeric ids and rejects a non-string title', () => {
    // Prepare
    const source = '{"id": 7, "text": "Seven"}\n{"id": "x", "title": 3, "text": "t"}\n[1]\n';

    // Act
    const { documents, failures } = parseJsonl(source, 'c.jsonl', '/tmp/c.jsonl');

    // Assess
    expect(documents.map((d) => [d.key, d.text])).toEqual([['7', 'Seven']]);
    expect(failures.map((f) => f.message)).toEqual([
      'c.jsonl:2: "title" must be a string when present',
      'c.jsonl:3: expected a JSON object with "id" and "text"',
    ]);
  });
});

describe('detectFormat', () => {
  it.each([
    ['A/B.MD', 'md'],
    ['x.markdown', 'md'],
    ['x.HTM', 'html'],
    ['x.json', 'docling'],
    ['x.jsonl', 'jsonl'],
    ['x.doc', undefined],
    ['README', undefined],
  ])('detects %s as %s', (file, expected) => {
    // Act
    const format = detectFormat(file);

    // Assess
    expect(format).toBe(expected);
  });
});

describe('parseDocx', () => {
  it('rejects bytes that are not a DOCX package as corrupt', async () => {
    // Act
    const act = parseDocx(new TextEncoder().encode('not a zip file'), 'bad.docx');

    // Assess
    await expect(act).rejects.toMatchObject({ name: 'DocumentParseError', reason: 'corrupt' });
    await expect(act).rejects.toThrow(/^bad\.docx: not a valid DOCX \(/);
  });
});
