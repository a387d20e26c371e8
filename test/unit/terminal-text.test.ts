// What the approval prompt prints of the model's arguments cannot act on the terminal:
// every control, format and separator character comes out as a visible escape (pure logic;
// the prompt on a real pseudo-terminal is in integration/agent-tty.test.ts).
import { describe, expect, it } from 'vitest';
import { terminalJson, terminalSafe } from '../../src/cli/terminal-text.js';

/** Anything a terminal could act on, or a person could not see. */
const ACTIVE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Co}\p{Cn}]|\p{Cs}/u;

const HOSTILE: Record<string, string> = {
  'ESC clear screen': '\u001b[2J\u001b[H',
  'OSC title / hyperlink': '\u001b]0;owned\u0007\u001b]8;;http://x.test\u001b\\',
  'C1 CSI (one byte)': '\u009b31m',
  'C1 OSC and ST': '\u009d0;t\u009c',
  'carriage return overwrite': 'rm -rf /\rls',
  backspace: 'rm -rf /work\b\b\b\bhome',
  DEL: 'a\u007fb',
  BEL: '\u0007',
  'device status query (answerback)': '\u001b[6n\u001b[c\u0005',
  'RTL override': 'txt.\u202eexe',
  'bidi isolates': '\u2066a\u2069\u2067b\u2068',
  'zero width': 'r\u200bm \u200d\u2060\ufeff',
  'line and paragraph separators': 'a\u2028b\u2029c',
  'soft hyphen and tags': 'a\u00adb\u{e0041}',
  'private use': '\ue000\u{f0000}',
  'lone surrogates': '\ud800x\udfff',
  'unassigned code point': '\u0378',
};

describe('terminalSafe', () => {
  for (const [name, text] of Object.entries(HOSTILE)) {
    it(`shows ${name} as visible escapes`, () => {
      const shown = terminalSafe(`before ${text} after`);
      expect(shown).not.toMatch(ACTIVE);
      expect(shown.startsWith('before ')).toBe(true);
      expect(shown.endsWith(' after')).toBe(true);
    });
  }

  it('writes escapes a reader can tell from the same text typed literally', () => {
    expect(terminalSafe('\u001b')).toBe('\\u001b');
    expect(terminalSafe('\\u001b')).toBe('\\\\u001b');
    expect(terminalSafe('\u202e')).toBe('\\u202e');
    expect(terminalSafe('\u{f0000}')).toBe('\\udb80\\udc00');
  });

  it('leaves ordinary text alone, other scripts and emoji included', () => {
    const plain = 'rm -f gone.txt — Überprüfung 検査 🙂 "quoted"';
    expect(terminalSafe(plain)).toBe(plain);
  });
});

describe('terminalJson', () => {
  it('is the JSON of the same value, with nothing active left in it', () => {
    const value = { command: Object.values(HOSTILE), nested: { k: HOSTILE['RTL override'] } };
    const shown = terminalJson(value);
    // Line breaks between members are JSON's own; none comes from a string.
    expect(shown.replace(/\n/g, '')).not.toMatch(ACTIVE);
    expect(JSON.parse(shown)).toEqual(value);
  });

  it('keeps a string line break escaped, so an argument cannot start a line of its own', () => {
    const shown = terminalJson({ a: 'x\n  digest: sha256:forged' });
    expect(shown.split('\n')).toEqual(['{', '  "a": "x\\n  digest: sha256:forged"', '}']);
  });
});
