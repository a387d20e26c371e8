// Shared by the approval and planning-mode tests: the profile with rules that ask, files the
// calls act on, and the invariant every run of these tests must keep (governance extension,
// "Loop invariants": a permission decision precedes every side effect).
import { expect } from 'vitest';
import { createHash } from 'node:crypto';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ownBySandbox, type Event, type Scratch } from './helpers.js';

/** untrusted-repo (rw workspace) with one rule that asks, and one that asks for more. */
export const ASKING_PROFILE = [
  'extends: untrusted-repo',
  'policy:',
  '  - id: rm-needs-approval',
  '    match: { tool: exec, args: { command.0: rm } }',
  '    decision: approval_required',
  '    reason: deleting files needs a person',
  '  - id: touch-needs-strong-auth',
  '    match: { tool: exec, args: { command.0: touch } }',
  '    decision: require_stronger_auth',
  '    reason: creating files here needs proof the call was read',
  '',
].join('\n');

/** `sha256:` of the canonical JSON of `{args, tool}`, written out by hand (keys sorted). */
export function execDigest(command: readonly string[]): string {
  const canonical = `{"args":{"command":${JSON.stringify(command)}},"tool":"exec"}`;
  return `sha256:${createHash('sha256').update(canonical).digest('hex')}`;
}

/** JSON as a YAML double-quoted flow value: everything past ASCII as a `\u` escape. */
function yamlJson(value: unknown): string {
  return JSON.stringify(value).replace(
    /[\u007f-\uffff]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

/** A scripted model: one exec call per turn, then an answer. */
export function execScript(commands: readonly (readonly string[])[], answer = 'done'): string {
  return [
    'turns:',
    ...commands.flatMap((c) => [
      '  - tool_calls:',
      `      - { name: exec, input: { command: ${yamlJson(c)} } }`,
    ]),
    `  - text: ${JSON.stringify(answer)}`,
    '',
  ].join('\n');
}

/** A copy of the sample repository with `files` added, all owned by the sandbox user. */
export async function repoWith(scratch: Scratch, files: readonly string[]): Promise<string> {
  const repo = await scratch.sampleRepo();
  for (const f of files) {
    await writeFile(path.join(repo, f), `${f}\n`);
    await ownBySandbox(path.join(repo, f));
  }
  return repo;
}

/** Every file of a directory tree with its digest: to show a workspace did not change. */
export async function treeDigest(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const file = path.join(entry.parentPath, entry.name);
    out[path.relative(dir, file)] = createHash('sha256')
      .update(await readFile(file))
      .digest('hex');
  }
  return out;
}

/**
 * Joined by call id: every proposal has exactly one permission decision, after its request
 * and before its execution; an approval is asked after the decision and answered before
 * anything runs. Returns the decisions by call id.
 */
export function expectOneDecisionBeforeExecution(
  events: readonly Event[],
): Map<string, Record<string, unknown>> {
  const byCall = new Map<string, Event[]>();
  for (const e of events) {
    const id = (e.data.callId ?? e.data.call_id) as string | undefined;
    if (id === undefined) continue;
    byCall.set(id, [...(byCall.get(id) ?? []), e]);
  }
  const decisions = new Map<string, Record<string, unknown>>();
  const requested = events.filter((e) => e.type === 'tool_requested');
  expect(requested.length).toBeGreaterThan(0);
  for (const r of requested) {
    const id = r.data.callId as string;
    const own = byCall.get(id) ?? [];
    const decided = own.filter((e) => e.type === 'permission_decision');
    expect(decided, `${id}: one decision`).toHaveLength(1);
    const decision = decided[0] as Event;
    expect(decision.seq, `${id}: decided after it was requested`).toBeGreaterThan(r.seq);
    for (const e of own.filter((x) => x.type === 'tool_executed'))
      expect(e.seq, `${id}: executed after its decision`).toBeGreaterThan(decision.seq);
    const asked = own.filter((e) => e.type === 'approval_requested');
    const answered = own.filter((e) => e.type === 'approval_received');
    expect(answered.length, `${id}: every request answered`).toBe(asked.length);
    for (const a of asked) expect(a.seq).toBeGreaterThan(decision.seq);
    for (const a of answered) {
      expect(a.data.argsDigest).toBe(decision.data.args_digest);
      for (const e of own.filter((x) => x.type === 'tool_executed'))
        expect(e.seq, `${id}: executed after its approval`).toBeGreaterThan(a.seq);
    }
    decisions.set(id, decision.data);
  }
  return decisions;
}

/** The events of one call, by type. */
export function eventsOf(events: readonly Event[], callId: string, type: string): Event[] {
  return events.filter(
    (e) => e.type === type && (e.data.callId === callId || e.data.call_id === callId),
  );
}
