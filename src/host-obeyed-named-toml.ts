// The few TOML shapes the named-program readers need (host-obeyed-named-*.ts), read without
// a TOML library: each `key = value` with its full dotted key (the table header's path, then
// the key's own), and the strings its value holds. What a setting names is always a string,
// alone, in an array or in an inline table, so the strings of a value are what is read; a
// value's structure past that is not, and a file that is not TOML yields what its lines
// happen to say (the tool refuses such a file, so what it names is never run).

/** A `key = value` of a TOML file: the full dotted key, its parts, the value's text. */
export interface TomlEntry {
  /** `env._.path` for `_.path = ...` under `[env]`. */
  readonly key: string;
  /** The key's parts, quotes taken off: `["tasks", "build:all", "run"]`. */
  readonly parts: readonly string[];
  /** The value as written (lines joined while a bracket or brace is open). */
  readonly raw: string;
}

/** The text up to a `#` that is outside a string. */
function uncomment(line: string): string {
  let quote = '';
  for (let i = 0; i < line.length; i += 1) {
    const c = line[i];
    if (quote !== '') {
      if (c === '\\' && quote === '"') i += 1;
      else if (c === quote) quote = '';
    } else if (c === '"' || c === "'") quote = c;
    else if (c === '#') return line.slice(0, i);
  }
  return line;
}

/** A dotted key's parts, dots inside quotes kept: `a."b.c".d` is `["a", "b.c", "d"]`. */
export function keyParts(key: string): string[] {
  const out: string[] = [];
  for (const m of key.matchAll(/\s*(?:"((?:[^"\\]|\\.)*)"|'([^']*)'|([^.\s"']+))\s*(?:\.|$)/g))
    out.push(m[1] ?? m[2] ?? m[3] ?? '');
  return out;
}

/** How far the brackets and braces outside strings are from closed. */
function depth(text: string): number {
  let d = 0;
  for (const m of text.matchAll(/"(?:[^"\\]|\\.)*"|'[^']*'|[[\]{}]/g)) {
    if (m[0] === '[' || m[0] === '{') d += 1;
    else if (m[0] === ']' || m[0] === '}') d -= 1;
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
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i += 1) {
    const line = uncomment(lines[i] ?? '');
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
      raw += `\n${uncomment(lines[i] ?? '')}`;
    }
    const parts = [...table, ...keyParts(eq.key)];
    out.push({ key: parts.join('.'), parts, raw: raw.trim() });
  }
  return out;
}

/** The strings a value holds: `"a"`, `["a", 'b']`, `{ path = "a" }` (basic escapes kept). */
export function tomlStrings(raw: string): string[] {
  const out: string[] = [];
  for (const m of raw.matchAll(/"((?:[^"\\]|\\.)*)"|'([^']*)'/g)) out.push(m[1] ?? m[2] ?? '');
  return out;
}

/** The strings of an inline table's `field = ...` in a value: `{ task = "setup" }`. */
export function tomlField(raw: string, field: string): string[] {
  const out: string[] = [];
  const re = new RegExp(`(?:^|[{,\\s])${field}\\s*=\\s*("(?:[^"\\\\]|\\\\.)*"|'[^']*')`, 'g');
  for (const m of raw.matchAll(re)) out.push(...tomlStrings(m[1] ?? ''));
  return out;
}
