// The set-id escape (AH-CONT-1, AH-CONT-2): a file the sandbox leaves in an rw mount keeps
// its mode on the host, so a set-user-ID or set-group-ID file planted there gives whoever
// runs it on the host the workspace owner's uid or gid. The derived filter refuses
// S_ISUID and S_ISGID in the mode of every call that sets one (src/seccomp/
// argument-rules.ts). The probe (test/fixtures/probe/probe-files.h) tries each route,
// through each ABI, in the sandbox's /workspace; the test then walks the HOST side of that
// workspace for any set-id entry.
//
// Adversarial proof: an unconfined control (same uid, same kind of mount, no filter)
// plants a set-id file through every route and accepted ABI, so each is a real route on
// this kernel; the sandbox, under runc and runsc, leaves none, while the same calls without
// those bits, and ordinary tools (chmod 755, install -m 644, python open(..., 'w')), work.
// Before the fix the default filter let 40 of the probe's routes plant set-id files
// (x86_64 and i386 alike; seen with this battery's probe on the unfixed build).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chmod, lstat, mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { cfh, onlyRunDir, ownBySandbox, readEvents, removeDir, tempDir } from './helpers.js';
import { buildProbe, removeProbe, type ProbeResult } from './probe.js';
import {
  ABIS,
  acceptedAbis,
  describeAbis,
  describeResult,
  removeLeftControls,
  resultOf,
  runBattery,
  runscRegistered as isRunscRegistered,
  unconfinedControl,
  via,
  type Abi,
  type BatteryRun,
} from './escape-support.js';

/** Routes that can leave a set-id file when nothing filters (probe-files.h). */
const SETTING = [
  'chmod',
  'fchmod',
  'fchmodat',
  'fchmodat2',
  'open',
  'openat',
  'creat',
  'mknod',
  'mknodat',
  'openat2',
  'tmpfile',
] as const;
/** mkdir: the kernel masks the bits itself; reopen*: open without O_CREAT, mode ignored. */
const HARMLESS = ['mkdir', 'reopen', 'reopenat'] as const;
const ROUTES = [...SETTING, ...HARMLESS];
const MODES = ['setuid', 'setgid', 'plain'] as const;
type Mode = (typeof MODES)[number];
const BIT: Record<Exclude<Mode, 'plain'>, number> = { setuid: 0o4000, setgid: 0o2000 };

const CASES: readonly string[] = [
  ...ABIS.map((abi) => via('getpid', abi)),
  ...ABIS.flatMap((abi) => ROUTES.flatMap((r) => MODES.map((m) => via(`${r}_${m}`, abi)))),
];
/** The file (or directory) a case works on, in the probe's working directory. */
const fileOf = (route: string, mode: Mode, abi: Abi): string => `probe-${route}-${mode}-${abi}`;

let scratch: string;
let probeDir: string;
let image: string;
let n = 0;
let runsc = false;

/** A fresh workspace the sandbox user owns (as root: uid 4321; else the invoking user). */
async function workspace(name: string): Promise<string> {
  const dir = path.join(scratch, name);
  await mkdir(dir);
  await ownBySandbox(dir);
  return dir;
}

/** The uid:gid owning `dir`: the sandbox's user for a workspace (docs/operators.md). */
async function ownerOf(dir: string): Promise<string> {
  const st = await lstat(dir);
  return `${st.uid}:${st.gid}`;
}

/** Every entry below `root` (not following symlinks) with S_ISUID or S_ISGID, by mode. */
async function setidEntries(root: string): Promise<Record<string, string>> {
  const found: Record<string, string> = {};
  const walk = async (dir: string): Promise<void> => {
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      const st = await lstat(full);
      if ((st.mode & 0o6000) !== 0)
        found[path.relative(root, full)] = (st.mode & 0o7777).toString(8);
      if (entry.isDirectory()) await walk(full);
    }
  };
  await walk(root);
  return found;
}

function battery(ws: string, args: readonly string[]): Promise<BatteryRun> {
  n += 1;
  return runBattery({
    artifactRoot: path.join(scratch, `art-${n}`),
    workspace: ws,
    probeDir,
    args,
    cases: CASES,
  });
}

/** One profile file with the given YAML. */
async function profile(name: string, body: string): Promise<string> {
  const file = path.join(scratch, `${name}.yaml`);
  await writeFile(file, `name: ${name}\n${body}`);
  return file;
}

interface Observed {
  readonly results: Map<string, ProbeResult>;
  readonly setid: Record<string, string>;
  readonly workspace: string;
}

async function controlRun(runtime: 'runc' | 'runsc'): Promise<Observed> {
  const ws = await workspace(`control-${runtime}`);
  const results = await unconfinedControl({
    image,
    probeDir,
    cases: CASES,
    workspace: ws,
    user: await ownerOf(ws),
    runtime,
  });
  return { results, setid: await setidEntries(ws), workspace: ws };
}

async function sandboxRun(name: string, args: readonly string[]): Promise<Observed & BatteryRun> {
  const ws = await workspace(name);
  const run = await battery(ws, args);
  expect(run.exitCode, run.stderr).toBe(0);
  expect([...run.results.keys()]).toEqual(CASES);
  return { ...run, setid: await setidEntries(ws), workspace: ws };
}

/** What the unconfined control must have planted: every setting route, accepted ABI, bit. */
function plantable(control: Map<string, ProbeResult>): Record<string, string> {
  const accepted = acceptedAbis(control);
  const want: Record<string, string> = {};
  for (const abi of ABIS.filter((a) => accepted[a]))
    for (const route of SETTING)
      for (const mode of ['setuid', 'setgid'] as const) want[fileOf(route, mode, abi)] = mode;
  return want;
}

/** The set-id bit each planted file carries, named like `plantable`. */
function plantedBits(setid: Record<string, string>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(setid).map(([file, mode]) => {
      const bits = parseInt(mode, 8);
      return [
        file,
        (bits & BIT.setuid) !== 0 ? 'setuid' : (bits & BIT.setgid) !== 0 ? 'setgid' : mode,
      ];
    }),
  );
}

let control: Observed;
let byDefault: Observed & BatteryRun;
let with32Bit: Observed & BatteryRun;

beforeAll(async () => {
  scratch = await tempDir('setid');
  probeDir = await buildProbe();
  runsc = await isRunscRegistered();
  byDefault = await sandboxRun('default', ['--profile', 'untrusted-repo']);
  image = byDefault.snapshot.image.ref as string;
  control = await controlRun('runc');
  with32Bit = await sandboxRun('grant-32-bit', [
    '--profile',
    await profile(
      'setid-32-bit',
      'extends: untrusted-repo\nnetwork:\n  mode: open\nseccomp:\n  allow32BitAbis: true\n',
    ),
  ]);
});
afterAll(async () => {
  await removeLeftControls();
  await removeDir(scratch);
  await removeProbe();
});

describe('the unconfined control: every route plants a set-id file', () => {
  it('through each route and each ABI this kernel accepts, with the bit asked for', () => {
    console.log(`ABIs accepted without a filter (runc): ${describeAbis(control.results)}`);
    expect(plantedBits(control.setid)).toEqual(plantable(control.results));
    // mkdir's mode cannot carry the bits (the kernel masks them), reopen ignores its mode.
    for (const abi of ABIS)
      for (const route of HARMLESS)
        for (const mode of MODES)
          expect(
            control.setid[fileOf(route, mode, abi)],
            `${route} ${mode} ${abi}`,
          ).toBeUndefined();
  });
});

describe('runc, kernel seccomp', () => {
  it('the default filter leaves no set-id entry in the workspace, through any route or ABI', () => {
    expect(byDefault.setid).toEqual({});
    expect(with32Bit.setid).toEqual({});
  });

  it('each set-id attempt is refused by the filter: EPERM (openat2 ENOSYS), i386 and x32 killed', async () => {
    const r = (c: string) => describeResult(byDefault.results.get(c));
    for (const route of SETTING)
      for (const mode of ['setuid', 'setgid'] as const) {
        const c = `${route}_${mode}`;
        expect(r(c), c).toBe(route === 'openat2' ? 'ENOSYS' : 'EPERM');
        expect(describeResult(control.results.get(c)), `control ${c}`).toBe('ok');
        for (const abi of ['i386', 'x32'] as const)
          expect(r(via(c, abi)), via(c, abi)).toBe('SIGSYS');
      }
    // The evidence keeps each attempt's answer: the run's captured stdout.
    const out = await readFile(path.join(byDefault.runDir, 'outputs', 'stdout'), 'utf8');
    expect(out).toContain('{"case":"chmod_setuid","ok":false,"errno":1,"err":"EPERM"}');
    expect(out).toContain('{"case":"chmod_setuid@i386","ok":false,"errno":-1,"err":"SIGSYS"}');
  });

  it('the same calls without set-id bits work as unconfined (openat2 answers ENOSYS)', async () => {
    for (const route of ROUTES) {
      const c = `${route}_plain`;
      expect(describeResult(byDefault.results.get(c)), c).toBe(
        route === 'openat2' ? 'ENOSYS' : describeResult(control.results.get(c)),
      );
    }
    // open without O_CREAT ignores its mode; so does the filter.
    for (const route of ['reopen', 'reopenat'])
      for (const mode of MODES)
        expect(describeResult(byDefault.results.get(`${route}_${mode}`))).toBe('ok');
    for (const route of ['chmod', 'open', 'creat', 'mknodat', 'tmpfile']) {
      const st = await lstat(path.join(byDefault.workspace, fileOf(route, 'plain', 'x86_64')));
      expect((st.mode & 0o7777).toString(8), route).toBe('755');
    }
  });

  it('with allow32BitAbis the rules hold through i386 and x32 as through x86_64', () => {
    const r = (c: string) => describeResult(with32Bit.results.get(c));
    const accepted = acceptedAbis(control.results);
    for (const abi of ABIS) {
      for (const route of SETTING)
        for (const mode of ['setuid', 'setgid'] as const) {
          const c = via(`${route}_${mode}`, abi);
          expect(r(c), c).toBe(route === 'openat2' ? 'ENOSYS' : 'EPERM');
        }
      // Without the bits: the kernel's own answer (ENOSYS through x32 on a kernel without
      // it: the filter let the call through, it refused the set-id ones above first).
      for (const route of ROUTES.filter((x) => x !== 'openat2')) {
        const c = via(`${route}_plain`, abi);
        expect(r(c), c).toBe(describeResult(control.results.get(c)));
      }
      if (!accepted[abi]) expect(r(via('chmod_plain', abi))).toBe('ENOSYS');
    }
    expect(with32Bit.snapshot.containerSpec.seccomp.grants.abis).toEqual(['x86_64', 'i386', 'x32']);
  });
});

/** Ordinary tools and the set-id versions of the same, as a shell script in the sandbox. */
const TOOLS_SCRIPT = `
cd /workspace
r() { if "$@" 2>/dev/null; then echo "ok: $*"; else echo "refused: $*"; fi; }
echo hi > f
r chmod 755 f
r install -m 644 f g
r python3 -c "open('h', 'w').write('x')"
r mkdir -p d/e
r chmod 1777 d
r cp -p f k
r chmod u+s f
r chmod g+s g
r install -m 4755 f s
r python3 -c "import os; os.chmod('h', 0o2755)"
r python3 -c "import os; os.open('p', os.O_CREAT | os.O_WRONLY, 0o4755)"
`;
const TOOLS_OK = [
  'chmod 755 f',
  'install -m 644 f g',
  "python3 -c open('h', 'w').write('x')",
  'mkdir -p d/e',
  'chmod 1777 d',
  'cp -p f k',
];
const TOOLS_REFUSED = [
  'chmod u+s f',
  'chmod g+s g',
  'install -m 4755 f s',
  "python3 -c import os; os.chmod('h', 0o2755)",
  "python3 -c import os; os.open('p', os.O_CREAT | os.O_WRONLY, 0o4755)",
];

async function toolsRun(runtime: 'runc' | 'runsc'): Promise<void> {
  const ws = await workspace(`tools-${runtime}`);
  n += 1;
  const artifactRoot = path.join(scratch, `art-${n}`);
  const r = await cfh([
    'sandbox',
    'run',
    '--profile',
    'untrusted-repo',
    '--runtime',
    runtime,
    '--workspace',
    ws,
    '--artifact-root',
    artifactRoot,
    '--',
    'bash',
    '-c',
    TOOLS_SCRIPT,
  ]);
  expect(r.exitCode, r.stderr).toBe(0);
  const lines = r.stdout.trim().split('\n');
  expect(lines).toEqual([
    ...TOOLS_OK.map((c) => `ok: ${c}`),
    ...TOOLS_REFUSED.map((c) => `refused: ${c}`),
  ]);
  const mode = async (f: string) => ((await lstat(path.join(ws, f))).mode & 0o7777).toString(8);
  expect({
    f: await mode('f'),
    g: await mode('g'),
    h: await mode('h'),
    d: await mode('d'),
    k: await mode('k'),
  }).toEqual({
    f: '755',
    g: '644',
    h: '644',
    d: '1777',
    k: '755',
  });
  expect(await setidEntries(ws)).toEqual({});
  const out = await readFile(
    path.join(await onlyRunDir(artifactRoot), 'outputs', 'stdout'),
    'utf8',
  );
  expect(out).toContain('refused: chmod u+s f');
}

describe('ordinary tools', () => {
  it('runc: chmod 755, install -m 644, python open(w) work; chmod u+s, g+s, install -m 4755 do not', () =>
    toolsRun('runc'));

  it('runsc: the same', async (ctx) => {
    if (!runsc) ctx.skip('runsc not registered with the engine');
    await toolsRun('runsc');
  });
});

describe('what no filter can see: S_ISGID inherited from a set-gid directory', () => {
  it('a directory made in a set-gid directory gets S_ISGID; the run strips it and records it', async () => {
    const ws = await workspace('inherit');
    const shared = path.join(ws, 'shared');
    await mkdir(shared);
    await ownBySandbox(shared);
    await chmod(shared, 0o2775); // the owner's own set-gid directory, from before the run
    n += 1;
    const art = path.join(scratch, `art-${n}`);
    const r = await cfh([
      'sandbox',
      'run',
      '--profile',
      'untrusted-repo',
      '--workspace',
      ws,
      '--artifact-root',
      art,
      '--',
      'bash',
      '-c',
      // mkdir takes no set-id bit from its mode; the kernel copies the parent's S_ISGID.
      'mkdir /workspace/shared/new && touch /workspace/shared/new/file && stat -c %a /workspace/shared/new',
    ]);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe('2755');
    // After the run the host keeps no set-id bit the run made; the owner's directory from
    // before the run is left as it was, though its ctime moved when the run made an entry
    // in it (directories are judged by their birth time).
    expect(await setidEntries(ws)).toEqual({ shared: '2775' });
    const events = await readEvents(await onlyRunDir(art));
    expect(events.filter((e) => e.type === 'setid_stripped').map((e) => e.data)).toEqual([
      expect.objectContaining({
        path: 'shared/new',
        type: 'directory',
        modeBefore: 0o2755,
        modeAfter: 0o755,
      }),
    ]);
    expect(events.find((e) => e.type === 'setid_sweep')?.data).toMatchObject({
      stripped: 1,
      complete: true,
      setidBeforeRun: 1,
    });
  });
});

describe('runsc (gVisor applies the filter)', () => {
  it('leaves no set-id entry through any route or ABI; unconfined, gVisor would pass bits through', async (ctx) => {
    if (!runsc) {
      console.log('runsc is not registered with this engine: the gVisor set-id battery is skipped');
      ctx.skip('runsc not registered with the engine');
    }
    const gvisor = await controlRun('runsc');
    console.log(
      `ABIs accepted without a filter under runsc: ${describeAbis(gvisor.results)}; set-id files an unconfined gVisor sandbox left on the host: ${Object.keys(gvisor.setid).join(' ')}`,
    );
    // gVisor carries chmod's bits to the host file: the filter is what stops them there.
    expect(Object.keys(gvisor.setid).length).toBeGreaterThan(0);
    const run = await sandboxRun('runsc', ['--profile', 'untrusted-repo', '--runtime', 'runsc']);
    expect(run.setid).toEqual({});
    for (const route of SETTING)
      for (const mode of ['setuid', 'setgid'] as const) {
        const c = `${route}_${mode}`;
        expect(resultOf(run.results, c).ok, c).toBe(false);
      }
    for (const c of ['chmod_plain', 'fchmod_plain', 'open_plain', 'creat_plain', 'mknod_plain'])
      expect(describeResult(run.results.get(c)), c).toBe('ok');
  });
});
