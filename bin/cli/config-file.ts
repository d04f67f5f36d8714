/**
 * `ai4rag.config.json`: default options for every command, read from the current directory (or `--config FILE`).
 * Its keys are the long flag names (`{"data-dir": ".ai4rag", "collection": "ai4rag_handbook", "k": 3}`); a flag
 * on the command line overrides the file. A key no command knows is a usage error naming the key and the file;
 * a key another command takes (e.g. `chunk-size` while searching) is left to that command.
 */
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { ValidationError } from '../../shared/src/errors.js';
import type { OptionSpec } from './args.js';

/** The file looked for in the current directory when no `--config` is given. */
export const CONFIG_FILE_NAME = 'ai4rag.config.json';

/** The `--config FILE` given on the command line (`--config FILE` or `--config=FILE`), if any. */
function configFlag(argv: readonly string[]): string | undefined {
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    if (a === '--') return undefined;
    if (a === '--config') {
      const next = argv[i + 1];
      if (next === undefined || next.startsWith('--')) {
        throw new ValidationError('--config needs a FILE');
      }
      return next;
    }
    if (a.startsWith('--config=')) return a.slice('--config='.length);
  }
  return undefined;
}

/** The config file's options, read and checked: an object of option names to strings, numbers, booleans or lists. */
function readConfig(file: string, explicit: boolean): Record<string, unknown> | undefined {
  if (!explicit && !existsSync(file)) return undefined;
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new ValidationError(`cannot read --config "${file}": ${(error as Error).message}`, {
      cause: error,
    });
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new ValidationError(
      `config file ${file} is not valid JSON: ${(error as Error).message}`,
      {
        cause: error,
      },
    );
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) {
    throw new ValidationError(
      `config file ${file} must hold a JSON object of option names, e.g. {"collection": "ai4rag_handbook"}`,
    );
  }
  return json as Record<string, unknown>;
}

/**
 * The command's arguments with the config file's options in front (so a flag given on the command line, parsed
 * later, wins). `--config` itself is removed.
 * @param own the options the command parses (globals included)
 * @param known every option of every command: a key outside it is refused
 * @throws {ValidationError} for an unreadable file, a key no command knows, or a value of the wrong type, naming
 * the key and the file.
 */
export function withConfigFile(
  argv: readonly string[],
  own: OptionSpec,
  known: ReadonlySet<string>,
  cwd = process.cwd(),
): string[] {
  const given = configFlag(argv);
  const file = resolve(cwd, given ?? CONFIG_FILE_NAME);
  const rest = stripConfigFlag(argv);
  const config = readConfig(file, given !== undefined);
  if (config === undefined) return rest;
  const front: string[] = [];
  for (const [key, value] of Object.entries(config)) {
    if (key === 'config' || key === 'help' || !known.has(key)) {
      const hint = key.startsWith('--') ? ` (write it without the dashes: "${key.slice(2)}")` : '';
      throw new ValidationError(
        `config file ${file}: unknown option "${key}"${hint}; keys are the long flag names, e.g. "data-dir"`,
      );
    }
    const spec = own[key];
    if (spec === undefined) continue; // another command's option
    if (spec.type === 'boolean') {
      if (typeof value !== 'boolean') {
        throw new ValidationError(`config file ${file}: "${key}" must be true or false`);
      }
      if (value) front.push(`--${key}`);
      continue;
    }
    const text = optionText(value);
    if (text === undefined) {
      throw new ValidationError(
        `config file ${file}: "${key}" must be a string, a number or a list of them (A,B)`,
      );
    }
    front.push(`--${key}=${text}`);
  }
  return [...front, ...rest];
}

function optionText(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    // A JSON-valued option (--filter, --embedding-prefixes) may be written as JSON in the file.
    return JSON.stringify(value);
  }
  if (
    Array.isArray(value) &&
    value.length > 0 &&
    value.every((v) => typeof v === 'string' || typeof v === 'number')
  ) {
    return value.join(',');
  }
  return undefined;
}

function stripConfigFlag(argv: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    if (a === '--') {
      out.push(...argv.slice(i));
      break;
    }
    if (a === '--config') {
      i++;
      continue;
    }
    if (a.startsWith('--config=')) continue;
    out.push(a);
  }
  return out;
}
