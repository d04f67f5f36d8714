/**
 * A small subset of Milvus boolean filter expressions, enough for what the Milvus store emits:
 * `==`, `!=`, `<`, `<=`, `>`, `>=`, `in [...]`, `not in [...]`, `and`, `or`, `not`, parentheses, string
 * (double- or single-quoted, backslash escapes), number and boolean literals, `field["key"]["nested"]` JSON
 * access and `like "pattern"` (`%` any run, `_` one character, `\` escapes the next character).
 */

type Literal = string | number | boolean;
type Operand = { kind: 'field'; name: string; path: string[] } | { kind: 'lit'; value: Literal };
/** A compiled expression: evaluates one row. */
export type RowPredicate = (row: Record<string, unknown>) => boolean;

type Token =
  | { t: 'str'; v: string }
  | { t: 'num'; v: number }
  | { t: 'id'; v: string }
  | { t: 'op'; v: string };

const ESCAPES: Record<string, string> = {
  n: '\n',
  r: '\r',
  t: '\t',
  '\\': '\\',
  '"': '"',
  "'": "'",
};

function tokenize(src: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  while (i < src.length) {
    const c = src[i] as string;
    if (/\s/.test(c)) {
      i += 1;
    } else if (c === '"' || c === "'") {
      let v = '';
      i += 1;
      for (;;) {
        const d = src[i];
        if (d === undefined) throw new Error('unterminated string literal');
        i += 1;
        if (d === c) break;
        if (d === '\\') {
          const e = src[i];
          i += 1;
          if (e === undefined || ESCAPES[e] === undefined) throw new Error('bad escape');
          v += ESCAPES[e];
        } else v += d;
      }
      out.push({ t: 'str', v });
    } else if (/[0-9]/.test(c) || (c === '-' && /[0-9]/.test(src[i + 1] ?? ''))) {
      const m = /^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?/.exec(src.slice(i));
      if (m === null) throw new Error('bad number');
      out.push({ t: 'num', v: Number(m[0]) });
      i += m[0].length;
    } else if (/[A-Za-z_]/.test(c)) {
      const m = /^[A-Za-z_][A-Za-z0-9_]*/.exec(src.slice(i)) as RegExpExecArray;
      out.push({ t: 'id', v: m[0] });
      i += m[0].length;
    } else {
      const two = src.slice(i, i + 2);
      if (['==', '!=', '<=', '>='].includes(two)) {
        out.push({ t: 'op', v: two });
        i += 2;
      } else if ('()[],<>'.includes(c)) {
        out.push({ t: 'op', v: c });
        i += 1;
      } else throw new Error(`unexpected character ${JSON.stringify(c)} at ${i}`);
    }
  }
  return out;
}

function compare(a: unknown, op: string, b: unknown): boolean {
  // Milvus compares like types only; a JSON value of another type never matches.
  const same =
    typeof a === typeof b &&
    (typeof a === 'string' || typeof a === 'number' || typeof a === 'boolean');
  if (op === '!=') return !same || a !== b;
  if (!same) return false;
  if (op === '==') return a === b;
  // Milvus orders strings by their UTF-8 bytes (the order of primary keys, too).
  const d =
    typeof a === 'string'
      ? Buffer.compare(Buffer.from(a), Buffer.from(b as string))
      : (a as number) - (b as number);
  switch (op) {
    case '<':
      return d < 0;
    case '<=':
      return d <= 0;
    case '>':
      return d > 0;
    default:
      return d >= 0;
  }
}

/** Milvus `like`: `%` matches any run, `_` one character, `\` takes the next character literally. */
function likeRegExp(pattern: string): RegExp {
  let re = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i] as string;
    if (c === '\\' && i + 1 < pattern.length) {
      i += 1;
      re += (pattern[i] as string).replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    } else if (c === '%') re += '.*';
    else if (c === '_') re += '.';
    else re += c.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${re}$`, 's');
}

/**
 * Compiles a filter expression to a row predicate (an empty expression matches everything).
 * @throws {Error} on a syntax error.
 */
export function compileExpr(src: string): RowPredicate {
  const toks = tokenize(src);
  let pos = 0;
  const peek = (): Token | undefined => toks[pos];
  const isKw = (kw: string, tok = peek()): boolean => tok?.t === 'id' && tok.v.toLowerCase() === kw;
  const isOp = (op: string, tok = peek()): boolean => tok?.t === 'op' && tok.v === op;
  const expectOp = (op: string): void => {
    if (!isOp(op)) throw new Error(`expected '${op}' at token ${pos}`);
    pos += 1;
  };
  const literal = (): Literal => {
    const tok = toks[pos++];
    if (tok?.t === 'str' || tok?.t === 'num') return tok.v;
    if (tok?.t === 'id' && (tok.v === 'true' || tok.v === 'false')) return tok.v === 'true';
    throw new Error(`expected a literal at token ${pos - 1}`);
  };
  const operand = (): Operand => {
    const tok = peek();
    if (tok?.t === 'id' && tok.v !== 'true' && tok.v !== 'false') {
      pos += 1;
      const path: string[] = [];
      while (isOp('[')) {
        pos += 1;
        const key = toks[pos++];
        if (key?.t !== 'str') throw new Error('expected a string key in []');
        expectOp(']');
        path.push(key.v);
      }
      return { kind: 'field', name: tok.v, path };
    }
    return { kind: 'lit', value: literal() };
  };
  const value = (o: Operand, row: Record<string, unknown>): unknown => {
    if (o.kind === 'lit') return o.value;
    let v = row[o.name];
    for (const p of o.path) {
      v =
        v !== null && typeof v === 'object' && Object.hasOwn(v, p)
          ? (v as Record<string, unknown>)[p]
          : undefined;
    }
    return v;
  };
  const primary = (): RowPredicate => {
    if (isKw('not')) {
      pos += 1;
      const inner = primary();
      return (row) => !inner(row);
    }
    if (isOp('(')) {
      pos += 1;
      const inner = orExpr();
      expectOp(')');
      return inner;
    }
    const left = operand();
    let negate = false;
    if (isKw('not') && isKw('in', toks[pos + 1])) {
      negate = true;
      pos += 1;
    }
    if (isKw('like')) {
      pos += 1;
      const pat = toks[pos++];
      if (pat?.t !== 'str') throw new Error('expected a string pattern after like');
      const re = likeRegExp(pat.v);
      return (row) => {
        const v = value(left, row);
        return typeof v === 'string' && re.test(v);
      };
    }
    if (isKw('in')) {
      pos += 1;
      expectOp('[');
      const items: Literal[] = [];
      while (!isOp(']')) {
        items.push(literal());
        if (isOp(',')) pos += 1;
        else if (!isOp(']')) throw new Error('expected , or ] in list');
      }
      pos += 1;
      return (row) => {
        const v = value(left, row);
        const found = items.some((it) => compare(v, '==', it));
        return negate ? !found : found;
      };
    }
    const op = peek();
    if (op?.t !== 'op' || !['==', '!=', '<', '<=', '>', '>='].includes(op.v)) {
      throw new Error(`expected a comparison at token ${pos}`);
    }
    pos += 1;
    const right = operand();
    return (row) => compare(value(left, row), op.v, value(right, row));
  };
  const andExpr = (): RowPredicate => {
    let acc = primary();
    while (isKw('and') || isOp('&&')) {
      pos += 1;
      const l = acc;
      const r = primary();
      acc = (row) => l(row) && r(row);
    }
    return acc;
  };
  const orExpr = (): RowPredicate => {
    let acc = andExpr();
    while (isKw('or') || isOp('||')) {
      pos += 1;
      const l = acc;
      const r = andExpr();
      acc = (row) => l(row) || r(row);
    }
    return acc;
  };
  if (toks.length === 0) return () => true;
  const pred = orExpr();
  if (pos !== toks.length) throw new Error(`unexpected token at ${pos}`);
  return pred;
}
