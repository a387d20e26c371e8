// The seccomp filter every container runs under. Until per-profile derivation lands
// (issue 4), that is Docker's default for this engine version, carried in seccomp/ as data,
// passed to the engine explicitly so its digest in the evidence is the filter that ran.
import { readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import path from 'node:path';
import { SECCOMP_DIR } from '../paths.js';
import type { SeccompFilter } from '../substrate/container-spec.js';
import { canonicalJson } from '../evidence/canonical-json.js';

const DOCKER_DEFAULT = 'docker-default-20.10.json';

let cached: { json: string; sha256: string } | undefined;

function loadDockerDefault(): { json: string; sha256: string } {
  if (cached === undefined) {
    const parsed: unknown = JSON.parse(
      readFileSync(path.join(SECCOMP_DIR, DOCKER_DEFAULT), 'utf8'),
    );
    const json = canonicalJson(parsed);
    cached = { json, sha256: createHash('sha256').update(json).digest('hex') };
  }
  return cached;
}

export function seccompFilterFor(runtime: 'runc' | 'runsc'): SeccompFilter {
  const { json, sha256 } = loadDockerDefault();
  return {
    source: `seccomp/${DOCKER_DEFAULT}`,
    sha256,
    json,
    // gVisor does not install OCI seccomp filters in the sandbox; the workload meets
    // gVisor's own syscall implementation instead (recorded as reduced assurance, AH-DIAG-2).
    enforcement: runtime === 'runc' ? 'kernel-seccomp' : 'not-applied-gvisor',
  };
}
