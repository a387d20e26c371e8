// The CFC example's `exec` host tool: stands in for a deployment by appending what it was
// given to a local file (DEPLOY_LOG). It runs on the host, never in a container, and touches
// no network: the example is offline.
import { appendFileSync } from 'node:fs';

const log = process.env.DEPLOY_LOG;
if (log === undefined) {
  process.stderr.write('deploy: no DEPLOY_LOG\n');
  process.exit(2);
}
const token = process.argv[2] ?? '';
appendFileSync(log, `${new Date().toISOString()} deployed with a token of ${token.length} chars\n`);
process.stdout.write('deployed\n');
