// cfh's own stdin and terminal, as `sandbox run -i`/`-t` use them: the stream forwarded to
// the command, the terminal's size (and its changes, SIGWINCH, which Node reports as
// stdout's `resize`), and raw mode while a `-it` session is attached, always restored: on
// the normal path by the caller's `finally`, and by the process's `exit` if cfh leaves
// another way (a third signal, the cancel grace running out).
import type { TerminalSizeSource } from '../engine/command/sandbox-run.js';

export interface HostInput {
  readonly stream: NodeJS.ReadableStream;
  /** stdin is a terminal (what `-t` needs). */
  readonly isTerminal: boolean;
  /** The terminal the session's output is shown on, for its size. */
  readonly size: TerminalSizeSource;
  /**
   * Raw mode on stdin's terminal: every key goes to the command as typed (Ctrl-C too, as
   * with `docker run -it`). Returns the restore, idempotent.
   */
  raw(): () => void;
}

interface TtyIn extends NodeJS.ReadableStream {
  isTTY?: boolean;
  isRaw?: boolean;
  setRawMode?(mode: boolean): unknown;
}

interface TtyOut extends NodeJS.WritableStream {
  isTTY?: boolean;
  rows?: number;
  columns?: number;
}

export function hostInput(stdin: TtyIn, stdout: TtyOut, process: NodeJS.EventEmitter): HostInput {
  return {
    stream: stdin,
    isTerminal: stdin.isTTY === true,
    size: {
      size: () =>
        stdout.isTTY === true && stdout.rows !== undefined && stdout.columns !== undefined
          ? { rows: stdout.rows, columns: stdout.columns }
          : undefined,
      onResize: (listener) => {
        stdout.on('resize', listener);
        return () => {
          stdout.off('resize', listener);
        };
      },
    },
    raw: () => {
      const setRawMode = stdin.setRawMode?.bind(stdin);
      if (stdin.isTTY !== true || setRawMode === undefined) return () => undefined;
      const was = stdin.isRaw === true;
      let restored = false;
      const restore = (): void => {
        if (restored) return;
        restored = true;
        process.off('exit', restore);
        setRawMode(was);
      };
      process.on('exit', restore);
      setRawMode(true);
      return restore;
    },
  };
}
