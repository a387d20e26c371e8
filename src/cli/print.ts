// The CLI's printer: the only place that writes to the terminal.
export interface Printer {
  out(line: string): void;
  err(line: string): void;
  json(value: unknown): void;
  readonly stdout: NodeJS.WritableStream;
  readonly stderr: NodeJS.WritableStream;
}

export function processPrinter(): Printer {
  return {
    out: (line) => process.stdout.write(`${line}\n`),
    err: (line) => process.stderr.write(`${line}\n`),
    json: (value) => process.stdout.write(`${JSON.stringify(value, null, 2)}\n`),
    stdout: process.stdout,
    stderr: process.stderr,
  };
}
