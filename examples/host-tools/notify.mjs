// The demo's `exec` host tool: appends one message to a local log, if it holds its token.
// It runs on the host with only the environment cfh gives it (never in a container).
import { appendFileSync } from 'node:fs';

const token = process.env.NOTIFY_TOKEN ?? '';
const log = process.env.NOTIFY_LOG;
if (token.length < 8 || log === undefined) {
  process.stderr.write('notify: no token or no log\n');
  process.exit(2);
}
const message = process.argv[2] ?? '';
appendFileSync(log, `${new Date().toISOString()} ${message}\n`);
process.stdout.write(`notified: ${message}\n`);
