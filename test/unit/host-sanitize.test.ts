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
