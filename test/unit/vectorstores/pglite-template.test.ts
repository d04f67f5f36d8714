/**
 * New PGlite databases start from the template (an initialized, empty cluster with pgvector), in memory and in a
 * new data directory; the first fresh database makes it; a broken template is replaced, never trusted; an existing
 * data directory is never touched by it; `template: false` runs initdb and writes nothing.
 */
import { chmod, copyFile, mkdtemp, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPglite, type PgliteSqlClient } from '../../../shared/src/vectorstores/sql-client.js';

let root: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'ai4rag-pglite-template-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

/** A vector round trip and the pgvector version: what a database must offer, however it was made. */
async function probe(client: PgliteSqlClient): Promise<{ version: string; nearest: string }> {
  await client.query('CREATE TABLE probe (id text, v vector(3))');
  await client.query(
    "INSERT INTO probe VALUES ('a', '[1,0,0]'), ('b', '[0,1,0]'), ('c', '[0.9,0.1,0]')",
  );
  const nearest = await client.query<{ id: string }>(
    "SELECT id FROM probe ORDER BY v <=> '[0.9,0.12,0]' LIMIT 1",
  );
  const ext = await client.query<{ extversion: string }>(
    "SELECT extversion FROM pg_extension WHERE extname = 'vector'",
  );
  return { version: ext.rows[0]?.extversion ?? '', nearest: nearest.rows[0]?.id ?? '' };
}

describe('PGlite template', () => {
  it('is made by the first fresh database, then unpacked for the next, in memory and in a new data directory', async () => {
    // Prepare
    const template = join(root, 'made.tar');

    // Act
    const first = await openPglite({ template });
    const firstProbe = await probe(first);
    await first.close();
    const made = await stat(template);
    const second = await openPglite({ template });
    const secondProbe = await probe(second);
    await second.close();
    const dataDir = join(root, 'data-new');
    const third = await openPglite({ dataDir, template });
    await third.query('CREATE TABLE kept (n int)');
    await third.query('INSERT INTO kept VALUES (42)');
    const thirdProbe = await probe(third);
    await third.close();
    const reopened = await openPglite({ dataDir, template });
    const kept = await reopened.query<{ n: number }>('SELECT n FROM kept');
    await reopened.close();

    // Assess
    expect(first.origin).toBe('initdb');
    expect(made.size).toBeGreaterThan(1_000_000);
    expect(second.origin).toBe('template');
    expect(third.origin).toBe('template');
    expect(reopened.origin).toBe('existing');
    expect(kept.rows).toEqual([{ n: 42 }]);
    for (const p of [firstProbe, secondProbe, thirdProbe]) {
      expect(p).toEqual({ version: firstProbe.version, nearest: 'c' });
    }
    expect(firstProbe.version).toMatch(/^\d+\.\d+\.\d+$/);
    // The template holds the empty cluster only: nothing written after it was made.
    const fromTemplate = await openPglite({ template });
    const tables = await fromTemplate.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = 'public'",
    );
    await fromTemplate.close();
    expect(tables.rows).toEqual([{ n: 0 }]);
  }, 60_000);

  it('replaces a template PGlite cannot load, in memory and in a data directory, and runs initdb instead', async () => {
    // Prepare
    const template = join(root, 'broken.tar');
    await writeFile(template, 'not a tarball of a PostgreSQL cluster');

    // Act
    const memory = await openPglite({ template });
    const memoryProbe = await probe(memory);
    await memory.close();
    const replaced = await stat(template);
    await writeFile(template, 'broken again');
    const dataDir = join(root, 'data-broken');
    const onDisk = await openPglite({ dataDir, template });
    const diskProbe = await probe(onDisk);
    await onDisk.close();

    // Assess
    expect(memory.origin).toBe('initdb');
    expect(memoryProbe.nearest).toBe('c');
    expect(replaced.size).toBeGreaterThan(1_000_000);
    expect(onDisk.origin).toBe('initdb');
    expect(diskProbe.nearest).toBe('c');
    expect((await readFile(template)).subarray(0, 12).toString()).not.toBe('broken again');
  }, 60_000);

  it('trusts no template others could have written: one writable by others, or a link, is replaced by initdb', async () => {
    // Prepare: a good template, then a copy of it writable by everyone and a link to it
    const good = join(root, 'good.tar');
    await (await openPglite({ template: good })).close();
    const open = join(root, 'open.tar');
    await copyFile(good, open);
    await chmod(open, 0o666);
    const link = join(root, 'link.tar');
    await symlink(good, link);

    // Act
    const fromOpen = await openPglite({ template: open });
    await fromOpen.close();
    const fromLink = await openPglite({ template: link });
    await fromLink.close();
    const again = await openPglite({ template: open });
    await again.close();

    // Assess: neither was loaded; each was replaced by this user's own, private dump, which the next open uses
    expect(fromOpen.origin).toBe('initdb');
    expect(fromLink.origin).toBe('initdb');
    expect((await stat(open)).mode & 0o077).toBe(0);
    expect(again.origin).toBe('template');
  }, 60_000);

  it('runs initdb and writes no file with template: false', async () => {
    // Prepare
    const template = join(root, 'off.tar');

    // Act
    const client = await openPglite({ template: false });
    const p = await probe(client);
    await client.close();

    // Assess
    expect(client.origin).toBe('initdb');
    expect(p.nearest).toBe('c');
    await expect(stat(template)).rejects.toMatchObject({ code: 'ENOENT' });
  }, 60_000);
});
