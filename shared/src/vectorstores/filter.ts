import { VectorStoreConfigError } from './errors.js';
import type { MetadataFilter } from './types.js';

/**
 * The metadata filter language: one validated JSON form, parsed to a typed AST, compiled to parameterized SQL
 * (pgvector) and to a Milvus boolean expression, and evaluated in memory (test doubles).
 *
 * ```
 * filter    := { clause, ... }                   every clause must hold (an empty top-level {} = no filter)
 * clause    := field: value                       shorthand for { eq: value }
 *            | field: { op: operand, ... }        every operator must hold
 *            | "and": [filter, ...] | "or": [filter, ...] | "not": filter
 * field     := document_id | sequence_number | start_index | headings      built-in chunk fields
 *            | "user." key                        user metadata (stored per chunk under metadata.user)
 * key       := [A-Za-z_][A-Za-z0-9_]{0,63}, not __proto__ / constructor / prototype
 * op        := eq | ne (value) | in | nin ([value, ...], 1..1024) | gt | gte | lt | lte (number or string)
 *            | startsWith (string)
 * value     := string (≤ 1024 chars) | finite number | boolean
 * ```
 *
 * Semantics, identical on every store: comparisons are typed (1 ≠ "1"; a number never orders against a string);
 * strings order by UTF-8 bytes; `ne` / `nin` / `not` match chunks that lack the field.
 */

/** A scalar filter operand. */
export type FilterValue = string | number | boolean;

/** The fields a filter may name, as paths into a chunk's metadata object. */
export type FilterPath = readonly [string] | readonly ['user', string];

/** A parsed, validated filter. */
export type FilterNode =
  | { readonly op: 'and' | 'or'; readonly children: readonly FilterNode[] }
  | { readonly op: 'not'; readonly child: FilterNode }
  | { readonly op: 'eq' | 'ne'; readonly path: FilterPath; readonly value: FilterValue }
  | {
      readonly op: 'in' | 'nin';
      readonly path: FilterPath;
      readonly values: readonly FilterValue[];
    }
  | {
      readonly op: 'gt' | 'gte' | 'lt' | 'lte';
      readonly path: FilterPath;
      readonly value: number | string;
    }
  | { readonly op: 'startsWith'; readonly path: FilterPath; readonly value: string };

/** Built-in chunk metadata fields a filter may name without the `user.` prefix. */
export const BUILT_IN_FILTER_FIELDS = [
  'document_id',
  'sequence_number',
  'start_index',
  'headings',
] as const;
/** The chunk metadata key under which user metadata is stored (`metadata.user.<key>`). */
export const USER_METADATA_KEY = 'user';
/** Bounds of a filter: nesting depth, total clauses, list length, string length. */
export const FILTER_LIMITS = { depth: 8, nodes: 256, list: 1024, string: 1024 } as const;

const KEY = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
const FORBIDDEN = new Set(['__proto__', 'constructor', 'prototype']);
const FIELD_OPS = ['eq', 'ne', 'in', 'nin', 'gt', 'gte', 'lt', 'lte', 'startsWith'] as const;
type FieldOp = (typeof FIELD_OPS)[number];

/** A filter that is not well-formed; the message names the offending key, operator or value. */
export class MetadataFilterError extends VectorStoreConfigError {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'MetadataFilterError';
  }
}

function show(key: string): string {
  return JSON.stringify(key.length > 64 ? `${key.slice(0, 64)}…` : key);
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

/** Checks a user metadata key (also used by the loaders for what they attach). */
export function isValidMetadataKey(key: string): boolean {
  return KEY.test(key) && !FORBIDDEN.has(key);
}

function parsePath(field: string, where: string): FilterPath {
  if (FORBIDDEN.has(field))
    throw new MetadataFilterError(`${where}: key ${show(field)} is refused`);
  if ((BUILT_IN_FILTER_FIELDS as readonly string[]).includes(field)) return [field];
  if (field.startsWith(`${USER_METADATA_KEY}.`)) {
    const key = field.slice(USER_METADATA_KEY.length + 1);
    if (FORBIDDEN.has(key))
      throw new MetadataFilterError(`${where}: key ${show(field)} is refused`);
    if (KEY.test(key)) return [USER_METADATA_KEY, key];
  }
  throw new MetadataFilterError(
    `${where}: unknown field ${show(field)} (use ${BUILT_IN_FILTER_FIELDS.join(', ')}, or user.<key> with a key of letters, digits and _ not starting with a digit, ≤ 64 chars)`,
  );
}

function scalar(v: unknown, where: string): FilterValue {
  if (typeof v === 'string') {
    if (v.length > FILTER_LIMITS.string) {
      throw new MetadataFilterError(
        `${where}: string longer than ${FILTER_LIMITS.string} characters`,
      );
    }
    return v;
  }
  if (typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v))) return v;
  throw new MetadataFilterError(`${where}: expected a string, a finite number or a boolean`);
}

class Parser {
  private nodes = 0;

  count(where: string): void {
    this.nodes += 1;
    if (this.nodes > FILTER_LIMITS.nodes) {
      throw new MetadataFilterError(`${where}: more than ${FILTER_LIMITS.nodes} clauses`);
    }
  }

  filter(v: unknown, where: string, depth: number): FilterNode {
    if (depth > FILTER_LIMITS.depth) {
      throw new MetadataFilterError(`${where}: nested deeper than ${FILTER_LIMITS.depth} levels`);
    }
    if (!isPlainObject(v)) throw new MetadataFilterError(`${where}: expected an object`);
    const keys = Object.keys(v);
    if (keys.length === 0) throw new MetadataFilterError(`${where}: empty filter object`);
    const parts: FilterNode[] = [];
    for (const key of keys) {
      const at = `${where}.${key}`;
      const operand = v[key];
      if (FORBIDDEN.has(key)) throw new MetadataFilterError(`${at}: key ${show(key)} is refused`);
      if (key === 'and' || key === 'or') {
        if (!Array.isArray(operand) || operand.length === 0) {
          throw new MetadataFilterError(`${at}: expected a non-empty array of filters`);
        }
        this.count(at);
        const children = operand.map((c, i) => this.filter(c, `${at}[${i}]`, depth + 1));
        parts.push({ op: key, children });
      } else if (key === 'not') {
        this.count(at);
        parts.push({ op: 'not', child: this.filter(operand, at, depth + 1) });
      } else {
        parts.push(...this.field(parsePath(key, at), operand, at));
      }
    }
    return parts.length === 1 ? (parts[0] as FilterNode) : { op: 'and', children: parts };
  }

  field(path: FilterPath, operand: unknown, where: string): FilterNode[] {
    if (!isPlainObject(operand)) {
      this.count(where);
      return [{ op: 'eq', path, value: scalar(operand, where) }];
    }
    const ops = Object.keys(operand);
    if (ops.length === 0) throw new MetadataFilterError(`${where}: empty operator object`);
    return ops.map((op) => {
      const at = `${where}.${op}`;
      if (!(FIELD_OPS as readonly string[]).includes(op)) {
        throw new MetadataFilterError(
          `${at}: unknown operator ${show(op)} (use ${FIELD_OPS.join(', ')})`,
        );
      }
      this.count(at);
      return this.operator(op as FieldOp, path, operand[op], at);
    });
  }

  operator(op: FieldOp, path: FilterPath, v: unknown, where: string): FilterNode {
    switch (op) {
      case 'eq':
      case 'ne':
        return { op, path, value: scalar(v, where) };
      case 'in':
      case 'nin': {
        if (!Array.isArray(v) || v.length === 0 || v.length > FILTER_LIMITS.list) {
          throw new MetadataFilterError(
            `${where}: expected an array of 1..${FILTER_LIMITS.list} values`,
          );
        }
        return { op, path, values: v.map((x, i) => scalar(x, `${where}[${i}]`)) };
      }
      case 'startsWith': {
        if (typeof v !== 'string' || v.length === 0) {
          throw new MetadataFilterError(`${where}: expected a non-empty string`);
        }
        return { op, path, value: scalar(v, where) as string };
      }
      default: {
        const value = scalar(v, where);
        if (typeof value === 'boolean') {
          throw new MetadataFilterError(`${where}: expected a number or a string`);
        }
        return { op, path, value };
      }
    }
  }
}

/**
 * Parses and validates a filter (any JSON value) into its AST. An empty top-level object means "no filter"
 * (`undefined`).
 * @throws {MetadataFilterError} naming the offending key, operator or value (a path such as `filter.or[1].x`).
 * @example parseMetadataFilter({ document_id: 'd1', 'user.year': { gte: 2020 } })
 */
export function parseMetadataFilter(
  filter: unknown,
  options: { nonEmpty?: boolean } = {},
): FilterNode | undefined {
  if (isPlainObject(filter) && Object.keys(filter).length === 0) {
    if (options.nonEmpty === true) throw new MetadataFilterError('filter must not be empty');
    return undefined;
  }
  return new Parser().filter(filter, 'filter', 1);
}

/**
 * Checks a filter and returns it unchanged (the JSON form the ports take).
 * @throws {MetadataFilterError} as {@link parseMetadataFilter}.
 */
export function validateMetadataFilter(
  filter: unknown,
  options: { nonEmpty?: boolean } = {},
): MetadataFilter {
  parseMetadataFilter(filter, options);
  return filter as MetadataFilter;
}

function get(metadata: Record<string, unknown>, path: FilterPath): unknown {
  let v: unknown = metadata;
  for (const p of path) {
    if (!isPlainObject(v) || !Object.hasOwn(v, p)) return undefined;
    v = v[p];
  }
  return v;
}

function compareBytes(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}

/**
 * Evaluates a filter against one chunk's metadata, with the semantics every store implements.
 * @example matchesMetadataFilter(parseMetadataFilter({ 'user.lang': 'de' }), { user: { lang: 'de' } }) // true
 */
export function matchesMetadataFilter(
  node: FilterNode | undefined,
  metadata: Record<string, unknown>,
): boolean {
  if (node === undefined) return true;
  switch (node.op) {
    case 'and':
      return node.children.every((c) => matchesMetadataFilter(c, metadata));
    case 'or':
      return node.children.some((c) => matchesMetadataFilter(c, metadata));
    case 'not':
      return !matchesMetadataFilter(node.child, metadata);
    case 'eq':
      return get(metadata, node.path) === node.value;
    case 'ne':
      return get(metadata, node.path) !== node.value;
    case 'in':
      return node.values.includes(get(metadata, node.path) as FilterValue);
    case 'nin':
      return !node.values.includes(get(metadata, node.path) as FilterValue);
    case 'startsWith': {
      const v = get(metadata, node.path);
      return typeof v === 'string' && v.startsWith(node.value);
    }
    default: {
      const v = get(metadata, node.path);
      if (typeof v !== typeof node.value) return false;
      const d =
        typeof v === 'string'
          ? compareBytes(v, node.value as string)
          : (v as number) - (node.value as number);
      if (node.op === 'gt') return d > 0;
      if (node.op === 'gte') return d >= 0;
      if (node.op === 'lt') return d < 0;
      return d <= 0;
    }
  }
}

function nest(path: FilterPath, value: FilterValue): Record<string, unknown> {
  return path.length === 1 ? { [path[0]]: value } : { [path[0]]: { [path[1]]: value } };
}

/**
 * Compiles a filter to a SQL boolean expression over a `jsonb` metadata column. Every value and every path is
 * a bind parameter pushed onto `params` (`$n` numbered after the ones already there); no caller text reaches
 * the SQL. Equality uses jsonb containment (typed: 1 ≠ '1'); orderings check the JSON type first (CASE, so a
 * cast never sees another type) and compare strings with the C collation (UTF-8 byte order, as Milvus).
 * @example compileFilterSql(parseMetadataFilter({ document_id: 'd1' })!, [], 'metadata')
 * // 'metadata @> $1::jsonb' with params ['{"document_id":"d1"}']
 */
export function compileFilterSql(node: FilterNode, params: unknown[], column: string): string {
  const bind = (v: unknown): string => {
    params.push(v);
    return `$${params.length}`;
  };
  switch (node.op) {
    case 'and':
    case 'or':
      return `(${node.children.map((c) => compileFilterSql(c, params, column)).join(` ${node.op.toUpperCase()} `)})`;
    case 'not':
      return `(NOT ${compileFilterSql(node.child, params, column)})`;
    case 'eq':
      return `${column} @> ${bind(JSON.stringify(nest(node.path, node.value)))}::jsonb`;
    case 'ne':
      return `(NOT ${column} @> ${bind(JSON.stringify(nest(node.path, node.value)))}::jsonb)`;
    case 'in':
    case 'nin': {
      const any = `${column} @> ANY(${bind(node.values.map((v) => JSON.stringify(nest(node.path, v))))}::jsonb[])`;
      return node.op === 'in' ? any : `(NOT ${any})`;
    }
    case 'startsWith': {
      const p = bind([...node.path]);
      return `(CASE WHEN jsonb_typeof(${column} #> ${p}::text[]) = 'string' THEN starts_with(${column} #>> ${p}::text[], ${bind(node.value)}::text) ELSE false END)`;
    }
    default: {
      const sym = { gt: '>', gte: '>=', lt: '<', lte: '<=' }[node.op];
      const p = bind([...node.path]);
      if (typeof node.value === 'number') {
        return `(CASE WHEN jsonb_typeof(${column} #> ${p}::text[]) = 'number' THEN (${column} #> ${p}::text[])::numeric ${sym} ${bind(node.value)}::numeric ELSE false END)`;
      }
      return `(CASE WHEN jsonb_typeof(${column} #> ${p}::text[]) = 'string' THEN (${column} #>> ${p}::text[]) COLLATE "C" ${sym} ${bind(node.value)}::text COLLATE "C" ELSE false END)`;
    }
  }
}
