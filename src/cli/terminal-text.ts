// Text from a sandbox, a model or a file, made safe to print on a terminal. A name the
// sandbox chose (a DNS query, a TLS server name, a Host header, a command argument, a tool
// name) or a model's answer could otherwise carry escape sequences that retitle the window,
// move the cursor to overwrite "deny" with "allow", or a line feed that starts a fake event
// line or a fake "chain intact". Every such character is shown as a visible escape instead:
// C0 and C1 controls, DEL, ESC (so no sequence can start), line and paragraph separators,
// lone surrogates, bidi overrides and isolates and every other invisible format or
// default-ignorable character. --json output never goes through here: it stays exact.

/** What is never printed raw. */
const UNSAFE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}\p{Default_Ignorable_Code_Point}]/gu;
/** The same, except the line feed (multi-line text keeps its lines). */
const UNSAFE_BUT_LF = /(?![\n])[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}\p{Default_Ignorable_Code_Point}]/gu;

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

const UNSAFE_ONE = /^[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}\p{Default_Ignorable_Code_Point}]$/u;

/** Whether one code point is in the class escapeLine escapes. */
export function isUnsafeCodePoint(cp: number): boolean {
  return UNSAFE_ONE.test(String.fromCodePoint(cp));
}
