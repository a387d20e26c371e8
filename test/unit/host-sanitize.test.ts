// The host-tool channel's boundaries that are pure logic (AH-TOOL-7/8/10): credentials
// scrubbed in every spelling a program commonly prints them in, and a value an opaque
// reference stands for never shown in clear (references themselves: host-refs.test.ts).
import { describe, expect, it } from 'vitest';
import { Scrubber, spellingsOf } from '../../src/tools/host/scrub.js';
import { Sanitizer } from '../../src/tools/host/host-results.js';
import { OpaqueReferences } from '../../src/tools/host/opaque-refs.js';

const SECRET = 'tok_Q7v/+z9Kp2mW!x';

function wrap(text: string, columns: number, eol: string): string {
  return (text.match(new RegExp(`.{1,${columns}}`, 'g')) ?? []).join(eol);
}

/** Every way the tests encode a credential, each at several positions in a longer text. */
function encodings(secret: string): Record<string, string> {
  const bytes = Buffer.from(secret);
  return {
    raw: secret,
    json: JSON.stringify(secret).slice(1, -1),
    percent: encodeURIComponent(secret),
    percentLower: encodeURIComponent(secret).replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase()),
    hex: bytes.toString('hex'),
    HEX: bytes.toString('hex').toUpperCase(),
    base64: bytes.toString('base64'),
    base64url: bytes.toString('base64url'),
    // Inside a longer base64 text, at each alignment.
    base64at1: Buffer.concat([Buffer.from('a'), bytes, Buffer.from('tail')]).toString('base64'),
    base64at2: Buffer.concat([Buffer.from('ab'), bytes, Buffer.from('tail')]).toString('base64'),
    base64at3: Buffer.concat([Buffer.from('abc'), bytes, Buffer.from('t')]).toString('base64'),
    authHeader: `Authorization: Basic ${Buffer.from(`user:${secret}`).toString('base64')}`,
    // Wrapped as the base64 tool (76 columns), PEM (64) and MIME (76, CRLF) wrap it, in a
    // blob long enough to wrap inside the credential.
    base64wrapped76: wrap(Buffer.concat([Buffer.alloc(70, 1), bytes]).toString('base64'), 76, '\n'),
    base64wrapped64: wrap(Buffer.concat([Buffer.alloc(40, 2), bytes]).toString('base64'), 64, '\n'),
    base64mime: wrap(Buffer.concat([Buffer.alloc(50, 3), bytes]).toString('base64'), 76, '\r\n'),
    goJson: JSON.stringify(secret).slice(1, -1).replace(/\//g, '\\/'),
    everyUnit: Array.from(secret)
      .map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
      .join(''),
    EVERYUNIT: Array.from(secret)
      .map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0').toUpperCase()}`)
      .join(''),
    percentMixed: [...bytes]
      .map((b) => `%${b.toString(16).padStart(2, '0')}`)
      .map((x, i) => (i % 2 === 0 ? x.toUpperCase() : x))
      .join(''),
    pythonQuote: encodeURIComponent(secret).replace(/%2F/g, '/'),
    hexMixed: Array.from(bytes.toString('hex'))
      .map((c, i) => (i % 3 === 0 ? c.toUpperCase() : c))
      .join(''),
  };
}

/**
 * Whether any recognisable spelling of the secret survived in `text`, also once line breaks
 * are taken out (wrapped encodings) and JSON escapes decoded (`\\uXXXX`, `\\/`).
 */
function leaks(text: string, secret: string): string[] {
  const unwrapped = text.replace(/\r?\n/g, '');
  const unescaped = unwrapped
    .replace(/\\u([0-9a-fA-F]{4})/g, (_m, h: string) => String.fromCharCode(parseInt(h, 16)))
    .replace(/\\\//g, '/');
  return [...new Set([text, unwrapped, unescaped].flatMap((t) => leaksAsIs(t, secret)))];
}

function leaksAsIs(text: string, secret: string): string[] {
  const bytes = Buffer.from(secret);
  const found: string[] = [];
  if (text.includes(secret)) found.push('raw');
  if (text.toLowerCase().includes(bytes.toString('hex'))) found.push('hex');
  try {
    if (!text.includes(secret) && decodeURIComponent(text).includes(secret)) found.push('percent');
  } catch {
    // not decodable: no percent-encoded leak to find
  }
  // Decode every base64-looking run at each offset and look for the secret in it.
  for (const run of text.match(/[A-Za-z0-9+/_-]{12,}={0,2}/g) ?? []) {
    for (let i = 0; i < 4; i += 1) {
      const decoded = Buffer.from(run.slice(i).replace(/-/g, '+').replace(/_/g, '/'), 'base64');
      if (decoded.includes(bytes)) found.push(`base64:${run}`);
      // The middle of the secret (a third of it) is enough to count as a leak.
      if (decoded.includes(bytes.subarray(5, 12))) found.push(`base64-part:${run}`);
    }
  }
  return found;
}

describe('credential scrubbing', () => {
  const scrubber = new Scrubber([{ name: 'API_TOKEN', value: SECRET }]);

  for (const [name, encoded] of Object.entries(encodings(SECRET))) {
    it(`removes the ${name} spelling from text and from bytes`, () => {
      const text = `before ${encoded} after`;
      expect(leaks(text, SECRET).length, 'the test itself must see the leak').toBeGreaterThan(0);
      const scrubbed = scrubber.text(text);
      expect(leaks(scrubbed, SECRET)).toEqual([]);
      expect(scrubbed).toContain('[redacted:API_TOKEN]');
      const bytes = scrubber.bytes(Buffer.from(text));
      expect(leaks(bytes.toString('latin1'), SECRET)).toEqual([]);
    });
  }

  it('a cut never leaves part of a credential: scrubbed whole before the cap cuts it', () => {
    const s = new Sanitizer(scrubber, new OpaqueReferences(), 'gh', { fields: [], patterns: [] });
    const cap = 100;
    // Whatever the padding before it (the model can choose it), the credential is never
    // cut before it is scrubbed: read as exec-channel reads, up to cap + margin bytes.
    for (let pad = cap - SECRET.length - 2; pad <= cap + 2; pad += 1) {
      const produced = Buffer.from(`${'x'.repeat(pad)}${SECRET}\n${'y'.repeat(500)}`);
      const read = produced.subarray(0, cap + s.margin);
      const { bytes, cut } = s.scrubThenCut(read, cap, read.length < produced.length);
      expect(cut).toBe(true);
      expect(bytes.length).toBeLessThanOrEqual(cap);
      const text = bytes.toString('latin1');
      // No 8-character piece of the credential survives at the end.
      for (let i = 0; i + 8 <= SECRET.length; i += 1)
        expect(text.includes(SECRET.slice(i, i + 8)), `pad ${pad}`).toBe(false);
    }
  });

  it('scrubs every string of a JSON value, keys included', () => {
    const value = { [SECRET]: [SECRET, { deep: `x${Buffer.from(SECRET).toString('hex')}` }], n: 1 };
    expect(JSON.stringify(scrubber.value(value))).not.toContain(SECRET);
    expect(leaks(JSON.stringify(scrubber.value(value)), SECRET)).toEqual([]);
  });

  it('leaves text without a credential as it is, and an empty scrubber changes nothing', () => {
    expect(scrubber.text('nothing secret here')).toBe('nothing secret here');
    expect(new Scrubber([]).text(SECRET)).toBe(SECRET);
    expect(new Scrubber([]).empty).toBe(true);
  });

  it('never yields a spelling shorter than the minimum (no scrubbing of ordinary words)', () => {
    for (const s of spellingsOf('abcdefgh')) expect(s.length).toBeGreaterThanOrEqual(8);
  });
});

describe('class: a cut, a case fold or a split leaves part of a credential', () => {
  const s = new Scrubber([{ name: 'TOKEN', value: SECRET }]);

  it('a cut at any offset across a credential leaves no start of it, read cut or not', () => {
    const filler = 'x'.repeat(40);
    for (let at = 1; at < SECRET.length; at += 1) {
      // The cap falls `at` characters into the credential; the whole of it was read.
      const whole = Buffer.from(`${filler}${SECRET} tail`);
      const cut = s.cutBytes(whole, filler.length + at, false).toString('latin1');
      expect(cut.startsWith(filler)).toBe(true);
      expect('[redacted:TOKEN] tail'.startsWith(cut.slice(filler.length)), cut).toBe(true);
      // Reading itself stopped `at` characters into it (no margin left): nothing of it kept
      // (removed, or redacted as a fragment once it is half of it).
      const read = Buffer.from(`${filler}${SECRET.slice(0, at)}`);
      expect([filler, `${filler}[redacted:TOKEN]`]).toContain(
        s.cutBytes(read, 1000, true).toString('latin1'),
      );
    }
  });

  it('any case, and each half of a credential split in two, is redacted', () => {
    expect(s.text(`a ${SECRET.toUpperCase()} b`)).toBe('a [redacted:TOKEN] b');
    const half = Math.floor(SECRET.length / 2);
    const split = `one "${SECRET.slice(0, half)}" | other "${SECRET.slice(half)}"`;
    expect(s.text(split)).toBe('one "[redacted:TOKEN]" | other "[redacted:TOKEN]"');
    // A short, ordinary overlap is not: less than half of it.
    expect(s.text('tok_Q7 is fine')).toBe('tok_Q7 is fine');
  });

  it('of a long credential, half of it from any offset is redacted whole, less than half is not', () => {
    // Seeds are taken every `half - 7` bytes of it: a half from any offset holds one.
    const long = 'Zq8w' + 'N3v!kR7p-Xt2yB6m'.repeat(6) + 'Lh5j';
    const l = new Scrubber([{ name: 'KEY', value: long }]);
    const half = long.length / 2;
    for (let j = 0; j + half <= long.length; j += 1) {
      const piece = long.slice(j, j + half);
      expect(l.text(`<${piece}>`), `from ${j}`).toBe('<[redacted:KEY]>');
      expect(l.text(`<${piece.slice(1)}>`), `from ${j + 1}`).toBe(`<${piece.slice(1)}>`);
    }
  });

  it('a value a reference stands for, echoed in any spelling, becomes its handle', () => {
    const refs = new OpaqueReferences();
    const ref = refs.referenceFor('crm', 'crm', 'CRM-12345');
    const v = Buffer.from('CRM-12345');
    for (const echoed of [
      '_CRM-12345_',
      'crm-12345',
      JSON.stringify({ id: 'CRM-12345' }),
      [...v].map((b) => `%${b.toString(16).toUpperCase()}`).join(''),
      v.toString('base64'),
      v.toString('hex'),
    ]) {
      const out = refs.handlesFor(echoed);
      expect(out, echoed).toContain(ref);
      expect(out.toLowerCase(), echoed).not.toContain('crm-12345');
    }
  });
});

/**
 * What a reader recovers from `text` by undoing one presentation at a time, independently
 * of the scrubber's own view: line breaks (raw, escaped at any depth) with their blanks,
 * UTF-16's zero bytes, `\x`/`\u`/HTML/percent escapes, quoted-printable, joined strings.
 */
function readings(text: string): string[] {
  const hex = (h: string): string => String.fromCharCode(parseInt(h, 16));
  const steps = [
    (t: string) => t.replace(/[ \t]*(?:\\+[rn]|\r|\n)[ \t]*/g, ''),
    (t: string) => t.replace(/\\+u0000|\0|\\+x00/g, ''),
    (t: string) =>
      t
        .replace(/\\+x([0-9a-fA-F]{2})/g, (_m, h: string) => hex(h))
        .replace(/\\+u([0-9a-fA-F]{4})/g, (_m, h: string) => hex(h))
        .replace(/&#x([0-9a-fA-F]+);/g, (_m, h: string) => hex(h))
        .replace(/&#([0-9]+);/g, (_m, d: string) => String.fromCharCode(parseInt(d, 10)))
        .replace(/&amp;/g, '&')
        .replace(/\\+([/"\\])/g, '$1'),
    (t: string) => t.replace(/=\r?\n/g, '').replace(/=3D/gi, '='),
    (t: string) => t.replace(/\\*["']\s*[,+]?\s*\\*["']/g, ''),
  ];
  // Each alone, and all of them one after another (an escaped UTF-16 text: both).
  const all = [steps[2], steps[1], steps[0], steps[3], steps[4]].reduce(
    (t, step) => (step === undefined ? t : step(t)),
    text,
  );
  return [text, ...steps.map((step) => step(text)), all];
}

function leaksRead(text: string, secret: string): string[] {
  return [...new Set(readings(text).flatMap((t) => leaks(t, secret)))];
}

describe('class: a spelling wrapped, escaped, widened or split around its characters', () => {
  const s = new Scrubber([{ name: 'TOKEN', value: SECRET }]);
  const bytes = Buffer.from(SECRET);
  // 40 bytes before it: its base64 (columns 53 to 77) crosses a wrap at 60, 30, 16 or 12.
  const blob = Buffer.concat([Buffer.alloc(40, 7), bytes, Buffer.from(' tail of the file')]);
  const b64 = blob.toString('base64');
  const utf16 = Buffer.from(`token=${SECRET}\n`, 'utf16le');

  const cases: Record<string, string> = {
    // Line breaks between the characters, as a program prints an encoding.
    'base64 wrapped by a JSON-escaped \\n (GitHub contents API)': JSON.stringify({
      content: wrap(b64, 60, '\n'),
    }),
    'base64 indented as a YAML block': `data: |\n  ${wrap(b64, 16, '\n  ')}\n`,
    'base64 wrapped by an escaped CRLF, twice escaped (JSON in JSON)': JSON.stringify(
      JSON.stringify({ content: wrap(b64, 12, '\r\n') }),
    ),
    'hex wrapped by a tab-indented line break': wrap(bytes.toString('hex'), 8, '\n\t\t'),
    // UTF-16, its zero bytes between the characters.
    'UTF-16LE': utf16.toString('latin1'),
    'UTF-16BE with a BOM': Buffer.concat([
      Buffer.from([0xfe, 0xff]),
      Buffer.from(utf16).swap16(),
    ]).toString('latin1'),
    'UTF-16LE with a BOM, JSON-escaped': JSON.stringify({
      t: Buffer.concat([Buffer.from([0xff, 0xfe]), utf16]).toString('latin1'),
    }),
    // Windows PowerShell's Out-File writes UTF-16LE: an encoding in it is widened too.
    'base64 in UTF-16LE, wrapped (PowerShell)': Buffer.from(
      `${wrap(b64, 30, '\r\n')}\r\n`,
      'utf16le',
    ).toString('latin1'),
    'UTF-16LE hex-escaped (a bytes repr)': [...utf16]
      .map((b) => `\\x${b.toString(16).padStart(2, '0')}`)
      .join(''),
    // Escapes no enumeration lists: one encoder's set, or a mix.
    '.NET JSON (`+` as \\u002B), the rest as is': SECRET.replace(/\+/g, '\\u002B'),
    '\\x escapes (a Python bytes repr)': `b'${[...bytes].map((b) => `\\x${b.toString(16)}`).join('')}'`,
    'HTML character references, mixed': Array.from(SECRET, (c, i) =>
      i % 2 === 0 ? `&#x${c.charCodeAt(0).toString(16)};` : `&#${c.charCodeAt(0)};`,
    ).join(''),
    'percent-encoding of some characters only': SECRET.replace(
      /[Q/K!]/g,
      (c) => `%${c.charCodeAt(0).toString(16)}`,
    ),
    'quoted-printable, soft-wrapped every 5': wrap(SECRET, 5, '=\r\n'),
    // One value split across strings finer than in halves.
    'split across three JSON strings': JSON.stringify([
      SECRET.slice(0, 5),
      SECRET.slice(5, 11),
      SECRET.slice(11),
    ]),
    'split across concatenated literals': `'${SECRET.slice(0, 6)}' +\n    '${SECRET.slice(6, 12)}' + '${SECRET.slice(12)}'`,
  };

  for (const [name, spelled] of Object.entries(cases)) {
    it(`removes ${name}, all of it, from text and bytes`, () => {
      const text = `before ${spelled} after`;
      expect(leaksRead(text, SECRET).length, 'the test itself must see the leak').toBeGreaterThan(
        0,
      );
      const out = s.bytes(Buffer.from(text, 'latin1')).toString('latin1');
      expect(leaksRead(out, SECRET)).toEqual([]);
      expect(out).toContain('[redacted:TOKEN]');
      expect(out.startsWith('before ') && out.endsWith(' after')).toBe(true);
      if (/^\p{ASCII}*$/u.test(text)) expect(leaksRead(s.text(text), SECRET)).toEqual([]);
    });
  }

  it('a wrapped spelling is redacted whole: no line of it is left', () => {
    const spelled = `x: |\n  ${wrap(bytes.toString('base64'), 4, '\n  ')}\n`;
    expect(s.text(spelled)).toBe('x: |\n  [redacted:TOKEN]\n');
  });

  it('a spelling right after a backslash is redacted whole (the plain text is matched too)', () => {
    // `\t` would read as a tab in the view, eating the credential's first character.
    const whole = new Scrubber([{ name: 'KEY', value: SECRET, fragments: false }]);
    for (const dir of ['C:\\keys\\', 'C:\\\\keys\\\\']) {
      expect(s.text(`${dir}${SECRET}`)).toBe(`${dir}[redacted:TOKEN]`);
      expect(whole.text(`${dir}${SECRET}`)).toBe(`${dir}[redacted:KEY]`);
    }
  });

  it('a credential with characters outside ASCII: in UTF-16, in another case, and cut', () => {
    const value = 'pässwörd-Ωμέγα-1Ǆ';
    const wide = new Scrubber([{ name: 'PW', value }]);
    const le = Buffer.from(`x ${value} y`, 'utf16le');
    for (const b of [le, Buffer.from(le).swap16()]) {
      const out = wide.bytes(b);
      expect(
        out.includes(Buffer.from('ss', 'utf16le')) || out.includes(Buffer.from('\0s\0s')),
      ).toBe(false);
    }
    expect(wide.text(`a ${value.toUpperCase()} b`)).toBe('a [redacted:PW] b');
    // A cut that leaves the start of it removes that start, in whole characters.
    expect(wide.cutText(`é ${value.slice(0, 5)} and more`, 7)).toBe('é ');
  });

  it('a cut through a wrapped or widened spelling leaves no start of it', () => {
    const wrapped = `data: ${wrap(bytes.toString('base64'), 3, '\\n  ')} end`;
    const wide = `id=${Buffer.from(SECRET, 'utf16le').toString('latin1')} end`;
    for (const spelled of [wrapped, wide]) {
      const start = spelled.indexOf(' ') + 1;
      for (let at = start + 1; at < spelled.length - 4; at += 1) {
        const head = spelled.slice(0, at);
        const cut = s.cutBytes(Buffer.from(head, 'latin1'), 1000, true).toString('latin1');
        const rest = readings(cut.slice(start)).map((t) => t.replace(/\\n|\s/g, ''));
        // Nothing of the spelling's start is kept (a character or two of the next, at most).
        for (const r of rest)
          for (const prefix of [bytes.toString('base64').slice(0, 4), SECRET.slice(0, 2)])
            expect(r.includes(prefix), `cut at ${at}: ${JSON.stringify(cut)}`).toBe(false);
      }
    }
  });
});

describe('class: a credential in structured data, as a number or split across values', () => {
  const DIGITS = '482915730012347';
  const n = Number(DIGITS);
  const s = new Scrubber([{ name: 'PIN', value: DIGITS }]);
  const shown = (v: unknown): string => JSON.stringify(s.value(v));

  it('a number equal to a digit credential, anywhere in a schema, is redacted', () => {
    const schema = {
      type: 'object',
      properties: {
        account: { type: 'integer', enum: [1, n], default: n, maximum: n, const: n },
        nested: { type: 'array', items: { enum: [[n], { deep: [n] }] }, examples: [n, 2] },
      },
    };
    expect(JSON.stringify(schema)).toContain(DIGITS);
    const out = shown(schema);
    expect(out).not.toContain(DIGITS);
    expect(out.match(/\[redacted:PIN\]/g)?.length).toBe(7);
    // What is not the credential is kept as it was, numbers as numbers.
    expect(out).toContain('"enum":[1,"[redacted:PIN]"]');
    expect(out).toContain('"examples":["[redacted:PIN]",2]');
  });

  it('a number whose digits contain the credential, or half of it, is redacted', () => {
    expect(shown({ a: Number(`1${DIGITS}`) })).toBe('{"a":"1[redacted:PIN]"}');
    expect(shown({ a: Number(DIGITS.slice(0, 9)) })).toBe('{"a":"[redacted:PIN]"}');
    // A number past 2^53 written in exponent form keeps the credential's digits.
    expect(shown({ a: Number(`${DIGITS}${DIGITS}`) })).not.toMatch(/48291573/);
    expect(shown({ a: 12345, b: 1.5, c: -7 })).toBe('{"a":12345,"b":1.5,"c":-7}');
  });

  it('a string is redacted where the credential stood, whatever JSON escapes before and after', () => {
    const secret = new Scrubber([{ name: 'TOKEN', value: SECRET }]);
    const around = (x: string): string => `"q"\n\t\u0001\ud800 😀 ${x} \\ "end"\u001f`;
    const out = secret.value({ [around(SECRET)]: [around(SECRET)], n: 1 });
    expect(out).toEqual({ [around('[redacted:TOKEN]')]: [around('[redacted:TOKEN]')], n: 1 });
  });

  it('a credential split across the strings of an array, or in halves across two fields, is redacted', () => {
    const secret = new Scrubber([{ name: 'TOKEN', value: SECRET }]);
    // Three pieces, each shorter than half of it: found only as the array is written.
    const parts = [SECRET.slice(0, 6), SECRET.slice(6, 12), SECRET.slice(12)];
    const listed = JSON.stringify(secret.value({ enum: parts, digits: [Number(DIGITS)] }));
    for (const p of parts) expect(listed).not.toContain(p);
    const half = SECRET.length / 2;
    const fields = JSON.stringify(
      secret.value({ a: SECRET.slice(0, half), b: SECRET.slice(half) }),
    );
    expect(fields).toBe('{"a":"[redacted:TOKEN]","b":"[redacted:TOKEN]"}');
    expect(JSON.stringify(secret.value({ enum: ['fine', 'also fine'], n: 3 }))).toBe(
      '{"enum":["fine","also fine"],"n":3}',
    );
  });
});
