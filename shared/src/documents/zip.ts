import { crc32, inflateRawSync } from 'node:zlib';
import { DocumentParseError } from './errors.js';
import { formatBytes } from './limits.js';

/** One member of a zip archive, as its central directory (and local header) describe it. */
export interface ZipMember {
  name: string;
  /** 0 stored, 8 deflate; nothing else is accepted. */
  method: 0 | 8;
  crc: number;
  compressedSize: number;
  /** The declared uncompressed size; a read never inflates more than this. */
  uncompressedSize: number;
  localHeaderOffset: number;
  /** Offset of the member's (compressed) data, after its local header. */
  dataOffset: number;
}

/** Bounds checked on the directory alone, before anything is inflated. */
export interface ZipDirectoryLimits {
  maxEntries: number;
  /** Bound on the sum of declared uncompressed sizes. */
  maxDeclaredBytes: number;
  /** Bound on a member's declared uncompressed/compressed ratio... */
  maxRatio: number;
  /** ...for members declaring more than this many uncompressed bytes. */
  ratioMinBytes: number;
}

const END_OF_CENTRAL_DIRECTORY = 0x06054b50;
const ZIP64_END_LOCATOR = 0x07064b50;
const ZIP64_END_OF_CENTRAL_DIRECTORY = 0x06064b50;
const CENTRAL_FILE_HEADER = 0x02014b50;
const LOCAL_FILE_HEADER = 0x04034b50;
const ZIP64_EXTRA_FIELD = 0x0001;
const U16_MAX = 0xffff;
const U32_MAX = 0xffffffff;

function readU64(buf: Buffer, offset: number): number {
  const value = buf.readBigUInt64LE(offset);
  // Anything past 2^53 is absurd for a document; it fails the size bounds as Infinity.
  return value > BigInt(Number.MAX_SAFE_INTEGER) ? Number.POSITIVE_INFINITY : Number(value);
}

/**
 * Reads a zip's central directory with plain buffer reads and validates it against `limits`,
 * without inflating anything: end record (ZIP64 too), every central entry, every local header
 * (signature, method and name must agree with the directory), and the members' layout (in bounds,
 * not overlapping).
 *
 * @throws {DocumentParseError} `corrupt` for a malformed or unsupported archive, `bomb` when the
 *   declared sizes or ratios exceed the limits or members overlap, `too_large` for too many members.
 */
export function readZipDirectory(
  bytes: Uint8Array,
  label: string,
  limits: ZipDirectoryLimits,
): ZipMember[] {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const corrupt = (why: string): DocumentParseError =>
    new DocumentParseError('corrupt', `${label}: not a valid DOCX (${why})`);
  const bomb = (why: string): DocumentParseError =>
    new DocumentParseError('bomb', `${label}: ${why}; refused as a decompression bomb`);

  // The end record is the last 22 bytes, unless an archive comment (up to 64 KiB) follows it.
  let end = -1;
  for (let i = buf.length - 22; i >= Math.max(0, buf.length - 22 - U16_MAX); i--) {
    if (buf.readUInt32LE(i) === END_OF_CENTRAL_DIRECTORY) {
      end = i;
      break;
    }
  }
  if (end < 0) throw corrupt('no zip end-of-central-directory record');
  if (end + 22 + buf.readUInt16LE(end + 20) > buf.length) throw corrupt('truncated zip end record');
  let disk = buf.readUInt16LE(end + 4);
  let directoryDisk = buf.readUInt16LE(end + 6);
  let count = buf.readUInt16LE(end + 10);
  let directorySize = buf.readUInt32LE(end + 12);
  let directoryOffset = buf.readUInt32LE(end + 16);
  let directoryEnd = end;
  const locator = end - 20;
  if (locator >= 0 && buf.readUInt32LE(locator) === ZIP64_END_LOCATOR) {
    const record = readU64(buf, locator + 8);
    if (record + 56 > locator || buf.readUInt32LE(record) !== ZIP64_END_OF_CENTRAL_DIRECTORY) {
      throw corrupt('ZIP64 end record missing where its locator points');
    }
    directoryEnd = record;
    if (disk === U16_MAX) disk = buf.readUInt32LE(record + 16);
    if (directoryDisk === U16_MAX) directoryDisk = buf.readUInt32LE(record + 20);
    if (count === U16_MAX) count = readU64(buf, record + 32);
    if (directorySize === U32_MAX) directorySize = readU64(buf, record + 40);
    if (directoryOffset === U32_MAX) directoryOffset = readU64(buf, record + 48);
  }
  if (disk !== 0 || directoryDisk !== 0)
    throw corrupt('multi-volume zip archives are not supported');
  if (count > limits.maxEntries) {
    throw new DocumentParseError(
      'too_large',
      `${label}: has ${count} zip members, over the limit of ${limits.maxEntries}; refused`,
    );
  }
  // No prepended data and no gaps: the directory ends exactly where the end record starts.
  if (directoryOffset + directorySize !== directoryEnd) {
    throw corrupt('central directory is not where the end record says');
  }

  const members: ZipMember[] = [];
  const names = new Set<string>();
  let declared = 0;
  let largest: ZipMember | undefined;
  let at = directoryOffset;
  while (at < directoryEnd) {
    if (at + 46 > directoryEnd || buf.readUInt32LE(at) !== CENTRAL_FILE_HEADER) {
      throw corrupt(`bad central directory entry at byte ${at}`);
    }
    const flags = buf.readUInt16LE(at + 8);
    const method = buf.readUInt16LE(at + 10);
    const crc = buf.readUInt32LE(at + 16);
    let compressedSize = buf.readUInt32LE(at + 20);
    let uncompressedSize = buf.readUInt32LE(at + 24);
    const nameLength = buf.readUInt16LE(at + 28);
    const extraLength = buf.readUInt16LE(at + 30);
    const commentLength = buf.readUInt16LE(at + 32);
    let startDisk = buf.readUInt16LE(at + 34);
    let localHeaderOffset = buf.readUInt32LE(at + 42);
    const next = at + 46 + nameLength + extraLength + commentLength;
    if (next > directoryEnd) throw corrupt(`central directory entry at byte ${at} overruns it`);
    const nameBytes = buf.subarray(at + 46, at + 46 + nameLength);
    const name = nameBytes.toString('utf8');
    // ZIP64 extended information: the 64-bit values of the fields set to all ones, in this order.
    let extra = at + 46 + nameLength;
    const extraEnd = extra + extraLength;
    while (extra + 4 <= extraEnd) {
      const id = buf.readUInt16LE(extra);
      const size = buf.readUInt16LE(extra + 2);
      if (extra + 4 + size > extraEnd) throw corrupt(`bad extra field in ${name}`);
      if (id === ZIP64_EXTRA_FIELD) {
        let field = extra + 4;
        const take = (): number => {
          if (field + 8 > extra + 4 + size) throw corrupt(`short ZIP64 field in ${name}`);
          const value = readU64(buf, field);
          field += 8;
          return value;
        };
        if (uncompressedSize === U32_MAX) uncompressedSize = take();
        if (compressedSize === U32_MAX) compressedSize = take();
        if (localHeaderOffset === U32_MAX) localHeaderOffset = take();
        if (startDisk === U16_MAX && field + 4 <= extra + 4 + size) {
          startDisk = buf.readUInt32LE(field);
        }
      }
      extra += 4 + size;
    }
    if (startDisk !== 0) throw corrupt('multi-volume zip archives are not supported');
    if (flags & 0x1) throw corrupt(`${name} is encrypted`);
    if (method !== 0 && method !== 8) {
      throw corrupt(`${name} uses compression method ${method} (only stored and deflate are read)`);
    }
    if (method === 0 && compressedSize !== uncompressedSize) {
      throw corrupt(`stored member ${name} declares different compressed and uncompressed sizes`);
    }
    if (names.has(name)) throw corrupt(`duplicate member ${name}`);
    names.add(name);

    // The local header must agree with the directory: readers that trust either see the same file.
    if (localHeaderOffset + 30 > directoryOffset)
      throw corrupt(`${name}: local header out of range`);
    if (buf.readUInt32LE(localHeaderOffset) !== LOCAL_FILE_HEADER) {
      throw corrupt(`${name}: no local header where the directory points`);
    }
    const localNameLength = buf.readUInt16LE(localHeaderOffset + 26);
    const localExtraLength = buf.readUInt16LE(localHeaderOffset + 28);
    const localName = buf.subarray(
      localHeaderOffset + 30,
      localHeaderOffset + 30 + localNameLength,
    );
    if (buf.readUInt16LE(localHeaderOffset + 8) !== method || !localName.equals(nameBytes)) {
      throw corrupt(`${name}: local header disagrees with the central directory`);
    }
    const dataOffset = localHeaderOffset + 30 + localNameLength + localExtraLength;
    if (dataOffset + compressedSize > directoryOffset) throw corrupt(`${name}: data out of range`);

    if (
      uncompressedSize > limits.ratioMinBytes &&
      uncompressedSize > limits.maxRatio * Math.max(compressedSize, 1)
    ) {
      const ratio = Math.round(uncompressedSize / Math.max(compressedSize, 1));
      throw bomb(
        `${name} declares a ${ratio}:1 compression ratio (${formatBytes(uncompressedSize)} from ${formatBytes(compressedSize)}, limit ${limits.maxRatio}:1)`,
      );
    }
    const member: ZipMember = {
      name,
      method,
      crc,
      compressedSize,
      uncompressedSize,
      localHeaderOffset,
      dataOffset,
    };
    members.push(member);
    declared += uncompressedSize;
    if (!largest || uncompressedSize > largest.uncompressedSize) largest = member;
    at = next;
  }
  if (members.length !== count) {
    throw corrupt(`end record counts ${count} members, directory holds ${members.length}`);
  }
  if (declared > limits.maxDeclaredBytes) {
    const where = largest
      ? `, ${formatBytes(largest.uncompressedSize)} of it in ${largest.name}`
      : '';
    throw bomb(
      `inflates past ${formatBytes(limits.maxDeclaredBytes)} (declared ${formatBytes(declared)}${where})`,
    );
  }
  // Overlapping members (one compressed stream shared by many entries) are the classic
  // non-recursive zip bomb; no zip writer produces them.
  const byOffset = [...members].sort((a, b) => a.localHeaderOffset - b.localHeaderOffset);
  for (let i = 1; i < byOffset.length; i++) {
    const previous = byOffset[i - 1];
    const current = byOffset[i];
    if (
      previous &&
      current &&
      current.localHeaderOffset < previous.dataOffset + previous.compressedSize
    ) {
      throw bomb(`zip members ${previous.name} and ${current.name} overlap`);
    }
  }
  return members;
}

/**
 * Read access to a validated zip that inflates each member at most to its declared size (so a
 * directory that lies about sizes is caught on the first byte too many) and at most
 * `maxReadBytes` in total. Shaped as the zip object mammoth reads a DOCX through
 * (`exists(name)`, `read(name, encoding?)`).
 */
export class BoundedZipReader {
  private readonly members: Map<string, ZipMember>;
  private inflated = 0;

  constructor(
    private readonly bytes: Uint8Array,
    members: readonly ZipMember[],
    private readonly label: string,
    private readonly maxReadBytes: number,
  ) {
    this.members = new Map(members.map((member) => [member.name, member]));
  }

  private lies(member: ZipMember, cause?: unknown): DocumentParseError {
    return new DocumentParseError(
      'bomb',
      `${this.label}: ${member.name} inflates past its declared ${formatBytes(member.uncompressedSize)} (the zip directory lies about its size); refused as a decompression bomb`,
      { cause },
    );
  }

  /** True for a file member (not a folder entry) of that exact name. */
  exists(name: string): boolean {
    return this.members.has(name) && !name.endsWith('/');
  }

  /**
   * A member's bytes, or its text when `encoding` is given (`base64`, or a TextDecoder label).
   * @throws {DocumentParseError} `bomb` when the member inflates past its declared size,
   *   `too_large` when the read budget would be exceeded, `corrupt` on bad data.
   */
  async read(name: string, encoding?: string): Promise<Uint8Array | string> {
    const data = this.readBytes(name);
    if (encoding === 'base64') return Buffer.from(data).toString('base64');
    if (encoding) return new TextDecoder(encoding).decode(data);
    return data;
  }

  /** Synchronous {@link read} without decoding. */
  readBytes(name: string): Uint8Array {
    const member = this.members.get(name);
    if (!member) throw new DocumentParseError('corrupt', `${this.label}: no zip member ${name}`);
    if (this.inflated + member.uncompressedSize > this.maxReadBytes) {
      throw new DocumentParseError(
        'too_large',
        `${this.label}: its XML inflates past ${formatBytes(this.maxReadBytes)} (at ${name}); too large to convert`,
      );
    }
    const raw = this.bytes.subarray(member.dataOffset, member.dataOffset + member.compressedSize);
    let data: Uint8Array;
    if (member.method === 0) {
      data = raw;
    } else {
      try {
        data = inflateRawSync(raw, { maxOutputLength: Math.max(member.uncompressedSize, 1) });
      } catch (error: unknown) {
        if (error instanceof RangeError) throw this.lies(member, error);
        throw new DocumentParseError(
          'corrupt',
          `${this.label}: not a valid DOCX (${name} does not inflate: ${error instanceof Error ? error.message : String(error)})`,
          { cause: error },
        );
      }
    }
    if (data.length > member.uncompressedSize) throw this.lies(member);
    if (data.length !== member.uncompressedSize || crc32(data) !== member.crc) {
      throw new DocumentParseError(
        'corrupt',
        `${this.label}: not a valid DOCX (${name} does not match its declared size and CRC)`,
      );
    }
    this.inflated += data.length;
    return data;
  }
}
