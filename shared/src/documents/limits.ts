/**
 * Load-time bounds on hostile input. Each `DEFAULT_*` is the default of the `LoadOptions` field of
 * the same name; the README ("Limits and memory") explains how they bound memory per file.
 */

const MiB = 1024 * 1024;

/**
 * Default bound on a document's extracted text, in UTF-16 code units (JavaScript string length).
 * Above the default file limit, so a text file that fits that limit never trips it; far below V8's
 * maximum string length (~512 Mi), which is what an unbounded extraction would hit.
 */
export const DEFAULT_MAX_TEXT_CHARS = 64 * MiB;

/** Default bound on a PDF's page count; checked before any page is read. */
export const DEFAULT_MAX_PDF_PAGES = 2000;

/**
 * Default bound on the total inflated size of a PDF's Flate streams that text extraction decodes
 * (content, fonts, object streams; not images). pdf.js holds a decoded stream whole, in a buffer
 * grown by doubling, so one stream of this size costs up to ~3x in RSS. A 2000-page text PDF's
 * content streams inflate to a few tens of MiB.
 */
export const DEFAULT_MAX_PDF_INFLATED_BYTES = 128 * MiB;

/**
 * Default bound on the total uncompressed size a DOCX declares for all its members (media
 * included). A package within the default file limit whose media are already compressed (JPEG,
 * PNG) declares little more than its file size; anything far above it is a decompression bomb.
 */
export const DEFAULT_MAX_DOCX_INFLATED_BYTES = 64 * MiB;

/**
 * Default bound on the bytes actually inflated for mammoth (the XML parts it parses; images are
 * never read). mammoth builds a DOM several times the XML's size (measured: 16 MiB of
 * `word/document.xml` peaks at ~600 MiB RSS under a 512 MiB heap), so this, not the file size,
 * is what bounds a DOCX's memory. 16 MiB of WordprocessingML is well over a thousand pages of prose.
 */
export const DEFAULT_MAX_DOCX_XML_BYTES = 16 * MiB;

/**
 * Default bound on element nesting (HTML, and DOCX through mammoth's HTML) and on DoclingDocument
 * group nesting. Real documents stay below a few dozen levels; the parsers' recursive helpers
 * overflow the stack somewhere past a few thousand.
 */
export const DEFAULT_MAX_NESTING_DEPTH = 512;

/** A DOCX with more members than this is refused (Word writes a few dozen, plus one per image). */
export const MAX_DOCX_ENTRIES = 10_000;

/**
 * A DOCX member above {@link DOCX_RATIO_MIN_BYTES} that claims to inflate more than this many times
 * its compressed size is refused as a bomb. XML deflates about 10:1, very repetitive XML up to
 * ~100:1; deflate itself cannot exceed ~1032:1.
 */
export const MAX_DOCX_COMPRESSION_RATIO = 200;

/** Members smaller than this are exempt from the ratio check (tiny parts compress absurdly well). */
export const DOCX_RATIO_MIN_BYTES = MiB;

/** Formats a byte count for messages: `300 MiB`, `12.5 KiB`, `17 bytes`. */
export function formatBytes(bytes: number): string {
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  if (bytes < 1024) return `${bytes} bytes`;
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  const rounded = value >= 100 ? Math.round(value) : Number(value.toFixed(1));
  return `${rounded} ${units[unit]}`;
}
