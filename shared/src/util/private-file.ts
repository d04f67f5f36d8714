/**
 * Cache files in a shared folder (the OS temp folder): read only when they are regular files owned by this user and
 * writable by no one else, written under a temporary name created exclusively (mode 0600) and renamed into place.
 * Best effort both ways: a cache that cannot be read or written is simply rebuilt.
 */
import { lstat, readFile, rename, rm, writeFile } from 'node:fs/promises';

/** The file's bytes, or undefined when it is missing, unreadable, empty, or not safe to trust (see the module). */
export async function readPrivateFile(path: string): Promise<Buffer | undefined> {
  try {
    const info = await lstat(path);
    const uid = process.getuid?.();
    if (!info.isFile() || (uid !== undefined && info.uid !== uid) || (info.mode & 0o022) !== 0) {
      return undefined;
    }
    const bytes = await readFile(path);
    return bytes.length > 0 ? bytes : undefined;
  } catch {
    return undefined;
  }
}

/** Writes `bytes` to `path` atomically; a failure leaves no partial file and is not raised. */
export async function writePrivateFile(path: string, bytes: Uint8Array | string): Promise<void> {
  const partial = `${path}.${process.pid}.${Date.now()}.partial`;
  try {
    // `wx`: created here or not at all, never through a link someone left at that name.
    await writeFile(partial, bytes, { flag: 'wx', mode: 0o600 });
    await rename(partial, path);
  } catch {
    await rm(partial, { force: true }).catch(() => undefined);
  }
}
