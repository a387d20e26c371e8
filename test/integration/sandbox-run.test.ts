// `cfh sandbox run -- CMD` against the real engine: exit status, streams, hardening
// inside the container, workspace modes, and the evidence left behind.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chown, mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { verifyEventChain } from '../../src/evidence/event-log.js';
import {
  cfh,
  containersOfRun,
  docker,
  onlyRunDir,
  readEvents,
  readJson,
  removeDir,
  runIdOf,
  tempDir,
} from './helpers.js';

let scratch: string;
let workspace: string;
let n = 0;

beforeAll(async () => {
  scratch = await tempDir('run');
  workspace = path.join(scratch, 'ws');
  await mkdir(workspace);
  await writeFile(path.join(workspace, 'hello.txt'), 'hello from the host\n');
});
afterAll(async () => {
  await removeDir(scratch);
});

/** A fresh artifact root per run, so each test finds exactly its own run directory. */
async function run(args: string[], env: Record<string, string> = {}) {
  n += 1;
  const artifactRoot = path.join(scratch, `art-${n}`);
  const result = await cfh(
    ['sandbox', 'run', '--workspace', workspace, '--artifact-root', artifactRoot, ...args],
    { env },
  );
  return { ...result, artifactRoot };
}

describe('exit status and streams', () => {
  it('passes the command exit status through and keeps stdout and stderr apart', async () => {
    const r = await run(['--', 'sh', '-c', 'echo to-out; echo to-err >&2; exit 3']);
    expect(r.exitCode).toBe(3);
    expect(r.stdout).toBe('to-out\n');
    expect(r.stderr).toContain('to-err\n');
    expect(r.stderr).not.toContain('to-out');
  });

  it('delivers all output of a large interleaved stream before exiting', async () => {
    const r = await run(['--', 'sh', '-c', 'seq 1 200000; seq 1 50000 >&2']);
    expect(r.exitCode).toBe(0);
    const out = r.stdout.trimEnd().split('\n');
    expect(out).toHaveLength(200000);
    expect(out.at(-1)).toBe('200000');
    // The command's last line, then cfh's own line naming the run (run-said.ts).
    const err = r.stderr.trimEnd().split('\n');
    expect(err.at(-2)).toBe('50000');
    expect(err.at(-1)).toMatch(/^cfh: run \S+ completed \(exit 0\); evidence in /);
  });

  it('--json captures instead of streaming and prints one object', async () => {
    const r = await run(['--json', '--', 'sh', '-c', 'echo out; echo err >&2; exit 7']);
    expect(r.exitCode).toBe(7);
    const result = JSON.parse(r.stdout) as Record<string, unknown>;
    expect(result).toMatchObject({
      status: 'completed',
      exitCode: 7,
      terminalReason: 'exited_nonzero',
      stdout: { text: 'out\n', truncated: false },
      stderr: { text: 'err\n', truncated: false },
    });
    expect(result.artifactDir).toBe(await onlyRunDir(r.artifactRoot));
    expect(result.timings).toHaveProperty('totalMs');
  });

  it('bounds output at the profile limit and records the truncation', async () => {
    const profile = path.join(scratch, 'small-output.yaml');
    await writeFile(profile, 'extends: default\nname: small-output\nlimits:\n  outputBytes: 1k\n');
    const r = await run([
      '--profile',
      profile,
      '--json',
      '--',
      'sh',
      '-c',
      'head -c 100000 /dev/zero | tr "\\0" a',
    ]);
    expect(r.exitCode).toBe(0);
    const result = JSON.parse(r.stdout) as { stdout: { text: string; truncated: boolean } };
    expect(result.stdout.truncated).toBe(true);
    expect(result.stdout.text).toHaveLength(1024);
    const dir = await onlyRunDir(r.artifactRoot);
    expect((await stat(path.join(dir, 'outputs', 'stdout'))).size).toBe(1024);
    const limit = (await readEvents(dir)).find((e) => e.type === 'limit_reached');
    expect(limit?.data).toMatchObject({
      limit: 'output_bytes',
      stream: 'stdout',
      bytesSeen: 100000,
      bytesKept: 1024,
    });
  });
});

describe('hardening inside the container', () => {
  it('runs with no capabilities, no-new-privileges, seccomp filtering and a non-root user', async () => {
    const r = await run(
      [
        '--',
        'sh',
        '-c',
        'grep -E "^(CapEff|CapPrm|CapBnd|NoNewPrivs|Seccomp):" /proc/self/status; id -u; cat /proc/1/comm',
      ],
      {
        CFH_CANARY_SECRET: 'canary-value-1234',
      },
    );
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toMatch(/^CapEff:\s+0000000000000000$/m);
    expect(r.stdout).toMatch(/^CapPrm:\s+0000000000000000$/m);
    expect(r.stdout).toMatch(/^CapBnd:\s+0000000000000000$/m);
    expect(r.stdout).toMatch(/^NoNewPrivs:\s+1$/m);
    expect(r.stdout).toMatch(/^Seccomp:\s+2$/m);
    const lines = r.stdout.trim().split('\n');
    expect(Number(lines.at(-2))).not.toBe(0);
    // An init process is PID 1, not the command.
    expect(lines.at(-1)).toMatch(/^(docker-init|tini)$/);
  });

  it('passes nothing from the host environment and exposes no engine socket', async () => {
    const r = await run(
      ['--', 'sh', '-c', 'env; ls -l /var/run/docker.sock /run/docker.sock 2>&1; true'],
      {
        CFH_CANARY_SECRET: 'canary-value-1234',
      },
    );
    expect(r.exitCode).toBe(0);
    expect(r.stdout).not.toContain('canary-value-1234');
    expect(r.stdout).not.toContain('CFH_CANARY_SECRET');
    expect(r.stdout).toMatch(/docker\.sock'?: No such file or directory/);
    expect(r.stdout).not.toMatch(/^srw/m);
  });

  it('keeps the root filesystem read-only, /tmp writable and bounded, and only lo as interface', async () => {
    const r = await run([
      '--',
      'sh',
      '-c',
      'touch /usr/x 2>&1; touch /tmp/ok && echo tmp-ok; ls /sys/class/net; grep " /tmp " /proc/mounts',
    ]);
    expect(r.stdout).toContain('Read-only file system');
    expect(r.stdout).toContain('tmp-ok');
    expect(r.stdout).toMatch(/^lo$/m);
    expect(r.stdout.match(/^(eth|veth|ens)\w*$/m)).toBeNull();
    expect(r.stdout).toMatch(/tmpfs \/tmp tmpfs .*size=65536k/);
  });
});

describe('workspace modes', () => {
  it('a write to the ro workspace fails with EROFS and the host file is untouched', async () => {
    const r = await run(['--', 'sh', '-c', 'cat hello.txt; echo changed > hello.txt']);
    expect(r.stdout).toBe('hello from the host\n');
    expect(r.stderr).toContain('Read-only file system');
    expect(r.exitCode).not.toBe(0);
    expect(await readFile(path.join(workspace, 'hello.txt'), 'utf8')).toBe('hello from the host\n');
  });

  it('a rw workspace (untrusted-repo) accepts writes, owned as docs/operators.md says', async () => {
    const rw = path.join(scratch, 'rw-ws');
    await mkdir(rw);
    const isRoot = process.getuid?.() === 0;
    // As root, cfh runs the sandbox as the workspace owner: give it a non-root owner.
    if (isRoot) await chown(rw, 4321, 4321);
    n += 1;
    const artifactRoot = path.join(scratch, `art-${n}`);
    const r = await cfh([
      'sandbox',
      'run',
      '--profile',
      'untrusted-repo',
      '--workspace',
      rw,
      '--artifact-root',
      artifactRoot,
      '--',
      'sh',
      '-c',
      'echo built > out.txt; id -u',
    ]);
    expect(r.exitCode).toBe(0);
    const written = await stat(path.join(rw, 'out.txt'));
    const expectedUid = isRoot ? 4321 : process.getuid?.();
    expect(written.uid).toBe(expectedUid);
    expect(r.stdout.trim()).toBe(String(expectedUid));
    const snapshot = await readJson<{ sandboxUser: { reason: string } }>(
      path.join(await onlyRunDir(artifactRoot), 'snapshot.json'),
    );
    expect(snapshot.sandboxUser.reason).toBe(isRoot ? 'workspace-owner' : 'invoking-user');
  });

  it('as root with a root-owned rw workspace the sandbox would be nobody: refused, not run', async () => {
    if (process.getuid?.() !== 0) return;
    const rw = path.join(scratch, 'root-ws');
    await mkdir(rw);
    n += 1;
    const artifactRoot = path.join(scratch, `art-${n}`);
    const r = await cfh([
      'sandbox',
      'run',
      '--profile',
      'untrusted-repo',
      '--workspace',
      rw,
      '--artifact-root',
      artifactRoot,
      '--',
      'sh',
      '-c',
      'id -u; touch x',
    ]);
    // Every write would fail with EACCES: said before the run (sandbox-user-owner.test.ts).
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain('cfh: the sandbox user 65534:65534 cannot write');
    expect(r.exitCode).toBe(125);
  });

  it('extra --mount entries keep their modes', async () => {
    const data = path.join(scratch, 'data');
    const out = path.join(scratch, 'outdir');
    await mkdir(data);
    await mkdir(out);
    await writeFile(path.join(data, 'in.txt'), 'input\n');
    // As root with a root-owned workspace the sandbox runs as nobody (65534).
    if (process.getuid?.() === 0) await chown(out, 65534, 65534);
    const r = await run([
      '--mount',
      `${data}:/data`,
      '--mount',
      `${out}:/out:rw`,
      '--',
      'sh',
      '-c',
      'cat /data/in.txt; touch /data/no 2>&1; id -u > /dev/null; cp /data/in.txt /out/copied 2>&1; true',
    ]);
    expect(r.stdout).toContain('input');
    expect(r.stdout).toContain('Read-only file system');
    expect(await readFile(path.join(out, 'copied'), 'utf8')).toBe('input\n');
  });
});

describe('evidence', () => {
  it('records snapshot, ordered hash-chained events, state and report for a run', async () => {
    const r = await run(['--', 'true']);
    expect(r.exitCode).toBe(0);
    const dir = await onlyRunDir(r.artifactRoot);
    const runId = runIdOf(dir);
    const snapshot = await readJson<Record<string, any>>(path.join(dir, 'snapshot.json'));
    const image = await docker.getImage(snapshot.image.ref as string).inspect();
    expect(snapshot.image.id).toBe(image.Id);
    expect(snapshot.runId).toBe(runId);
    expect(snapshot.profile.name).toBe('default');
    expect(snapshot.profile.digest).toMatch(/^[0-9a-f]{64}$/);
    expect(snapshot.containerSpec).toMatchObject({
      capDrop: ['ALL'],
      readOnlyRootfs: true,
      noNewPrivileges: true,
      init: true,
      privileged: false,
      networkMode: 'none',
      workingDir: '/workspace',
    });
    expect(snapshot.containerSpec.seccomp.sha256).toMatch(/^[0-9a-f]{64}$/);
    // With the network disabled, cfh's /etc/hosts (localhost) from the run directory.
    expect(snapshot.containerSpec.mounts).toMatchObject([
      { source: workspace, target: '/workspace', mode: 'ro' },
      { source: path.join(dir, 'hosts'), target: '/etc/hosts', mode: 'ro' },
    ]);
    expect(snapshot.containerSpec.envNames).toEqual(['HOME', 'LANG', 'PATH']);
    expect(snapshot.command).toEqual(['true']);

    const body = await readFile(path.join(dir, 'events.jsonl'), 'utf8');
    expect(verifyEventChain(body)).toMatchObject({ ok: true });
    const types = (await readEvents(dir)).map((e) => e.type);
    // The evidence files enter the chain as they are written (artifact_written).
    expect(types).toEqual([
      'artifact_written',
      'artifact_written',
      'artifact_written',
      'run_created',
      'container_created',
      'container_started',
      'container_exited',
      'container_removed',
      'artifact_written',
      'artifact_written',
      'run_finished',
    ]);

    const state = await readJson(path.join(dir, 'state.json'));
    expect(state).toMatchObject({ runId, state: 'completed', exitCode: 0 });
    const report = await readJson<Record<string, any>>(path.join(dir, 'report.json'));
    expect(report).toMatchObject({
      runId,
      status: 'completed',
      exitCode: 0,
      container: { removed: true },
    });
    expect(report.lastEvent.seq).toBe(types.length);
    expect(await containersOfRun(runId)).toEqual([]);
  });

  it('records env names but never env values', async () => {
    const profile = path.join(scratch, 'with-env.yaml');
    await writeFile(
      profile,
      'extends: default\nname: with-env\nenv:\n  API_TOKEN: literal-token-value-42\n',
    );
    const r = await run(['--profile', profile, '--', 'sh', '-c', 'echo "$API_TOKEN"']);
    expect(r.stdout).toBe('literal-token-value-42\n');
    const dir = await onlyRunDir(r.artifactRoot);
    for (const file of ['snapshot.json', 'events.jsonl', 'state.json', 'report.json']) {
      expect(await readFile(path.join(dir, file), 'utf8')).not.toContain('literal-token-value-42');
    }
    const snapshot = await readJson<Record<string, any>>(path.join(dir, 'snapshot.json'));
    expect(snapshot.containerSpec.envNames).toContain('API_TOKEN');
    expect(snapshot.profile.resolved.env.API_TOKEN).toMatch(/^sha256:[0-9a-f]{64}$/);
  });

  it('cfh runs list and runs show read the evidence back', async () => {
    const r = await run(['--', 'sh', '-c', 'exit 4']);
    const dir = await onlyRunDir(r.artifactRoot);
    const list = await cfh(['runs', 'list', '--json', '--artifact-root', r.artifactRoot]);
    expect(JSON.parse(list.stdout)).toEqual([
      expect.objectContaining({ runId: runIdOf(dir), state: 'completed', exitCode: 4 }),
    ]);
    const show = await cfh(['runs', 'show', runIdOf(dir), '--artifact-root', r.artifactRoot]);
    expect(show.exitCode).toBe(0);
    expect(show.stdout).toMatch(/evidence\s+verified/);
    expect(show.stdout).toContain('container_exited');
    const missing = await cfh(['runs', 'show', '../etc', '--artifact-root', r.artifactRoot]);
    expect(missing.exitCode).not.toBe(0);
  });
});

describe('tamper evidence', () => {
  it('runs show reports an edited line and a removed tail as a broken chain', async () => {
    const r = await run(['--', 'true']);
    const dir = await onlyRunDir(r.artifactRoot);
    const runId = runIdOf(dir);
    const events = path.join(dir, 'events.jsonl');
    const original = await readFile(events, 'utf8');
    const lines = original.trimEnd().split('\n');

    // Drop the last two lines: the chain of what is left still verifies, state.json does not agree.
    await writeFile(events, `${lines.slice(0, -2).join('\n')}\n`);
    const truncated = await cfh(['runs', 'show', runId, '--artifact-root', r.artifactRoot]);
    expect(truncated.exitCode).toBe(1);
    expect(truncated.stdout).toMatch(
      /BROKEN\s+state\.json says completed but the log has no run_finished/,
    );

    // Edit a recorded exit code in place.
    await writeFile(events, original.replace('"exitCode":0', '"exitCode":1'));
    const edited = await cfh(['runs', 'show', runId, '--artifact-root', r.artifactRoot]);
    expect(edited.exitCode).toBe(1);
    expect(edited.stdout).toMatch(
      /BROKEN\s+events\.jsonl:\d+ \(seq \d+[^)]*\): hash does not match the line \(edited\)/,
    );
  });
});
