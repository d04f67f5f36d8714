import { constants, createInflate, inflateSync } from 'node:zlib';
import { DocumentParseError } from './errors.js';
import { formatBytes } from './limits.js';

/** How far before a `stream` keyword its object's dictionary is looked for. */
const DICTIONARY_WINDOW = 64 * 1024;
/** Streams up to this size are inflated in one synchronous call; larger ones are counted in chunks. */
const SYNC_INFLATE_BYTES = 4 * 1024 * 1024;

/**
 * Bytes `data` inflates to (zlib), counted chunk by chunk without keeping them, stopping once past
 * `cap`; what inflated before an error counts too.
 */
function countInflated(data: Uint8Array, cap: number): Promise<number> {
  return new Promise((resolve) => {
    const inflate = createInflate({ finishFlush: constants.Z_SYNC_FLUSH, chunkSize: 256 * 1024 });
    let total = 0;
    inflate.on('data', (chunk: Buffer) => {
      total += chunk.length;
      if (total > cap) {
        inflate.destroy();
        resolve(total);
      }
    });
    inflate.on('end', () => resolve(total));
    inflate.on('error', () => resolve(total));
    inflate.end(data);
  });
}

/**
 * What one stream inflates to, capped at `cap` + 1: synchronously for the usual small stream, in
 * chunks (memory: one chunk) for a large one. Null for data that is not zlib at all.
 */
async function streamSize(data: Uint8Array, cap: number): Promise<number | null> {
  try {
    // Z_SYNC_FLUSH: a stream cut short yields what it holds instead of throwing.
    return inflateSync(data, {
      maxOutputLength: Math.min(cap + 1, SYNC_INFLATE_BYTES),
      finishFlush: constants.Z_SYNC_FLUSH,
    }).length;
  } catch (error: unknown) {
    if (!(error instanceof RangeError)) return null;
    if (cap + 1 <= SYNC_INFLATE_BYTES) return cap + 1;
    return countInflated(data, cap);
  }
}

/**
 * True when the dictionary text before a stream plainly says it is an image or an attached file,
 * which text extraction never decodes. Only plain dictionaries qualify: one `/Subtype` or `/Type`
 * entry, no literal strings, no comments, so that a string or comment reading "/Subtype /Image"
 * cannot hide a content stream.
 */
function neverDecodedForText(dictionary: string): boolean {
  if (/[()%]/.test(dictionary)) return false;
  const subtypes = dictionary.match(/\/Subtype\b/g)?.length ?? 0;
  const types = dictionary.match(/\/Type\b/g)?.length ?? 0;
  if (subtypes === 1 && /\/Subtype\s*\/Image\b/.test(dictionary)) return true;
  return types === 1 && /\/Type\s*\/EmbeddedFile\b/.test(dictionary);
}

/**
 * Refuses a PDF whose Flate streams inflate past `maxInflatedBytes` in total, before pdf.js sees
 * it: pdf.js inflates each stream it reads fully into memory (a 466 KB file holding a 300 MB
 * content stream peaks at 1.1 GiB RSS), and no pdf.js option bounds that.
 *
 * A scan, not a PDF parser, so a best effort rather than a guarantee: it finds every `stream`
 * keyword and inflates what follows (zlib, output capped at what is left of the budget) unless the
 * dictionary before it is plainly an image or an attachment, which text extraction never decodes.
 * A stream is inflated from its first byte on, not up to `/Length` or `endstream` (both can lie);
 * zlib stops at the stream's own end. Memory stays at a few MiB whatever the streams inflate to.
 * Not counted: streams that are not plain zlib data (encrypted PDFs, filter chains such as
 * ASCII85 + Flate, LZW), and less than 4 MiB of a stream that breaks off into invalid data.
 *
 * @throws {DocumentParseError} `bomb` when the streams inflate past `maxInflatedBytes`.
 */
export async function checkPdfStreams(
  bytes: Uint8Array,
  label: string,
  maxInflatedBytes: number,
): Promise<void> {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const bomb = (at: number): DocumentParseError =>
    new DocumentParseError(
      'bomb',
      `${label}: its streams inflate past ${formatBytes(maxInflatedBytes)} (at byte ${at}); refused as a decompression bomb`,
    );
  let inflated = 0;
  for (
    let at = buf.indexOf('stream', 0, 'latin1');
    at >= 0;
    at = buf.indexOf('stream', at + 6, 'latin1')
  ) {
    // The keyword, not the tail of `endstream`, followed by CRLF or LF (CR alone is tolerated).
    if (at >= 3 && buf.toString('latin1', at - 3, at) === 'end') continue;
    let start = at + 6;
    if (buf[start] === 0x0d) start++;
    if (buf[start] === 0x0a) start++;
    if (start === at + 6) continue;
    const obj = buf.lastIndexOf('obj', at, 'latin1');
    const dictionary = buf.toString('latin1', Math.max(obj, at - DICTIONARY_WINDOW, 0), at);
    if (neverDecodedForText(dictionary)) continue;
    // Null: not zlib data (another filter, none, or encrypted); pdf.js decides what it is.
    inflated += (await streamSize(buf.subarray(start), maxInflatedBytes - inflated)) ?? 0;
    if (inflated > maxInflatedBytes) throw bomb(at);
  }
}
