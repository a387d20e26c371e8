// Class 9, a held configuration read as its tool reads it (host-obeyed-named.ts): what a
// setting names is found only if its value is unquoted and unescaped the way the tool does,
// so each reader here follows its tool's own parser, not a guess at it. A spelling the tool
// accepts and a reader does not (`node-options=--require "./tools/pre.js"`: Node takes the
// quotes off) would name nothing held. Where a value cannot be read as the tool reads it, it
// fails closed: every word it could be is named.
// - npm's `.npmrc` (and pnpm's): the `ini` package npm reads it with (npm/ini lib/ini.js,
//   `decode` and `unsafe`): a line `key=value`, `;` and `#` lines comments; a value quoted
//   `"..."` is JSON (its escapes decoded), `'...'` is JSON once the single quotes are off (kept
//   as written when that does not parse); an unquoted one ends at the first `;` or `#` not
//   escaped by `\`, `\;` `\#` `\\` unescaped, other backslashes kept. Newer `ini` joins an
//   indented line to the key above it: read both ways.
// - Node's `NODE_OPTIONS` (node_options.cc, `ParseNodeOptionsEnvVar`): split at spaces only;
//   `"` toggles a string, inside which `\` escapes the next character; an unterminated string
//   or a trailing `\` is an error (Node refuses to start).
// - yarn 1's `.yarnrc` (its lockfile parser): `key value`, each a bare word or a JSON string.
// - A shell line (a hook, `script-shell`, a task's command): split as a POSIX shell splits it
//   (shellWords), bash's `$'...'` included.

/** One `key = value` of a configuration, as its tool reads it. */
export interface KeyValue {
  readonly key: string;
  readonly value: string;
}

const isQuoted = (v: string): boolean =>
  v.length > 1 &&
  ((v.startsWith('"') && v.endsWith('"')) || (v.startsWith("'") && v.endsWith("'")));

/** npm/ini's `unsafe`: a key or value as npm reads it. */
export function iniUnsafe(raw: string): string {
  const val = raw.trim();
  if (isQuoted(val)) {
    const inner = val.startsWith("'") ? val.slice(1, -1) : val;
    try {
      const parsed: unknown = JSON.parse(inner);
      return typeof parsed === 'string' ? parsed : inner;
    } catch {
      return inner;
    }
  }
  let out = '';
  for (let i = 0; i < val.length; i += 1) {
    const c = val[i] ?? '';
    if (c === ';' || c === '#') break;
    if (c !== '\\') out += c;
    else if (i + 1 >= val.length) out += '\\';
    else {
      const next = val[(i += 1)] ?? '';
      out += '\\;#'.includes(next) ? next : `\\${next}`;
    }
  }
  return out.trim();
}

/**
 * The `key=value` lines of an `.npmrc`, as npm reads them (keys lower-cased, `_` as `-`: a
 * superset of the spellings npm takes). A key line followed by indented lines is read twice:
 * alone, and with them joined (newer `ini` continues a value so).
 */
export function npmIni(text: string): KeyValue[] {
  const out: KeyValue[] = [];
  const lines = text.split(/[\r\n]+/);
  for (let i = 0; i < lines.length; i += 1) {
    const line = lines[i] ?? '';
    if (line === '' || /^\s*[;#]/.test(line) || /^\s*\[[^\]]*\]\s*$/.test(line)) continue;
    const m = /^([^=]+)(?:=(.*))?$/.exec(line);
    if (m?.[1] === undefined) continue;
    const key = iniUnsafe(m[1]).replace(/\[\]$/, '').toLowerCase().replace(/_/g, '-');
    const raw = m[2] ?? '';
    out.push({ key, value: iniUnsafe(raw) });
    let joined = raw;
    while (i + 1 < lines.length && /^[ \t]+\S/.test(lines[i + 1] ?? '')) {
      i += 1;
      joined += ` ${(lines[i] ?? '').trim()}`;
    }
    if (joined !== raw) out.push({ key, value: iniUnsafe(joined) });
  }
  return out;
}

/**
 * `NODE_OPTIONS` split as Node splits it. `ok` false when Node refuses the value (it then
 * runs nothing); the words are then every word a lenient split finds, quotes dropped.
 */
export function nodeOptionsArgv(value: string): { readonly argv: string[]; readonly ok: boolean } {
  const argv: string[] = [];
  let inString = false;
  let fresh = true;
  for (let i = 0; i < value.length; i += 1) {
    let c = value[i] ?? '';
    if (c === '\\' && inString) {
      if (i + 1 === value.length) return { argv: lenient(value), ok: false };
      c = value[(i += 1)] ?? '';
    } else if (c === ' ' && !inString) {
      fresh = true;
      continue;
    } else if (c === '"') {
      inString = !inString;
      continue;
    }
    if (fresh) argv.push(c);
    else argv.push(`${argv.pop() ?? ''}${c}`);
    fresh = false;
  }
  return inString ? { argv: lenient(value), ok: false } : { argv, ok: true };
}

/** Every word of a value split at any space, quotes and backslashes dropped. */
const lenient = (value: string): string[] =>
  value
    .replace(/["'\\]/g, ' ')
    .split(/\s+/)
    .filter((w) => w !== '');

/** yarn 1's `.yarnrc`: `key value`, each a bare word or a JSON string; `#` comments. */
export function yarnrc(text: string): KeyValue[] {
  const key = String.raw`"(?:[^"\\]|\\.)*"|[^\s"#:=]+`;
  const token = String.raw`"(?:[^"\\]|\\.)*"|[^\s"#]+`;
  const out: KeyValue[] = [];
  for (const line of text.split(/\r?\n/)) {
    // `key value`, and `key: value` or `key=value` as well (fail closed).
    const m = new RegExp(String.raw`^\s*(${key})\s*[:=]?\s*(${token})`).exec(line);
    if (m?.[1] === undefined || m[2] === undefined) continue;
    out.push({ key: jsonWord(m[1]).toLowerCase(), value: jsonWord(m[2]) });
  }
  return out;
}

function jsonWord(w: string): string {
  if (!w.startsWith('"')) return w;
  try {
    const v: unknown = JSON.parse(w);
    return typeof v === 'string' ? v : w.slice(1, -1);
  } catch {
    return w.slice(1, -1);
  }
}

const ANSI_C: Readonly<Record<string, string>> = {
  a: '\u0007',
  b: '\b',
  e: '\u001b',
  E: '\u001b',
  f: '\f',
  n: '\n',
  r: '\r',
  t: '\t',
  v: '\v',
  '\\': '\\',
  "'": "'",
  '"': '"',
  '?': '?',
};

/** bash's `$'...'` body from `i`: its value and where it ends (after the closing quote). */
function ansiC(s: string, i: number): { value: string; end: number } {
  let value = '';
  for (; i < s.length && s[i] !== "'"; i += 1) {
    const c = s[i] ?? '';
    if (c !== '\\') {
      value += c;
      continue;
    }
    const rest = s.slice(i + 1);
    const code =
      /^(?:x([0-9a-fA-F]{1,2})|u([0-9a-fA-F]{1,4})|U([0-9a-fA-F]{1,8})|([0-7]{1,3}))/.exec(rest);
    if (code !== null) {
      const [all, x, u, U, octal] = code;
      const n = Number.parseInt(x ?? u ?? U ?? octal ?? '0', octal === undefined ? 16 : 8);
      value += String.fromCodePoint(Math.min(n, 0x10ffff));
      i += all.length;
    } else {
      value += ANSI_C[rest[0] ?? ''] ?? `\\${rest[0] ?? ''}`;
      i += 1;
    }
  }
  return { value, end: i + 1 };
}

/**
 * A shell command's words as a POSIX shell (and bash) splits them, quotes and escapes taken
 * off: `\x` outside quotes is `x` (a backslash-newline nothing), `'...'` as written, `"..."`
 * with `\` escaping only `$`, `` ` ``, `"`, `\` and a newline, bash's `$'...'` decoded; words
 * end at blanks and at `;`, `&`, `|`, `(`, `)`, `<`, `>`; a `#` starting a word starts a
 * comment. A quote left open: every word a lenient split finds too (the shell refuses it).
 */
export function shellWords(command: string): string[] {
  const words: string[] = [];
  let word: string | undefined;
  let quote: '' | "'" | '"' = '';
  const add = (t: string): void => {
    word = (word ?? '') + t;
  };
  const end = (): void => {
    if (word !== undefined) words.push(word);
    word = undefined;
  };
  for (let i = 0; i < command.length; i += 1) {
    const c = command[i] ?? '';
    if (quote === "'") {
      if (c === "'") quote = '';
      else add(c);
    } else if (quote === '"') {
      if (c === '"') quote = '';
      else if (c === '\\' && '$`"\\\n'.includes(command[i + 1] ?? 'x')) {
        i += 1;
        if (command[i] !== '\n') add(command[i] ?? '');
      } else add(c);
    } else if (c === '\\') {
      i += 1;
      if (i < command.length && command[i] !== '\n') add(command[i] ?? '');
    } else if (c === "'" || c === '"') {
      quote = c;
      add('');
    } else if (c === '$' && command[i + 1] === "'") {
      const { value, end: after } = ansiC(command, i + 2);
      add(value);
      i = after - 1;
    } else if (/[\s;&|()<>]/.test(c)) end();
    else if (c === '#' && word === undefined) {
      const nl = command.indexOf('\n', i);
      i = nl < 0 ? command.length : nl - 1;
    } else add(c);
  }
  end();
  return quote === '' ? words : [...words, ...lenient(command)];
}
