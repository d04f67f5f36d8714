/**
 * The object-store port: S3 in the cloud, a folder on one machine. Keys are `/`-separated relative paths
 * (S3 object keys); large payloads of queues and state machines travel as keys into this store.
 */
import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { NotFoundError, ValidationError } from '../errors.js';

/** Minimal object storage the runtime needs. Implementations: filesystem (here) and S3 (functions/). */
export interface ObjectStore {
  /** Reads an object; throws {@link NotFoundError} when absent. */
  get(key: string): Promise<Uint8Array>;
  /** Writes (replaces) an object. */
  put(key: string, body: Uint8Array | string, contentType?: string): Promise<void>;
  /** Removes an object; absent objects are not an error. */
  delete(key: string): Promise<void>;
  /** Keys under a prefix, sorted. */
  list(prefix: string): Promise<string[]>;
  /** Whether an object exists. */
  exists(key: string): Promise<boolean>;
  /**
   * Reads an object with its user metadata (S3 `x-amz-meta-*`, names without the prefix, lower-cased). Optional:
   * stores without object metadata omit it, and callers then use {@link ObjectStore.get}.
   */
  getWithMetadata?(key: string): Promise<{ body: Uint8Array; metadata: Record<string, string> }>;
}

/** Reads and parses a JSON object. @throws NotFoundError when absent, ValidationError when not JSON. */
export async function getJson<T>(store: ObjectStore, key: string): Promise<T> {
  const bytes = await store.get(key);
  try {
    return JSON.parse(new TextDecoder().decode(bytes)) as T;
  } catch (error) {
    throw new ValidationError(`Object '${key}' is not valid JSON.`, { cause: error });
  }
}

/** Writes a value as pretty JSON (UTF-8, non-ASCII kept as is). */
export async function putJson(store: ObjectStore, key: string, value: unknown): Promise<void> {
  await store.put(key, `${JSON.stringify(value, null, 2)}\n`, 'application/json');
}

/** Rejects keys that are empty, absolute, or climb out of the root. */
export function checkObjectKey(key: string): string {
  if (typeof key !== 'string' || key === '' || key.startsWith('/') || key.includes('\\')) {
    throw new ValidationError(`Invalid object key '${String(key)}'.`);
  }
  if (key.split('/').some((part) => part === '..' || part === '.' || part === '')) {
    throw new ValidationError(`Invalid object key '${key}': empty, '.' or '..' segments.`);
  }
  return key;
}

/**
 * An {@link ObjectStore} over a local folder, for the embedded runtime (the local state machine, `ai4rag serve`).
 * Writes go to a temporary file renamed into place, so a reader never sees half an object.
 */
export class FsObjectStore implements ObjectStore {
  readonly root: string;

  constructor(root: string) {
    this.root = resolve(root);
  }

  #path(key: string): string {
    return join(this.root, ...checkObjectKey(key).split('/'));
  }

  async get(key: string): Promise<Uint8Array> {
    try {
      return await readFile(this.#path(key));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
        throw new NotFoundError(`Object '${key}' does not exist.`, { cause: error });
      }
      throw error;
    }
  }

  async put(key: string, body: Uint8Array | string): Promise<void> {
    const path = this.#path(key);
    await mkdir(dirname(path), { recursive: true });
    const tmp = `${path}.${process.pid}.${Date.now()}.tmp`;
    await writeFile(tmp, body);
    await rename(tmp, path);
  }

  async delete(key: string): Promise<void> {
    await rm(this.#path(key), { force: true });
  }

  async exists(key: string): Promise<boolean> {
    try {
      return (await stat(this.#path(key))).isFile();
    } catch {
      return false;
    }
  }

  /**
   * Reads only the folder the prefix names (its part up to the last `/`) and, in it, the entries whose names start
   * with the rest: a listing costs what lies under the prefix, not the whole store (an upload lists its batches'
   * done markers, which walked every stored document and artefact before, so N uploads cost N² reads). A prefix no
   * valid key can start with (an empty, `.` or `..` segment) lists nothing.
   */
  async list(prefix: string): Promise<string[]> {
    const out: string[] = [];
    const cut = prefix.lastIndexOf('/');
    const folder = prefix.slice(0, cut + 1);
    const rest = prefix.slice(cut + 1);
    let start = this.root;
    if (folder !== '') {
      try {
        start = this.#path(folder.slice(0, -1));
      } catch {
        return [];
      }
    }
    const walk = async (dir: string, top: boolean): Promise<void> => {
      let entries: import('node:fs').Dirent[];
      try {
        entries = await readdir(dir, { withFileTypes: true });
      } catch {
        return;
      }
      for (const e of entries) {
        if (top && !e.name.startsWith(rest)) continue;
        const full = join(dir, e.name);
        if (e.isDirectory()) await walk(full, false);
        else if (e.isFile() && !e.name.endsWith('.tmp')) {
          const key = relative(this.root, full).split(sep).join('/');
          if (key.startsWith(prefix)) out.push(key);
        }
      }
    };
    await walk(start, true);
    return out.sort();
  }
}

/** An in-memory {@link ObjectStore} for tests and throwaway runs. */
export class MemoryObjectStore implements ObjectStore {
  readonly objects = new Map<string, Uint8Array>();

  async get(key: string): Promise<Uint8Array> {
    const v = this.objects.get(checkObjectKey(key));
    if (v === undefined) throw new NotFoundError(`Object '${key}' does not exist.`);
    return v;
  }

  async put(key: string, body: Uint8Array | string): Promise<void> {
    this.objects.set(
      checkObjectKey(key),
      typeof body === 'string' ? new TextEncoder().encode(body) : body,
    );
  }

  async delete(key: string): Promise<void> {
    this.objects.delete(key);
  }

  async exists(key: string): Promise<boolean> {
    return this.objects.has(key);
  }

  async list(prefix: string): Promise<string[]> {
    return [...this.objects.keys()].filter((k) => k.startsWith(prefix)).sort();
  }
}
