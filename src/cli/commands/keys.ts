// `cfh keys init`: the operator's Ed25519 key pair for signing terminal records. The
// private key lives in the key directory (CFH_KEY_DIR, else ~/.config/cfh/keys), mode 0600
// in a 0700 directory, never under the artifact root; runs refuse a mount that would show
// it to a sandbox (mount-policy.ts, checkSigningKey).
import path from 'node:path';
import { isWithin } from '../../sandbox/mount-policy.js';
import { createOperatorKey, keyPaths, shownFingerprint } from '../../evidence/signing.js';
import { ConfigError } from '../../errors.js';
import type { CliDeps } from '../deps.js';
import { reportFailure } from '../report-failure.js';

export async function keysInitCommand(args: { json: boolean }, deps: CliDeps): Promise<number> {
  try {
    const dir = path.resolve(deps.env.keyDir);
    const root = path.resolve(deps.env.artifactRoot);
    if (isWithin(dir, root) || isWithin(root, dir))
      throw new ConfigError(
        'signing_key_exposed',
        `the key directory '${dir}' and the artifact root '${root}' overlap; set CFH_KEY_DIR elsewhere`,
        { field: 'keyDir', value: dir },
      );
    const { fingerprint, createdAt } = await createOperatorKey(dir);
    const files = keyPaths(dir);
    if (args.json) deps.printer.json({ keyDir: dir, ...files, fingerprint, createdAt });
    else {
      deps.printer.out(`private key ${files.privateKey} (0600: keep it outside every mount)`);
      deps.printer.out(`public key  ${files.publicKey}`);
      deps.printer.out(`fingerprint ${shownFingerprint(fingerprint)}`);
      deps.printer.out(`created     ${createdAt} (recorded in ${files.record})`);
      deps.printer.out(
        'runs are signed from now on; cfh audit verifies them with the public key, and warns (does not fail) on a run that started before this key',
      );
    }
    return 0;
  } catch (error) {
    return reportFailure(error, deps, { json: args.json });
  }
}
