import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Document, HeadingLevel, Packer, Paragraph, Table, TableCell, TableRow } from 'docx';
import { PDFDocument, StandardFonts } from 'pdf-lib';

/** A small PDF with a title, a heading, a two-line paragraph and a two-column table. */
export async function makePdf(): Promise<Uint8Array> {
  const pdf = await PDFDocument.create();
  const regular = await pdf.embedFont(StandardFonts.Helvetica);
  const bold = await pdf.embedFont(StandardFonts.HelveticaBold);
  const page = pdf.addPage([595, 842]);
  page.drawText('Quarterly Report', { x: 56, y: 780, size: 18, font: bold });
  page.drawText('Fuel use', { x: 56, y: 740, size: 14, font: bold });
  page.drawText('The fleet used 1,234 litres of fuel this quarter.', {
    x: 56,
    y: 715,
    size: 10.5,
    font: regular,
  });
  page.drawText('This line continues the same paragraph.', {
    x: 56,
    y: 700,
    size: 10.5,
    font: regular,
  });
  const rows = [
    ['Vessel', 'Litres'],
    ['Eira', '800'],
    ['Tova', '434'],
  ];
  rows.forEach(([name = '', litres = ''], i) => {
    const y = 670 - i * 15;
    const font = i === 0 ? bold : regular;
    page.drawText(name, { x: 56, y, size: 10.5, font });
    page.drawText(litres, { x: 220, y, size: 10.5, font });
  });
  return pdf.save();
}

/** A small DOCX with Heading1/Heading2 paragraphs, a body paragraph and a real table. */
export async function makeDocx(): Promise<Buffer> {
  const cell = (text: string): TableCell => new TableCell({ children: [new Paragraph(text)] });
  const doc = new Document({
    sections: [
      {
        children: [
          new Paragraph({ text: 'Crew Handbook', heading: HeadingLevel.HEADING_1 }),
          new Paragraph({ text: 'Shifts', heading: HeadingLevel.HEADING_2 }),
          new Paragraph('Shifts last 12 hours.'),
          new Table({
            rows: [
              new TableRow({ tableHeader: true, children: [cell('Role'), cell('Minimum')] }),
              new TableRow({ children: [cell('Captain'), cell('1')] }),
              new TableRow({ children: [cell('Deckhand'), cell('2')] }),
            ],
          }),
        ],
      },
    ],
  });
  return Packer.toBuffer(doc);
}

/** A DoclingDocument with a title, a section header, a list group, a table, text and a page footer. */
export const DOCLING_SAMPLE = {
  schema_name: 'DoclingDocument',
  version: '1.3.0',
  name: 'lock-manual',
  body: {
    self_ref: '#/body',
    children: [
      { $ref: '#/texts/0' },
      { $ref: '#/texts/1' },
      { $ref: '#/groups/0' },
      { $ref: '#/tables/0' },
      { $ref: '#/texts/4' },
      { $ref: '#/texts/5' },
    ],
  },
  groups: [
    {
      self_ref: '#/groups/0',
      label: 'list',
      children: [{ $ref: '#/texts/2' }, { $ref: '#/texts/3' }],
    },
  ],
  texts: [
    { self_ref: '#/texts/0', label: 'title', text: 'Lock Manual' },
    { self_ref: '#/texts/1', label: 'section_header', level: 1, text: 'Opening   hours' },
    { self_ref: '#/texts/2', label: 'list_item', text: 'Summer: 05:00-23:00' },
    { self_ref: '#/texts/3', label: 'list_item', text: 'Winter: 06:00-20:00' },
    { self_ref: '#/texts/4', label: 'text', text: 'Fees are invoiced\nmonthly.' },
    { self_ref: '#/texts/5', label: 'page_footer', text: 'Page 1 of 1' },
  ],
  tables: [
    {
      self_ref: '#/tables/0',
      label: 'table',
      data: {
        grid: [
          [{ text: 'Vessel' }, { text: 'Fee' }],
          [{ text: 'Barge' }, { text: '1,150' }],
        ],
      },
    },
  ],
};

export const MARKDOWN_SAMPLE = [
  '# Guide',
  '',
  'Intro line one',
  'and line two.',
  '',
  '## Limits',
  '',
  '- first item',
  '* second item',
  '1. third item',
  '',
  '| Name | Limit |',
  '| --- | ---: |',
  '| Wind | 15 m/s |',
  '| Ice | 10 cm |',
  '',
  '```',
  'const x = 1;',
  '```',
  '',
].join('\n');

export const HTML_SAMPLE = `<!DOCTYPE html><html><head><title>Leave Page</title>
<style>p { color: red; }</style><script>var hidden = 'script text';</script></head>
<body><header>Site header</header><nav><a href="/">Home</a></nav>
<main><h1>Leave</h1><p>Annual   leave is
 <b>25 days</b>.</p>
<h2>Table</h2>
<table><tr><th>Years</th><th>Days</th></tr><tr><td>0-4</td><td>25</td></tr><tr><td>5+</td><td>27</td></tr></table>
<ul><li>Request early</li><li>Carry over 5 days</li></ul>
<pre>code  block</pre>
</main><footer>Footer text</footer></body></html>`;

/** Writes every fixture file under `dir` and returns nothing; paths are documented in the tests. */
export async function writeFixtures(dir: string): Promise<void> {
  await mkdir(path.join(dir, 'guide'), { recursive: true });
  await mkdir(path.join(dir, '.git'), { recursive: true });
  const files: [string, string | Uint8Array][] = [
    ['hello.txt', 'hello world'],
    ['notes.txt', '\uFEFFFirst paragraph\r\nstill first.\r\n\r\nSecond paragraph.\r\n'],
    ['guide/intro.md', MARKDOWN_SAMPLE],
    ['guide/page.html', HTML_SAMPLE],
    ['report.pdf', await makePdf()],
    ['memo.docx', await makeDocx()],
    ['manual.json', JSON.stringify(DOCLING_SAMPLE)],
    ['not-docling.json', JSON.stringify({ hello: 'world' })],
    [
      'corpus.jsonl',
      [
        JSON.stringify({ id: 'alpha', title: 'Alpha', text: 'Alpha body.' }),
        '{"id": "broken", "text": ',
        JSON.stringify({ id: 'beta', text: 'Beta body.\n\nSecond part.' }),
        JSON.stringify({ id: 'gamma', title: 'No text' }),
        '',
      ].join('\n'),
    ],
    ['broken.pdf', Uint8Array.from({ length: 256 }, (_, i) => (i * 37 + 11) % 256)],
    ['empty.md', ''],
    ['latin1.txt', Uint8Array.from([0x63, 0x61, 0x66, 0xe9, 0x0a])],
    ['data.xyz', 'unsupported'],
    ['.hidden.md', '# Hidden'],
    ['.git/config.txt', 'hidden folder'],
  ];
  for (const [name, content] of files) await writeFile(path.join(dir, name), content);
}
