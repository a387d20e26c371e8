// A sink is a source of what it may receive (AH-CFC-2/10), for the host tree a host tool
// keeps its state in: a tool cleared for an atom may write what it receives wherever its
// arguments or environment name, and a mount of that place hands it back to the sandbox.
// cfh cannot see where a host tool writes, but it does see the paths its configuration
// names: a mount that holds one (an argument or an env value naming a file or directory in
// it, through links too, spelled as the tool resolves it: `~`, `$HOME`, its env's `$NAME`:
// host-tool-spelling.ts) carries the tool's clearance in its label. Its `cwd` is where it
// runs and its program and script are its code, not stores: they do not count
// (docs/operators.md "A sink is a source").
import { lstatSync, statSync } from 'node:fs';
import path from 'node:path';
import type { HostToolEntry } from '../../config/host-tools-schema.js';
import { entryClearance } from '../../cfc/host-tool-labels.js';
import { uncleared } from '../../cfc/label.js';
import { placedTree, writtenInto, type WrittenRecord } from '../../cfc/written-labels.js';
import type { WrittenTree } from '../../cfc/written-store.js';
import { ConfigError } from '../../errors.js';
import { isWithin, realpathOfNearest } from '../../sandbox/mount-policy.js';
import { placeObject, readMountTable, type MountEntry } from '../../sandbox/mount-table.js';
import { ResolutionError, resolveObject } from '../../sandbox/source-resolution.js';
import type { SpecMount } from '../../substrate/container-spec.js';
import { execToolName, mcpToolName } from '../../tools/host/host-plan.js';
import { pathCandidates } from '../../tools/host/host-reach.js';
import { expandedOr, unresolvedIn } from './host-tool-spelling.js';

/** A mount a host tool's configuration names a path in, and what the tool may receive. */
export interface HostToolStore {
  readonly target: string;
  readonly tool: string;
  readonly atoms: readonly string[];
}

const PLACEHOLDER = /^\{[A-Za-z_][A-Za-z0-9_]{0,63}\}$/;

/**
 * The texts of an entry's configuration that may name where it keeps state: its arguments
 * and env values, less its code (the program, and the script an interpreter is given first:
 * an existing regular file, which host-reach.ts pins as code).
 */
function texts(entry: HostToolEntry, base: string | undefined): string[] {
  const args = entry.kind === 'exec' ? entry.argv.slice(1) : entry.args;
  const first = args[0];
  const script =
    first !== undefined && isFile(path.resolve(base ?? '/', first)) ? args.slice(1) : args;
  const env = literalEnv(entry);
  return [...script, ...Object.values(env)]
    .filter((t) => !PLACEHOLDER.test(t))
    .map((t) => expandedOr(t, env));
}

/** An entry's literal env values (a credential names no place). */
export function literalEnv(entry: HostToolEntry): Record<string, string> {
  return Object.fromEntries(
    Object.entries(entry.env).flatMap(([k, v]) => ('value' in v ? [[k, v.value]] : [])),
  );
}

/**
 * The spellings of an entry's arguments and env values cfh cannot resolve as the tool would
 * (host-tool-spelling.ts): a variable its environment does not set, an unknown user's `~`.
 */
export function unresolvedSpellings(entry: HostToolEntry): string[] {
  const args = entry.kind === 'exec' ? entry.argv.slice(1) : entry.args;
  const env = literalEnv(entry);
  return unresolvedIn([...args, ...Object.values(env)], env);
}

function isFile(p: string): boolean {
  try {
    return statSync(p).isFile();
  } catch {
    return false;
  }
}

/** The real paths an entry's configuration names (not its code, not its cwd). */
export function namedPaths(entry: HostToolEntry): string[] {
  const base = entry.cwd !== undefined && path.isAbsolute(entry.cwd) ? entry.cwd : undefined;
  return (
    texts(entry, base)
      .flatMap((t) => pathCandidates(t))
      // An option as a whole (`--file=x`) is no path; what follows its `=` is a candidate.
      .filter((c) => !c.startsWith('-'))
      .filter((c) => path.isAbsolute(c) || base !== undefined)
      .map((c) => realpathOfNearest(path.resolve(base ?? '/', c)))
  );
}

/** Every mount of `mounts` a cleared host tool of `entries` names a path in. */
export function hostToolStores(
  entries: readonly HostToolEntry[],
  mounts: readonly SpecMount[],
): HostToolStore[] {
  const out: HostToolStore[] = [];
  for (const entry of entries) {
    const atoms = entryClearance(entry);
    if (atoms.length === 0) continue;
    const named = namedPaths(entry);
    for (const m of mounts)
      if (named.some((p) => p === m.source || isWithin(p, m.source)))
        out.push({ target: m.target, tool: entry.name, atoms: [...atoms].sort() });
  }
  return out;
}

/** A tree a cleared host tool may write what it receives into: its store's place. */
export interface StoreTree {
  /** The entry's name. */
  readonly tool: string;
  /** The model-facing names of its tools: an exec entry's one, an MCP server's by prefix. */
  readonly names: { readonly exact: string } | { readonly prefix: string };
  readonly tree: WrittenTree;
}

/** Whether a call of the model-facing tool `name` reaches the entry `store` belongs to. */
export function storeOf(store: StoreTree, name: string): boolean {
  return 'exact' in store.names ? name === store.names.exact : name.startsWith(store.names.prefix);
}

/** What a named store is: `p` itself, or, not made yet, its name in the directory it will be in. */
function storeAt(p: string): { readonly at: string; readonly unmade?: string } | undefined {
  try {
    lstatSync(p);
    return { at: p };
  } catch {
    // Not made yet: its directory, when that exists.
  }
  const dir = path.dirname(p);
  try {
    lstatSync(dir);
    return { at: dir, unmade: path.basename(p) };
  } catch {
    // A text naming a place deeper in nothing (a URL's path, an option's value): no store.
    return undefined;
  }
}

/** The tree of the store `named` (its place, even before it is made), or undefined. */
function storeTree(named: string, table: readonly MountEntry[]): WrittenTree | undefined {
  const store = storeAt(named);
  if (store === undefined) return undefined;
  let object;
  try {
    object = resolveObject(store.at);
  } catch (error) {
    // Not a tree any run can mount either (mount sources resolve the same way).
    if (error instanceof ResolutionError) return undefined;
    throw error;
  }
  if (object.kind !== 'directory' && object.kind !== 'file') return undefined;
  const { place } = placeObject(object, table);
  if (store.unmade === undefined)
    return {
      place,
      source: object.real,
      kind: object.kind,
      identity: object.identity,
      names: object.names,
    };
  // The file it will be: a later mount of its directory holds it, a sibling's does not.
  if (object.kind !== 'directory') return undefined;
  return {
    place: { device: place.device, path: path.join(place.path, store.unmade) },
    source: path.join(object.real, store.unmade),
    kind: 'file',
  };
}

/**
 * The trees each cleared host tool's configuration names (AH-CFC-2/7): what a call carries
 * to the tool may be kept there, on the host, whether or not this run mounts it, so a call's
 * label is recorded against them as a write into a mount is (written-notes.ts), and a later
 * run that mounts any part of them reads it at that label. A store not made yet is recorded
 * against the directory it will be made in.
 */
export function storeTrees(
  entries: readonly HostToolEntry[],
  options: { readonly uncleared?: boolean } = {},
): StoreTree[] {
  const table = readMountTable();
  const out: StoreTree[] = [];
  for (const entry of entries) {
    if (options.uncleared !== true && entryClearance(entry).length === 0) continue;
    for (const named of new Set(namedPaths(entry))) {
      const tree = storeTree(named, table);
      if (tree === undefined) continue;
      out.push({
        tool: entry.name,
        names:
          entry.kind === 'exec'
            ? { exact: execToolName(entry) }
            : { prefix: mcpToolName(entry, '') },
        tree,
      });
    }
  }
  return out;
}

/**
 * Refuses an entry whose store holds what earlier runs wrote above its clearance (AH-CFC-2,
 * AH-CFC-12): a tool hands back what it keeps, so an entry cleared for less than its store
 * holds would return it under its own lower label (another profile's entry over the store a
 * deploy run's tool filled, say).
 */
export function checkStoreRecords(
  entries: readonly HostToolEntry[],
  records: readonly WrittenRecord[],
): void {
  if (records.length === 0) return;
  for (const store of storeTrees(entries, { uncleared: true })) {
    const entry = entries.find((e) => e.name === store.tool);
    const held = writtenInto(placedTree({ ...store.tree, host: store.tree.source }), records);
    if (entry === undefined || held === undefined) continue;
    const above = uncleared(held.label, entryClearance(entry));
    if (above.length === 0) continue;
    throw new ConfigError(
      'host_tool_store_written',
      `host tool ${entry.name} keeps its state in '${store.tree.source}', which holds [${above.join(', ')}] that run ${held.runs.at(-1) ?? '?'} wrote there; its clearance does not cover it`,
      { field: 'hostTools', value: entry.name },
      `clear ${entry.name} for [${above.join(', ')}], give it a store of its own, or cfh labels forget ${held.trees[0] ?? store.tree.source} once the store no longer holds it`,
    );
  }
}
