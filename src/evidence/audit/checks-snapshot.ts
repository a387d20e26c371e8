// The run-start snapshot (AH-INV-1/2, AH-CONT-2/4), the hardening it records, reduced
// assurance said in snapshot and report alike (AH-DIAG-2), and the prompt slots the
// transcript shows against the digests the snapshot keeps (AH-INV-3).
import { createHash } from 'node:crypto';
import { isSessionRun } from './checks-session.js';
import { z } from 'zod';
import { RUN_FILES } from '../run-directory.js';
import { issueText } from '../schema/registry.js';
import {
  PromptSlotsRecord,
  SnapshotModelSide,
  Snapshot,
  SnapshotAssurance,
  SnapshotContainerSpec,
  isGvisorBinary,
} from '../schema/snapshot.js';
import { at, fail, inconclusive, notApplicable, pass, warn, type Check } from './check.js';
import { partOf } from './parts.js';
import { eventsOf } from './run-evidence.js';
import { POSTURES } from '../../config/postures.js';

export const snapshotCheck: Check = {
  id: 'snapshot.complete',
  title:
    'the snapshot names model, profile, workspace, tools, limits, prompt slots, mounts and posture',
  clauses: ['AH-INV-1', 'AH-INV-2', 'AH-CONT-2', 'AH-CONT-4'],
  run({ run }) {
    if (!run.snapshot.present) return fail('snapshot.json is missing', [RUN_FILES.snapshot]);
    const parsed = Snapshot.safeParse(run.snapshot.value);
    if (!parsed.success)
      return fail(
        'snapshot.json lacks what AH-INV-2 requires',
        parsed.error.issues.map((i) => `snapshot.json ${issueText(i)}`),
      );
    const s = parsed.data;
    const where: string[] = [];
    if (s.runId !== run.runId)
      where.push(`snapshot.json runId: ${s.runId}, the directory is ${run.runId}`);
    const created = eventsOf(run, 'run_created')[0];
    const agent = s.kind === 'agent';
    if (created !== undefined && (created.data.kind === 'agent') !== agent)
      where.push(`${at(created)}: a ${created.data.kind} run, the snapshot says ${s.kind}`);
    if (agent) {
      if (s.model === null) where.push('snapshot.json model: an agent run names no model');
      if (s.model !== null && Object.keys(s.model.route).length === 0)
        where.push('snapshot.json model.route: no provider or credential reference');
      // An MCP client's run has no prompt slots and says who proposes instead (modelSide).
      if (s.promptSlots === undefined && s.modelSide === undefined)
        where.push('snapshot.json promptSlots: missing (and no modelSide)');
      if (s.budgets === undefined) where.push('snapshot.json budgets: missing');
      if (s.tools.length === 0) where.push('snapshot.json tools: an agent run with no tools');
    } else {
      if (s.model !== null) where.push('snapshot.json model: a command run names a model');
      if (s.command === null) where.push('snapshot.json command: missing');
    }
    const ws = s.containerSpec.mounts.find((m) => m.target === s.workspace.target);
    // A draft workspace is a copy the run may write: mounted rw, the host's own untouched.
    // A draft run that ended before its copy existed (cancelled or refused while copying)
    // names none and keeps the plan's read-only placeholder: nothing may then have run.
    const noCopy = s.workspace.mode === 'draft' && s.workspace.draft === undefined;
    const mounted = s.workspace.mode === 'draft' ? (noCopy ? 'ro' : 'rw') : s.workspace.mode;
    const ran = (['draft_prepared', 'container_created', 'tool_container_started'] as const).find(
      (t) => eventsOf(run, t).length > 0,
    );
    if (noCopy && ran !== undefined)
      where.push(
        `snapshot.json workspace.draft: a draft run names no copy, but its log records ${ran}`,
      );
    if (ws === undefined || ws.mode !== mounted)
      where.push(
        `snapshot.json containerSpec.mounts: the workspace (${s.workspace.mode}) is not mounted as recorded`,
      );
    const wantEnforcement = POSTURES[s.network.mode].enforcement;
    if (s.network.enforcement.kind !== wantEnforcement)
      where.push(
        `snapshot.json network: ${s.network.mode} enforced by ${s.network.enforcement.kind}`,
      );
    const filter = eventsOf(run, 'artifact_written').find((a) => a.data.file === RUN_FILES.seccomp);
    const digests = [
      s.seccomp.sha256,
      s.containerSpec.seccomp.sha256,
      filter?.data.sha256,
      ...eventsOf(run, 'container_created').map((c) => c.data.seccompSha256),
    ];
    if (digests.some((d) => d !== s.seccomp.sha256))
      where.push(
        'snapshot.json seccomp.sha256: the filter digest differs between the snapshot, its spec, seccomp.json and a container',
      );
    return where.length === 0
      ? pass(
          `${s.kind} run: model, profile ${s.profile.name}, workspace, ${s.tools.length} tool(s), limits, ${s.containerSpec.mounts.length} mount(s), network ${s.network.mode}`,
        )
      : fail('the snapshot is incomplete or inconsistent', where);
  },
};

export const hardeningCheck: Check = {
  id: 'containers.hardening',
  title:
    'the container spec is hardened: no capabilities, no-new-privileges, read-only root, init, unprivileged',
  clauses: ['CFH-CONT-1'],
  run({ run }) {
    const spec = partOf(run.snapshot.value, 'containerSpec', SnapshotContainerSpec);
    if (!spec.ok) return inconclusive('snapshot.json containerSpec cannot be read');
    const c = spec.value;
    const where: string[] = [];
    if (!c.capDrop.includes('ALL')) where.push('containerSpec.capDrop: not ALL');
    if (c.capAdd.length > 0) where.push(`containerSpec.capAdd: ${c.capAdd.join(', ')}`);
    if (!c.noNewPrivileges) where.push('containerSpec.noNewPrivileges: false');
    if (!c.readOnlyRootfs) where.push('containerSpec.readOnlyRootfs: false');
    if (c.privileged) where.push('containerSpec.privileged: true');
    if (!c.init) where.push('containerSpec.init: false');
    const user = partOf(run.snapshot.value, 'sandboxUser', z.looseObject({ reason: z.string() }));
    // uid 0 only when written literally: the profile's `user` or `--user 0`.
    if (
      /^0(:|$)/.test(c.user) &&
      (!user.ok || (user.value.reason !== 'profile' && user.value.reason !== 'flag'))
    )
      where.push(`containerSpec.user: ${c.user} without a profile or --user asking for it`);
    return where.length === 0
      ? pass(
          `user ${c.user}, no capabilities, no-new-privileges, read-only root, init, seccomp sha256:${c.seccomp.sha256.slice(0, 12)}…`,
        )
      : fail('the recorded container spec is not hardened', where);
  },
};

export const assuranceCheck: Check = {
  id: 'assurance.recorded',
  title:
    'the assurance level stated in the snapshot and the report alike, borne out by the runtime',
  clauses: ['AH-DIAG-2'],
  run({ run }) {
    const snap = partOf(run.snapshot.value, 'assurance', SnapshotAssurance);
    if (!snap.ok)
      return fail('snapshot.json assurance: missing or unreadable', ['snapshot.json assurance']);
    const where: string[] = [];
    const seccomp = partOf(
      run.snapshot.value,
      'seccomp',
      z.looseObject({ enforcement: z.string() }),
    );
    const level = snap.value.level;
    if (seccomp.ok && seccomp.value.enforcement === 'not-applied-gvisor' && level !== 'reduced')
      where.push(`snapshot.json assurance: the filter was not applied, yet the level is ${level}`);
    if ((level === 'reduced') !== snap.value.notes.length > 0)
      where.push(`snapshot.json assurance: level ${level} with ${snap.value.notes.length} note(s)`);
    if (level === 'strong') where.push(...strongWithoutGvisor(run.snapshot.value));
    if (eventsOf(run, 'run_finished').length > 0) {
      const rep = partOf(run.report.value, 'assurance', SnapshotAssurance);
      if (!rep.ok) where.push('report.json assurance: missing or unreadable');
      else if (
        rep.value.level !== level ||
        rep.value.notes.join('\n') !== snap.value.notes.join('\n')
      )
        where.push(`report.json assurance: ${rep.value.level}, the snapshot says ${level}`);
    }
    if (where.length > 0) return fail('assurance not stated alike', where);
    if (level === 'reduced')
      return warn(
        `reduced assurance, stated in snapshot and report: ${snap.value.notes.join('; ')}`,
      );
    return pass(`${level} assurance, stated in snapshot and report`);
  },
};

/** `strong` claims gVisor: the runtime asked for and every binary the engine ran are runsc. */
function strongWithoutGvisor(snapshot: unknown): string[] {
  const runtime = partOf(
    snapshot,
    'runtime',
    z.looseObject({
      requested: z.string(),
      binaries: z.record(z.string(), z.string()).optional(),
    }),
  );
  if (!runtime.ok) return ['snapshot.json runtime: missing, yet the level is strong'];
  const binaries = Object.entries(runtime.value.binaries ?? {});
  const others = binaries.filter(([, b]) => !isGvisorBinary(b));
  if (runtime.value.requested !== 'runsc' || binaries.length === 0 || others.length > 0)
    return [
      `snapshot.json assurance: strong, yet the runtime is ${runtime.value.requested} with binaries [${binaries.map(([n, b]) => `${n}: ${b}`).join(', ')}]`,
    ];
  return [];
}

const FENCE = /^<(direct-command|context|quoted-material)>\n([\s\S]*)\n<\/\1>$/;
const ROLE_OF: Record<string, 'directCommand' | 'context' | 'quoted'> = {
  'direct-command': 'directCommand',
  context: 'context',
  'quoted-material': 'quoted',
};

export const promptSlotsCheck: Check = {
  id: 'prompt.slots',
  title: 'prompt slots keep their roles: one direct command, as digested in the snapshot',
  clauses: ['AH-INV-3', 'AH-CFC-4'],
  run({ run }) {
    // A session's turns each bring a direct command: session.turns checks them.
    if (isSessionRun(run.snapshot.value)) return notApplicable('a session: see session.turns');
    const slots = partOf(run.snapshot.value, 'promptSlots', PromptSlotsRecord);
    // `cfh mcp`: an MCP client proposes the calls; there is no slot, and no message may
    // open a direct-command fence (the client's text has no prompt authority: AH-CFC-3).
    if (!slots.ok && partOf(run.snapshot.value, 'modelSide', SnapshotModelSide).ok) {
      const opened = (run.transcript ?? []).filter((t) =>
        (t.message?.content ?? []).some(
          (b) => b.type === 'text' && /<direct-command>/.test(b.text),
        ),
      );
      return opened.length > 0
        ? fail(
            'a run of an MCP client holds a direct command',
            opened.map((t) => `transcript.jsonl:${t.line}: opens a direct-command fence`),
          )
        : pass('no direct command: an MCP client proposes the calls (snapshot modelSide)');
    }
    if (!slots.ok)
      return run.transcript === undefined
        ? notApplicable('no prompt: a command run')
        : inconclusive('snapshot.json promptSlots cannot be read');
    const first = run.transcript?.[0]?.message;
    if (first === undefined) return inconclusive('the transcript has no first message');
    const where: string[] = [];
    const seen: Record<'directCommand' | 'context' | 'quoted', string[]> = {
      directCommand: [],
      context: [],
      quoted: [],
    };
    let ambiguous = 0;
    for (const block of first.content) {
      const m = block.type === 'text' ? FENCE.exec(block.text) : null;
      const role = m?.[1] === undefined ? undefined : ROLE_OF[m[1]];
      if (role === undefined || m?.[2] === undefined) {
        where.push('transcript.jsonl:1: a block of the first message is in no slot fence');
        continue;
      }
      if (m[2].includes('&lt;')) ambiguous += 1;
      seen[role].push(m[2]);
    }
    const digest = (t: string): string => `sha256:${createHash('sha256').update(t).digest('hex')}`;
    const compare = (
      role: 'directCommand' | 'context' | 'quoted',
      want: readonly { digest: string }[],
    ): void => {
      const got = seen[role];
      if (got.length !== want.length)
        where.push(
          `transcript.jsonl:1: ${got.length} ${role} slot(s), the snapshot records ${want.length}`,
        );
      for (const [i, text] of got.entries())
        if (!text.includes('&lt;') && want[i] !== undefined && digest(text) !== want[i].digest)
          where.push(`transcript.jsonl:1: ${role}[${i}] is not the text the snapshot digested`);
    };
    compare('directCommand', [slots.value.directCommand]);
    compare('context', slots.value.context);
    compare('quoted', slots.value.quoted);
    for (const t of (run.transcript ?? []).slice(1))
      for (const block of t.message?.content ?? [])
        if (block.type === 'text' && /<direct-command>/.test(block.text))
          where.push(`transcript.jsonl:${t.line}: a later message opens a direct-command fence`);
    if (where.length > 0) return fail('prompt roles not kept', where);
    return ambiguous > 0
      ? warn(
          `slots in their fences; ${ambiguous} slot(s) hold an escaped fence tag, so their digest is not compared`,
        )
      : pass(
          'one direct command and the recorded context and quoted slots, each matching its digest',
        );
  },
};
