// The few TOML shapes the named-program readers need (host-obeyed-named-*.ts), read without
// a TOML library: each `key = value` with its full dotted key (the table header's path, then
// the key's own), and the strings its value holds. What a setting names is always a string,
// alone, in an array or in an inline table, so the strings of a value are what is read; a
// value's structure past that is not, and a file that is not TOML yields what its lines
// happen to say (the tool refuses such a file, so what it names is never run).
//
// Strings are read as TOML reads them (toml.io v1.0.0, "String"): a basic string `"..."` with
// its escapes decoded (`\"`, `\\`, `\/`-free `\uXXXX` and `\UXXXXXXXX`, `\t`, `\n`, ...;
// TOML 1.1's `\e` and `\xHH`), a literal `'...'` as written, and the multi-line forms `"""`
// and `'''` across lines (a newline right after the opening dropped, a line-ending `\` in a
// basic one joining the next non-blank text). A basic string with an escape TOML does not
// know is taken as written (the tool refuses the file, so what it says never runs).

/** A `key = value` of a TOML file: the full dotted key, its parts, the value's text. */
export interface TomlEntry {
  /** `env._.path` for `_.path = ...` under `[env]`. */
  readonly key: string;
  /** The key's parts, quotes taken off: `["tasks", "build:all", "run"]`. */
  readonly parts: readonly string[];
  /** The value as written (lines joined while a bracket or brace is open). */
  readonly raw: string;
}

/** A piece of TOML text: code outside strings, or one string (its value and its source). */
type Piece = { readonly code: string } | { readonly value: string; readonly source: string };

const ESCAPES: Readonly<Record<string, string>> = {
  b: '\b',
  t: '\t',
  n: '\n',
  f: '\f',
  r: '\r',
  e: '\u001b',
  '"': '"',
  '\\': '\\',
};

/** The escapes of a code point and their digits: `\uXXXX`, `\UXXXXXXXX`, TOML 1.1's `\xHH`. */
const HEX_DIGITS = new Map([
  ['u', 4],
  ['U', 8],
  ['x', 2],
]);

/** A basic string's escapes decoded; undefined at one TOML does not know. */
function unescapeBasic(body: string): string | undefined {
  let out = '';
  for (let i = 0; i < body.length; i += 1) {
    const c = body[i] ?? '';
    if (c !== '\\') {
      out += c;
      continue;
    }
    const e = body[i + 1] ?? '';
    const hex = HEX_DIGITS.get(e);
    if (hex !== undefined) {
      const code = Number.parseInt(body.slice(i + 2, i + 2 + hex), 16);
      if (!/^[0-9a-fA-F]+$/.test(body.slice(i + 2, i + 2 + hex)) || code > 0x10ffff)
        return undefined;
      out += String.fromCodePoint(code);
      i += 1 + hex;
    } else if (ESCAPES[e] !== undefined) {
      out += ESCAPES[e];
      i += 1;
    } else if (/^[ \t]*\r?\n/.test(body.slice(i + 1))) {
      // A line-ending backslash (multi-line basic strings): the whitespace after it goes.
      i += /^[ \t\r\n]*/.exec(body.slice(i + 1))?.[0].length ?? 0;
    } else return undefined;
  }
  return out;
}

/** The string starting at `text[i]`, and where it ends; a string left open ends the text. */
function stringAt(text: string, i: number): { piece: Piece; end: number } {
  const triple = text.startsWith('"""', i) || text.startsWith("'''", i);
  const q = text[i] ?? '"';
  const open = triple ? 3 : 1;
  let j = i + open;
  for (; j < text.length; j += 1) {
    const c = text[j];
    if (c === '\\' && q === '"') j += 1;
    else if (!triple && c === '\n') break;
    else if (c === q && (!triple || text.startsWith(q.repeat(3), j))) break;
  }
  // A multi-line string may end in up to two quotes of its own before its closing three.
  let close = j;
  if (triple) while (text[close + 3] === q && close - j < 2) close += 1;
  let body = text.slice(i + open, close);
  if (triple) body = body.replace(/^\r?\n/, '');
  const end = text.startsWith(q.repeat(open), close) ? close + open : close;
  const source = text.slice(i, end);
  if (q === "'") return { piece: { value: body, source }, end };
  return { piece: { value: unescapeBasic(body) ?? body, source }, end };
}

/** The text cut into code and strings, comments (`#` outside a string, to the line's end) left out. */
function pieces(text: string): Piece[] {
  const out: Piece[] = [];
  let code = '';
  for (let i = 0; i < text.length;) {
    const c = text[i] ?? '';
    if (c === '"' || c === "'") {
      if (code !== '') out.push({ code });
      code = '';
      const { piece, end } = stringAt(text, i);
      out.push(piece);
      i = end;
    } else if (c === '#') {
      const nl = text.indexOf('\n', i);
      i = nl < 0 ? text.length : nl;
    } else {
      code += c;
      i += 1;
    }
  }
  if (code !== '') out.push({ code });
  return out;
}

/** The text's lines, comments left out, a multi-line string kept within its line. */
function logicalLines(text: string): string[] {
  const lines: string[] = [''];
  const append = (t: string): void => {
    lines.push(`${lines.pop() ?? ''}${t}`);
  };
  for (const p of pieces(text)) {
    if ('source' in p) {
      append(p.source);
      continue;
    }
    const [first, ...rest] = p.code.split(/\r?\n/);
    append(first ?? '');
    lines.push(...rest);
  }
  return lines;
}

/** A dotted key's parts, dots inside quotes kept: `a."b.c".d` is `["a", "b.c", "d"]`. */
export function keyParts(key: string): string[] {
  const out: string[] = [];
  for (const m of key.matchAll(/\s*(?:"((?:[^"\\]|\\.)*)"|'([^']*)'|([^.\s"']+))\s*(?:\.|$)/g))
    out.push((m[1] === undefined ? undefined : unescapeBasic(m[1])) ?? m[1] ?? m[2] ?? m[3] ?? '');
  return out;
}

/** How far the brackets and braces outside strings are from closed. */
function depth(text: string): number {
  let d = 0;
  for (const p of pieces(text)) {
    if ('source' in p) continue;
    for (const c of p.code) {
      if (c === '[' || c === '{') d += 1;
      else if (c === ']' || c === '}') d -= 1;
    }
  }
  return d;
}

/** A `key = value` line split at its first `=` outside quotes; undefined for any other. */
function assignment(line: string): { key: string; value: string } | undefined {
  let quote = '';
  for (let i = 0; i < line.length; i += 1) {
    const c = line[i];
    if (quote !== '') {
      if (c === '\\' && quote === '"') i += 1;
      else if (c === quote) quote = '';
    } else if (c === '"' || c === "'") quote = c;
    else if (c === '=') {
      const key = line.slice(0, i).trim();
      return key === '' ? undefined : { key, value: line.slice(i + 1) };
    }
  }
  return undefined;
}

/** Every `key = value` of `text`, under the table headers above it. */
export function tomlEntries(text: string): TomlEntry[] {
  const out: TomlEntry[] = [];
  let table: string[] = [];
  const lines = logicalLines(text);
  for (let i = 0; i < lines.length; i += 1) {
    const line = lines[i] ?? '';
    const header = /^\s*\[\[?([^\]]+)\]\]?\s*$/.exec(line);
    if (header?.[1] !== undefined) {
      table = keyParts(header[1]);
      continue;
    }
    const eq = assignment(line);
    if (eq === undefined) continue;
    let raw = eq.value;
    while (depth(raw) > 0 && i + 1 < lines.length) {
      i += 1;
      raw += `\n${lines[i] ?? ''}`;
    }
    const parts = [...table, ...keyParts(eq.key)];
    out.push({ key: parts.join('.'), parts, raw: raw.trim() });
  }
  return out;
}

/**
 * The strings a value holds, as TOML reads them: `"a"`, `["a", 'b']`, `{ path = "a" }`,
 * multi-line ones; a basic string with an escape TOML does not know, as written.
 */
export function tomlStrings(raw: string): string[] {
  return pieces(raw).flatMap((p) => ('source' in p ? [p.value] : []));
}

/** The strings of an inline table's `field = ...` in a value: `{ task = "setup" }`. */
export function tomlField(raw: string, field: string): string[] {
  const out: string[] = [];
  const string = String.raw`"""[\s\S]*?"""|'''[\s\S]*?'''|"(?:[^"\\]|\\.)*"|'[^']*'`;
  const re = new RegExp(String.raw`(?:^|[{,\s])${field}\s*=\s*(${string})`, 'g');
  for (const m of raw.matchAll(re)) out.push(...tomlStrings(m[1] ?? ''));
  return out;
}
