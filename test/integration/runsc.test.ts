// gVisor as a runtime: where the engine has runsc registered,
// a run under it works, stays hardened, and the snapshot and report say how the seccomp
// filter is applied (AH-DIAG-2). Where it is missing, a runsc profile is refused with
// 125 before any container exists (AH-CAP-4).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chown, mkdir } from 'node:fs/promises';
import { release } from 'node:os';
import path from 'node:path';
import {
  cfh,
  containersOfRun,
  docker,
  onlyRunDir,
  readJson,
  removeDir,
  runIdOf,
  tempDir,
} from './helpers.js';

let scratch: string;
let workspace: string;
let registered = false;

beforeAll(async () => {
  scratch = await tempDir('runsc');
  workspace = path.join(scratch, 'ws');
  await mkdir(workspace);
  const info = (await docker.info()) as { Runtimes?: Record<string, unknown> };
  registered = Object.keys(info.Runtimes ?? {}).includes('runsc');
  if (!registered)
    console.log(
      'runsc is not registered with this engine: the gVisor run is skipped, the refusal is tested',
    );
});
afterAll(async () => {
  await removeDir(scratch);
});

describe('runtime runsc', () => {
  it('runs under gVisor, hardened, with the seccomp enforcement recorded', async (ctx) => {
    if (!registered) ctx.skip('runsc not registered with the engine');
    const art = path.join(scratch, 'art');
    const r = await cfh([
      'sandbox',
      'run',
      '--runtime',
      'runsc',
      '--workspace',
      workspace,
      '--artifact-root',
      art,
      '--',
      'sh',
      '-c',
      'uname -r; id -u; grep CapEff /proc/self/status; exit 5',
    ]);
    expect(r.exitCode).toBe(5);
    // gVisor's own kernel answers (it reports 4.4.0), not the host's.
    expect(r.stdout.split('\n')[0]).not.toBe(release());
    expect(r.stdout.split('\n')[0]).toBe('4.4.0');
    expect(r.stdout).toMatch(/^CapEff:\s+0000000000000000$/m);
    const dir = await onlyRunDir(art);
    const snapshot = await readJson<Record<string, any>>(path.join(dir, 'snapshot.json'));
    expect(snapshot.runtime).toMatchObject({ requested: 'runsc', engineRuntime: 'runsc' });
    // With --oci-seccomp (scripts/engine-up.sh registers it) gVisor applies the filter;
    // without it the snapshot and report must say the assurance is reduced (AH-DIAG-2).
    const oci = (snapshot.runtime.runtimeArgs as string[]).includes('--oci-seccomp');
    expect(snapshot.seccomp.enforcement).toBe(oci ? 'gvisor-oci-seccomp' : 'not-applied-gvisor');
    // gVisor with the filter applied is stronger than runc: `strong`, resting on the binary.
    expect(snapshot.assurance.level).toBe(oci ? 'strong' : 'reduced');
    if (oci) expect(snapshot.runtime.binaries).toEqual({ runsc: expect.stringMatching(/runsc$/) });
    const report = await readJson<Record<string, any>>(path.join(dir, 'report.json'));
    expect(report.assurance.level).toBe(snapshot.assurance.level);
    expect(await containersOfRun(runIdOf(dir))).toEqual([]);
  });

  // The published limitation (docs/conformance.md, deviations): this gVisor (20221219)
  // refuses statx with AT_NO_AUTOMOUNT, which coreutils' ls and stat pass, with EINVAL; the
  // same call without the flag, and stat()/fstatat (python, most programs), work. The test
  // pins the cause, on an rw workspace as on /tmp, and fails once gVisor accepts the flag,
  // so the deviation is retired with it.
  it('file operations on an rw workspace work; statx with AT_NO_AUTOMOUNT is refused (EINVAL)', async (ctx) => {
    if (!registered) ctx.skip('runsc not registered with the engine');
    const ws = path.join(scratch, 'ws-rw');
    await mkdir(ws);
    await chown(ws, 65534, 65534);
    const probe = [
      'import ctypes, os',
      'libc = ctypes.CDLL(None, use_errno=True)',
      'buf = ctypes.create_string_buffer(256)',
      'def statx(p, flags):',
      '    r = libc.syscall(332, -100, p.encode(), flags, 0x7ff, buf)',
      "    return 'ok' if r == 0 else 'errno%d' % ctypes.get_errno()",
      "open('/workspace/f', 'w').write('x')",
      "os.mkdir('/workspace/d'); os.rename('/workspace/f', '/workspace/d/f')",
      "print('python', os.stat('/workspace/d/f').st_size, sorted(os.listdir('/workspace')))",
      "for p in ('/workspace', '/tmp'):",
      "    print(p, 'plain', statx(p, 0), 'no-automount', statx(p, 0x800))",
    ].join('\n');
    const r = await cfh([
      'sandbox',
      'run',
      '--profile',
      'untrusted-repo',
      '--runtime',
      'runsc',
      '--workspace',
      ws,
      '--artifact-root',
      path.join(scratch, 'art-statx'),
      '--',
      'python3',
      '-c',
      probe,
    ]);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout).toContain("python 1 ['d']");
    expect(r.stdout).toContain('/workspace plain ok no-automount errno22');
    expect(r.stdout).toContain('/tmp plain ok no-automount errno22');
  });

  it('is refused with 125 when the engine does not have it', async (ctx) => {
    if (registered)
      ctx.skip(
        'runsc is registered here; the refusal path is covered by the unit tests of preflight',
      );
    const r = await cfh([
      'sandbox',
      'run',
      '--runtime',
      'runsc',
      '--workspace',
      workspace,
      '--artifact-root',
      path.join(scratch, 'art2'),
      '--',
      'true',
    ]);
    expect(r.exitCode).toBe(125);
    expect(r.stderr).toMatch(/runtime: 'runsc' is not registered/);
  });
});
