// Text for a person's terminal that came from the model (a tool call's arguments): nothing
// in it may act on the terminal. Control characters (C0, DEL, C1: escape sequences, CSI,
// OSC, a carriage return that would overwrite the line), format characters (bidi overrides
// and isolates, zero-width characters), line and paragraph separators, private-use,
// unassigned and lone surrogate code units are all shown as visible `\uXXXX` escapes, and a
// backslash as `\\`, so an escape in the output cannot be mistaken for one in the input.
// Without this a model could redraw the approval prompt, hide part of a command, reorder
// what is shown (U+202E), or make the terminal answer a query into the prompt's input.

const INVISIBLE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Co}\p{Cn}]|\p{Cs}/gu;
/** The same, but JSON's own line breaks between members (inside strings it writes `\n`). */
const INVISIBLE_IN_JSON = /(?!\n)(?:[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Co}\p{Cn}]|\p{Cs})/gu;

function escapeUnit(ch: string): string {
  let out = '';
  for (let i = 0; i < ch.length; i += 1)
    out += `\\u${ch.charCodeAt(i).toString(16).padStart(4, '0')}`;
  return out;
}

/** `text` with every character that could act on a terminal written as a visible escape. */
export function terminalSafe(text: string): string {
  return text.replace(/\\/g, '\\\\').replace(INVISIBLE, escapeUnit);
}

/**
 * A value (tool arguments) as indented JSON a person can read on a terminal: JSON's own
 * escapes for quotes, backslashes and C0, and `terminalSafe` for everything JSON leaves raw
 * (DEL, C1, bidi, separators). The result is still the JSON of the same value.
 */
export function terminalJson(value: unknown): string {
  const json = JSON.stringify(value ?? null, null, 2);
  // JSON has already escaped every backslash: only the characters it leaves raw remain.
  return json.replace(INVISIBLE_IN_JSON, escapeUnit);
}
