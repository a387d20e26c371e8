// What cfh's derived seccomp filter costs a syscall-heavy workload, against Docker's own
// default filter, against no filter at all, and under gVisor (runsc).
//
// The workload runs inside the container and times itself (time.perf_counter around the
// loops), so container create/start/remove is not in the measured number:
//   files   FILE_OPS iterations of open(O_CREAT|O_TRUNC)/write 64 bytes/close, stat, rename,
//           unlink on /tmp (cfh's tmpfs): 6 syscalls per iteration.
//   getpid  PID_CALLS iterations of os.getpid() + os.getppid(): 2 trivial syscalls each,
//           the case where the filter's per-syscall cost is largest relative to the work.
// After the timed loops (outside the measurement) the script records /proc/self/status
// Seccomp, the kernel release it sees, the fs type of /tmp, and whether it may create an
// AF_INET socket: the derived filter refuses that under network.mode disabled (EPERM) and
// Docker's default does not, which shows each series runs under the filter it is named for.
//
// Series, each a fresh container per sample, all from cfh's own create request
// (toCreateOptions of planSandboxRun's spec: init, read-only rootfs, tmpfs, read-only
// workspace bind, cap drop ALL, no-new-privileges, limits, NetworkDisabled), identical
// except for the seccomp option or the runtime:
//   derived         cfh's derived filter as planned (runc).
//   docker-default  seccomp=<seccomp/docker-default-20.10.json> (runc).
//   unconfined      seccomp=unconfined (runc): the floor.
//   runsc           cfh's request for runtime runsc: the derived filter, enforced by gVisor
//                   (the engine registers runsc with --oci-seccomp).
// Output is taken by attaching before start, as cfh does: the request keeps LogConfig none.
//
// Each round runs one sample of every series in the order above, so drift falls on all of
// them alike; warm-up rounds are run and discarded. Times are reported, never asserted. The
// exit status is non-zero only when something failed, a series did not run under the filter
// it is named for, or a container was left behind.
//
// Run: bench/run.sh seccomp   (BENCH_ROUNDS, default 7; BENCH_WARMUP, default 1;
//      BENCH_FILE_OPS, default 20000; BENCH_PID_CALLS, default 200000;
//      BENCH_TIMEOUT_S per container, default 600)
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { Writable } from 'node:stream';
import type Docker from 'dockerode';
import { readEnvironment, type CfhEnvironment } from '../src/config/env.js';
import { planSandboxRun } from '../src/engine/run/run-plan.js';
import { loadRecipe } from '../src/image/recipe.js';
import { SECCOMP_DIR } from '../src/paths.js';
import { currentOwner } from '../src/sandbox/owner.js';
import { currentHostIdentity } from '../src/sandbox/sandbox-user.js';
import { toCreateOptions } from '../src/substrate/docker/adapter.js';
import { fmt, round1, round3, rounded, summarize, type Summary } from './stats.js';
import {
  type DemuxModem,
  BENCH_LABEL,
  checkLeftovers,
  dockerClient,
  intFromEnv,
  runBench,
  table,
} from './bench-util.js';

const NAME_PREFIX = 'cfh-bench-seccomp-';
const DOCKER_DEFAULT_FILE = 'docker-default-20.10.json';
const SYSCALLS_PER_FILE_OP = 6;
const SYSCALLS_PER_PID_CALL = 2;

const SERIES = ['derived', 'docker-default', 'unconfined', 'runsc'] as const;
type Series = (typeof SERIES)[number];

/**
 * What each series must see after the loops: Seccomp mode 2 (filter) or 0 (none) for the
 * runc series, and whether AF_INET sockets are refused. gVisor's /proc reports its own view,
 * so for runsc only the socket probe is checked (it shows the derived filter is enforced).
 */
const EXPECT: Record<Series, { seccomp: number | null; inet: string }> = {
  derived: { seccomp: 2, inet: 'EPERM' },
  'docker-default': { seccomp: 2, inet: 'allowed' },
  unconfined: { seccomp: 0, inet: 'allowed' },
  runsc: { seccomp: null, inet: 'EPERM' },
};

// Runs as `python3 -c SCRIPT FILE_OPS PID_CALLS`. Names are bound to locals before the
// loops so the interpreter's share per iteration is as small as Python allows.
const SCRIPT = `
import errno, json, os, socket, sys, tempfile, time
file_ops, pid_calls = int(sys.argv[1]), int(sys.argv[2])
d = tempfile.mkdtemp(dir='/tmp')
a, b = os.path.join(d, 'a'), os.path.join(d, 'b')
payload = b'x' * 64
flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
o_open, o_write, o_close, o_stat = os.open, os.write, os.close, os.stat
o_rename, o_unlink, getpid, getppid = os.rename, os.unlink, os.getpid, os.getppid
clock = time.perf_counter
t0 = clock()
for _ in range(file_ops):
    fd = o_open(a, flags, 0o600)
    o_write(fd, payload)
    o_close(fd)
    o_stat(a)
    o_rename(a, b)
    o_unlink(b)
t1 = clock()
for _ in range(pid_calls):
    getpid()
    getppid()
t2 = clock()
os.rmdir(d)
seccomp = None
with open('/proc/self/status') as f:
    for line in f:
        if line.startswith('Seccomp:'):
            seccomp = int(line.split()[1])
tmp_fs = None
with open('/proc/self/mounts') as f:
    for line in f:
        fields = line.split()
        if len(fields) > 2 and fields[1] == '/tmp':
            tmp_fs = fields[2]
try:
    socket.socket(socket.AF_INET, socket.SOCK_DGRAM).close()
    inet = 'allowed'
except OSError as e:
    inet = errno.errorcode.get(e.errno, str(e.errno))
print(json.dumps({'totalMs': (t2 - t0) * 1e3, 'fileMs': (t1 - t0) * 1e3,
                  'pidMs': (t2 - t1) * 1e3, 'seccomp': seccomp, 'kernel': os.uname().release,
                  'tmpFs': tmp_fs, 'inet': inet}))
`;

interface Report {
  readonly totalMs: number;
  readonly fileMs: number;
  readonly pidMs: number;
  readonly seccomp: number | null;
  readonly kernel: string;
  readonly tmpFs: string | null;
  readonly inet: string;
}

interface Sample extends Report {
  /** Host side, create to removed: start-up is here, not in totalMs. */
  readonly wallMs: number;
}

function parseReport(text: string): Report {
  const line = text.trim().split('\n').pop() ?? '';
  const r = JSON.parse(line) as Partial<Record<keyof Report, unknown>>;
  const num = (v: unknown, what: string): number => {
    if (typeof v !== 'number' || !Number.isFinite(v)) throw new Error(`report: bad ${what}`);
    return v;
  };
  return {
    totalMs: num(r.totalMs, 'totalMs'),
    fileMs: num(r.fileMs, 'fileMs'),
    pidMs: num(r.pidMs, 'pidMs'),
    seccomp: typeof r.seccomp === 'number' ? r.seccomp : null,
    kernel: typeof r.kernel === 'string' ? r.kernel : '?',
    tmpFs: typeof r.tmpFs === 'string' ? r.tmpFs : null,
    inet: typeof r.inet === 'string' ? r.inet : '?',
  };
}

/** A sink that keeps what it is given, for the demuxed output. */
function collector(): { sink: Writable; text: () => string } {
  const chunks: Buffer[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      chunks.push(chunk);
      callback();
    },
  });
  return { sink, text: () => Buffer.concat(chunks).toString('utf8') };
}

/** The create request without what differs per container or per series. */
/**
 * The request without what is meant to differ between runc and runsc: the runtime, names
 * and labels, and the filter's clone3 rule (under runsc, gVisor answers clone3 itself).
 */
function comparable(o: Docker.ContainerCreateOptions): unknown {
  const host: Docker.HostConfig = { ...o.HostConfig };
  delete host.Runtime;
  const options: string[] = (host.SecurityOpt as string[] | undefined) ?? [];
  host.SecurityOpt = options.map((opt) => {
    if (!opt.startsWith('seccomp=')) return opt;
    const filter = JSON.parse(opt.slice('seccomp='.length)) as {
      syscalls: { names: string[] }[];
    };
    const syscalls = filter.syscalls
      .map((r) => ({ ...r, names: r.names.filter((n) => n !== 'clone3') }))
      .filter((r) => r.names.length > 0);
    return JSON.stringify({ ...filter, syscalls });
  });
  return { ...o, name: undefined, Labels: undefined, HostConfig: host };
}

async function main(): Promise<number> {
  const rounds = intFromEnv('BENCH_ROUNDS', 7, 1);
  const warmup = intFromEnv('BENCH_WARMUP', 1, 0);
  const fileOps = intFromEnv('BENCH_FILE_OPS', 20000, 1);
  const pidCalls = intFromEnv('BENCH_PID_CALLS', 200000, 1);
  const timeoutMs = intFromEnv('BENCH_TIMEOUT_S', 600, 1) * 1000;
  const image = loadRecipe().ref;
  const tag = `${process.pid}-${Date.now().toString(36)}`;
  const syscallsPerRun = fileOps * SYSCALLS_PER_FILE_OP + pidCalls * SYSCALLS_PER_PID_CALL;

  const tmp = mkdtempSync(path.join(os.tmpdir(), 'cfh-bench-seccomp-'));
  const workspace = path.join(tmp, 'workspace');
  const artifactRoot = path.join(tmp, 'runs');
  mkdirSync(workspace);

  const env: CfhEnvironment = { ...readEnvironment(), artifactRoot };
  const docker = dockerClient(env);
  const host = currentHostIdentity();
  const owner = currentOwner();
  const command = ['python3', '-c', SCRIPT, String(fileOps), String(pidCalls)];

  // cfh's create requests, planned once: the profile's runtime (runc) and --runtime runsc.
  const runcPlan = planSandboxRun({ command, workspace, artifactRoot }, env, host, owner);
  const runscPlan = planSandboxRun(
    { command, workspace, artifactRoot, runtime: 'runsc' },
    env,
    host,
    owner,
  );
  const runcOptions = toCreateOptions(runcPlan.spec);
  const runscOptions = toCreateOptions(runscPlan.spec);
  if (runscOptions.HostConfig?.Runtime !== 'runsc') {
    throw new Error(
      `cfh's runsc plan asks for runtime ${String(runscOptions.HostConfig?.Runtime)}`,
    );
  }
  if (!isDeepStrictEqual(comparable(runcOptions), comparable(runscOptions))) {
    throw new Error("cfh's runc and runsc requests differ in more than the runtime");
  }
  const securityOpt = (runcOptions.HostConfig?.SecurityOpt ?? []) as string[];
  const derivedOpt = `seccomp=${runcPlan.spec.seccomp.json}`;
  if (!securityOpt.includes('no-new-privileges:true') || !securityOpt.includes(derivedOpt)) {
    throw new Error(`unexpected SecurityOpt in cfh's request: ${securityOpt.length} entries`);
  }
  const dockerDefaultJson = readFileSync(path.join(SECCOMP_DIR, DOCKER_DEFAULT_FILE), 'utf8');
  const dockerDefault = JSON.parse(dockerDefaultJson) as { syscalls: unknown[] };
  const derivedRules = (JSON.parse(runcPlan.spec.seccomp.json) as { syscalls: unknown[] }).syscalls
    .length;

  const withSeccomp = (
    base: Docker.ContainerCreateOptions,
    seccomp: string,
  ): Docker.ContainerCreateOptions => ({
    ...base,
    HostConfig: {
      ...base.HostConfig,
      SecurityOpt: securityOpt.map((o) => (o === derivedOpt ? `seccomp=${seccomp}` : o)),
    },
  });
  const options: Record<Series, Docker.ContainerCreateOptions> = {
    derived: runcOptions,
    'docker-default': withSeccomp(runcOptions, dockerDefaultJson),
    unconfined: withSeccomp(runcOptions, 'unconfined'),
    runsc: runscOptions,
  };

  const engine = await docker.version();
  const info = (await docker.info()) as { Runtimes?: Record<string, { runtimeArgs?: string[] }> };
  const runscArgs = info.Runtimes?.runsc?.runtimeArgs ?? [];
  await docker
    .getImage(image)
    .inspect()
    .catch(() => {
      throw new Error(`image ${image} is not in the engine: run \`make image\` first`);
    });

  console.log('cfh seccomp-overhead bench');
  console.log(
    `  node ${process.version}, engine ${engine.Version} (API ${engine.ApiVersion}), kernel ${engine.KernelVersion}, ${os.cpus().length} cpus`,
  );
  console.log(`  image ${image}, profile default (cpus ${runcPlan.profile.limits.cpus})`);
  console.log(
    `  workload: ${fileOps} x (open/write 64 B/close, stat, rename, unlink) on /tmp + ${pidCalls} x (getpid, getppid) = ${syscallsPerRun} syscalls, timed inside the container`,
  );
  console.log(
    `  filters: derived ${derivedRules} rules (sha256 ${runcPlan.spec.seccomp.sha256.slice(0, 12)}), docker-default ${dockerDefault.syscalls.length} rules (${DOCKER_DEFAULT_FILE}); runsc args [${runscArgs.join(' ')}]`,
  );
  console.log(`  rounds ${rounds} (+${warmup} warm-up), order per round: ${SERIES.join(', ')}`);
  console.log('  output by attach before start (LogConfig stays none)');
  console.log('');

  const names = new Set<string>();
  const active = new Set<Docker.Container>();
  let seq = 0;
  const controller = new AbortController();
  const interrupted = (): boolean => controller.signal.aborted;
  process.once('SIGINT', () => {
    controller.abort();
    for (const c of active) void c.remove({ force: true, v: true }).catch(() => undefined);
  });

  async function runOne(series: Series): Promise<Sample> {
    const name = `${NAME_PREFIX}${series}-${tag}-${seq++}`;
    names.add(name);
    const t0 = performance.now();
    const container = await docker.createContainer({
      ...options[series],
      name,
      Labels: { [BENCH_LABEL]: tag },
    });
    active.add(container);
    let removed = false;
    try {
      const raw = (await container.attach({
        stream: true,
        stdout: true,
        stderr: true,
        logs: false,
      })) as NodeJS.ReadableStream;
      const out = collector();
      const err = collector();
      (docker.modem as DemuxModem).demuxStream(raw, out.sink, err.sink);
      const ended = new Promise<void>((resolve) => {
        raw.on('end', resolve);
        raw.on('close', resolve);
        raw.on('error', () => {
          resolve();
        });
      });
      await container.start();
      const deadline = { hit: false };
      const timer = setTimeout(() => {
        deadline.hit = true;
        void container.kill().catch(() => undefined);
      }, timeoutMs);
      let exit: { StatusCode: number };
      try {
        exit = (await container.wait()) as { StatusCode: number };
      } finally {
        clearTimeout(timer);
      }
      await Promise.race([ended, new Promise((resolve) => setTimeout(resolve, 5000))]);
      if (interrupted()) throw new Error('interrupted');
      if (deadline.hit) throw new Error(`${name}: no exit within ${timeoutMs / 1000} s, killed`);
      if (exit.StatusCode !== 0) {
        throw new Error(`${name} exited ${exit.StatusCode}: ${err.text().trim().slice(-2000)}`);
      }
      const report = parseReport(out.text());
      await container.remove({ force: true, v: true });
      removed = true;
      return { ...report, wallMs: performance.now() - t0 };
    } finally {
      if (!removed) await container.remove({ force: true, v: true }).catch(() => undefined);
      active.delete(container);
    }
  }

  const samples: Record<Series, Sample[]> = {
    derived: [],
    'docker-default': [],
    unconfined: [],
    runsc: [],
  };
  let failure: Error | undefined;
  let leftoverCount: number;
  try {
    for (let round = 0; round < warmup + rounds && !interrupted(); round++) {
      const measured = round >= warmup;
      const parts: string[] = [];
      for (const series of SERIES) {
        const s = await runOne(series);
        if (measured) samples[series].push(s);
        parts.push(`${series} ${s.totalMs.toFixed(1)}`);
      }
      const label = measured ? `round ${round - warmup + 1}/${rounds}` : `warm-up ${round + 1}`;
      console.error(`  ${label.padEnd(13)} ${parts.join('  ')} ms (in container)`);
    }
    if (interrupted()) throw new Error('interrupted');
  } catch (error) {
    failure = interrupted()
      ? new Error('interrupted')
      : error instanceof Error
        ? error
        : new Error(String(error));
  } finally {
    leftoverCount = await checkLeftovers(docker, { tag, names });
    rmSync(tmp, { recursive: true, force: true });
  }
  if (failure !== undefined) throw failure;

  const checksOk = report({
    rounds,
    warmup,
    image,
    engine: `${engine.Version} (API ${engine.ApiVersion})`,
    kernel: engine.KernelVersion,
    fileOps,
    pidCalls,
    syscallsPerRun,
    derivedSha256: runcPlan.spec.seccomp.sha256,
    derivedRules,
    dockerDefaultRules: dockerDefault.syscalls.length,
    samples,
    leftovers: leftoverCount,
  });
  return leftoverCount === 0 && checksOk ? 0 : 1;
}

interface Results {
  readonly rounds: number;
  readonly warmup: number;
  readonly image: string;
  readonly engine: string;
  readonly kernel: string;
  readonly fileOps: number;
  readonly pidCalls: number;
  readonly syscallsPerRun: number;
  readonly derivedSha256: string;
  readonly derivedRules: number;
  readonly dockerDefaultRules: number;
  readonly samples: Record<Series, readonly Sample[]>;
  readonly leftovers: number;
}

/** The distinct values one field took across a series' samples, joined. */
function seen(xs: readonly Sample[], f: (s: Sample) => unknown): string {
  return [...new Set(xs.map((s) => String(f(s))))].join('|');
}

/** Prints the tables and the JSON line; returns whether every filter check held. */
function report(r: Results): boolean {
  const total = {} as Record<Series, Summary>;
  const file = {} as Record<Series, Summary>;
  const pid = {} as Record<Series, Summary>;
  const wall = {} as Record<Series, Summary>;
  for (const name of SERIES) {
    const xs = r.samples[name];
    total[name] = summarize(xs.map((s) => s.totalMs));
    file[name] = summarize(xs.map((s) => s.fileMs));
    pid[name] = summarize(xs.map((s) => s.pidMs));
    wall[name] = summarize(xs.map((s) => s.wallMs));
  }
  // Per-syscall time in each loop, interpreter included: medians of the loop over its count.
  const nsPerFileSyscall = (name: Series): number =>
    (file[name].p50 * 1e6) / (r.fileOps * SYSCALLS_PER_FILE_OP);
  const nsPerPidSyscall = (name: Series): number =>
    (pid[name].p50 * 1e6) / (r.pidCalls * SYSCALLS_PER_PID_CALL);

  const checks = Object.fromEntries(
    SERIES.map((name) => {
      const xs = r.samples[name];
      const want = EXPECT[name];
      const ok =
        xs.every((s) => s.inet === want.inet) &&
        (want.seccomp === null || xs.every((s) => s.seccomp === want.seccomp));
      return [
        name,
        {
          ok,
          seccomp: seen(xs, (s) => s.seccomp),
          inet: seen(xs, (s) => s.inet),
          kernel: seen(xs, (s) => s.kernel),
          tmpFs: seen(xs, (s) => s.tmpFs),
        },
      ];
    }),
  ) as Record<
    Series,
    { ok: boolean; seccomp: string; inet: string; kernel: string; tmpFs: string }
  >;
  const checksOk = SERIES.every((name) => checks[name].ok);

  console.log('');
  console.log(
    `in-container elapsed time, ms (${r.rounds} rounds after ${r.warmup} warm-up; start-up excluded)`,
  );
  table(
    [
      'series',
      'p50',
      'p90',
      'mean',
      'min',
      'max',
      'files p50',
      'getpid p50',
      'ns/sc files',
      'ns/sc getpid',
      'container wall p50',
    ],
    SERIES.map((name) => [
      name,
      fmt(total[name].p50),
      fmt(total[name].p90),
      fmt(total[name].mean),
      fmt(total[name].min),
      fmt(total[name].max),
      fmt(file[name].p50),
      fmt(pid[name].p50),
      fmt(nsPerFileSyscall(name)),
      fmt(nsPerPidSyscall(name)),
      fmt(wall[name].p50),
    ]),
  );
  console.log(
    '  ns/sc: loop median / syscalls in it (Python interpreter included); container wall: create..removed, host side',
  );

  const ratio = (a: Series, b: Series, s: Record<Series, Summary>) => ({
    p50: round3(s[a].p50 / s[b].p50),
    mean: round3(s[a].mean / s[b].mean),
  });
  const pairs: [string, Series, Series][] = [
    ['derivedOverDockerDefault', 'derived', 'docker-default'],
    ['derivedOverUnconfined', 'derived', 'unconfined'],
    ['dockerDefaultOverUnconfined', 'docker-default', 'unconfined'],
    ['runscOverDerived', 'runsc', 'derived'],
  ];
  const ratios = Object.fromEntries(pairs.map(([k, a, b]) => [k, ratio(a, b, total)]));
  const fileRatios = Object.fromEntries(pairs.map(([k, a, b]) => [k, ratio(a, b, file)]));
  const pidRatios = Object.fromEntries(pairs.map(([k, a, b]) => [k, ratio(a, b, pid)]));

  console.log('');
  console.log('ratios of in-container time (total, and per loop at p50)');
  table(
    ['ratio', 'p50', 'mean', 'files p50', 'getpid p50'],
    pairs.map(([k, a, b]) => [
      `${a} / ${b}`,
      (ratios[k]?.p50 ?? Number.NaN).toFixed(3),
      (ratios[k]?.mean ?? Number.NaN).toFixed(3),
      (fileRatios[k]?.p50 ?? Number.NaN).toFixed(3),
      (pidRatios[k]?.p50 ?? Number.NaN).toFixed(3),
    ]),
  );

  console.log('');
  console.log('what each series ran under (after the timed loops)');
  table(
    ['series', 'Seccomp', 'AF_INET socket', 'kernel seen', '/tmp fs', 'expected', 'check'],
    SERIES.map((name) => {
      const c = checks[name];
      const want = EXPECT[name];
      return [
        name,
        c.seccomp,
        c.inet,
        c.kernel,
        c.tmpFs,
        `${want.seccomp === null ? '' : `Seccomp ${want.seccomp}, `}${want.inet}`,
        c.ok ? 'ok' : 'MISMATCH',
      ];
    }),
  );
  if (!checksOk) console.log('a series did not run under the filter it is named for');

  console.log('');
  console.log(
    JSON.stringify({
      bench: 'seccomp-overhead',
      rounds: r.rounds,
      warmup: r.warmup,
      image: r.image,
      engine: r.engine,
      kernel: r.kernel,
      node: process.version,
      workload: {
        fileOps: r.fileOps,
        pidCalls: r.pidCalls,
        syscallsPerRun: r.syscallsPerRun,
        timed: 'in container',
      },
      filters: {
        derivedSha256: r.derivedSha256,
        derivedRules: r.derivedRules,
        dockerDefaultRules: r.dockerDefaultRules,
      },
      unit: 'ms',
      series: Object.fromEntries(
        SERIES.map((name) => [
          name,
          {
            ...rounded(total[name]),
            filesP50: round1(file[name].p50),
            getpidP50: round1(pid[name].p50),
            nsPerSyscallFiles: round1(nsPerFileSyscall(name)),
            nsPerSyscallGetpid: round1(nsPerPidSyscall(name)),
            containerWallP50: round1(wall[name].p50),
          },
        ]),
      ),
      ratios,
      fileRatios,
      getpidRatios: pidRatios,
      checks,
      checksOk,
      leftovers: r.leftovers,
    }),
  );
  return checksOk;
}

runBench(main);
