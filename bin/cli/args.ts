import { mkdir } from 'node:fs/promises';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { ValidationError } from '../../shared/src/errors.js';
import { validateMetadataFilter } from '../../shared/src/vectorstores/filter.js';
import type { MetadataFilter } from '../../shared/src/vectorstores/types.js';

/** Option spec for `node:util` parseArgs. */
export type OptionSpec = Record<
  string,
  { type: 'string' | 'boolean'; short?: string; multiple?: boolean }
>;

export const GLOBAL_OPTIONS: OptionSpec = {
  store: { type: 'string' },
  'data-dir': { type: 'string' },
  json: { type: 'boolean' },
  /** Read by `withConfigFile` (and removed) before a command parses its arguments. */
  config: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
};

export interface Parsed {
  values: Record<string, string | boolean | string[] | undefined>;
  positionals: string[];
}

/** Parses a command's arguments strictly: unknown flags are a clear error. */
export function parse(argv: string[], options: OptionSpec): Parsed {
  try {
    const { values, positionals } = parseArgs({
      args: argv,
      options: { ...GLOBAL_OPTIONS, ...options },
      allowPositionals: true,
      strict: true,
    });
    return { values: values as Parsed['values'], positionals };
  } catch (error) {
    throw new ValidationError((error as Error).message.replace(/^TypeError \[[A-Z_]+\]: /, ''), {
      cause: error,
    });
  }
}

export function str(p: Parsed, name: string): string | undefined {
  const v = p.values[name];
  return typeof v === 'string' ? v : undefined;
}

export function flag(p: Parsed, name: string): boolean {
  return p.values[name] === true;
}

/** An integer flag, validated. */
export function int(p: Parsed, name: string, fallback: number): number {
  const raw = str(p, name);
  if (raw === undefined) return fallback;
  if (!/^-?\d+$/.test(raw.trim()))
    throw new ValidationError(`--${name} must be an integer, got "${raw}"`);
  return Number.parseInt(raw, 10);
}

/** An optional integer flag (undefined when absent). */
export function optInt(p: Parsed, name: string): number | undefined {
  return str(p, name) === undefined ? undefined : int(p, name, 0);
}

/** An optional number flag (undefined when absent). */
export function optNum(p: Parsed, name: string): number | undefined {
  const raw = str(p, name);
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (raw.trim() === '' || !Number.isFinite(n))
    throw new ValidationError(`--${name} must be a number, got "${raw}"`);
  return n;
}

/** A flag restricted to a set of values. */
export function oneOf<T extends string>(
  p: Parsed,
  name: string,
  allowed: readonly T[],
  fallback: T,
): T {
  const raw = str(p, name);
  if (raw === undefined) return fallback;
  if (!(allowed as readonly string[]).includes(raw)) {
    throw new ValidationError(`--${name} must be one of ${allowed.join(', ')}; got "${raw}"`);
  }
  return raw as T;
}

/**
 * A metadata filter flag: JSON in the language of `shared/src/vectorstores/filter.ts`, validated here so a bad
 * filter is a usage error (exit 2) naming the flag and the offending key or operator.
 */
export function filterFlag(p: Parsed, name: string): MetadataFilter | undefined {
  const raw = str(p, name);
  if (raw === undefined) return undefined;
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch (error: unknown) {
    throw new ValidationError(`--${name} must be JSON: ${(error as Error).message}`, {
      cause: error,
    });
  }
  try {
    return validateMetadataFilter(json);
  } catch (error: unknown) {
    throw new ValidationError(`--${name}: ${(error as Error).message}`, { cause: error });
  }
}

/** Why a folder could not be created, in words, from the error's code. */
function mkdirReason(code: string | undefined): string {
  if (code === 'EEXIST' || code === 'ENOTDIR') return 'a file is in the way';
  if (code === 'EACCES' || code === 'EPERM') return 'permission denied';
  if (code === 'EROFS') return 'the file system is read-only';
  return code ?? 'it cannot be created';
}

/**
 * Creates the data directory `given` (as the user typed it; `--data-dir` or its default) if it does not exist and
 * returns its absolute path.
 * @throws {ValidationError} naming `given` and the reason when it cannot be a directory (exit 2, nothing started).
 */
export async function ensureDataDir(given: string): Promise<string> {
  const dir = resolve(given);
  try {
    await mkdir(dir, { recursive: true });
  } catch (error) {
    const reason = mkdirReason((error as NodeJS.ErrnoException).code);
    const where = dir === given ? '' : ` (${dir})`;
    throw new ValidationError(`--data-dir ${given}: not a usable directory${where}: ${reason}`, {
      cause: error,
    });
  }
  return dir;
}
