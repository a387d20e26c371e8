// Images and toolchains against the real engine (docs/operators.md, "Images and
// toolchains"): a missing image is named with the command that builds THAT image; a
// Dockerfile image is built from the context cfh packs, with no network and nothing pulled,
// and is only a rootfs (the profile's user, no ENTRYPOINT, no HEALTHCHECK, VOLUME refused);
// `image ls` lists it and `image rm` removes only what cfh built. Every image here is the
// test's own (unique content → unique tag) and is removed after.
import { mkdir, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import tar from 'tar-stream';
import { afterAll, describe, expect, it } from 'vitest';
import { loadRecipe } from '../../src/image/recipe.js';
import { cfh, docker, onlyRunDir, readJson, useScratch } from './helpers.js';
import { expectOneLineRefusal, refusal } from './refusal.js';

const scratch = useScratch('image');
const BASE = loadRecipe().ref;
const made: string[] = [];
const nonce = `${String(process.pid)}-${String(Date.now())}`;

afterAll(async () => {
  for (const ref of made)
    await docker
      .getImage(ref)
      .remove({ force: true })
      .catch(() => undefined);
});

/** A context and profile of the test's own; `dockerfile` is written as given. */
async function dockerfileProfile(name: string, dockerfile: string): Promise<string> {
  const dir = scratch.path(name);
  await mkdir(path.join(dir, 'ctx', 'sub'), { recursive: true });
  await writeFile(path.join(dir, 'ctx', 'sub', 'hello.txt'), `hello ${nonce}\n`);
  await writeFile(path.join(dir, 'Dockerfile'), dockerfile);
  return scratch.file(
    `${name}.yaml`,
    [
      'extends: default',
      `name: ${name}`,
      'image:',
      `  dockerfile: ${name}/Dockerfile`,
      `  context: ${name}/ctx`,
      '  args:',
      `    BASE: ${BASE}`,
      '',
    ].join('\n'),
  );
}

function runArgs(
  workspace: string,
  extra: readonly string[],
  command: readonly string[],
): string[] {
  return [
    'sandbox',
    'run',
    '--workspace',
    workspace,
    '--artifact-root',
    scratch.path(`runs-${String(Math.random()).slice(2)}`),
    ...extra,
    '--',
    ...command,
  ];
}

describe('a missing image names the command that builds that image', () => {
  it('a toolchain named by --image: its sets', async () => {
    const ws = await scratch.sampleRepo();
    const r = await refusal(
      runArgs(ws, ['--image', 'toolchain:rust,go'], ['true']),
      scratch.path('never-1'),
    );
    expectOneLineRefusal(
      r,
      /^cfh: image cfh-toolchain:t-[0-9a-f]{16} is missing; run cfh image build --with go,rust$/,
    );
  });

  it('a toolchain named by a profile: its packages and sets', async () => {
    const ws = await scratch.sampleRepo();
    const profile = await scratch.file(
      'pk.yaml',
      `extends: default\nname: pk\nimage:\n  with: [go]\n  packages: [jq, cfh-test-${nonce.replace(/[^0-9]/g, '')}]\n`,
    );
    const r = await refusal(runArgs(ws, ['--profile', profile], ['true']), scratch.path('never-2'));
    expectOneLineRefusal(
      r,
      /^cfh: image cfh-toolchain:t-[0-9a-f]{16} is missing; run cfh image build --with go --packages cfh-test-\d+,jq$/,
    );
  });

  it('a plain local reference: not local, and cfh never pulls (not told to run cfh image build)', async () => {
    const ws = await scratch.sampleRepo();
    const profile = await scratch.file(
      'local.yaml',
      `extends: default\nname: local\nimage: cfh-test-absent:${nonce}\n`,
    );
    for (const extra of [
      ['--profile', profile],
      ['--image', `cfh-test-absent:${nonce}`],
    ]) {
      const r = await refusal(runArgs(ws, extra, ['true']), scratch.path('never-3'));
      expectOneLineRefusal(
        r,
        new RegExp(
          `^cfh: image cfh-test-absent:${nonce} is not in the engine, and cfh never pulls;`,
        ),
      );
      expect(r.stderr).not.toMatch(/cfh image build/);
    }
  });

  it("a Dockerfile image named by a profile: that profile's build", async () => {
    const ws = await scratch.sampleRepo();
    const profile = await dockerfileProfile(
      'absent',
      `ARG BASE\nFROM \${BASE}\nRUN echo ${nonce}-absent\n`,
    );
    const r = await refusal(runArgs(ws, ['--profile', profile], ['true']), scratch.path('never-4'));
    expectOneLineRefusal(
      r,
      new RegExp(
        `^cfh: image cfh-built:d-[0-9a-f]{16} is missing; run cfh image build --profile ${profile.replace(/[.]/g, '\\.')}$`,
      ),
    );
  });
});

describe('a Dockerfile image: built by cfh, only a rootfs', () => {
  it("builds from the packed context with no network, and runs with the profile's hardening", async () => {
    const profile = await dockerfileProfile(
      'df',
      [
        'ARG BASE',
        'FROM ${BASE}',
        'COPY sub/hello.txt /opt/hello.txt',
        // The build's RUN steps have no network: only lo exists (networkmode none).
        'RUN test "$(ls /sys/class/net)" = lo',
        'USER root',
        'ENTRYPOINT ["/bin/echo", "entrypoint-ran"]',
        'HEALTHCHECK --interval=1s CMD touch /tmp/healthcheck-ran',
        '',
      ].join('\n'),
    );
    const built = await cfh(['image', 'build', '--profile', profile, '--json']);
    expect(built.exitCode, built.stderr).toBe(0);
    const result = JSON.parse(built.stdout) as { ref: string; method: string; kind: string };
    made.push(result.ref);
    expect(result).toMatchObject({ method: 'dockerfile', kind: 'dockerfile' });
    expect(result.ref).toMatch(/^cfh-built:d-[0-9a-f]{16}$/);
    // Cached by content: the same context again builds nothing.
    const again = await cfh(['image', 'build', '--profile', profile, '--json']);
    expect(JSON.parse(again.stdout)).toMatchObject({ ref: result.ref, method: 'present' });

    const ws = await scratch.sampleRepo();
    const run = await cfh(
      runArgs(
        ws,
        ['--profile', profile],
        ['sh', '-c', 'cat /opt/hello.txt; id -u; sleep 2; ls /tmp'],
      ),
    );
    expect(run.exitCode, run.stderr).toBe(0);
    expect(run.stdout).toContain(`hello ${nonce}`);
    expect(run.stdout).not.toContain('entrypoint-ran');
    expect(run.stdout).not.toContain('healthcheck-ran');
    const uid = run.stdout.split('\n')[1];
    expect(uid).not.toBe('0');

    const ls = await cfh(['image', 'ls', '--json']);
    expect(ls.exitCode, ls.stderr).toBe(0);
    const rows = JSON.parse(ls.stdout) as { ref: string; builtFrom: string; sizeBytes: number }[];
    const row = rows.find((r) => r.ref === result.ref);
    expect(row?.builtFrom).toBe(
      `dockerfile ${scratch.path('df/Dockerfile')} (context ${scratch.path('df/ctx')})`,
    );
    expect(row?.sizeBytes).toBeGreaterThan(0);

    const rm = await cfh(['image', 'rm', result.ref, '--json']);
    expect(rm.exitCode, rm.stderr).toBe(0);
    expect(JSON.parse(rm.stdout)).toEqual({ removed: [result.ref] });
    await expect(docker.getImage(result.ref).inspect()).rejects.toThrow();
  });

  it("never runs the egress guard (root, NET_ADMIN) on the workload's image", async () => {
    // This image's iptables install nothing: a guard on it would leave the namespace open.
    const profile = await dockerfileProfile(
      'noguard',
      [
        'ARG BASE',
        'FROM ${BASE}',
        'USER root',
        `RUN for t in iptables ip6tables iptables-restore ip6tables-restore; do printf '#!/bin/sh\\nexit 0\\n' > /usr/sbin/$t; chmod 755 /usr/sbin/$t; done; echo ${nonce}-noguard`,
        '',
      ].join('\n'),
    );
    const built = await cfh(['image', 'build', '--profile', profile, '--json']);
    expect(built.exitCode, built.stderr).toBe(0);
    const ref = (JSON.parse(built.stdout) as { ref: string }).ref;
    made.push(ref);
    const ws = await scratch.sampleRepo();
    const root = scratch.path('runs-noguard');
    const run = await cfh([
      'sandbox',
      'run',
      '--workspace',
      ws,
      '--artifact-root',
      root,
      '--image',
      ref,
      '--network',
      'allowlist',
      '--allow',
      '127.0.0.1:9',
      '--',
      'true',
    ]);
    expect(run.exitCode, run.stderr).toBe(0);
    const snapshot = await readJson<{
      image: { ref: string };
      network: { enforcement: { guard: { image: string } } };
    }>(path.join(await onlyRunDir(root), 'snapshot.json'));
    expect(snapshot.image.ref).toBe(ref);
    expect(snapshot.network.enforcement.guard.image).toBe(BASE);
  });

  it('refuses an image whose config declares a VOLUME, before any container', async () => {
    const profile = await dockerfileProfile(
      'vol',
      `ARG BASE\nFROM \${BASE}\nVOLUME /data\nRUN echo ${nonce}-vol\n`,
    );
    const built = await cfh(['image', 'build', '--profile', profile, '--json']);
    expect(built.exitCode, built.stderr).toBe(0);
    made.push((JSON.parse(built.stdout) as { ref: string }).ref);
    const ws = await scratch.sampleRepo();
    const r = await refusal(runArgs(ws, ['--profile', profile], ['true']), scratch.path('never-5'));
    expectOneLineRefusal(r, /^cfh: image cfh-built:d-[0-9a-f]{16} declares VOLUME \/data; /);
  });

  it('refuses a context holding a link, leaving or not, and sends nothing', async () => {
    for (const [name, target] of [
      ['out', '/etc/shadow'],
      ['in', 'hello.txt'],
      ['dir', '/root'],
    ] as const) {
      const profile = await dockerfileProfile(`link-${name}`, `ARG BASE\nFROM \${BASE}\n`);
      await symlink(target, scratch.path(`link-${name}/ctx/sub/link`));
      const r = await cfh(['image', 'build', '--profile', profile]);
      expect(r.exitCode).toBe(1);
      expect(r.stderr.trim()).toMatch(
        /^cfh: image: .*sub\/link is a symbolic link; a context holds regular files and directories only$/,
      );
    }
  });
});

describe('cfh image rm removes only what cfh built', () => {
  it('refuses an image cfh did not build, and leaves it', async () => {
    const ref = `cfh-test-foreign:${nonce}`;
    const pack = tar.pack();
    pack.entry({ name: 'marker' }, nonce);
    pack.finalize();
    const stream = await docker.importImage(Readable.from(pack), {
      repo: 'cfh-test-foreign',
      tag: nonce,
    });
    await new Promise((resolve, reject) => {
      docker.modem.followProgress(stream, (err: Error | null) => {
        if (err) reject(err);
        else resolve(undefined);
      });
    });
    made.push(ref);
    const r = await cfh(['image', 'rm', ref]);
    expect(r.exitCode).toBe(1);
    expect(r.stderr.trim()).toBe(
      `cfh: image ${ref} was not built by cfh; cfh image rm removes only the images cfh image ls lists`,
    );
    expect((await docker.getImage(ref).inspect()).Id).toMatch(/^sha256:/);
    const ls = await cfh(['image', 'ls', '--json']);
    expect((JSON.parse(ls.stdout) as { ref: string }[]).map((x) => x.ref)).not.toContain(ref);
    // A refusal among several names removes none of them (one of the test's own first).
    const profile = await dockerfileProfile(
      'own',
      `ARG BASE\nFROM \${BASE}\nRUN echo ${nonce}-own\n`,
    );
    const built = await cfh(['image', 'build', '--profile', profile, '--json']);
    expect(built.exitCode, built.stderr).toBe(0);
    const own = (JSON.parse(built.stdout) as { ref: string }).ref;
    made.push(own);
    const mixed = await cfh(['image', 'rm', own, ref]);
    expect(mixed.exitCode).toBe(1);
    expect((await docker.getImage(own).inspect()).Id).toMatch(/^sha256:/);
  });
});
