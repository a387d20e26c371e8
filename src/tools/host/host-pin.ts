// What a host tool starts, pinned (AH-TOOL-7, AH-TOOL-6): its program and every regular file
// its arguments name, each recorded at planning by what one descriptor showed (device, inode,
// size, modification and change times, and the SHA-256 of the content up to PIN_HASH_BYTES),
// and checked again right before every start: the MCP probe, the first call's server, a
// restart after a timeout, each exec call. A path that now names another object, or an
// object whose content or times changed, is refused: the tool does not start.
//
// What this cannot pin (docs/conformance.md, deviations): what the program loads by itself
// once it runs (shared libraries, an interpreter's imported modules, files it opens), and a
// change made between the check and the kernel's exec (a few milliseconds) by a party that
// may write the file; the planning checks (host-reach.ts) keep every sandbox of the run and
// every other non-root user from being such a party.
import { closeSync, fstatSync, openSync, readSync, type BigIntStats } from 'node:fs';
import { createHash } from 'node:crypto';
import { HostToolError } from '../../errors.js';
import { resolveObject, ResolutionError } from '../../sandbox/source-resolution.js';
import type { HostToolSink } from './host-launch.js';

/** Content hashed up to this size; a larger file is pinned by its identity and times only. */
export const PIN_HASH_BYTES = 16 * 1024 * 1024;

const O_RDONLY = 0;
const O_NOFOLLOW = 0o400000;
const O_CLOEXEC = 0o2000000;
const O_PATH = 0o10000000;

export interface FilePin {
  /** `program`, `argv[2]`, `args[0]`: where the tool names it. */
  readonly role: string;
  /** As the profile spells it (relative ones against the tool's cwd). */
  readonly spelled: string;
  /** The object's real path, as the kernel named the descriptor. */
  readonly path: string;
  readonly dev: string;
  readonly ino: string;
  readonly size: string;
  readonly mtimeNs: string;
  readonly ctimeNs: string;
  /** Hex SHA-256 of the content; null past PIN_HASH_BYTES or when cfh may not read it. */
  readonly sha256: string | null;
}

/** The directory a tool starts in, pinned by its identity. */
export interface DirPin {
  readonly spelled: string;
  readonly path: string;
  readonly dev: string;
  readonly ino: string;
}

export interface HostToolPins {
  readonly cwd: DirPin;
  readonly files: readonly FilePin[];
}

/** Why a start was refused: what changed, in cfh's words. */
export interface PinMismatch {
  readonly role: string;
  readonly path: string;
  readonly what: 'moved' | 'replaced' | 'changed' | 'content' | 'missing';
  readonly detail: string;
}

/** The absolute spelling of `spelled` against a resolved cwd, as the kernel would walk it. */
export function againstCwd(spelled: string, cwd: string): string {
  return spelled.startsWith('/') ? spelled : `${cwd === '/' ? '' : cwd}/${spelled}`;
}

/** One descriptor's view of `real`: its identity and times, and its content's digest. */
export function readPin(role: string, spelled: string, real: string): FilePin {
  let fd: number;
  let readable = true;
  try {
    fd = openSync(real, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  } catch {
    // Executable but not readable by cfh (mode 0711): pinned by identity and times only.
    fd = openSync(real, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    readable = false;
  }
  try {
    const before = fstatSync(fd, { bigint: true });
    let sha256: string | null = null;
    if (readable && before.isFile() && before.size <= BigInt(PIN_HASH_BYTES)) {
      const hash = createHash('sha256');
      const chunk = Buffer.alloc(1024 * 1024);
      for (let pos = 0; ;) {
        const n = readSync(fd, chunk, 0, chunk.length, pos);
        if (n === 0) break;
        hash.update(chunk.subarray(0, n));
        pos += n;
      }
      sha256 = hash.digest('hex');
    }
    const after = fstatSync(fd, { bigint: true });
    // Written while it was read: the digest names no one state of the file.
    if (!sameTimes(before, after)) throw new Error(`'${real}' changed while cfh read it`);
    return {
      role,
      spelled,
      path: real,
      dev: String(before.dev),
      ino: String(before.ino),
      size: String(before.size),
      mtimeNs: String(before.mtimeNs),
      ctimeNs: String(before.ctimeNs),
      sha256,
    };
  } finally {
    closeSync(fd);
  }
}

function sameTimes(a: BigIntStats, b: BigIntStats): boolean {
  return a.size === b.size && a.mtimeNs === b.mtimeNs && a.ctimeNs === b.ctimeNs;
}

/**
 * The first difference between what planning pinned and what the paths name now, or
 * undefined when every one is the object, the content and the times it was. Run right
 * before each spawn.
 */
export function checkPins(pins: HostToolPins): PinMismatch | undefined {
  const cwd = resolveNow(pins.cwd.spelled);
  if (cwd === undefined) return mismatch('cwd', pins.cwd.path, 'missing', 'it no longer resolves');
  if (
    cwd.real !== pins.cwd.path ||
    cwd.identity.dev !== pins.cwd.dev ||
    cwd.identity.ino !== pins.cwd.ino
  )
    return mismatch('cwd', pins.cwd.path, 'moved', `it now names '${cwd.real}'`);
  for (const pin of pins.files) {
    const now = resolveNow(againstCwd(pin.spelled, pins.cwd.path));
    if (now === undefined) return mismatch(pin.role, pin.path, 'missing', 'it no longer resolves');
    if (now.real !== pin.path)
      return mismatch(pin.role, pin.path, 'moved', `'${pin.spelled}' now names '${now.real}'`);
    let again: FilePin;
    try {
      again = readPin(pin.role, pin.spelled, pin.path);
    } catch (error) {
      return mismatch(
        pin.role,
        pin.path,
        'missing',
        error instanceof Error ? error.message : 'unreadable',
      );
    }
    if (again.dev !== pin.dev || again.ino !== pin.ino)
      return mismatch(pin.role, pin.path, 'replaced', 'another file is at its path');
    if (again.sha256 !== pin.sha256)
      return mismatch(pin.role, pin.path, 'content', 'its content is not what was planned');
    if (again.size !== pin.size || again.mtimeNs !== pin.mtimeNs || again.ctimeNs !== pin.ctimeNs)
      return mismatch(pin.role, pin.path, 'changed', 'it was written or its mode changed');
  }
  return undefined;
}

function resolveNow(absolute: string): ReturnType<typeof resolveObject> | undefined {
  try {
    return resolveObject(absolute);
  } catch (error) {
    if (error instanceof ResolutionError) return undefined;
    throw error;
  }
}

function mismatch(
  role: string,
  path: string,
  what: PinMismatch['what'],
  detail: string,
): PinMismatch {
  return { role, path, what, detail };
}

/**
 * Right before a host process starts: the pins hold, or a `host_tool_changed` event is
 * recorded and the start is refused. A harness failure (AH-TOOL-6): the run fails, the model
 * is told nothing it could correct.
 */
export async function assertPinned(
  tool: string,
  pins: HostToolPins,
  sink: HostToolSink,
  context: { readonly purpose: string; readonly callId?: string | undefined },
): Promise<void> {
  const changed = checkPins(pins);
  if (changed === undefined) return;
  await sink.event(
    'host_tool_changed',
    {
      tool,
      purpose: context.purpose,
      callId: context.callId ?? null,
      role: changed.role,
      path: changed.path,
      what: changed.what,
    },
    true,
  );
  throw new HostToolError(
    'host_tool_changed',
    `host tool ${tool}: its ${changed.role} '${changed.path}' changed since planning (${changed.detail}); refusing to start it`,
    { tool },
  );
}
