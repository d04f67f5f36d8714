import type mammothModule from 'mammoth';
import { getDocumentProxy } from 'unpdf';
import { DocumentParseError } from './errors.js';
import { parseHtml } from './html.js';
import {
  DEFAULT_MAX_DOCX_INFLATED_BYTES,
  DEFAULT_MAX_DOCX_XML_BYTES,
  DEFAULT_MAX_NESTING_DEPTH,
  DEFAULT_MAX_PDF_INFLATED_BYTES,
  DEFAULT_MAX_PDF_PAGES,
  DEFAULT_MAX_TEXT_CHARS,
  DOCX_RATIO_MIN_BYTES,
  MAX_DOCX_COMPRESSION_RATIO,
  MAX_DOCX_ENTRIES,
} from './limits.js';
import type { ParsedStructure } from './markdown.js';
import { type PdfTextItem, pdfLayoutToBlocks } from './pdf-layout.js';
import { checkPdfStreams } from './pdf-streams.js';
import { BoundedZipReader, readZipDirectory } from './zip.js';

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message.replace(/\.$/, '') : String(error);
}

/** A parsed PDF: its pages' text (for citations later) plus paragraph blocks. */
export interface ParsedPdf extends ParsedStructure {
  pages: string[];
}

/** Bounds of {@link parsePdf}. */
export interface PdfParseOptions {
  /** Default `DEFAULT_MAX_PDF_PAGES` (2000). */
  maxPages?: number;
  /** Bound on the text extracted from all pages together. Default `DEFAULT_MAX_TEXT_CHARS`. */
  maxTextChars?: number;
  /** Bound on the inflated size of the streams pdf.js decodes. Default `DEFAULT_MAX_PDF_INFLATED_BYTES` (128 MiB). */
  maxInflatedBytes?: number;
}

/**
 * Extracts a PDF's text page by page (`pages`, as pdf.js lays it out) and rebuilds headings,
 * tables, lists and paragraphs from the text positions and font sizes (see `pdfLayoutToBlocks`).
 * Pages are read one at a time; the page count is checked before the first, the text total after
 * each. Before pdf.js opens the file, its Flate streams are inflated once, capped (`checkPdfStreams`).
 *
 * @throws {DocumentParseError} `corrupt` when pdf.js cannot read the file, `too_large` past a bound,
 *   `bomb` when the streams inflate past `maxInflatedBytes`.
 */
export async function parsePdf(
  bytes: Uint8Array,
  label: string,
  options: PdfParseOptions = {},
): Promise<ParsedPdf> {
  const maxPages = options.maxPages ?? DEFAULT_MAX_PDF_PAGES;
  const maxTextChars = options.maxTextChars ?? DEFAULT_MAX_TEXT_CHARS;
  await checkPdfStreams(bytes, label, options.maxInflatedBytes ?? DEFAULT_MAX_PDF_INFLATED_BYTES);
  try {
    // pdf.js may transfer (detach) the buffer it is given: hand it a copy.
    const proxy = await getDocumentProxy(new Uint8Array(bytes), { verbosity: 0 });
    try {
      if (proxy.numPages > maxPages) {
        throw new DocumentParseError(
          'too_large',
          `${label}: has ${proxy.numPages} pages, over the limit of ${maxPages}; refused`,
        );
      }
      const pages: string[] = [];
      const items: PdfTextItem[][] = [];
      let chars = 0;
      for (let number = 1; number <= proxy.numPages; number++) {
        const page = await proxy.getPage(number);
        const content = await page.getTextContent();
        const pageItems: PdfTextItem[] = [];
        let text = '';
        for (const item of content.items) {
          if (!('str' in item) || item.str == null) continue;
          // As unpdf's extractText / extractTextItems, from one getTextContent per page.
          text += item.str + (item.hasEOL ? '\n' : '');
          const [, , c = 0, d = 0, x = 0, y = 0] = item.transform as number[];
          pageItems.push({ str: item.str, x, y, width: item.width, fontSize: Math.hypot(c, d) });
        }
        page.cleanup();
        chars += text.length;
        if (chars > maxTextChars) {
          throw new DocumentParseError(
            'too_large',
            `${label}: extracted text passes ${maxTextChars} characters by page ${number} of ${proxy.numPages}; refused`,
          );
        }
        pages.push(text);
        items.push(pageItems);
      }
      const blocks = pdfLayoutToBlocks(items);
      const first = blocks[0];
      return { blocks, pages, title: first?.type === 'heading' ? first.text : undefined };
    } finally {
      await proxy.destroy();
    }
  } catch (error: unknown) {
    if (error instanceof DocumentParseError) throw error;
    throw new DocumentParseError('corrupt', `${label}: not a valid PDF (${messageOf(error)})`, {
      cause: error,
    });
  }
}

/** Bounds of {@link parseDocx}. */
export interface DocxParseOptions {
  /** Bound on the total declared uncompressed size. Default `DEFAULT_MAX_DOCX_INFLATED_BYTES` (64 MiB). */
  maxInflatedBytes?: number;
  /** Bound on the bytes inflated for mammoth. Default `DEFAULT_MAX_DOCX_XML_BYTES` (16 MiB). */
  maxXmlBytes?: number;
  /** Bound on the element nesting of mammoth's HTML. Default `DEFAULT_MAX_NESTING_DEPTH` (512). */
  maxDepth?: number;
}

type Mammoth = typeof mammothModule;
let mammothLoaded: Promise<Mammoth> | undefined;
/** mammoth and its zip stack (~80 modules) load on the first DOCX, not with every command that imports the parsers. */
function loadMammoth(): Promise<Mammoth> {
  mammothLoaded ??= import('mammoth').then(
    (m) => (m as { default?: Mammoth }).default ?? (m as unknown as Mammoth),
  );
  return mammothLoaded;
}

/**
 * Converts a DOCX to HTML with mammoth and reuses the HTML parser, so Word headings (Heading1..6
 * styles) and tables survive as blocks instead of being flattened to raw text.
 *
 * The zip is never opened by JSZip: its directory is validated first (`readZipDirectory`: member
 * count, declared total size, compression ratios, layout), then mammoth reads it through a
 * {@link BoundedZipReader} (mammoth's `{ file }` input, see `mammoth/lib/unzip.js`), which inflates
 * each member at most to its declared size and all members at most to `maxXmlBytes`. A bomb is
 * therefore refused before, or on the first byte past, what its directory admits.
 *
 * @throws {DocumentParseError} `corrupt` when the file is not a readable DOCX package, `bomb` for a
 *   decompression bomb, `too_large` / `too_deep` past the other bounds.
 */
export async function parseDocx(
  bytes: Uint8Array,
  label: string,
  options: DocxParseOptions = {},
): Promise<ParsedStructure> {
  const members = readZipDirectory(bytes, label, {
    maxEntries: MAX_DOCX_ENTRIES,
    maxDeclaredBytes: options.maxInflatedBytes ?? DEFAULT_MAX_DOCX_INFLATED_BYTES,
    maxRatio: MAX_DOCX_COMPRESSION_RATIO,
    ratioMinBytes: DOCX_RATIO_MIN_BYTES,
  });
  const file = new BoundedZipReader(
    bytes,
    members,
    label,
    options.maxXmlBytes ?? DEFAULT_MAX_DOCX_XML_BYTES,
  );
  // mammoth's typings list only path/buffer/arrayBuffer inputs; its reader also takes an opened zip.
  const input = { file } as unknown as Parameters<Mammoth['convertToHtml']>[0];
  let html: string;
  try {
    const mammoth = await loadMammoth();
    // Images are dropped from the text anyway: never inflate them.
    const convertImage = mammoth.images.imgElement(() => Promise.resolve({ src: '' }));
    ({ value: html } = await mammoth.convertToHtml(input, { convertImage }));
  } catch (error: unknown) {
    if (error instanceof DocumentParseError) throw error;
    throw new DocumentParseError('corrupt', `${label}: not a valid DOCX (${messageOf(error)})`, {
      cause: error,
    });
  }
  return parseHtml(html, { label, maxDepth: options.maxDepth ?? DEFAULT_MAX_NESTING_DEPTH });
}
