import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeMilvus, startFakeMilvus } from '../../support/fake-milvus/server.js';

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (l: string) => out.push(l), err: (l: string) => err.push(l) }, out, err };
}

describe('ai4rag CLI with --store milvus (fake Milvus server)', () => {
  let fake: FakeMilvus;
  let dir: string;
  let main: (argv: string[], io: ReturnType<typeof capture>['io']) => Promise<number>;

  beforeAll(async () => {
    fake = await startFakeMilvus();
    // The CLI reads MILVUS_URI from its configuration, parsed once when first imported.
    process.env.MILVUS_URI = fake.uri;
    ({ main } = await import('../../../bin/cli/main.js'));
    dir = await mkdtemp(join(tmpdir(), 'ai4rag-cli-milvus-'));
    await writeFile(
      join(dir, 'locks.md'),
      '# Locks\n\nThe Brannvik lock opens every 40 minutes between 06:00 and 22:00.\n',
    );
    await writeFile(
      join(dir, 'fuel.txt'),
      'All diesel vessels run on HVO renewable diesel since June 2022.\n',
    );
  });

  afterAll(async () => {
    delete process.env.MILVUS_URI;
    await rm(dir, { recursive: true, force: true });
    await fake.close();
  });

  it('ingests, skips unchanged files, and answers a hybrid search fused on the server', async () => {
    // Act
    const first = capture();
    expect(
      await main(
        ['ingest', dir, '--store', 'milvus', '--collection', 'ai4rag_cli_milvus', '--json'],
        first.io,
      ),
    ).toBe(0);
    const again = capture();
    expect(
      await main(
        ['ingest', dir, '--store', 'milvus', '--collection', 'ai4rag_cli_milvus', '--json'],
        again.io,
      ),
    ).toBe(0);
    const search = capture();
    const code = await main(
      [
        'search',
        'when does the lock open',
        '--store',
        'milvus',
        '--collection',
        'ai4rag_cli_milvus',
        '--search-mode',
        'hybrid',
        '--ranker-strategy',
        'rrf',
        '--json',
      ],
      search.io,
    );
    // Assess
    expect(JSON.parse(first.out.at(-1) ?? '{}')).toMatchObject({ indexed: 2, failed: 0 });
    expect(JSON.parse(again.out.at(-1) ?? '{}')).toMatchObject({
      indexed: 0,
      unchanged: 2,
      chunks_embedded: 0,
    });
    expect(code).toBe(0);
    expect(JSON.parse(search.out.at(-1) ?? '{}').results[0].metadata.document_id).toBe('locks.md');
  });
});
