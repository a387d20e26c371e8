// The person at the terminal as an approval source (governance extension, "pause for human
// approval"): the prompt goes to stderr and shows exactly what will run (the tool, its
// arguments, the rule that asked and why, the args digest); the answer is read from the
// controlling terminal (/dev/tty), never from stdin, which may carry other data. Everything
// shown that the model chose is escaped for the terminal (terminal-text.ts). Answers:
//   y  approve this call once     r  approve this rule for the rest of the run
//   n  deny (also: empty, end of input, anything else)
// Stronger authentication (require_stronger_auth) is given only by typing the first 12 hex
// digits of the args digest: proof the person read this exact call. SIGINT at the prompt is
// the run's cancellation (main.ts aborts the signal): the wait ends and nothing of the call
// runs. Lines typed before the prompt appears are discarded: they answer nothing.
import { closeSync, openSync, readFileSync } from 'node:fs';
import tty from 'node:tty';
import type {
  ApprovalAnswer,
  ApprovalRequest,
  ApprovalSource,
  RuleApprovals,
} from '../mediator/approvals.js';
import { escapeLine as terminalSafe, terminalJson } from './terminal-text.js';

/** How many hex digits of the args digest a person types for stronger authentication. */
export const STRONGER_AUTH_DIGITS = 12;
/** Arguments longer than this are cut on the prompt, with the cut said (the digest covers all). */
export const ARGS_SHOWN_MAX_CHARS = 16_000;
/** An answer is a few characters; a longer line is not one. */
const MAX_ANSWER_CHARS = 256;
/** Input that arrived before the prompt was shown is dropped for this long after opening. */
const SETTLE_MS = 50;

/** One question's use of the terminal. */
export interface PromptTerminal {
  /** Drops what was typed before the prompt (type-ahead answers nothing). */
  settle(signal: AbortSignal): Promise<void>;
  write(text: string): void;
  /** The next line typed; undefined at end of input. Rejects with the signal's reason. */
  readLine(signal: AbortSignal): Promise<string | undefined>;
  close(): void;
}

export class TtyApprovals implements ApprovalSource {
  readonly surface = 'tty' as const;
  readonly user: string;
  readonly #open: () => PromptTerminal | undefined;
  readonly #rules: RuleApprovals;
  /** One prompt at a time. */
  #queue: Promise<unknown> = Promise.resolve();

  constructor(options: {
    user: string;
    open: () => PromptTerminal | undefined;
    /** "Approve this rule" answers are remembered here, for the rest of the run. */
    rules: RuleApprovals;
  }) {
    this.user = options.user;
    this.#open = options.open;
    this.#rules = options.rules;
  }

  answer(request: ApprovalRequest, signal: AbortSignal): Promise<ApprovalAnswer | undefined> {
    const next = this.#queue.then(() => this.#ask(request, signal));
    this.#queue = next.catch(() => undefined);
    return next;
  }

  async #ask(request: ApprovalRequest, signal: AbortSignal): Promise<ApprovalAnswer | undefined> {
    signal.throwIfAborted();
    const term = this.#open();
    // The terminal went away since the run started: nobody can be asked.
    if (term === undefined) return undefined;
    try {
      await term.settle(signal);
      const strong = request.decision === 'require_stronger_auth';
      term.write(renderPrompt(request, strong));
      const line = await term.readLine(signal);
      const answer = interpret(request, strong, line);
      const approver = { kind: 'human', user: this.user, surface: 'tty' } as const;
      if (answer.kind === 'rule') this.#rules.approveForRun(request.rule);
      term.write(`${confirmation(request, answer)}\n`);
      return answer.kind === 'deny'
        ? { granted: false, approver, why: answer.why }
        : { granted: true, approver, scope: answer.kind === 'rule' ? 'rule' : 'call' };
    } finally {
      term.close();
    }
  }
}

type Interpreted = { kind: 'once' } | { kind: 'rule' } | { kind: 'deny'; why: string };

function interpret(
  request: ApprovalRequest,
  strong: boolean,
  line: string | undefined,
): Interpreted {
  if (line === undefined) return { kind: 'deny', why: 'no answer (end of input at the terminal)' };
  const text = line.trim().toLowerCase();
  if (strong) {
    const want = request.argsDigest.slice(
      'sha256:'.length,
      'sha256:'.length + STRONGER_AUTH_DIGITS,
    );
    return text === want
      ? { kind: 'once' }
      : {
          kind: 'deny',
          why: 'stronger authentication failed: the digits typed are not the digest',
        };
  }
  if (text === 'y' || text === 'yes') return { kind: 'once' };
  if (text === 'r' || text === 'rule') return { kind: 'rule' };
  if (text === '' || text === 'n' || text === 'no')
    return { kind: 'deny', why: 'denied at the terminal' };
  return { kind: 'deny', why: 'denied at the terminal (the answer was not y, r or n)' };
}

function confirmation(request: ApprovalRequest, answer: Interpreted): string {
  const call = terminalSafe(request.callId);
  if (answer.kind === 'once') return `cfh: approved ${call} (this call only)`;
  if (answer.kind === 'rule')
    return `cfh: approved rule ${terminalSafe(request.rule)} for the rest of this run`;
  return `cfh: denied ${call}: ${answer.why}`;
}

/** What the person reads before answering. Exported for the unit tests. */
export function renderPrompt(request: ApprovalRequest, strong: boolean): string {
  const tool = request.tool;
  const where = tool.executor === 'sandbox' ? 'runs in the sandbox' : 'runs on the host';
  let args = terminalJson(request.args);
  let cut = '';
  if (!strong && args.length > ARGS_SHOWN_MAX_CHARS) {
    cut = `\n  (${args.length - ARGS_SHOWN_MAX_CHARS} more characters not shown; the digest covers them all)`;
    args = args.slice(0, ARGS_SHOWN_MAX_CHARS);
  }
  const indented = args.replace(/\n/g, '\n    ');
  const lines = [
    '',
    `cfh: approval needed for ${terminalSafe(request.callId)} (${terminalSafe(request.decision)})`,
    `  rule:   ${terminalSafe(request.rule)}`,
    `  reason: ${terminalSafe(request.reason)}`,
    `  tool:   ${terminalSafe(tool.name)} (${tool.riskClass}, ${where})`,
    `  args:   ${indented}${cut}`,
    `  digest: ${request.argsDigest}`,
  ];
  if (strong) {
    lines.push(
      `  This call needs stronger authentication: type the first ${STRONGER_AUTH_DIGITS} hex digits of the digest to approve it; anything else denies.`,
      `approve ${terminalSafe(request.callId)}? digest digits: `,
    );
  } else {
    lines.push(
      `approve ${terminalSafe(request.callId)}? [y] this call  [r] rule ${terminalSafe(request.rule)} for this run  [n] deny (default): `,
    );
  }
  return lines.join('\n');
}

/**
 * The controlling terminal, for one question: answers from /dev/tty (its own open file
 * description, so stdin's modes are not touched), the prompt to `output` (stderr). The
 * terminal stays in canonical mode: the line discipline edits and echoes, and Ctrl-C is
 * SIGINT. Undefined when there is no controlling terminal.
 */
export function openControllingTerminal(
  output: NodeJS.WritableStream,
  options: { foreground?: boolean } = {},
): PromptTerminal | undefined {
  // A cfh in the background (`cfh … &`) would be stopped by SIGTTIN on its first read:
  // a hang. Checked at each question: not in the terminal's foreground process group
  // then, nobody can be asked (brought back with `fg`, it is asked again).
  if (options.foreground !== false && !inForeground(readSelfStat())) return undefined;
  let fd: number;
  try {
    fd = openSync('/dev/tty', 'r');
  } catch {
    return undefined;
  }
  if (!tty.isatty(fd)) {
    closeSync(fd);
    return undefined;
  }
  return new LineReader(new tty.ReadStream(fd), output);
}

function readSelfStat(): string | undefined {
  try {
    return readFileSync('/proc/self/stat', 'utf8');
  } catch {
    return undefined;
  }
}

/**
 * From /proc/self/stat: a controlling terminal (tty_nr) whose foreground process group
 * (tpgid) is this process's group (pgrp). Fields after the parenthesised name: state ppid
 * pgrp session tty_nr tpgid. Exported for the unit tests.
 */
export function inForeground(stat: string | undefined): boolean {
  if (stat === undefined) return false;
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const [pgrp, ttyNr, tpgid] = [Number(f[2]), Number(f[4]), Number(f[5])];
  return Number.isInteger(pgrp) && ttyNr !== 0 && tpgid > 0 && tpgid === pgrp;
}

/** Whether cfh can ask at all: stderr is a terminal and there is a controlling terminal. */
export function terminalAvailable(stderr: NodeJS.WritableStream & { isTTY?: boolean }): boolean {
  if (stderr.isTTY !== true) return false;
  // Opening reads nothing: no SIGTTIN, whichever process group cfh is in now.
  const probe = openControllingTerminal(stderr, { foreground: false });
  probe?.close();
  return probe !== undefined;
}

class LineReader implements PromptTerminal {
  readonly #input: tty.ReadStream;
  readonly #output: NodeJS.WritableStream;
  #buffer = '';
  #ended = false;
  #discarding = true;
  #wake: (() => void) | undefined;

  constructor(input: tty.ReadStream, output: NodeJS.WritableStream) {
    this.#input = input;
    this.#output = output;
    input.setEncoding('utf8');
    input.on('data', (chunk: string) => {
      if (this.#discarding) return;
      this.#buffer += chunk;
      this.#wake?.();
    });
    input.on('end', () => {
      this.#ended = true;
      this.#wake?.();
    });
    input.on('error', () => {
      this.#ended = true;
      this.#wake?.();
    });
  }

  settle(signal: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      const onAbort = (): void => {
        clearTimeout(timer);
        reject(signal.reason as Error);
      };
      const timer = setTimeout(() => {
        signal.removeEventListener('abort', onAbort);
        this.#discarding = false;
        resolve();
      }, SETTLE_MS);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  write(text: string): void {
    this.#output.write(text);
  }

  async readLine(signal: AbortSignal): Promise<string | undefined> {
    for (;;) {
      signal.throwIfAborted();
      const nl = this.#buffer.indexOf('\n');
      if (nl >= 0) return this.#buffer.slice(0, nl).slice(0, MAX_ANSWER_CHARS + 1);
      if (this.#buffer.length > MAX_ANSWER_CHARS)
        return this.#buffer.slice(0, MAX_ANSWER_CHARS + 1);
      if (this.#ended) return undefined;
      await new Promise<void>((resolve) => {
        const done = (): void => {
          signal.removeEventListener('abort', done);
          this.#wake = undefined;
          resolve();
        };
        this.#wake = done;
        signal.addEventListener('abort', done, { once: true });
      });
    }
  }

  close(): void {
    this.#input.destroy();
  }
}
