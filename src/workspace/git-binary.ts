// git's binary patch (`GIT binary patch`, as `git diff --binary` writes it), for
// `cfh runs diff --binary`: each side's full contents, zlib-deflated and base85-encoded in
// lines of at most 52 bytes, after an `index` line naming both sides by their full git
// blob id, which `git apply` requires for a binary change and checks the file against
// before it writes anything. Forward hunk (the new contents) and reverse hunk (the old),
// both `literal`: no delta, so a reader needs nothing but this text and the old file.
import { createHash } from 'node:crypto';
import { deflateSync } from 'node:zlib';

const ALPHABET =
  '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~';

/** The id git gives a blob with these contents (sha1 over `blob <size>\0` and the bytes). */
export function gitBlobId(data: Buffer): string {
  return createHash('sha1').update(`blob ${data.length}\0`).update(data).digest('hex');
}

export const NULL_GIT_ID = '0'.repeat(40);

/** git's base85 of `data`, padded to whole groups of four (the line's length char says how much is real). */
function base85(data: Buffer): string {
  let out = '';
  for (let i = 0; i < data.length; i += 4) {
    let acc = 0;
    for (let j = 0; j < 4; j += 1) acc = acc * 256 + (data[i + j] ?? 0);
    let group = '';
    for (let k = 0; k < 5; k += 1) {
      group = (ALPHABET[acc % 85] ?? '') + group;
      acc = Math.floor(acc / 85);
    }
    out += group;
  }
  return out;
}

function literal(data: Buffer): string[] {
  const z = deflateSync(data);
  const lines = [`literal ${data.length}`];
  for (let at = 0; at < z.length; at += 52) {
    const piece = z.subarray(at, at + 52);
    const n = piece.length;
    // 1..26 is A..Z, 27..52 is a..z.
    const len = n <= 26 ? String.fromCharCode(64 + n) : String.fromCharCode(96 + n - 26);
    lines.push(`${len}${base85(piece)}`);
  }
  lines.push('');
  return lines;
}

/** The `index` line and the binary hunks turning `before` into `after` (null: absent). */
export function gitBinaryLines(
  before: Buffer | null,
  after: Buffer | null,
  mode?: string,
): string[] {
  const from = before === null ? NULL_GIT_ID : gitBlobId(before);
  const to = after === null ? NULL_GIT_ID : gitBlobId(after);
  return [
    `index ${from}..${to}${mode === undefined ? '' : ` ${mode}`}`,
    'GIT binary patch',
    ...literal(after ?? Buffer.alloc(0)),
    ...literal(before ?? Buffer.alloc(0)),
  ];
}
