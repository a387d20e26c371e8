// What a host tool runs must be out of every sandbox's reach (AH-TOOL-7, AH-CONT-1, AH-CONT-5).
// A host tool runs on the host with its credential: if a sandbox of the run could write its
// program, a script it is given, its working directory or a module search path in its env,
// the next start would run the sandbox's code outside every container. So at planning, before
// anything exists, everything the tool is told to read as code is resolved by descriptor
// (sandbox/source-resolution.ts) and refused when it, or any entry its path goes through (a
// link, a directory), lies inside an rw mount of the run, the draft's source workspace, a
// draft copy, or a workspace that holds the run's profile (its relative paths are the
// repository's); when another non-root user could change it (path-trust.ts: the sandbox runs
// as another uid); when it is a hard link another name of which a sandbox could write; and
// when it lies inside the artifact root or the signing-key directory, or names a directory
// that holds one of them. What passes is pinned (host-pin.ts).
import { lstatSync, type BigIntStats } from 'node:fs';
import path from 'node:path';
import { ConfigError, ContainmentError } from '../../errors.js';
import type { HostToolEntry } from '../../config/host-tools-schema.js';
import { isWithin } from '../../sandbox/mount-policy.js';
import {
  resolveObject,
  ResolutionError,
  type ResolvedObject,
} from '../../sandbox/source-resolution.js';
import { firstSwapper, trustedGroupOf, writersOf } from '../../path-trust.js';
import { againstCwd, readPin, type FilePin, type HostToolPins } from './host-pin.js';

/** A host directory a sandbox of the run could write, or that holds evidence or keys. */
export interface ReachArea {
  /** Its real path. */
  readonly path: string;
  /** In the refusal's words: `the rw mount at /workspace`. */
  readonly what: string;
  /** Only the entries directly under `path` whose names start with this (draft copies). */
  readonly namePrefix?: string | undefined;
}

export interface HostToolReach {
  /** What a sandbox of the run could write. */
  readonly sandboxWritable: readonly ReachArea[];
  /**
   * What a sandbox of the run could read: every mount, ro ones included. A credential file
   * there is the sandbox's to read (and to send in an encoding no scrubber knows).
   */
  readonly sandboxReadable: readonly ReachArea[];
  /** The artifact root and the signing-key directory (AH-CONT-5). */
  readonly evidence: readonly ReachArea[];
  /** cfh's own user: with root, the only one who may change what a host tool runs. */
  readonly trustedUid: number;
}

/** No run: only who could change the program is checked (`cfh doctor`). */
export function noRunReach(): HostToolReach {
  return {
    sandboxWritable: [],
    sandboxReadable: [],
    evidence: [],
    trustedUid: process.getuid?.() ?? 0,
  };
}

const PLACEHOLDER = /^\{[A-Za-z_][A-Za-z0-9_]{0,63}\}$/;
/** Absolute paths written inside a longer text (`--require=/x`, `-e 'import("/x")'`). */
const EMBEDDED = /\/[^\s'"`:;,()<>|&$=*?[\]{}]+/g;
const MAX_CANDIDATES = 64;

/**
 * The path-like spellings in one argument or env value: the whole text, what follows an
 * `=`, each `:`/`,`/blank-separated piece (PATH-like lists) and the rest of a piece after a
 * short option it is attached to (`-I../lib`), and every absolute path written inside it. A relative piece counts when it has a `/` or names an entry of the cwd.
 */
export function pathCandidates(text: string): string[] {
  const out = new Set<string>();
  const add = (s: string): void => {
    if (s !== '' && !s.includes('\0') && out.size < MAX_CANDIDATES) out.add(s);
  };
  add(text);
  const eq = text.indexOf('=');
  if (eq >= 0) add(text.slice(eq + 1));
  for (const piece of text.split(/[\s:,;=]+/)) {
    add(piece);
    // A path attached to its short option (`perl -I../lib`, `gcc -L../lib`, `ruby -I…`).
    if (/^-[A-Za-z]./.test(piece)) add(piece.slice(2));
  }
  for (const m of text.matchAll(EMBEDDED)) add(m[0]);
  return [...out];
}

interface Item {
  readonly role: string;
  readonly spelled: string;
  /** Pinned and held to the writer checks when a regular file. */
  readonly code: boolean;
  /** A module search path: held to the writer checks when a directory too. */
  readonly searchPath?: boolean;
  /** A credential file cfh reads: held out of every mount, ro ones too. */
  readonly credential?: boolean;
}

/** Where the tool's program, cwd and path-like arguments and env values lead. */
interface Located {
  readonly item: Item;
  /** The object, when the path names one now. */
  readonly object: ResolvedObject | undefined;
  /** Its real path, or for a missing one the real path of the longest prefix that exists. */
  readonly real: string;
  /** Every entry the resolution went through (links and directories), and the end. */
  readonly entries: readonly string[];
}

function locate(item: Item, cwd: string): Located {
  const absolute = againstCwd(item.spelled, cwd);
  const found = resolveOrMissing(absolute, item);
  if (found !== undefined)
    return {
      item,
      object: found,
      real: found.real,
      entries: [...found.entries.keys(), found.real],
    };
  // Missing now: whoever may write the deepest directory that exists may create it later.
  const parts = absolute.split('/');
  for (let n = parts.length - 1; n >= 1; n -= 1) {
    const prefix = parts.slice(0, n).join('/') || '/';
    const at = resolveOrMissing(prefix, item);
    if (at === undefined) continue;
    const rest = parts.slice(n).filter((p) => p !== '' && p !== '.');
    const real = rest.includes('..') ? at.real : path.join(at.real, ...rest);
    return { item, object: undefined, real, entries: [...at.entries.keys(), at.real, real] };
  }
  return { item, object: undefined, real: '/', entries: ['/'] };
}

function resolveOrMissing(absolute: string, item: Item): ResolvedObject | undefined {
  try {
    return resolveObject(absolute);
  } catch (error) {
    if (!(error instanceof ResolutionError)) throw error;
    if (error.reason === 'changed')
      throw new ContainmentError(
        'host_tool_changed',
        `${item.role} ${error.message}; refusing to run it`,
        { value: item.spelled },
      );
    return undefined;
  }
}

function inside(p: string, area: ReachArea): boolean {
  if (!isWithin(p, area.path)) return false;
  if (area.namePrefix === undefined) return true;
  const first = path.relative(area.path, p).split('/')[0] ?? '';
  return first.startsWith(area.namePrefix);
}

function refuse(
  entry: HostToolEntry,
  code:
    | 'host_tool_in_sandbox_reach'
    | 'host_tool_credential_exposed'
    | 'host_tool_reaches_evidence'
    | 'host_tool_program_writable',
  what: string,
  hint: string,
  value: string,
): ConfigError {
  return new ConfigError(code, `hostTools ${entry.name}: ${what}; ${hint}`, {
    field: `hostTools.${entry.name}`,
    value,
  });
}

function describe(l: Located, at: string): string {
  const via = at === l.real ? '' : ` (through '${at}')`;
  return `${l.item.role} '${l.item.spelled}'${via}`;
}

/** The items of an entry: its program, cwd, every path-like argument and env value. */
function itemsOf(entry: HostToolEntry, program: string, cwd: string): Item[] {
  const items: Item[] = [
    { role: 'cwd', spelled: cwd, code: false },
    { role: 'program', spelled: program, code: true },
  ];
  const args = entry.kind === 'exec' ? entry.argv.slice(1) : entry.args;
  const first = entry.kind === 'exec' ? 1 : 0;
  for (const [i, arg] of args.entries()) {
    // A {field} is the model's value, checked by its pattern at each call, never a program.
    if (PLACEHOLDER.test(arg)) continue;
    const role = entry.kind === 'exec' ? `argv[${i + first}]` : `args[${i}]`;
    for (const c of pathCandidates(arg)) items.push({ role, spelled: c, code: true });
  }
  for (const [name, spec] of Object.entries(entry.env)) {
    // A credential file is read by cfh (against cfh's own cwd): a sandbox that could write it
    // would choose the tool's credential; one in the key directory would hand it the key.
    if ('fromFile' in spec)
      items.push({
        role: `env ${name} (fromFile)`,
        spelled: againstCwd(spec.fromFile, process.cwd()),
        code: false,
        credential: true,
      });
    if (!('value' in spec)) continue;
    for (const c of pathCandidates(spec.value))
      items.push({ role: `env ${name}`, spelled: c, code: false, searchPath: true });
  }
  return items;
}

/** Whether a relative candidate is worth resolving: it has a `/` or names a cwd entry. */
function pathLike(item: Item, cwd: string): boolean {
  if (item.role === 'cwd' || item.role === 'program') return true;
  if (item.spelled.includes('/')) return true;
  try {
    lstatSync(againstCwd(item.spelled, cwd));
    return true;
  } catch {
    return false;
  }
}

/**
 * Checks what `entry` would run against the run's reach and pins it. `program` is what
 * findProgram chose, `cwd` the entry's working directory (absolute); both are resolved
 * here by descriptor and the pins record the objects the checks were made on.
 */
export function checkHostToolReach(
  entry: HostToolEntry,
  program: string,
  cwd: string,
  reach: HostToolReach,
): { readonly pins: HostToolPins; readonly program: string } {
  const cwdObject = resolveOrMissing(cwd, { role: 'cwd', spelled: cwd, code: false });
  if (cwdObject?.kind !== 'directory')
    throw new ConfigError(
      'invalid_host_tool',
      `hostTools ${entry.name}: cwd '${cwd}' is not a directory`,
      {
        field: `hostTools.${entry.name}`,
      },
    );
  const realCwd = cwdObject.real;
  const items = itemsOf(entry, program, cwd).filter((i) => pathLike(i, realCwd));
  const located = items.map((i) => locate(i, i.role === 'cwd' ? '/' : realCwd));
  const files: FilePin[] = [];
  const devices = new Map<string, bigint | undefined>();
  for (const l of located) {
    checkSandboxReach(entry, l, reach);
    if (l.item.credential === true) checkCredentialHidden(entry, l, reach, devices);
    checkEvidence(entry, l, reach);
    const o = l.object;
    if (o === undefined) continue;
    const code =
      (l.item.code && o.kind === 'file') || (l.item.searchPath === true && o.kind !== 'other');
    if (code) checkWriters(entry, l, o, reach.trustedUid);
    if (l.item.code && o.kind === 'file') {
      const pin = readPin(l.item.role, l.item.spelled, o.real);
      // The pin must describe the object the checks were made on, not a later arrival.
      if (pin.dev !== o.identity.dev || pin.ino !== o.identity.ino)
        throw new ContainmentError(
          'host_tool_changed',
          `hostTools ${entry.name}: ${l.item.role} '${l.item.spelled}' changed while cfh checked it; refusing to run it`,
          { value: l.item.spelled },
        );
      checkHardLinks(entry, l, reach, devices);
      if (!files.some((f) => f.path === pin.path && f.spelled === pin.spelled)) files.push(pin);
    }
  }
  const programPin = files.find((f) => f.role === 'program');
  if (programPin === undefined)
    throw new ConfigError(
      'host_tool_program_missing',
      `hostTools ${entry.name}: program '${program}' is not a regular file`,
      { field: `hostTools.${entry.name}` },
    );
  return {
    pins: {
      cwd: {
        spelled: cwd,
        path: realCwd,
        dev: cwdObject.identity.dev,
        ino: cwdObject.identity.ino,
      },
      files,
    },
    program: programPin.path,
  };
}

function checkSandboxReach(entry: HostToolEntry, l: Located, reach: HostToolReach): void {
  // Deepest first: the object, then the link that led to it, then the directories.
  for (const at of [...l.entries].reverse()) {
    const area = reach.sandboxWritable.find((a) => inside(at, a));
    if (area === undefined) continue;
    throw refuse(
      entry,
      'host_tool_in_sandbox_reach',
      `${describe(l, at)} lies inside ${area.what} ('${area.path}'), which a sandbox of the run can write: it could rewrite what cfh then runs on the host`,
      'keep host-tool programs, scripts, working directories and module paths outside every rw mount, draft and the workspace that holds the profile',
      l.item.spelled,
    );
  }
}

/**
 * A `fromFile` credential a sandbox could read (AH-TOOL-7: credentials never enter an
 * untrusted execution substrate): the file, or a link that leads to it, inside any mount of
 * the run, read-only ones included; or a file with other names on the file system of such a
 * mount, one of which may lie inside it.
 */
function checkCredentialHidden(
  entry: HostToolEntry,
  l: Located,
  reach: HostToolReach,
  devices: Map<string, bigint | undefined>,
): void {
  for (const at of [...l.entries].reverse()) {
    const area = reach.sandboxReadable.find((a) => inside(at, a));
    if (area === undefined) continue;
    throw refuse(
      entry,
      'host_tool_credential_exposed',
      `${describe(l, at)} lies inside ${area.what} ('${area.path}'), which a sandbox of the run can read: the credential would reach the container`,
      'keep credential files outside the workspace and every mount (for instance under ~/.config or CFH_KEY_DIR)',
      l.item.spelled,
    );
  }
  const o = l.object;
  if (o === undefined || o.kind !== 'file') return;
  const st = lstatOrUndefined(o.real);
  if (st === undefined || st.nlink <= 1n) return;
  for (const area of reach.sandboxReadable) {
    if (deviceOf(area, devices) !== st.dev) continue;
    throw refuse(
      entry,
      'host_tool_credential_exposed',
      `${l.item.role} '${l.item.spelled}' ('${o.real}') has ${String(st.nlink)} names on the file system of ${area.what} ('${area.path}'): one of them may lie inside it, where a sandbox of the run can read it`,
      'give the credential file a single name (copy it instead of linking it)',
      l.item.spelled,
    );
  }
}

function checkEvidence(entry: HostToolEntry, l: Located, reach: HostToolReach): void {
  for (const area of reach.evidence) {
    const within = l.entries.some((at) => isWithin(at, area.path));
    // A directory handed to a tool (a file-system server's root) may not hold evidence or
    // keys either; its cwd may, as long as it is not inside them.
    const holds =
      l.item.role !== 'cwd' && l.object?.kind === 'directory' && isWithin(area.path, l.real);
    if (!within && !holds) continue;
    throw refuse(
      entry,
      'host_tool_reaches_evidence',
      `${l.item.role} '${l.item.spelled}' ${within ? 'lies inside' : 'is a directory that holds'} ${area.what} ('${area.path}'): a host tool could read or rewrite the run's evidence or the signing key`,
      'give host tools paths outside the artifact root and CFH_KEY_DIR',
      l.item.spelled,
    );
  }
}

function checkWriters(
  entry: HostToolEntry,
  l: Located,
  o: ResolvedObject,
  trustedUid: number,
): void {
  const trusted = (uid: number): boolean => uid === 0 || uid === trustedUid;
  const own = o.entries.get(o.real);
  const writers =
    own === undefined
      ? 'unknown (cannot stat)'
      : writersOf(own, trusted, trustedGroupOf(trustedUid));
  const swap = firstSwapper([...o.links, o.real], trustedUid, o.entries);
  if (writers === undefined && swap === undefined) return;
  const who =
    writers !== undefined
      ? `${writers} may write it`
      : `${swap?.swapper.who ?? ''} may replace '${swap?.entry ?? ''}' (through ${swap?.swapper.directory ?? ''})`;
  throw refuse(
    entry,
    'host_tool_program_writable',
    `${l.item.role} '${l.item.spelled}' ('${o.real}') could be changed by another user: ${who}, and a sandbox runs as another user`,
    'only root and you may be able to change what a host tool runs',
    l.item.spelled,
  );
}

/**
 * A file with other names on the file system of a sandbox-writable area: one of them may
 * lie inside it, and the sandbox writes the same inode through it. Only a root-owned file
 * no group or other may write is safe there (the sandbox never runs as root).
 */
function checkHardLinks(
  entry: HostToolEntry,
  l: Located,
  reach: HostToolReach,
  devices: Map<string, bigint | undefined>,
): void {
  const st = lstatOrUndefined(l.real);
  if (st === undefined) return;
  if (st.nlink <= 1n || (st.uid === 0n && (st.mode & 0o022n) === 0n)) return;
  for (const area of reach.sandboxWritable) {
    if (deviceOf(area, devices) !== st.dev) continue;
    throw refuse(
      entry,
      'host_tool_in_sandbox_reach',
      `${l.item.role} '${l.item.spelled}' ('${l.real}') has ${String(st.nlink)} names on the file system of ${area.what} ('${area.path}'): a hard link inside it would let a sandbox of the run rewrite it`,
      'give the tool its own copy (one name), or make it root-owned and not group- or other-writable',
      l.item.spelled,
    );
  }
}

/** The device an area lies on, looked up once per check. */
function deviceOf(area: ReachArea, devices: Map<string, bigint | undefined>): bigint | undefined {
  if (!devices.has(area.path)) devices.set(area.path, lstatOrUndefined(area.path)?.dev);
  return devices.get(area.path);
}

function lstatOrUndefined(p: string): BigIntStats | undefined {
  try {
    return lstatSync(p, { bigint: true });
  } catch {
    return undefined;
  }
}
