// The approval prompt on a real pseudo-terminal (util-linux `script`), real containers and
// the real CLI (governance extension, "pause for human approval"): the prompt shows the
// command, the rule and the digest, with the model's escape sequences shown, not obeyed;
// y runs the call, n refuses it, r covers the next call of that rule without asking;
// stronger authentication needs the digest's digits typed; --non-interactive never asks;
// Ctrl-C at the prompt cancels the run with nothing of the call run; time at the prompt is
// not counted against --max-wall-time-seconds.
import { describe, expect, it } from 'vitest';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import {
  agentRunArgs,
  containersOfRun,
  onlyRunDir,
  readEvents,
  readJson,
  runIdOf,
  useScratch,
} from './helpers.js';
import {
  ASKING_PROFILE,
  eventsOf,
  execDigest,
  execScript,
  expectOneDecisionBeforeExecution,
  repoWith,
} from './approval-support.js';
import { PtyCfh } from './pty.js';

const scratch = useScratch('agent-tty');

const PROMPT_END = '(default): ';
const STRONG_END = 'digest digits: ';

/** Escape sequences the model puts in an argument: on a terminal they would act. */
const HOSTILE_ARG = '\u001b]0;owned\u0007\u001b[2J\u009b31m\u202eexe.txt';

async function exists(file: string): Promise<boolean> {
  return stat(file).then(
    () => true,
    () => false,
  );
}

async function start(
  name: string,
  commands: string[][],
  files: string[],
  extra: string[] = [],
  background = false,
) {
  const repo = await repoWith(scratch, files);
  const profile = await scratch.file(`${name}-profile.yaml`, ASKING_PROFILE);
  const script = await scratch.file(`${name}.yaml`, execScript(commands));
  const root = scratch.path(`art-${name}`);
  const args = agentRunArgs({ workspace: repo, artifactRoot: root, profile, script }, extra);
  const pty = background ? PtyCfh.startInBackground(args) : PtyCfh.start(args);
  return { repo, root, pty };
}

/** The digest a prompt shows. */
function shownDigest(prompt: string): string {
  const m = /digest: (sha256:[0-9a-f]{64})/.exec(prompt);
  if (m === null) throw new Error(`no digest in the prompt:\n${prompt}`);
  return m[1] ?? '';
}

describe('the approval prompt on a terminal', () => {
  it('y runs, n refuses, r covers the rule, stronger auth needs the digest typed', async () => {
    const first = ['rm', '-f', 'a.txt', HOSTILE_ARG];
    const { repo, root, pty } = await start(
      'answers',
      [
        first,
        ['rm', 'b.txt'],
        ['rm', 'c.txt'],
        ['rm', 'd.txt'],
        ['touch', 'strong-1'],
        ['touch', 'strong-2'],
      ],
      ['a.txt', 'b.txt', 'c.txt', 'd.txt'],
    );
    try {
      const p1 = await pty.waitFor(PROMPT_END);
      // What will run, the rule that asked, and the exact call's digest.
      expect(p1).toContain('cfh: approval needed for call-0001 (approval_required)');
      expect(p1).toContain('rule:   rm-needs-approval');
      expect(p1).toContain('reason: deleting files needs a person');
      expect(p1).toContain('tool:   exec (process_execution, runs in the sandbox)');
      expect(p1).toMatch(/"rm",\n\s+"-f",\n\s+"a\.txt",/);
      expect(shownDigest(p1)).toBe(execDigest(first));
      // The model's escape sequences are shown as text, never sent to the terminal.
      expect(p1).toContain('\\u001b]0;owned\\u0007\\u001b[2J\\u009b31m\\u202eexe.txt');
      pty.type('y\n');
      await pty.waitFor('cfh: approved call-0001 (this call only)');

      await pty.waitFor(PROMPT_END);
      pty.type('n\n');
      await pty.waitFor('cfh: denied call-0002');

      const p3 = await pty.waitFor(PROMPT_END);
      expect(p3).toContain('[r] rule rm-needs-approval for this run');
      pty.type('r\n');
      await pty.waitFor('cfh: approved rule rm-needs-approval for the rest of this run');

      // call-0004 is rm too: covered by the rule, no prompt. The next prompt is call-0005's.
      const p5 = await pty.waitFor(STRONG_END);
      expect(p5).not.toContain('call-0004');
      expect(p5).toContain('cfh: approval needed for call-0005 (require_stronger_auth)');
      expect(p5).toContain('type the first 12 hex digits of the digest');
      expect(p5).not.toContain('[r]');
      pty.type('y\n');
      await pty.waitFor('cfh: denied call-0005: stronger authentication failed');

      const p6 = await pty.waitFor(STRONG_END);
      const digits = shownDigest(p6).slice('sha256:'.length, 'sha256:'.length + 12);
      pty.type(`${digits}\n`);
      await pty.waitFor('cfh: approved call-0006 (this call only)');
      const { exitCode, output } = await pty.exit();
      expect(exitCode, output).toBe(0);
      expect(output).toContain('done');
      // Nothing the model chose reached the terminal raw (script's own output has none).
      for (const raw of ['\u001b', '\u0007', '\u009b', '\u202e'])
        expect(output.includes(raw), JSON.stringify(raw)).toBe(false);
      expect(output.match(/approval needed for/g)).toHaveLength(5);
    } finally {
      await pty.stop();
    }
    expect(await exists(path.join(repo, 'a.txt'))).toBe(false);
    expect(await exists(path.join(repo, 'b.txt'))).toBe(true);
    expect(await exists(path.join(repo, 'c.txt'))).toBe(false);
    expect(await exists(path.join(repo, 'd.txt'))).toBe(false);
    expect(await exists(path.join(repo, 'strong-1'))).toBe(false);
    expect(await exists(path.join(repo, 'strong-2'))).toBe(true);

    const dir = await onlyRunDir(root);
    const events = await readEvents(dir);
    expectOneDecisionBeforeExecution(events);
    const received = events
      .filter((e) => e.type === 'approval_received')
      .map((e) => [
        e.data.callId,
        e.data.outcome,
        e.data.scope ?? null,
        (e.data.approver as { surface?: string } | null)?.surface ?? null,
      ]);
    expect(received).toEqual([
      ['call-0001', 'granted', 'call', 'tty'],
      ['call-0002', 'refused', null, 'tty'],
      ['call-0003', 'granted', 'rule', 'tty'],
      ['call-0004', 'granted', 'rule', 'tty'],
      ['call-0005', 'refused', null, 'tty'],
      ['call-0006', 'granted', 'call', 'tty'],
    ]);
    for (const e of events.filter((x) => x.type === 'approval_received')) {
      expect(e.data.approver).toMatchObject({ kind: 'human', user: expect.any(String) });
      expect(typeof e.data.waitedMs).toBe('number');
    }
    // The terminal is named among who may answer, from the first request.
    expect(eventsOf(events, 'call-0001', 'approval_requested')[0]?.data.approvers).toEqual([
      { kind: 'human', user: expect.any(String), surface: 'tty' },
    ]);
    const ran = events.filter((e) => e.type === 'tool_executed').map((e) => e.data.callId);
    expect(ran).toEqual(['call-0001', 'call-0003', 'call-0004', 'call-0006']);
    const snapshot = await readJson<Record<string, any>>(path.join(dir, 'snapshot.json'));
    expect(snapshot.approvals).toMatchObject({
      interactive: true,
      notInteractiveBecause: null,
      surfaces: ['tty'],
    });
  });

  it('--non-interactive never prompts on a terminal: the call is answered approval_required', async () => {
    const { repo, root, pty } = await start(
      'nonint',
      [['rm', 'a.txt']],
      ['a.txt'],
      ['--non-interactive'],
    );
    try {
      const { exitCode, output } = await pty.exit();
      expect(exitCode, output).toBe(0);
      expect(output).not.toContain('approval needed');
    } finally {
      await pty.stop();
    }
    expect(await exists(path.join(repo, 'a.txt'))).toBe(true);
    const dir = await onlyRunDir(root);
    const events = await readEvents(dir);
    expectOneDecisionBeforeExecution(events);
    expect(eventsOf(events, 'call-0001', 'approval_received')[0]?.data.outcome).toBe('unavailable');
    const snapshot = await readJson<Record<string, any>>(path.join(dir, 'snapshot.json'));
    expect(snapshot.approvals).toMatchObject({
      interactive: false,
      notInteractiveBecause: '--non-interactive',
    });
  });

  it('a cfh in the background never prompts (a read would stop it): approval_required, no hang', async () => {
    const { repo, root, pty } = await start('background', [['rm', 'a.txt']], ['a.txt'], [], true);
    try {
      const { exitCode, output } = await pty.exit();
      expect(exitCode, output).toBe(0);
      expect(output).not.toContain('approval needed');
    } finally {
      await pty.stop();
    }
    expect(await exists(path.join(repo, 'a.txt'))).toBe(true);
    const dir = await onlyRunDir(root);
    expect(await readJson(path.join(dir, 'state.json'))).toMatchObject({ state: 'completed' });
    const events = await readEvents(dir);
    expectOneDecisionBeforeExecution(events);
    expect(eventsOf(events, 'call-0001', 'approval_received')[0]?.data.outcome).toBe('unavailable');
  });

  it('a line typed before the prompt appeared answers nothing', async () => {
    const { repo, root, pty } = await start('typeahead', [['rm', 'a.txt']], ['a.txt']);
    try {
      // Typed at once, while cfh is still starting: it sits in the terminal's input queue.
      pty.type('y\n');
      await pty.waitFor(PROMPT_END);
      pty.type('n\n');
      await pty.waitFor('cfh: denied call-0001');
      const { exitCode, output } = await pty.exit();
      expect(exitCode, output).toBe(0);
    } finally {
      await pty.stop();
    }
    expect(await exists(path.join(repo, 'a.txt'))).toBe(true);
    const events = await readEvents(await onlyRunDir(root));
    expect(eventsOf(events, 'call-0001', 'approval_received')[0]?.data.outcome).toBe('refused');
  });

  it('Ctrl-C at the prompt ends the run cancelled; nothing of the call ran', async () => {
    const { repo, root, pty } = await start('sigint', [['rm', 'a.txt']], ['a.txt']);
    try {
      await pty.waitFor(PROMPT_END);
      pty.interrupt();
      const { exitCode, output } = await pty.exit();
      expect(exitCode, output).toBe(130);
    } finally {
      await pty.stop();
    }
    expect(await exists(path.join(repo, 'a.txt'))).toBe(true);
    const dir = await onlyRunDir(root);
    expect(await readJson(path.join(dir, 'state.json'))).toMatchObject({
      state: 'cancelled',
      terminalReason: 'cancelled:SIGINT',
    });
    const events = await readEvents(dir);
    expectOneDecisionBeforeExecution(events);
    expect(eventsOf(events, 'call-0001', 'approval_received')[0]?.data).toMatchObject({
      outcome: 'cancelled',
      approver: null,
    });
    expect(events.filter((e) => e.type === 'tool_executed')).toEqual([]);
    expect(events.filter((e) => e.type === 'tool_container_started')).toEqual([]);
    expect(eventsOf(events, 'call-0001', 'tool_call_aborted')[0]?.data.reason).toBe('cancelled');
    expect(await containersOfRun(runIdOf(dir))).toEqual([]);
  });

  it('time at the prompt does not count against --max-wall-time-seconds', async () => {
    const wall = 3;
    const { repo, root, pty } = await start(
      'wall',
      [['rm', 'a.txt']],
      ['a.txt'],
      ['--max-wall-time-seconds', String(wall)],
    );
    try {
      await pty.waitFor(PROMPT_END);
      // Twice the whole budget at the prompt before answering.
      await new Promise((r) => setTimeout(r, wall * 2000));
      pty.type('y\n');
      const { exitCode, output } = await pty.exit();
      expect(exitCode, output).toBe(0);
    } finally {
      await pty.stop();
    }
    expect(await exists(path.join(repo, 'a.txt'))).toBe(false);
    const dir = await onlyRunDir(root);
    const report = await readJson<Record<string, any>>(path.join(dir, 'report.json'));
    expect(report).toMatchObject({ status: 'completed', terminalReason: 'final_answer' });
    const events = await readEvents(dir);
    expectOneDecisionBeforeExecution(events);
    const waited = eventsOf(events, 'call-0001', 'approval_received')[0]?.data.waitedMs as number;
    expect(waited).toBeGreaterThanOrEqual(wall * 2000);
    expect(events.some((e) => e.type === 'budget_exceeded')).toBe(false);
  });
});
