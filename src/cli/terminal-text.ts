// Text from a sandbox, a model or a file, made safe to print on a terminal: the one place
// that decides what may reach a person's terminal raw. A name the sandbox chose (a DNS
// query, a TLS server name, a Host header, a command argument, a tool name), a model's
// answer or a tool call's arguments could otherwise carry escape sequences that retitle the
// window, move the cursor to overwrite "deny" with "allow", redraw an approval prompt, or a
// line feed that starts a fake event line. Every such character is shown as a visible
// escape instead: C0 and C1 controls, DEL, ESC (so no sequence can start), line and
// paragraph separators, lone surrogates, bidi overrides and isolates, private-use and
// unassigned code points, and every other invisible format or default-ignorable character.
// --json output never goes through here: it stays exact.

const CLASS = '\\p{Cc}\\p{Cf}\\p{Zl}\\p{Zp}\\p{Co}\\p{Cn}\\p{Default_Ignorable_Code_Point}';
/** What is never printed raw (a lone surrogate matches \p{Cs} as a unit). */
const UNSAFE = new RegExp(`[${CLASS}]|\\p{Cs}`, 'gu');
/** The same, except the line feed (multi-line text keeps its lines). */
const UNSAFE_BUT_LF = new RegExp(`(?!\\n)(?:[${CLASS}]|\\p{Cs})`, 'gu');
const UNSAFE_ONE = new RegExp(`^(?:[${CLASS}]|\\p{Cs})$`, 'u');

const NAMED: Readonly<Record<string, string>> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/** The visible spelling of one unsafe code point: `\n`, `\x1b`, `\u{202e}`. */
export function visibleEscape(ch: string): string {
  const named = NAMED[ch];
  if (named !== undefined) return named;
  const cp = ch.codePointAt(0) ?? 0;
  return cp < 0x100 ? `\\x${cp.toString(16).padStart(2, '0')}` : `\\u{${cp.toString(16)}}`;
}

/** A single-line field: everything unsafe escaped, line feeds included. */
export function escapeLine(text: string): string {
  return text.replace(UNSAFE, visibleEscape);
}

/** Multi-line text (an agent's final answer): line feeds kept, everything else escaped. */
export function escapeText(text: string): string {
  return text.replace(UNSAFE_BUT_LF, visibleEscape);
}

/** Whether one code point is in the class escapeLine escapes. */
export function isUnsafeCodePoint(cp: number): boolean {
  return UNSAFE_ONE.test(String.fromCodePoint(cp));
}

/** JSON's own spelling of a character (`\u202e`, a surrogate pair beyond the BMP). */
function jsonEscape(ch: string): string {
  let out = '';
  for (let i = 0; i < ch.length; i += 1)
    out += `\\u${ch.charCodeAt(i).toString(16).padStart(4, '0')}`;
  return out;
}

/**
 * A value (tool arguments) as indented JSON a person can read on a terminal: JSON's own
 * escapes for quotes, backslashes and C0, and JSON `\u` escapes for what JSON leaves raw
 * (DEL, C1, bidi, separators), so the text is still the JSON of the same value; JSON's own
 * line breaks between members stay.
 */
export function terminalJson(value: unknown): string {
  return JSON.stringify(value ?? null, null, 2).replace(UNSAFE_BUT_LF, jsonEscape);
}

/**
 * A line of JSON (an event record, one line, no indentation) for a terminal: what JSON
 * leaves raw (DEL, C1, bidi, separators) as JSON `\u` escapes. Such characters can only
 * stand inside strings of compact JSON, so the line is still the JSON of the same value.
 */
export function terminalJsonLine(line: string): string {
  return line.replace(UNSAFE_BUT_LF, jsonEscape);
}
