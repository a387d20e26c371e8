// What the evidence of a run directory proves about itself, and what it cannot (AH-ART-1,
// AH-LIFE-2). Checked: the hash chain of events.jsonl from its first line; every file the
// chain records (`artifact_written`: snapshot, seccomp filter, transcript, outputs) against
// its digest; files no record accounts for; the terminal anchor: a finished run's last
// event is `run_finished`, and state.json and report.json name that event (seq and hash)
// and agree with it. Not checkable without a signature: that the log was not cut and
// re-anchored by someone who rewrote state.json and report.json too, or rewritten whole.
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import type { EventRecord } from './event-log.js';
import { verifyEventChain } from './event-log.js';
import { RUN_FILES } from './run-directory.js';
import { parseEvents } from './audit/run-evidence.js';

export interface RunVerification {
  readonly ok: boolean;
  /** What was checked and held, in words an operator reads. */
  readonly verified: readonly string[];
  /** What was checked and failed, with the place. */
  readonly problems: readonly string[];
  /** What the evidence cannot prove by itself. */
  readonly notVerified: readonly string[];
}

const TERMINAL = new Set(['completed', 'failed', 'cancelled']);
/** Files of a run directory that no artifact record covers, by design. */
const UNRECORDED = new Set<string>([
  RUN_FILES.events,
  RUN_FILES.state,
  RUN_FILES.report,
  RUN_FILES.signature,
]);

export async function verifyRunDirectory(
  dir: string,
  body: string,
  events: readonly EventRecord[],
  state: Record<string, unknown> | undefined,
  report: Record<string, unknown> | undefined,
): Promise<RunVerification> {
  const verified: string[] = [];
  const problems: string[] = [];
  const notVerified: string[] = [];
  const chain = verifyEventChain(body);
  if (chain.ok) verified.push(`hash chain of ${chain.events} events from the first`);
  else problems.push(`event chain broken: ${chain.problem ?? ''}`);

  checkAnchor(events, state, report, verified, problems, notVerified);
  await checkArtifacts(dir, events, verified, problems);
  // Every line against the event registry, as the audit reads it (schema/registry.ts).
  const { events: typed } = parseEvents(body);
  const outside = typed.filter((e) => e.issues.length > 0);
  for (const e of outside.slice(0, 10))
    problems.push(`seq ${e.seq} ${e.type}: outside its schema (${e.issues.join('; ')})`);
  if (outside.length === 0 && typed.length > 0)
    verified.push(`${typed.length} events match the event registry (cfh.event/1)`);

  notVerified.push(
    (await exists(path.join(dir, RUN_FILES.signature)))
      ? 'signature: signature.json is present; `cfh audit` verifies it against the trusted operator key'
      : 'signature: none; a log cut short and re-anchored in state.json and report.json, or rewritten whole, cannot be told from the real one',
  );
  return { ok: problems.length === 0, verified, problems, notVerified };
}

function checkAnchor(
  events: readonly EventRecord[],
  state: Record<string, unknown> | undefined,
  report: Record<string, unknown> | undefined,
  verified: string[],
  problems: string[],
  notVerified: string[],
): void {
  const last = events.at(-1);
  const finished = events.filter((e) => e.type === 'run_finished');
  const stateName = typeof state?.state === 'string' ? state.state : undefined;
  if (finished.length > 1) problems.push(`${finished.length} run_finished events (one expected)`);
  const end = finished[0];
  if (end === undefined) {
    if (stateName !== undefined && TERMINAL.has(stateName))
      problems.push(`state.json says ${stateName} but the log has no run_finished event`);
    if (report !== undefined) problems.push('report.json exists but the log has no run_finished');
    notVerified.push('the end of the run: no terminal record (in progress, killed, or cut)');
    anchorOf('state.json', state, last, problems, verified);
    return;
  }
  checkAfterEnd(events, end, verified, problems);
  for (const [name, doc] of [
    ['state.json', state],
    ['report.json', report],
  ] as const) {
    if (doc === undefined) {
      problems.push(`${name} is missing`);
      continue;
    }
    anchorOf(name, doc, end, problems, verified);
    const status = name === 'state.json' ? doc.state : doc.status;
    if (status !== end.data.status || doc.terminalReason !== end.data.terminalReason) {
      problems.push(
        `${name} says ${String(status)} (${String(doc.terminalReason)}); run_finished says ${String(end.data.status)} (${String(end.data.terminalReason)})`,
      );
    }
  }
}

/**
 * After `run_finished` the log may hold one thing only: the `applied` event of the run's
 * patch (`cfh runs apply`, governance extension "Draft vs commit policy"), once. Anything
 * else there, a second `applied`, or an `applied` before the run finished, is an
 * extension of the log nobody may make.
 */
function checkAfterEnd(
  events: readonly EventRecord[],
  end: EventRecord,
  verified: string[],
  problems: string[],
): void {
  const at = events.indexOf(end);
  const after = events.slice(at + 1);
  const foreign = after.filter((e) => e.type !== 'applied');
  if (foreign.length > 0)
    problems.push(
      `events follow run_finished (seq ${end.seq}): the log was extended (${foreign.map((e) => `${e.type} at seq ${e.seq}`).join(', ')})`,
    );
  const early = events.slice(0, at).filter((e) => e.type === 'applied');
  if (early.length > 0)
    problems.push(`an applied event before run_finished (seq ${early[0]?.seq})`);
  const applied = after.filter((e) => e.type === 'applied');
  if (applied.length > 1)
    problems.push(`${applied.length} applied events after run_finished (a patch is applied once)`);
  else if (applied.length === 1 && foreign.length === 0) {
    const a = applied[0] as EventRecord;
    const approver = a.data.approver as { user?: unknown; surface?: unknown } | undefined;
    verified.push(
      `patch applied to the host after the run (event ${a.seq}), approved by ${String(approver?.user)} (${String(approver?.surface)})`,
    );
  }
}

function anchorOf(
  name: string,
  doc: Record<string, unknown> | undefined,
  at: EventRecord | undefined,
  problems: string[],
  verified: string[],
): void {
  const anchor = doc?.lastEvent as { seq?: unknown; hash?: unknown } | undefined;
  if (doc === undefined || anchor === undefined) return;
  if (at === undefined || anchor.seq !== at.seq || anchor.hash !== at.hash) {
    problems.push(
      `${name} names event ${String(anchor.seq)} (${String(anchor.hash).slice(0, 12)}…); the log's is ${String(at?.seq ?? 'none')}`,
    );
  } else verified.push(`${name} anchored to event ${at.seq}`);
}

async function checkArtifacts(
  dir: string,
  events: readonly EventRecord[],
  verified: string[],
  problems: string[],
): Promise<void> {
  const recorded = new Map<string, string>();
  for (const e of events) {
    if (e.type !== 'artifact_written') continue;
    const file = e.data.file;
    const sha256 = e.data.sha256;
    if (typeof file === 'string' && typeof sha256 === 'string') recorded.set(file, sha256);
  }
  let good = 0;
  for (const [file, want] of recorded) {
    const got = await digestOf(path.join(dir, file));
    if (got === undefined)
      problems.push(`${file}: recorded in the log, missing from the directory`);
    else if (got !== want)
      problems.push(`${file}: digest differs from the one recorded in the log`);
    else good += 1;
  }
  if (good > 0)
    verified.push(
      `${good} file(s) match the digests in the log (${[...recorded.keys()].join(', ')})`,
    );
  for (const file of await listFiles(dir)) {
    if (!UNRECORDED.has(file) && !recorded.has(file))
      problems.push(`${file}: in the directory, but no record of the log accounts for it`);
  }
}

async function exists(file: string): Promise<boolean> {
  return stat(file).then(
    () => true,
    () => false,
  );
}

async function digestOf(file: string): Promise<string | undefined> {
  try {
    const hash = createHash('sha256');
    for await (const chunk of createReadStream(file) as AsyncIterable<Buffer>) hash.update(chunk);
    return hash.digest('hex');
  } catch {
    return undefined;
  }
}

/** Every regular file under the run directory, relative, except the lock. */
async function listFiles(dir: string, prefix = ''): Promise<string[]> {
  const out: string[] = [];
  let entries;
  try {
    entries = await readdir(path.join(dir, prefix), { withFileTypes: true });
  } catch {
    return out;
  }
  for (const e of entries) {
    const rel = prefix === '' ? e.name : `${prefix}/${e.name}`;
    if (rel === RUN_FILES.lock) continue;
    if (e.isDirectory()) out.push(...(await listFiles(dir, rel)));
    else out.push(rel);
  }
  return out;
}
