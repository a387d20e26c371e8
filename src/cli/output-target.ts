// Where `runs export` and `runs report` write what they make: stdout unless `--out FILE`
// names a file, never a file in the current directory by default (a run's evidence is
// not dropped wherever the operator happens to stand), and never a file inside the run
// directory, whose every file the hash chain accounts for (AH-ART-1). Written to stdout,
// the document goes to a pipe or a file the shell opened; a terminal is refused unless
// `--out -` asks for it in so many words.
import path from 'node:path';
import { ConfigError, type ErrorCode } from '../errors.js';
import { isWithin } from '../sandbox/mount-policy.js';
import { isTerminalStream } from './print.js';

export type OutputTarget =
  { readonly kind: 'stdout' } | { readonly kind: 'file'; readonly path: string };

export function outputTarget(options: {
  readonly out: string | undefined;
  /** What is written, as the refusal names it: `OTLP JSON`, `the HTML report`. */
  readonly what: string;
  readonly runDir: string;
  readonly stdout: NodeJS.WritableStream;
  readonly insideCode: ErrorCode;
}): OutputTarget {
  if (options.out === '-') return { kind: 'stdout' };
  if (options.out === undefined) {
    if (isTerminalStream(options.stdout))
      throw new ConfigError(
        'output_is_terminal',
        `refusing to write ${options.what} to a terminal; give --out FILE or pipe it`,
        { field: '--out' },
      );
    return { kind: 'stdout' };
  }
  const out = path.resolve(options.out);
  if (isWithin(out, options.runDir))
    throw new ConfigError(
      options.insideCode,
      `--out: '${out}' is inside the run directory, whose files the chain accounts for`,
      { field: '--out', value: out },
    );
  return { kind: 'file', path: out };
}

/** Writes `body` to stdout and waits until the stream has taken it. */
export function writeStdout(stdout: NodeJS.WritableStream, body: string): Promise<void> {
  return new Promise((resolve, reject) => {
    stdout.write(body, (error) => {
      if (error === null || error === undefined) resolve();
      else reject(error);
    });
  });
}
