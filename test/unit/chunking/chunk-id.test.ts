import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ChunkingValidationError, chunkId } from '#shared/chunking/index.js';

describe('chunkId', () => {
  it('matches a hard-coded SHA-256 computed outside the code under test', () => {
    // Prepare: hex computed with Python hashlib over b"doc-1" + struct.pack(">I", 1) + b"Hello, world".
    const expected = 'de8102f18ee99eaed294c2f62b07b1d3ce93f514b8b638ef65555f7cab92ad13';

    // Act
    const id = chunkId('doc-1', 1, 'Hello, world');

    // Assess
    expect(id).toBe(expected);
  });

  it('hashes UTF-8 bytes and a 4-byte big-endian sequence number', () => {
    // Prepare: 258 = 0x00000102, so the middle bytes are 00 00 01 02.
    const bytes = Buffer.concat([
      Buffer.from('dossier/été.md', 'utf8'),
      Buffer.from([0x00, 0x00, 0x01, 0x02]),
      Buffer.from('Ünïcode — ok', 'utf8'),
    ]);
    const expected = createHash('sha256').update(bytes).digest('hex');

    // Act
    const id = chunkId('dossier/été.md', 258, 'Ünïcode — ok');

    // Assess
    expect(id).toBe(expected);
    expect(id).toBe('a99a2f9a65aef5c1ed444e48027b02503a476e39fcefc4902e5c91e9e913665a');
  });

  it('changes when any of document id, sequence number or text changes', () => {
    // Prepare
    const base = chunkId('a', 1, 'text');

    // Act
    const variants = [chunkId('b', 1, 'text'), chunkId('a', 2, 'text'), chunkId('a', 1, 'text.')];

    // Assess
    expect(new Set([base, ...variants]).size).toBe(4);
  });

  it('rejects a sequence number that does not fit 4 unsigned bytes', () => {
    // Act / Assess
    expect(() => chunkId('a', -1, 't')).toThrow(ChunkingValidationError);
    expect(() => chunkId('a', 2 ** 32, 't')).toThrow(/0\.\.4294967295/);
    expect(() => chunkId('a', 1.5, 't')).toThrow(ChunkingValidationError);
  });
});
