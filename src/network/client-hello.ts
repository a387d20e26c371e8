// Reads what a client states in its first bytes: the TLS server name (SNI) of a
// ClientHello, or that they open an HTTP/1 request (whose Host, and every later request's,
// http-framing.ts reads). Untrusted input: every length is bounds-checked; anything
// unexpected is "no name".
export type FirstBytes =
  | { readonly protocol: 'tls'; readonly name: string | undefined }
  | { readonly protocol: 'http' }
  | { readonly protocol: 'other' };

export function inspectFirstBytes(data: Buffer): FirstBytes {
  if (data[0] === 0x16 && data[1] === 0x03) return { protocol: 'tls', name: serverName(data) };
  // Loose on purpose (any case, bare LF): what looks like HTTP is framed strictly, and
  // refused when malformed, rather than relayed as opaque bytes.
  if (/^[A-Za-z-]{3,20} \S+ HTTP\/1\.[01]\r?\n/.test(data.subarray(0, 8192).toString('latin1')))
    return { protocol: 'http' };
  return { protocol: 'other' };
}

export function splitHostPort(hostPort: string): { name: string; port: number | undefined } {
  const v6 = /^\[([^\]]+)\](?::(\d+))?$/.exec(hostPort);
  if (v6?.[1] !== undefined)
    return { name: v6[1], port: v6[2] === undefined ? undefined : Number(v6[2]) };
  const i = hostPort.lastIndexOf(':');
  if (i > 0 && hostPort.indexOf(':') === i && /^\d+$/.test(hostPort.slice(i + 1))) {
    return { name: hostPort.slice(0, i), port: Number(hostPort.slice(i + 1)) };
  }
  return { name: hostPort, port: undefined };
}

function serverName(buf: Buffer): string | undefined {
  try {
    let p = 5; // record header
    if (buf[p] !== 0x01) return undefined; // ClientHello
    p += 4 + 2 + 32; // handshake header, version, random
    p += 1 + need(buf, p); // session id
    p += 2 + need16(buf, p); // cipher suites
    p += 1 + need(buf, p); // compression methods
    const extEnd = p + 2 + need16(buf, p);
    p += 2;
    while (p + 4 <= extEnd && p + 4 <= buf.length) {
      const type = buf.readUInt16BE(p);
      const len = buf.readUInt16BE(p + 2);
      p += 4;
      if (type === 0) {
        // server_name list: u16 list length, u8 name type, u16 name length, name
        const nameLen = buf.readUInt16BE(p + 3);
        if (buf[p + 2] !== 0 || p + 5 + nameLen > buf.length) return undefined;
        return buf
          .subarray(p + 5, p + 5 + nameLen)
          .toString('latin1')
          .toLowerCase();
      }
      p += len;
    }
    return undefined;
  } catch {
    return undefined;
  }
}

function need(buf: Buffer, p: number): number {
  const v = buf[p];
  if (v === undefined) throw new RangeError('short');
  return v;
}

function need16(buf: Buffer, p: number): number {
  if (p + 2 > buf.length) throw new RangeError('short');
  return buf.readUInt16BE(p);
}
