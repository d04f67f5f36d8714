import mammoth from 'mammoth';
import { extractText, extractTextItems, getDocumentProxy } from 'unpdf';
import { DocumentParseError } from './errors.js';
import { parseHtml } from './html.js';
import type { ParsedStructure } from './markdown.js';
import { pdfLayoutToBlocks } from './pdf-layout.js';

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message.replace(/\.$/, '') : String(error);
}

/** A parsed PDF: its pages' text (for citations later) plus paragraph blocks. */
export interface ParsedPdf extends ParsedStructure {
  pages: string[];
}

/**
 * Extracts a PDF's text page by page (`pages`, as pdf.js lays it out) and rebuilds headings,
 * tables, lists and paragraphs from the text positions and font sizes (see `pdfLayoutToBlocks`).
 *
 * @throws {DocumentParseError} `corrupt` when pdf.js cannot read the file.
 */
export async function parsePdf(bytes: Uint8Array, label: string): Promise<ParsedPdf> {
  try {
    // pdf.js may transfer (detach) the buffer it is given: hand it a copy.
    const proxy = await getDocumentProxy(new Uint8Array(bytes), { verbosity: 0 });
    try {
      const { text: pages } = await extractText(proxy, { mergePages: false });
      const { items } = await extractTextItems(proxy);
      const blocks = pdfLayoutToBlocks(items);
      const first = blocks[0];
      return { blocks, pages, title: first?.type === 'heading' ? first.text : undefined };
    } finally {
      await proxy.destroy();
    }
  } catch (error: unknown) {
    throw new DocumentParseError('corrupt', `${label}: not a valid PDF (${messageOf(error)})`, {
      cause: error,
    });
  }
}

/**
 * Converts a DOCX to HTML with mammoth and reuses the HTML parser, so Word headings (Heading1..6
 * styles) and tables survive as blocks instead of being flattened to raw text.
 *
 * @throws {DocumentParseError} `corrupt` when the file is not a readable DOCX package.
 */
export async function parseDocx(bytes: Uint8Array, label: string): Promise<ParsedStructure> {
  let html: string;
  try {
    ({ value: html } = await mammoth.convertToHtml({ buffer: Buffer.from(bytes) }));
  } catch (error: unknown) {
    throw new DocumentParseError('corrupt', `${label}: not a valid DOCX (${messageOf(error)})`, {
      cause: error,
    });
  }
  return parseHtml(html);
}
