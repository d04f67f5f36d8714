import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../../bin/cli/main.js';
import { chunkDocument } from '../../../shared/src/chunking/chunker.js';
import { loadDocuments } from '../../../shared/src/documents/load.js';
import { parseUserMetadata } from '../../../shared/src/documents/user-metadata.js';

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (l: string) => out.push(l), err: (l: string) => err.push(l) }, out, err };
}

describe('user metadata', () => {
  let dir: string;
  let docs: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ai4rag-user-metadata-'));
    docs = join(dir, 'docs');
    await mkdir(join(docs, 'sub'), { recursive: true });
    await writeFile(
      join(docs, 'leave.md'),
      '# Leave\n\nEmployees receive 27 days of annual leave.\n',
    );
    await writeFile(
      join(docs, 'leave.md.metadata.json'),
      JSON.stringify({ metadataAttributes: { department: 'hr', year: 2024 } }),
    );
    await writeFile(join(docs, 'sub', 'ferry.txt'), 'The ferry Aurora carries 140 passengers.\n');
    await writeFile(
      join(docs, 'sub', 'ferry.txt.metadata.json'),
      '{"department": "ops", "year": 2021}',
    );
    await writeFile(
      join(docs, 'corpus.jsonl'),
      [
        JSON.stringify({
          id: 'r1',
          text: 'Leave requests go to the manager.',
          metadata: { year: 2019 },
        }),
        JSON.stringify({ id: 'r2', text: 'Passengers board at gate 4.' }),
      ].join('\n'),
    );
    await writeFile(join(docs, 'corpus.jsonl.metadata.json'), '{"department": "kb"}');
    await writeFile(join(docs, 'orphan.txt.metadata.json'), '{"department": "none"}');
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('attaches sidecars and jsonl metadata, and never loads a sidecar as a document', async () => {
    // Act
    const { documents, failures } = await loadDocuments([docs]);
    // Assess
    expect(failures).toEqual([]);
    expect(Object.fromEntries(documents.map((d) => [d.key, d.metadata]))).toEqual({
      r1: { department: 'kb', year: 2019 },
      r2: { department: 'kb' },
      'leave.md': { department: 'hr', year: 2024 },
      'sub/ferry.txt': { department: 'ops', year: 2021 },
    });
    const leave = documents.find((d) => d.key === 'leave.md');
    const chunks = chunkDocument(leave as never, {
      method: 'recursive',
      chunkSize: 256,
      chunkOverlap: 0,
    });
    expect(chunks[0]?.metadata.user).toEqual({ department: 'hr', year: 2024 });
  });

  it('changes the content hash when only the metadata changes', async () => {
    // Prepare
    const before = (await loadDocuments([join(docs, 'leave.md')])).documents[0];
    await writeFile(join(docs, 'leave.md.metadata.json'), '{"department": "legal", "year": 2024}');
    // Act
    const after = (await loadDocuments([join(docs, 'leave.md')])).documents[0];
    // Assess
    expect(before?.metadata).toEqual({ department: 'hr', year: 2024 });
    expect(after?.metadata).toEqual({ department: 'legal', year: 2024 });
    expect(after?.contentHash).not.toBe(before?.contentHash);
    await writeFile(
      join(docs, 'leave.md.metadata.json'),
      JSON.stringify({ metadataAttributes: { department: 'hr', year: 2024 } }),
    );
  });

  it.each([
    ['a non-object', [1], /must be a JSON object/],
    ['a refused key', JSON.parse('{"__proto__": 1}'), /"__proto__" is invalid/],
    ['a key with a dash', { 'x-y': 1 }, /"x-y" is invalid/],
    ['a nested value', { a: { b: 1 } }, /value of "a" must be/],
  ])('refuses %s', (_name, value, message) => {
    // Act
    const out = parseUserMetadata(value);
    // Assess
    expect(out.ok).toBe(false);
    expect(out.ok ? '' : out.message).toMatch(message);
  });

  it('fails a file whose sidecar is invalid, and the other files load', async () => {
    // Prepare
    const bad = join(dir, 'bad');
    await mkdir(bad, { recursive: true });
    await writeFile(join(bad, 'a.txt'), 'alpha text');
    await writeFile(join(bad, 'a.txt.metadata.json'), '{"bad key": 1}');
    await writeFile(join(bad, 'b.txt'), 'beta text');
    // Act
    const { documents, failures } = await loadDocuments([bad]);
    // Assess
    expect(documents.map((d) => d.key)).toEqual(['b.txt']);
    expect(failures).toEqual([expect.objectContaining({ key: 'a.txt', reason: 'invalid_record' })]);
    expect(failures[0]?.message).toMatch(
      /a\.txt: metadata sidecar a\.txt\.metadata\.json is invalid/,
    );
  });

  it('filters CLI search by user metadata, and exits 2 naming the flag for a bad filter', async () => {
    // Prepare
    const data = join(dir, 'data');
    const ingest = capture();
    expect(await main(['ingest', docs, '--data-dir', data, '--json'], ingest.io)).toBe(0);
    const search = (filter: string) => {
      const c = capture();
      return main(
        [
          'search',
          'passengers leave',
          '--data-dir',
          data,
          '--json',
          '--k',
          '5',
          '--filter',
          filter,
        ],
        c.io,
      ).then((code) => ({ code, ...c }));
    };
    // Act
    const ops = await search('{"user.department": "ops"}');
    const recent = await search('{"user.year": {"gte": 2021}}');
    const either = await search('{"or": [{"user.department": "kb"}, {"document_id": "leave.md"}]}');
    const proto = await search('{"__proto__": {"document_id": "leave.md"}}');
    const op = await search('{"user.year": {"after": 2020}}');
    const json = await search('{"user.year": ');
    // Assess
    const docsOf = (r: { out: string[] }) =>
      (JSON.parse(r.out.at(-1) ?? '{}').results as { metadata: { document_id: string } }[])
        .map((h) => h.metadata.document_id)
        .sort();
    expect(ops.code).toBe(0);
    expect(docsOf(ops)).toEqual(['sub/ferry.txt']);
    expect(docsOf(recent)).toEqual(['leave.md', 'sub/ferry.txt']);
    expect(docsOf(either)).toEqual(['leave.md', 'r1', 'r2']);
    expect(proto.code).toBe(2);
    expect(proto.err.join('\n')).toMatch(/--filter: filter\.__proto__: key "__proto__" is refused/);
    expect(op.code).toBe(2);
    expect(op.err.join('\n')).toMatch(
      /--filter: filter\.user\.year\.after: unknown operator "after"/,
    );
    expect(json.code).toBe(2);
    expect(json.err.join('\n')).toMatch(/--filter must be JSON/);
  }, 60_000);
});
