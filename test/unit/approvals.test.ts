// Approvals (governance extension, "pause for human approval"), as pure logic with a fake
// terminal: an approval binds the exact call (args digest); "approve this rule" covers that
// rule for the rest of the run and nothing else; stronger authentication is only the digest
// typed at the terminal, never a rule or file approval; a cancelled wait is recorded and
// leaves one decision per call; time waiting for a person is not the agent's. The real
// pseudo-terminal and containers are in integration/agent-tty.test.ts.
import { describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import {
  Approvals,
  FileApprovals,
  RuleApprovals,
  type ApprovalRequest,
} from '../../src/mediator/approvals.js';
import { argsDigest, type Proposal } from '../../src/mediator/mediator.js';
import {
  ARGS_SHOWN_MAX_CHARS,
  TtyApprovals,
  inForeground,
  renderPrompt,
  type PromptTerminal,
} from '../../src/cli/tty-approvals.js';
import { loadApprovalsFile } from '../../src/config/approvals-file.js';
import { BudgetTracker } from '../../src/engine/agent/budgets.js';
import { BUILTIN_TOOLS } from '../../src/tools/builtins.js';
import type { PolicyRule } from '../../src/mediator/policy-rule.js';
import { ConfigError } from '../../src/errors.js';
import { makeTempDir, must, removeTempDir, testMediator } from './helpers.js';

async function expectConfigErrorAsync(
  pending: Promise<unknown>,
  code: string,
  fragment: string,
): Promise<void> {
  const error = await pending.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ConfigError);
  expect((error as ConfigError).code).toBe(code);
  expect((error as ConfigError).message).toContain(fragment);
}

const exec = must(BUILTIN_TOOLS.find((t) => t.name === 'exec'));

function request(over: Partial<ApprovalRequest> = {}): ApprovalRequest {
  const args = over.args ?? { command: ['rm', 'x'] };
  return {
    callId: 'call-0001',
    tool: exec,
    args,
    argsDigest: argsDigest('exec', args),
    decision: 'approval_required',
    rule: 'rm-needs-approval',
    reason: 'deleting files needs a person',
    ...over,
  };
}

/** A scripted answer: a line, end of input, or no answer until the wait is cancelled. */
const HANG = { hang: true } as const;
type Scripted = string | undefined | typeof HANG;

/** A terminal that answers each question with the next scripted line. */
class FakeTerminal implements PromptTerminal {
  readonly shown: string[] = [];
  readonly #answers: Scripted[];
  opened = 0;
  closed = 0;
  constructor(answers: Scripted[]) {
    this.#answers = answers;
  }
  open = (): PromptTerminal => {
    this.opened += 1;
    return this;
  };
  settle(): Promise<void> {
    return Promise.resolve();
  }
  write(text: string): void {
    this.shown.push(text);
  }
  readLine(signal: AbortSignal): Promise<string | undefined> {
    const next = this.#answers.shift();
    if (typeof next !== 'object') return Promise.resolve(next);
    return new Promise((_resolve, reject) => {
      signal.addEventListener('abort', () => {
        reject(signal.reason as Error);
      });
    });
  }
  close(): void {
    this.closed += 1;
  }
}

function ttySetup(answers: Scripted[], preApproved: string[] = []) {
  const term = new FakeTerminal(answers);
  const rules = new RuleApprovals(preApproved, 'alice');
  const tty = new TtyApprovals({ user: 'alice', open: term.open, rules });
  return { term, rules, tty, approvals: new Approvals([rules, tty]) };
}

const live = new AbortController().signal;

describe('the terminal approval source', () => {
  it('y approves this call only, as the user at the tty; the next call is asked again', async () => {
    const { term, approvals } = ttySetup(['y', 'n']);
    expect(await approvals.answer(request(), live)).toEqual({
      granted: true,
      approver: { kind: 'human', user: 'alice', surface: 'tty' },
      scope: 'call',
    });
    expect(await approvals.answer(request({ callId: 'call-0002' }), live)).toMatchObject({
      granted: false,
      approver: { surface: 'tty' },
    });
    expect(term.opened).toBe(2);
    expect(term.closed).toBe(2);
  });

  it('n, an empty line, end of input and anything else deny', async () => {
    for (const answer of ['n', 'no', '', undefined, 'yy', 'sure', 'y please']) {
      const { approvals } = ttySetup([answer]);
      expect(await approvals.answer(request(), live), String(answer)).toMatchObject({
        granted: false,
      });
    }
  });

  it('r approves the rule for the rest of the run: later calls of it are not asked, others are', async () => {
    const { term, approvals } = ttySetup(['r', 'n']);
    expect(await approvals.answer(request(), live)).toMatchObject({
      granted: true,
      scope: 'rule',
    });
    const other = { command: ['rm', '-rf', 'other'] };
    expect(
      await approvals.answer(
        request({ callId: 'call-0002', args: other, argsDigest: argsDigest('exec', other) }),
        live,
      ),
    ).toEqual({
      granted: true,
      approver: { kind: 'human', user: 'alice', surface: 'tty' },
      scope: 'rule',
    });
    expect(term.opened).toBe(1);
    expect(
      await approvals.answer(request({ callId: 'call-0003', rule: 'another-rule' }), live),
    ).toMatchObject({ granted: false });
    expect(term.opened).toBe(2);
  });

  it('stronger authentication: only the first 12 hex digits of this call’s digest approve it', async () => {
    const strong = request({ decision: 'require_stronger_auth' });
    const digits = strong.argsDigest.slice(7, 19);
    const otherDigits = argsDigest('exec', { command: ['rm', 'y'] }).slice(7, 19);
    for (const wrong of ['y', 'r', 'yes', digits.slice(0, 11), otherDigits, strong.argsDigest]) {
      const { approvals } = ttySetup([wrong]);
      expect(await approvals.answer(strong, live), wrong).toMatchObject({ granted: false });
    }
    const { approvals, term } = ttySetup([` ${digits.toUpperCase()} `]);
    expect(await approvals.answer(strong, live)).toMatchObject({ granted: true, scope: 'call' });
    expect(term.shown[0]).toContain('type the first 12 hex digits');
    expect(term.shown[0]).not.toContain('[r]');
  });

  it('a rule approved at the prompt or on the command line never satisfies stronger authentication', async () => {
    const { term, approvals } = ttySetup(['r', 'n'], ['rm-needs-approval']);
    // Pre-approved: the ordinary ask is answered by the flag, without a prompt.
    expect(await approvals.answer(request(), live)).toMatchObject({
      granted: true,
      approver: { surface: 'flag' },
    });
    expect(term.opened).toBe(0);
    const strong = request({ decision: 'require_stronger_auth' });
    expect(await approvals.answer(strong, live)).toMatchObject({ granted: false });
    expect(term.opened).toBe(1);
  });

  it('the prompt shows the tool, the arguments, the rule, its reason and the digest', () => {
    const shown = renderPrompt(request(), false);
    expect(shown).toContain('rule:   rm-needs-approval');
    expect(shown).toContain('reason: deleting files needs a person');
    expect(shown).toContain('tool:   exec (process_execution, runs in the sandbox)');
    expect(shown).toContain('"rm",');
    expect(shown).toContain(`digest: ${request().argsDigest}`);
  });

  it('cuts long arguments on an ordinary prompt (saying so), never on a stronger-auth one', () => {
    const args = { command: ['echo', 'x'.repeat(ARGS_SHOWN_MAX_CHARS * 2)] };
    const long = request({ args, argsDigest: argsDigest('exec', args) });
    expect(renderPrompt(long, false)).toMatch(/\d+ more characters not shown; the digest covers/);
    expect(renderPrompt(long, false).length).toBeLessThan(ARGS_SHOWN_MAX_CHARS + 2000);
    expect(renderPrompt(long, true)).toContain('x'.repeat(ARGS_SHOWN_MAX_CHARS * 2));
  });

  it('a cancellation during the wait rejects with its reason and closes the terminal', async () => {
    const { term, approvals } = ttySetup([HANG]);
    const controller = new AbortController();
    const pending = approvals.answer(request(), controller.signal);
    await new Promise((r) => setTimeout(r, 10));
    expect(term.opened).toBe(1);
    controller.abort(new Error('SIGINT'));
    await expect(pending).rejects.toThrow('SIGINT');
    expect(term.closed).toBe(1);
  });
});

describe('whether cfh may read the terminal', () => {
  // Fields after the name: state ppid pgrp session tty_nr tpgid …; the name may hold ") ".
  const stat = (pgrp: number, ttyNr: number, tpgid: number): string =>
    `4242 (node (x) y) S 1 ${pgrp} ${pgrp} ${ttyNr} ${tpgid} 4194304 0`;
  it('only in the foreground process group of a controlling terminal', () => {
    expect(inForeground(stat(4242, 34816, 4242))).toBe(true);
    expect(inForeground(stat(4242, 34816, 4100))).toBe(false); // `cfh … &`
    expect(inForeground(stat(4242, 0, -1))).toBe(false); // no controlling terminal
    expect(inForeground(undefined)).toBe(false);
  });
});

describe('file approvals', () => {
  it('approve exactly the listed call: rule, tool and digest; a changed argument is not approved', async () => {
    const args = { command: ['rm', 'x'] };
    const files = new FileApprovals(
      [{ rule: 'rm-needs-approval', tool: 'exec', argsDigest: argsDigest('exec', args) }],
      'alice',
    );
    const approvals = new Approvals([files]);
    expect(await approvals.answer(request({ args }), live)).toEqual({
      granted: true,
      approver: { kind: 'human', user: 'alice', surface: 'file' },
      scope: 'call',
    });
    const changed = { command: ['rm', 'x '] };
    expect(
      await approvals.answer(
        request({ args: changed, argsDigest: argsDigest('exec', changed) }),
        live,
      ),
    ).toBeUndefined();
    expect(await approvals.answer(request({ args, rule: 'other' }), live)).toBeUndefined();
    expect(
      await approvals.answer(request({ args, decision: 'require_stronger_auth' }), live),
    ).toBeUndefined();
  });

  it('the digest is sha256 of the canonical JSON of {args, tool}, as operators compute it', () => {
    const want = createHash('sha256')
      .update('{"args":{"command":["rm","x"]},"tool":"exec"}')
      .digest('hex');
    expect(argsDigest('exec', { command: ['rm', 'x'] })).toBe(`sha256:${want}`);
  });
});

describe('--approvals FILE', () => {
  it('loads a YAML list and records the file’s digest', async () => {
    const dir = await makeTempDir();
    try {
      const d = argsDigest('exec', { command: ['rm', 'x'] });
      const body = `- rule: rm-needs-approval\n  tool: exec\n  argsDigest: ${d}\n`;
      const file = path.join(dir, 'ok.yaml');
      await writeFile(file, body);
      const loaded = await loadApprovalsFile(file);
      expect(loaded.calls).toEqual([{ rule: 'rm-needs-approval', tool: 'exec', argsDigest: d }]);
      expect(loaded.sha256).toBe(`sha256:${createHash('sha256').update(body).digest('hex')}`);
    } finally {
      await removeTempDir(dir);
    }
  });

  it('refuses a bad file naming what is wrong: shape, unknown key, digest, size, kind', async () => {
    const dir = await makeTempDir();
    try {
      const at = async (name: string, body: string): Promise<string> => {
        await writeFile(path.join(dir, name), body);
        return path.join(dir, name);
      };
      const d = argsDigest('exec', {});
      await expectConfigErrorAsync(
        loadApprovalsFile(await at('map.yaml', `rule: x\ntool: exec\nargsDigest: ${d}\n`)),
        'invalid_approvals_file',
        'expected array',
      );
      await expectConfigErrorAsync(
        loadApprovalsFile(
          await at('key.yaml', `- { rule: x, tool: exec, argsDigest: ${d}, scope: all }\n`),
        ),
        'invalid_approvals_file',
        '[0]: an unknown key at line 1, column',
      );
      await expectConfigErrorAsync(
        loadApprovalsFile(await at('digest.yaml', `- { rule: x, tool: exec, argsDigest: abc }\n`)),
        'invalid_approvals_file',
        '[0].argsDigest',
      );
      await expectConfigErrorAsync(
        loadApprovalsFile(await at('yaml.yaml', `- { rule: [\n`)),
        'invalid_approvals_file',
        'yaml.yaml:2:1: not valid YAML (',
      );
      await expectConfigErrorAsync(
        loadApprovalsFile(await at('big.yaml', `# ${'x'.repeat(300 * 1024)}\n[]\n`)),
        'invalid_approvals_file',
        'at most 262144 are read',
      );
      await expectConfigErrorAsync(
        loadApprovalsFile(dir),
        'invalid_approvals_file',
        'is not a regular file',
      );
      await expectConfigErrorAsync(
        loadApprovalsFile(path.join(dir, 'missing.yaml')),
        'invalid_approvals_file',
        'cannot be opened',
      );
      // A FIFO would block a plain open: refused at once, nothing waits for a writer.
      const fifo = path.join(dir, 'fifo');
      execFileSync('mkfifo', [fifo]);
      await expectConfigErrorAsync(
        loadApprovalsFile(fifo),
        'invalid_approvals_file',
        'is not a regular file',
      );
    } finally {
      await removeTempDir(dir);
    }
  });
});

describe('the mediator asking', () => {
  const rule: PolicyRule = {
    id: 'rm-needs-approval',
    match: { tool: 'exec', args: { 'command.0': 'rm' } },
    decision: 'approval_required',
    reason: 'deleting files needs a person',
  };

  function proposal(callId: string, args: unknown): Proposal {
    return { callId, toolUseId: `tu-${callId}`, checked: { kind: 'valid', tool: exec, args } };
  }

  it('records who may answer, pauses the clock while asking, and binds the approval to the digest', async () => {
    const events: { type: string; data: Record<string, unknown> }[] = [];
    const approved = { command: ['rm', 'x'] };
    const files = new FileApprovals(
      [{ rule: rule.id, tool: 'exec', argsDigest: argsDigest('exec', approved) }],
      'alice',
    );
    const mediator = testMediator(
      (type, data) => {
        events.push({ type, data });
        return Promise.resolve();
      },
      {},
      [rule],
      new Approvals([new RuleApprovals([], 'alice'), files]),
    );
    const first = await mediator.decide(proposal('call-0001', approved), live);
    expect(first.kind).toBe('authorized');
    expect(first.decision.approver).toEqual({ kind: 'human', user: 'alice', surface: 'file' });
    const second = await mediator.decide(
      proposal('call-0002', { command: ['rm', 'x', 'y'] }),
      live,
    );
    expect(second).toMatchObject({ kind: 'refused', status: 'approval_required' });
    const requested = events.filter((e) => e.type === 'approval_requested');
    // Only sources that can answer are named: no rule is approved, so not the flag.
    expect(requested[0]?.data.approvers).toEqual([
      { kind: 'human', user: 'alice', surface: 'file' },
    ]);
    const received = events.filter((e) => e.type === 'approval_received').map((e) => e.data);
    expect(received.map((r) => r.outcome)).toEqual(['granted', 'unavailable']);
    expect(received.map((r) => r.argsDigest)).toEqual([
      argsDigest('exec', approved),
      argsDigest('exec', { command: ['rm', 'x', 'y'] }),
    ]);
    for (const r of received) expect(typeof r.waitedMs).toBe('number');
  });

  it('the arguments decided are the arguments run: frozen once decided', async () => {
    const args = { command: ['rm', 'x'] };
    const mediator = testMediator(
      () => Promise.resolve(),
      {},
      [rule],
      new Approvals([new RuleApprovals([rule.id], 'alice')]),
    );
    const ruling = await mediator.decide(proposal('call-0001', args), live);
    if (ruling.kind !== 'authorized') throw new Error('expected authorized');
    expect(() => {
      (ruling.call.args as { command: string[] }).command[1] = '/';
    }).toThrow(TypeError);
    expect(ruling.call.args).toEqual({ command: ['rm', 'x'] });
  });

  it('a cancellation while asking is recorded, and the stop adds no second decision', async () => {
    const events: { type: string; data: Record<string, unknown> }[] = [];
    const { approvals } = ttySetup([HANG]);
    const mediator = testMediator(
      (type, data) => {
        events.push({ type, data });
        return Promise.resolve();
      },
      {},
      [rule],
      approvals,
    );
    const controller = new AbortController();
    const p = proposal('call-0001', { command: ['rm', 'x'] });
    const pending = mediator.decide(p, controller.signal);
    await new Promise((r) => setTimeout(r, 10));
    controller.abort(new Error('SIGINT'));
    await expect(pending).rejects.toThrow('SIGINT');
    const stopped = await mediator.refuseForStop(p, 'cancelled');
    expect(stopped).toMatchObject({ kind: 'refused', status: 'denied' });
    expect(stopped.decision.decision).toBe('approval_required');
    expect(events.map((e) => e.type)).toEqual([
      'permission_decision',
      'approval_requested',
      'approval_received',
    ]);
    expect(events[2]?.data).toMatchObject({ outcome: 'cancelled', approver: null });
  });
});

describe('waiting for a person is not the agent’s time', () => {
  it('elapsed time leaves out the pauses', () => {
    const t = new BudgetTracker(
      {
        maxModelTurns: 5,
        maxToolCalls: 5,
        maxParallelToolCalls: 1,
        maxWallTimeSeconds: 10,
        maxInputTokens: 1,
        maxOutputTokens: 1,
        maxTotalCost: undefined,
        maxToolResultChars: 1,
        maxRetriesPerModelCall: 0,
        maxRetriesPerToolCall: 0,
      },
      1_000,
    );
    t.pause(3_000);
    expect(t.elapsedSeconds(60_000)).toBe(2);
    t.resume(60_000);
    expect(t.elapsedSeconds(61_000)).toBe(3);
    expect(t.beforeToolCalls(1, 67_000)).toBeUndefined();
    expect(t.beforeToolCalls(1, 68_000)).toMatchObject({ budget: 'max_wall_time_seconds' });
    t.close();
  });

  it('the deadline does not fire while paused, and fires after the rest of the budget', async () => {
    const t = new BudgetTracker({
      maxModelTurns: 5,
      maxToolCalls: 5,
      maxParallelToolCalls: 1,
      maxWallTimeSeconds: 0.2,
      maxInputTokens: 1,
      maxOutputTokens: 1,
      maxTotalCost: undefined,
      maxToolResultChars: 1,
      maxRetriesPerModelCall: 0,
      maxRetriesPerToolCall: 0,
    });
    const deadline = t.deadline;
    t.pause();
    await new Promise((r) => setTimeout(r, 400));
    expect(deadline.aborted).toBe(false);
    t.resume();
    await new Promise((r) => setTimeout(r, 400));
    expect(deadline.aborted).toBe(true);
    t.close();
  });
});
