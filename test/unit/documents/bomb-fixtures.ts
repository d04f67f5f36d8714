import { constants, crc32, deflateRawSync } from 'node:zlib';

/** One member of a hand-built zip: already-compressed data plus what the headers declare. */
export interface ZipFixtureEntry {
  name: string;
  /** 0 stored, 8 deflate. */
  method: 0 | 8;
  /** The member's bytes as stored in the archive (raw deflate for method 8). */
  data: Uint8Array;
  crc: number;
  /** Real inflated size. */
  size: number;
  /** Uncompressed size written into the local and central headers; defaults to `size` (a lie when set). */
  declaredSize?: number;
}

/** A deflated member of `content`. */
export function deflatedEntry(name: string, content: string | Uint8Array): ZipFixtureEntry {
  const bytes = typeof content === 'string' ? Buffer.from(content, 'utf8') : content;
  return { name, method: 8, data: deflateRawSync(bytes), crc: crc32(bytes), size: bytes.length };
}

/**
 * A deflated member that inflates to `piece` repeated `times` times, built without ever holding the
 * inflated bytes: `piece` is deflated once with a full flush (a byte-aligned segment that references
 * nothing before it), the segment is repeated, and an empty final block ends the stream. The CRC is
 * left 0 unless `withCrc` (a bomb is refused before any CRC is checked; computing it costs a pass).
 */
export function repeatedEntry(
  name: string,
  piece: Buffer,
  times: number,
  withCrc = false,
): ZipFixtureEntry {
  const segment = deflateRawSync(piece, { finishFlush: constants.Z_FULL_FLUSH, level: 9 });
  const end = deflateRawSync(Buffer.alloc(0));
  let crc = 0;
  if (withCrc) for (let i = 0; i < times; i++) crc = crc32(piece, crc);
  const data = Buffer.concat([...Array.from({ length: times }, () => segment), end]);
  return { name, method: 8, data, crc, size: piece.length * times };
}

/** Options of {@link buildZip}. */
export interface BuildZipOptions {
  /** Write ZIP64 records: all-ones 32-bit fields, 64-bit extra fields, ZIP64 end record and locator. */
  zip64?: boolean;
}

/** Writes a zip (local headers, data, central directory, end record) from the given members. */
export function buildZip(
  entries: readonly ZipFixtureEntry[],
  options: BuildZipOptions = {},
): Buffer {
  const zip64 = options.zip64 ?? false;
  const parts: Buffer[] = [];
  const central: Buffer[] = [];
  let offset = 0;
  for (const entry of entries) {
    const name = Buffer.from(entry.name, 'utf8');
    const declared = entry.declaredSize ?? entry.size;
    const localExtra = Buffer.alloc(zip64 ? 20 : 0);
    if (zip64) {
      localExtra.writeUInt16LE(0x0001, 0);
      localExtra.writeUInt16LE(16, 2);
      localExtra.writeBigUInt64LE(BigInt(declared), 4);
      localExtra.writeBigUInt64LE(BigInt(entry.data.length), 12);
    }
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(zip64 ? 45 : 20, 4);
    local.writeUInt16LE(0x0800, 6);
    local.writeUInt16LE(entry.method, 8);
    local.writeUInt32LE(entry.crc >>> 0, 14);
    local.writeUInt32LE(zip64 ? 0xffffffff : entry.data.length, 18);
    local.writeUInt32LE(zip64 ? 0xffffffff : declared, 22);
    local.writeUInt16LE(name.length, 26);
    local.writeUInt16LE(localExtra.length, 28);
    parts.push(local, name, localExtra, Buffer.from(entry.data));
    const centralExtra = Buffer.alloc(zip64 ? 28 : 0);
    if (zip64) {
      centralExtra.writeUInt16LE(0x0001, 0);
      centralExtra.writeUInt16LE(24, 2);
      centralExtra.writeBigUInt64LE(BigInt(declared), 4);
      centralExtra.writeBigUInt64LE(BigInt(entry.data.length), 12);
      centralExtra.writeBigUInt64LE(BigInt(offset), 20);
    }
    const header = Buffer.alloc(46);
    header.writeUInt32LE(0x02014b50, 0);
    header.writeUInt16LE(zip64 ? 45 : 20, 4);
    header.writeUInt16LE(zip64 ? 45 : 20, 6);
    header.writeUInt16LE(0x0800, 8);
    header.writeUInt16LE(entry.method, 10);
    header.writeUInt32LE(entry.crc >>> 0, 16);
    header.writeUInt32LE(zip64 ? 0xffffffff : entry.data.length, 20);
    header.writeUInt32LE(zip64 ? 0xffffffff : declared, 24);
    header.writeUInt16LE(name.length, 28);
    header.writeUInt16LE(centralExtra.length, 30);
    header.writeUInt32LE(zip64 ? 0xffffffff : offset, 42);
    central.push(header, name, centralExtra);
    offset += local.length + name.length + localExtra.length + entry.data.length;
  }
  const directory = Buffer.concat(central);
  const tail: Buffer[] = [];
  if (zip64) {
    const record = Buffer.alloc(56);
    record.writeUInt32LE(0x06064b50, 0);
    record.writeBigUInt64LE(44n, 4);
    record.writeUInt16LE(45, 12);
    record.writeUInt16LE(45, 14);
    record.writeBigUInt64LE(BigInt(entries.length), 24);
    record.writeBigUInt64LE(BigInt(entries.length), 32);
    record.writeBigUInt64LE(BigInt(directory.length), 40);
    record.writeBigUInt64LE(BigInt(offset), 48);
    const locator = Buffer.alloc(20);
    locator.writeUInt32LE(0x07064b50, 0);
    locator.writeBigUInt64LE(BigInt(offset + directory.length), 8);
    locator.writeUInt32LE(1, 16);
    tail.push(record, locator);
  }
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(zip64 ? 0xffff : entries.length, 8);
  end.writeUInt16LE(zip64 ? 0xffff : entries.length, 10);
  end.writeUInt32LE(zip64 ? 0xffffffff : directory.length, 12);
  end.writeUInt32LE(zip64 ? 0xffffffff : offset, 16);
  return Buffer.concat([...parts, directory, ...tail, end]);
}

const CONTENT_TYPES =
  '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>' +
  '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">' +
  '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>' +
  '<Default Extension="xml" ContentType="application/xml"/>' +
  '<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/>' +
  '</Types>';

const ROOT_RELS =
  '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>' +
  '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">' +
  '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/>' +
  '</Relationships>';

/** The XML that opens and closes a WordprocessingML body. */
export const DOCUMENT_XML_OPEN =
  '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>' +
  '<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>';
export const DOCUMENT_XML_CLOSE = '</w:body></w:document>';

/** One `<w:p>` paragraph of plain text. */
export function wordParagraph(text: string): string {
  return `<w:p><w:r><w:t xml:space="preserve">${text}</w:t></w:r></w:p>`;
}

/** A minimal DOCX package (content types, root rels) around the given `word/document.xml` member. */
export function minimalDocx(
  document: ZipFixtureEntry,
  extra: readonly ZipFixtureEntry[] = [],
  options: BuildZipOptions = {},
): Buffer {
  return buildZip(
    [
      deflatedEntry('[Content_Types].xml', CONTENT_TYPES),
      deflatedEntry('_rels/.rels', ROOT_RELS),
      document,
      ...extra,
    ],
    options,
  );
}

/** `word/document.xml` holding one paragraph per given text. */
export function documentXml(paragraphs: readonly string[]): ZipFixtureEntry {
  return deflatedEntry(
    'word/document.xml',
    DOCUMENT_XML_OPEN + paragraphs.map(wordParagraph).join('') + DOCUMENT_XML_CLOSE,
  );
}

/**
 * A one-page PDF, written by hand, whose content stream (FlateDecode) inflates to `mib` MiB of
 * `0 0 m ` operators (no text): built from one full-flush segment repeated, as {@link repeatedEntry}.
 */
export function flateBombPdf(mib: number): Buffer {
  const segment = deflateRawSync(Buffer.alloc(1024 * 1024, '0 0 m '), {
    finishFlush: constants.Z_FULL_FLUSH,
    level: 9,
  });
  const stream = Buffer.concat([
    Buffer.from([0x78, 0xda]),
    ...Array.from({ length: mib }, () => segment),
    deflateRawSync(Buffer.alloc(0)),
    Buffer.alloc(4), // Adler-32, never reached: the stream is refused first.
  ]);
  const parts: Buffer[] = [];
  const offsets: number[] = [];
  let length = 0;
  const push = (part: Buffer | string): void => {
    const bytes = typeof part === 'string' ? Buffer.from(part, 'latin1') : part;
    parts.push(bytes);
    length += bytes.length;
  };
  const object = (body: string | (string | Buffer)[]): void => {
    offsets.push(length);
    push(`${offsets.length} 0 obj\n`);
    for (const part of typeof body === 'string' ? [body] : body) push(part);
    push('\nendobj\n');
  };
  push('%PDF-1.4\n');
  object('<< /Type /Catalog /Pages 2 0 R >>');
  object('<< /Type /Pages /Kids [3 0 R] /Count 1 >>');
  object('<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] /Contents 4 0 R >>');
  object([`<< /Length ${stream.length} /Filter /FlateDecode >>\nstream\n`, stream, '\nendstream']);
  const xref = length;
  const rows = offsets.map((offset) => `${String(offset).padStart(10, '0')} 00000 n \n`).join('');
  push(`xref\n0 ${offsets.length + 1}\n0000000000 65535 f \n${rows}`);
  push(`trailer\n<< /Size ${offsets.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`);
  return Buffer.concat(parts);
}
