// HTTP/1.x request framing for the gateway's plain-HTTP relay. The gateway
// decides a connection on its first request's Host; without framing, a second pipelined
// request (or a duplicate Host, or an absolute-form target) would reach the allowed
// upstream naming any host: domain fronting on one connection. So every request on the
// connection is framed here, as an upstream would frame it, and must state the same host.
//
// Strict on purpose: whatever two parsers could read differently is refused rather than
// guessed (Content-Length with Transfer-Encoding, a coding other than plain `chunked`, two
// Content-Lengths, obs-fold, a bare LF, a method not in upper case). A request carrying
// Upgrade may switch the connection to opaque bytes, only as the first request and only once
// the upstream answers 101: until then the client's further bytes are held, and a refused
// switch resumes framing. An upgrade to h2c is refused: HTTP/2 would carry requests naming
// any host, unframed. CONNECT is refused: cfh configures no proxy, so a CONNECT on a
// transparent connection asks the upstream to be one, and an upstream that answers 2xx to
// anything (a catch-all handler) would take the next requests unframed, naming any host.
//
// Untrusted input; pure (bytes in, bytes to forward and a verdict out).
import { splitHostPort } from './client-hello.js';
import { foldName } from './destination.js';

export interface FramingRefusal {
  readonly reason: 'bad-request' | 'conflicting-host';
  /** The host the refused request stated, when it stated one. */
  readonly name?: string | undefined;
  readonly detail: string;
}

export interface Fed {
  /** Bytes that may go upstream, in order. */
  readonly forward: readonly Buffer[];
  /** Set when the stream stopped: nothing after it is forwarded. */
  readonly refusal?: FramingRefusal | undefined;
}

export const MAX_REQUEST_HEAD_BYTES = 16 * 1024;
const MAX_LINE_BYTES = 4096;
const MAX_HELD_BYTES = 64 * 1024;
const MAX_STATUS_LINE_BYTES = 1024;

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const HEADER = /^([!#$%&'*+\-.^_`|~0-9A-Za-z]+):(.*)$/;
const REQUEST_LINE = /^([A-Z][A-Z-]{0,19}) (\S+) HTTP\/1\.([01])$/;
const ABSOLUTE = /^https?:\/\/([^/?#@\s]+)(?:[/?#]\S*)?$/i;
const HOST_NAME = /^[a-z0-9_.-]+$/;
const CRLF = Buffer.from('\r\n');

type State =
  | { readonly kind: 'head' }
  | { readonly kind: 'body'; left: number }
  | { readonly kind: 'chunk-size' }
  | { readonly kind: 'chunk-data'; left: number }
  | { readonly kind: 'chunk-end' }
  | { readonly kind: 'trailers'; bytes: number }
  | { readonly kind: 'switching'; readonly accept: 'upgrade' }
  | { readonly kind: 'opaque' }
  | { readonly kind: 'refused' };

type Switch = 'upgrade' | undefined;

export class RequestFraming {
  #state: State = { kind: 'head' };
  /** An incomplete head or line, or the bytes held while a switch is pending. */
  #pending: Buffer = Buffer.alloc(0);
  #status: Buffer = Buffer.alloc(0);
  #requests = 0;
  #host: string | undefined;
  #switchAfter: Switch;

  /** Requests whose head has passed, the first included. */
  get requests(): number {
    return this.#requests;
  }

  /** The host the first request stated (lower case), which every later one must state. */
  get host(): string | undefined {
    return this.#host;
  }

  /** The first request asks to switch protocols and the upstream has not answered yet. */
  get switchPending(): boolean {
    return this.#state.kind === 'switching' || this.#switchAfter !== undefined;
  }

  /** Feeds client bytes. */
  push(chunk: Buffer): Fed {
    const forward: Buffer[] = [];
    let data = this.#pending.length > 0 ? Buffer.concat([this.#pending, chunk]) : chunk;
    this.#pending = Buffer.alloc(0);
    while (data.length > 0) {
      const state = this.#state;
      switch (state.kind) {
        case 'head': {
          if (!methodSoFar(data))
            return this.#refuse(forward, 'bad-request', 'not an HTTP/1.x request line');
          const bare = bareLf(data);
          const end = data.indexOf('\r\n\r\n');
          if (bare >= 0 && (end < 0 || bare < end))
            return this.#refuse(forward, 'bad-request', 'a bare LF in a request head');
          if (end < 0) {
            if (data.length > MAX_REQUEST_HEAD_BYTES)
              return this.#refuse(forward, 'bad-request', 'a request head over 16 KiB');
            this.#pending = data;
            return { forward };
          }
          const refusal = this.#head(data.toString('latin1', 0, end));
          if (refusal !== undefined) return this.#refuse(forward, refusal);
          forward.push(data.subarray(0, end + 4));
          data = data.subarray(end + 4);
          break;
        }
        case 'body':
        case 'chunk-data': {
          const n = Math.min(state.left, data.length);
          forward.push(data.subarray(0, n));
          data = data.subarray(n);
          state.left -= n;
          if (state.left === 0) {
            if (state.kind === 'body') this.#messageDone();
            else this.#state = { kind: 'chunk-end' };
          }
          break;
        }
        case 'chunk-end': {
          if (data.length < 2) {
            if (data[0] !== 0x0d)
              return this.#refuse(forward, 'bad-request', 'chunk data not ended by CRLF');
            this.#pending = data;
            return { forward };
          }
          if (!data.subarray(0, 2).equals(CRLF))
            return this.#refuse(forward, 'bad-request', 'chunk data not ended by CRLF');
          forward.push(data.subarray(0, 2));
          data = data.subarray(2);
          this.#state = { kind: 'chunk-size' };
          break;
        }
        case 'chunk-size':
        case 'trailers': {
          const line = readLine(data);
          if (line === 'bare-lf')
            return this.#refuse(forward, 'bad-request', 'a bare LF in chunked framing');
          if (line === undefined) {
            if (data.length > MAX_LINE_BYTES)
              return this.#refuse(forward, 'bad-request', 'a chunk line over 4 KiB');
            this.#pending = data;
            return { forward };
          }
          const text = data.toString('latin1', 0, line);
          if (state.kind === 'chunk-size') {
            const size = /^([0-9A-Fa-f]{1,15})(?:;.*)?$/.exec(text)?.[1];
            if (size === undefined || hasControl(text))
              return this.#refuse(forward, 'bad-request', 'an invalid chunk size');
            const n = parseInt(size, 16);
            this.#state =
              n === 0 ? { kind: 'trailers', bytes: 0 } : { kind: 'chunk-data', left: n };
          } else if (text === '') {
            this.#messageDone();
          } else {
            state.bytes += line + 2;
            if (state.bytes > MAX_REQUEST_HEAD_BYTES)
              return this.#refuse(forward, 'bad-request', 'trailers over 16 KiB');
            const header = checkHeaderLine(text);
            if (header === undefined) return this.#refuse(forward, 'bad-request', 'a bad trailer');
          }
          forward.push(data.subarray(0, line + 2));
          data = data.subarray(line + 2);
          break;
        }
        case 'switching': {
          this.#pending = Buffer.concat([this.#pending, data]);
          if (this.#pending.length > MAX_HELD_BYTES)
            return this.#refuse(forward, 'bad-request', 'too much sent before the switch');
          return { forward };
        }
        case 'opaque':
          forward.push(data);
          return { forward };
        case 'refused':
          return { forward };
      }
    }
    return { forward };
  }

  /**
   * The upstream's bytes while a switch is pending (only its status line is read): 101 to
   * the Upgrade makes the connection opaque and releases what was held; any other answer
   * keeps it HTTP and frames the held bytes.
   */
  upstream(chunk: Buffer): Fed {
    const state = this.#state;
    if (state.kind !== 'switching') return { forward: [] };
    this.#status = Buffer.concat([this.#status, chunk]);
    const eol = this.#status.indexOf('\r\n');
    if (eol < 0 && this.#status.length < MAX_STATUS_LINE_BYTES) return { forward: [] };
    const code = Number(
      /^HTTP\/1\.[01] (\d{3})/.exec(this.#status.toString('latin1', 0, Math.max(eol, 0)))?.[1],
    );
    this.#status = Buffer.alloc(0);
    const held = this.#pending;
    this.#pending = Buffer.alloc(0);
    if (code === 101) {
      this.#state = { kind: 'opaque' };
      return { forward: held.length > 0 ? [held] : [] };
    }
    this.#state = { kind: 'head' };
    return held.length > 0 ? this.push(held) : { forward: [] };
  }

  #refuse(forward: Buffer[], refusal: FramingRefusal | FramingRefusal['reason'], detail = ''): Fed {
    this.#state = { kind: 'refused' };
    this.#pending = Buffer.alloc(0);
    return {
      forward,
      refusal: typeof refusal === 'string' ? { reason: refusal, detail } : refusal,
    };
  }

  #messageDone(): void {
    const next = this.#switchAfter;
    this.#switchAfter = undefined;
    this.#state = next === undefined ? { kind: 'head' } : { kind: 'switching', accept: next };
  }

  /** Checks one request head (without its final CRLF CRLF) and sets the body framing. */
  #head(text: string): FramingRefusal | undefined {
    const bad = (detail: string, name?: string): FramingRefusal => ({
      reason: 'bad-request',
      detail,
      name,
    });
    const lines = text.split('\r\n');
    const request = REQUEST_LINE.exec(lines[0] ?? '');
    if (request === null) return bad('not an HTTP/1.x request line');
    const [, method = '', target = '', minor] = request;
    let targetHost: string | undefined;
    if (method === 'CONNECT') {
      return bad('CONNECT on a transparent connection (no proxy is configured)', hostName(target));
    } else if (!target.startsWith('/') && !(target === '*' && method === 'OPTIONS')) {
      const authority = ABSOLUTE.exec(target)?.[1];
      targetHost = authority === undefined ? undefined : hostName(authority);
      if (targetHost === undefined) return bad('a request target of no known form');
    }
    const hosts: string[] = [];
    const lengths: string[] = [];
    const codings: string[] = [];
    let upgrade = false;
    for (const line of lines.slice(1)) {
      if (line.startsWith(' ') || line.startsWith('\t')) return bad('an obs-fold header line');
      const header = checkHeaderLine(line);
      if (header === undefined) return bad('a malformed header line');
      const key = header.name.toLowerCase();
      if (key === 'host') hosts.push(header.value);
      else if (key === 'content-length') lengths.push(header.value);
      else if (key === 'transfer-encoding') codings.push(header.value);
      else if (key === 'upgrade') {
        // An upgrade to another HTTP (h2c) would carry requests with an :authority each.
        if (/(^|,)\s*(h2c|http\/)/i.test(header.value))
          return bad('an upgrade to another version of HTTP');
        upgrade = true;
      }
    }
    const stated = hosts.map((h) => hostName(h));
    if (stated.some((h) => h === undefined)) return bad('a malformed Host header');
    if (hosts.length > 1)
      return { reason: 'conflicting-host', detail: 'more than one Host header', name: stated[1] };
    const hostHeader = stated[0];
    if (targetHost !== undefined && hostHeader !== undefined && targetHost !== hostHeader)
      return {
        reason: 'conflicting-host',
        detail: 'a request target naming another host than Host',
        name: targetHost,
      };
    const host = targetHost ?? hostHeader;
    if (this.#requests > 0 && host !== this.#host)
      return {
        reason: 'conflicting-host',
        detail: 'a later request naming another host than the first',
        name: host,
      };
    if (codings.length > 0 && lengths.length > 0)
      return bad('both Content-Length and Transfer-Encoding');
    if (lengths.length > 1 || (lengths[0] !== undefined && !/^\d{1,15}$/.test(lengths[0])))
      return bad('an invalid Content-Length');
    if (codings.length > 1 || (codings[0] !== undefined && codings[0].toLowerCase() !== 'chunked'))
      return bad('a transfer coding other than chunked');
    if (codings.length > 0 && minor === '0') return bad('Transfer-Encoding in HTTP/1.0');
    const switchTo: Switch = upgrade ? 'upgrade' : undefined;
    if (switchTo !== undefined && this.#requests > 0)
      return bad('a protocol switch after the first request', host);
    if (this.#requests === 0) this.#host = host;
    this.#requests += 1;
    this.#switchAfter = switchTo;
    const length = Number(lengths[0] ?? '0');
    if (codings.length > 0) this.#state = { kind: 'chunk-size' };
    else if (length > 0) this.#state = { kind: 'body', left: length };
    else this.#messageDone();
    return undefined;
  }
}

/** `host[:port]` → the host name, lower case, or undefined when it is not one. */
export function hostName(authority: string): string | undefined {
  if (authority === '') return undefined;
  const { name } = splitHostPort(authority);
  if (authority.startsWith('['))
    return /^[0-9a-f:.]+$/i.test(name) ? name.toLowerCase() : undefined;
  const lower = foldName(name);
  return HOST_NAME.test(lower) ? lower : undefined;
}

function checkHeaderLine(line: string): { name: string; value: string } | undefined {
  const m = HEADER.exec(line);
  if (m?.[1] === undefined || !TOKEN.test(m[1])) return undefined;
  const value = (m[2] ?? '').replace(/^[ \t]+|[ \t]+$/g, '');
  if (hasControl(value)) return undefined;
  return { name: m[1], value };
}

/** A control character other than HTAB (CR and LF included): never inside a field. */
function hasControl(text: string): boolean {
  for (let i = 0; i < text.length; i += 1) {
    const c = text.charCodeAt(i);
    if ((c < 0x20 && c !== 0x09) || c === 0x7f) return true;
  }
  return false;
}

/** Whether the bytes so far can still open a request: upper-case letters up to a space. */
function methodSoFar(data: Buffer): boolean {
  const space = data.indexOf(0x20);
  const end = space < 0 ? Math.min(data.length, 21) : space;
  if (space < 0 && data.length > 20) return false;
  for (let i = 0; i < end; i += 1) {
    const c = data[i] ?? 0;
    if (!((c >= 0x41 && c <= 0x5a) || (c === 0x2d && i > 0))) return false;
  }
  return space !== 0;
}

/** Index of the first LF not preceded by CR, or -1. */
function bareLf(data: Buffer): number {
  for (let i = data.indexOf(0x0a); i >= 0; i = data.indexOf(0x0a, i + 1)) {
    if (i === 0 || data[i - 1] !== 0x0d) return i;
  }
  return -1;
}

/** Length of the first CRLF-terminated line, undefined when incomplete, or a bare LF. */
function readLine(data: Buffer): number | undefined | 'bare-lf' {
  const lf = data.indexOf(0x0a);
  if (lf < 0) return undefined;
  if (lf === 0 || data[lf - 1] !== 0x0d) return 'bare-lf';
  return lf - 1;
}
