import fs from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { syncBuiltinESMExports } from 'node:module';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { FsObjectStore } from '../../../shared/src/ports/object-store.js';

const KEYS = [
  'a/b/c1',
  'a/b/c2/d',
  'a/b/c2/e/f',
  'a/b/x',
  'a/bc',
  'ab/c',
  'b/a',
  'top',
  'x/done/0',
  'x/done/1',
  'x/done-not/2',
];

describe('FsObjectStore.list', () => {
  let root: string;
  let store: FsObjectStore;
  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'ai4rag-list-'));
    store = new FsObjectStore(root);
    for (const key of KEYS) await store.put(key, key);
  });
  afterEach(async () => {
    vi.restoreAllMocks();
    syncBuiltinESMExports();
    await rm(root, { recursive: true, force: true });
  });

  it.each([
    ['', [...KEYS].sort()],
    ['a', ['a/b/c1', 'a/b/c2/d', 'a/b/c2/e/f', 'a/b/x', 'a/bc', 'ab/c']],
    ['a/', ['a/b/c1', 'a/b/c2/d', 'a/b/c2/e/f', 'a/b/x', 'a/bc']],
    ['a/b', ['a/b/c1', 'a/b/c2/d', 'a/b/c2/e/f', 'a/b/x', 'a/bc']],
    ['a/b/', ['a/b/c1', 'a/b/c2/d', 'a/b/c2/e/f', 'a/b/x']],
    ['a/b/c', ['a/b/c1', 'a/b/c2/d', 'a/b/c2/e/f']],
    ['a/b/c2/', ['a/b/c2/d', 'a/b/c2/e/f']],
    ['a/b/c1', ['a/b/c1']],
    ['x/done/', ['x/done/0', 'x/done/1']],
    ['x/done', ['x/done-not/2', 'x/done/0', 'x/done/1']],
    ['t', ['top']],
    ['zz/', []],
    ['a//b', []],
    ['../', []],
    ['a/../a/', []],
    ['/a', []],
  ])('list(%j) gives the keys starting with it', async (prefix, expected) => {
    expect(await store.list(prefix)).toEqual(expected);
  });

  it('skips objects being written (their temporary files)', async () => {
    fs.writeFileSync(join(root, 'a', 'b', 'c3.123.456.tmp'), 'half');
    expect(await store.list('a/b/c')).toEqual(['a/b/c1', 'a/b/c2/d', 'a/b/c2/e/f']);
  });

  it('reads only the folders under the prefix, however much else the store holds', async () => {
    // 300 documents elsewhere: the walk of the whole store read each of their folders.
    for (let i = 0; i < 300; i += 1) await store.put(`documents/d${i}/file.txt`, 'x');
    const read: string[] = [];
    const real = fs.promises.readdir;
    vi.spyOn(fs.promises, 'readdir').mockImplementation(((path: fs.PathLike, options: never) => {
      read.push(relative(root, String(path)).split('\\').join('/'));
      return real(path, options);
    }) as typeof fs.promises.readdir);
    syncBuiltinESMExports();
    expect(await store.list('x/done/')).toEqual(['x/done/0', 'x/done/1']);
    expect(read).toEqual(['x/done']);
    read.length = 0;
    expect(await store.list('a/b/c')).toEqual(['a/b/c1', 'a/b/c2/d', 'a/b/c2/e/f']);
    expect(read.sort()).toEqual(['a/b', 'a/b/c2', 'a/b/c2/e']);
    read.length = 0;
    expect(await store.list('documents/d7/')).toEqual(['documents/d7/file.txt']);
    expect(read).toEqual(['documents/d7']);
  });
});
