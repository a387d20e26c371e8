// cfh on a real pseudo-terminal, for the approval prompt: util-linux `script` (in bsdutils,
// on every Debian machine) runs the CLI with the pty as its controlling terminal, stdin,
// stdout and stderr; what the test writes to script's stdin is typed at that terminal
// (`\x03` is Ctrl-C: the line discipline sends SIGINT), and what cfh prints comes back on
// script's stdout. `exec` makes cfh the pty's session leader itself, with no shell between.
import { execa } from 'execa';
import { CFH_MAIN, REPO_ROOT, baseEnv } from './helpers.js';

function shellQuote(word: string): string {
  return `'${word.replace(/'/g, `'\\''`)}'`;
}

function spawnScript(command: string, env: Record<string, string>) {
  return execa('script', ['-qefc', command, '/dev/null'], {
    reject: false,
    extendEnv: false,
    env: baseEnv({ TERM: 'dumb', ...env }),
    cwd: REPO_ROOT,
    stdin: 'pipe',
    stdout: 'pipe',
    stderr: 'pipe',
  });
}

export class PtyCfh {
  readonly #child: ReturnType<typeof spawnScript>;
  #output = '';
  /** How far `waitFor` has consumed the output. */
  #seen = 0;
  #waiters: (() => void)[] = [];
  #exited = false;

  private constructor(args: readonly string[], env: Record<string, string>, background: boolean) {
    const cfhCommand = [process.execPath, CFH_MAIN, ...args].map(shellQuote).join(' ');
    // In the background: a job-control shell (`sh -m`) starts cfh as a background job, in a
    // process group that is not the terminal's foreground one.
    const command = background
      ? `exec sh -mc ${shellQuote(`${cfhCommand} & wait`)}`
      : `exec ${cfhCommand}`;
    this.#child = spawnScript(command, env);
    this.#child.stdout.setEncoding('utf8');
    this.#child.stdout.on('data', (chunk: string) => {
      this.#output += chunk.replace(/\r\n/g, '\n');
      for (const w of this.#waiters.splice(0)) w();
    });
    void this.#child.finally(() => {
      this.#exited = true;
      for (const w of this.#waiters.splice(0)) w();
    });
  }

  static start(args: readonly string[], env: Record<string, string> = {}): PtyCfh {
    return new PtyCfh(args, env, false);
  }

  /** `cfh … &` at an interactive shell: the terminal is there, but not cfh's to read. */
  static startInBackground(args: readonly string[], env: Record<string, string> = {}): PtyCfh {
    return new PtyCfh(args, env, true);
  }

  /** Everything the terminal showed so far. */
  get output(): string {
    return this.#output;
  }

  /**
   * Waits until the output after what earlier waits consumed contains `text`; returns that
   * stretch of output (up to and including the match) and consumes it.
   */
  async waitFor(text: string, timeoutMs = 60_000): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const at = this.#output.indexOf(text, this.#seen);
      if (at >= 0) {
        const stretch = this.#output.slice(this.#seen, at + text.length);
        this.#seen = at + text.length;
        return stretch;
      }
      if (this.#exited)
        throw new Error(`cfh exited before showing ${JSON.stringify(text)}:\n${this.#output}`);
      const left = deadline - Date.now();
      if (left <= 0)
        throw new Error(`no ${JSON.stringify(text)} within ${timeoutMs} ms:\n${this.#output}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.#waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  /** Types `text` at the terminal (add `\n` for Enter). */
  type(text: string): void {
    this.#child.stdin.write(text);
  }

  /** Ctrl-C at the terminal. */
  interrupt(): void {
    this.type('\x03');
  }

  async exit(): Promise<{ exitCode: number; output: string }> {
    const result = await this.#child;
    return { exitCode: result.exitCode ?? -1, output: this.#output };
  }

  /** After a failed assertion: end cfh the way a person would (it cleans up), then wait. */
  async stop(): Promise<void> {
    if (this.#exited) return;
    this.interrupt();
    const timer = setTimeout(() => this.#child.kill('SIGINT'), 5_000);
    await this.#child;
    clearTimeout(timer);
  }
}
