// What the network test files share: a workspace holding the probe program, one cfh run
// with a network posture whose sandbox command prints `@@ label k=v ...` lines, and readers
// for those lines and for the run's `egress` events. Every destination a probe is
// pointed at is a server the test file started on this machine (local-servers.ts).
import { beforeAll, afterAll } from 'vitest';
import { mkdir, readdir, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import {
  cfh,
  docker,
  onlyRunDir,
  readEvents,
  removeDir,
  runIdOf,
  tempDir,
  type CfhResult,
  type Event,
} from './helpers.js';
import type { HttpTarget } from './local-servers.js';

export type Egress = Record<string, unknown>;
export type Markers = Map<string, Record<string, string>>;

export interface NetRun {
  readonly result: CfhResult;
  readonly dir: string;
  readonly runId: string;
  readonly events: Event[];
  readonly egress: Egress[];
  readonly markers: Markers;
}

export interface NetOptions {
  readonly mode: 'disabled' | 'allowlist' | 'open';
  readonly runtime?: string | undefined;
  readonly allow?: readonly string[];
  readonly deny?: readonly string[];
}

export const RAW_PAYLOAD = 'cfh-raw-ping';

// The probe, run inside the sandbox: python3 of the sandbox image, no other tool.
//   tcp LABEL HOST PORT                 connect, send a line, report what came back
//   udp LABEL HOST PORT NAME            one DNS A query over UDP
//   http LABEL HOST PORT                GET / with http.client (Host = HOST:PORT)
//   tls LABEL HOST PORT SNI             a TLS handshake with that server name
//   dns LABEL HOST PORT NAME TYPE [tcp] one DNS query of TYPE (A, AAAA, TXT, PTR or a number)
//   ptr-self LABEL HOST PORT            a PTR query for the sandbox's own address
//   dnsraw LABEL HOST PORT HEX          arbitrary bytes to a DNS port
//   flood LABEL HOST PORT PREFIX SUFFIX COUNT   COUNT distinct A queries PREFIX<i>.SUFFIX
//   send LABEL HOST PORT FILE...        raw bytes over one connection: each FILE after the
//                                       response head to the previous one (or at once)
//   loopback-probe LABEL NAME           NAME asked at every port 127.0.0.11 listens on
const PROBE_PY = String.raw`
import socket, ssl, struct, sys, time

def out(label, **kv):
    print('@@ ' + label + ' ' + ' '.join(k + '=' + str(v) for k, v in kv.items()), flush=True)

def err(e):
    no = getattr(e, 'errno', None)
    return 'err:' + (str(no) if no else type(e).__name__)

TYPES = {'A': 1, 'PTR': 12, 'TXT': 16, 'AAAA': 28, 'ANY': 255}

def dns_query(name, qtype=1, qid=0x4321):
    q = struct.pack('>HHHHHH', qid, 0x0100, 1, 0, 0, 0)
    for part in name.split('.'):
        q += bytes([len(part)]) + part.encode()
    return q + b'\x00' + struct.pack('>HH', qtype, 1)

def read_name(msg, i, depth=0):
    labels = []
    while depth < 10:
        n = msg[i]
        if n == 0:
            return '.'.join(labels), i + 1
        if n & 0xc0 == 0xc0:
            ptr = struct.unpack('>H', msg[i:i + 2])[0] & 0x3fff
            rest, _ = read_name(msg, ptr, depth + 1)
            return '.'.join(labels + ([rest] if rest else [])), i + 2
        labels.append(msg[i + 1:i + 1 + n].decode('latin1'))
        i += n + 1
    return '.'.join(labels), i

def dns_reply(msg):
    rcode = msg[3] & 0xf
    count = struct.unpack('>H', msg[6:8])[0]
    _, i = read_name(msg, 12)
    i += 4
    addrs, names = [], []
    for _ in range(count):
        _, i = read_name(msg, i)
        typ, _c, _t, ln = struct.unpack('>HHIH', msg[i:i + 10])
        rdata = msg[i + 10:i + 10 + ln]
        if typ == 1 and ln == 4:
            addrs.append('.'.join(str(b) for b in rdata))
        elif typ in (5, 12):
            names.append(read_name(msg, i + 10)[0])
        i += 10 + ln
    return rcode, count, addrs, names

def ask_dns(label, host, port, payload, tcp=False):
    try:
        if tcp:
            s = socket.create_connection((host, port), timeout=4)
            s.sendall(struct.pack('>H', len(payload)) + payload)
            data = s.recv(4096)[2:]
        else:
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.settimeout(4)
            s.sendto(payload, (host, port))
            data, _ = s.recvfrom(4096)
    except OSError as e:
        out(label, reply=err(e))
        return None
    if len(data) < 12:
        out(label, reply='short:%d' % len(data))
        return None
    rcode, count, addrs, names = dns_reply(data)
    out(label, reply='ok', rcode=rcode, count=count, addrs='+'.join(addrs) or '-',
        names='+'.join(names) or '-')
    return rcode

def own_address(gw):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.connect((gw, 9))
    return s.getsockname()[0]

def statuses(data):
    import re
    codes = re.findall(rb'HTTP/1\.[01] (\d{3}) ', data)
    return ','.join(c.decode() for c in codes) or '-'

mode, label = sys.argv[1], sys.argv[2]
if mode == 'tcp':
    host, port = sys.argv[3], int(sys.argv[4])
    s = socket.socket()
    s.settimeout(6)
    try:
        s.connect((host, port))
    except OSError as e:
        out(label, connect=err(e))
        sys.exit()
    try:
        s.sendall(b'${RAW_PAYLOAD}\n')
        out(label, connect='ok', recv=len(s.recv(100)))
    except OSError as e:
        out(label, connect='ok', recv=err(e))
elif mode == 'udp':
    host, port = sys.argv[3], int(sys.argv[4])
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(4)
    try:
        s.sendto(dns_query(sys.argv[5]), (host, port))
    except OSError as e:
        out(label, send=err(e))
        sys.exit()
    try:
        data, peer = s.recvfrom(512)
        rcode, _count, addrs, _names = dns_reply(data)
        out(label, send='ok', reply='rcode:%d,addrs:%s' % (rcode, '+'.join(addrs) or '-'),
            peer='%s:%d' % peer)
    except OSError as e:
        out(label, send='ok', reply=err(e))
elif mode == 'http':
    import http.client
    host, port = sys.argv[3], int(sys.argv[4])
    try:
        c = http.client.HTTPConnection(host, port, timeout=6)
        c.request('GET', '/')
        r = c.getresponse()
        body = r.read(80).decode('latin1').replace(' ', '_').replace('\n', '_')
        out(label, status=r.status, body=body)
    except Exception as e:
        out(label, status=err(e))
elif mode == 'tls':
    host, port = sys.argv[3], int(sys.argv[4])
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    try:
        raw = socket.create_connection((host, port), timeout=6)
        with ctx.wrap_socket(raw, server_hostname=sys.argv[5]):
            out(label, handshake='ok')
    except Exception as e:
        out(label, handshake=err(e))
elif mode == 'dns':
    host, port, name, qtype = sys.argv[3], int(sys.argv[4]), sys.argv[5], sys.argv[6]
    code = TYPES.get(qtype) or int(qtype)
    ask_dns(label, host, port, dns_query(name, code), len(sys.argv) > 7 and sys.argv[7] == 'tcp')
elif mode == 'ptr-self':
    host, port = sys.argv[3], int(sys.argv[4])
    me = own_address(sys.argv[5] if len(sys.argv) > 5 else host)
    ask_dns(label, host, port, dns_query('.'.join(reversed(me.split('.'))) + '.in-addr.arpa', 12))
elif mode == 'dnsraw':
    host, port = sys.argv[3], int(sys.argv[4])
    ask_dns(label, host, port, bytes.fromhex(sys.argv[5]))
elif mode == 'flood':
    host, port, prefix, suffix, count = sys.argv[3], int(sys.argv[4]), sys.argv[5], sys.argv[6], int(sys.argv[7])
    tally = {}
    for i in range(count):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.settimeout(4)
        try:
            s.sendto(dns_query('%s%d.%s' % (prefix, i, suffix), 1, i), (host, port))
            data, _ = s.recvfrom(512)
            key = 'rcode%d' % (data[3] & 0xf)
        except OSError as e:
            key = err(e).replace(':', '')
        tally[key] = tally.get(key, 0) + 1
    out(label, **tally)
elif mode == 'send':
    host, port, files = sys.argv[3], int(sys.argv[4]), sys.argv[5:]
    got = b''
    try:
        s = socket.create_connection((host, port), timeout=4)
        for k, f in enumerate(files):
            s.sendall(open(f, 'rb').read())
            if k + 1 < len(files):
                while got.count(b'\r\n\r\n') <= k:
                    chunk = s.recv(4096)
                    if not chunk:
                        break
                    got += chunk
        while True:
            chunk = s.recv(4096)
            if not chunk:
                break
            got += chunk
        end = 'closed'
    except OSError as e:
        end = err(e)
    out(label, statuses=statuses(got), end=end, bytes=len(got))
elif mode == 'loopback-probe':
    # Every port 127.0.0.11 listens on as this namespace's /proc/net shows them (gVisor
    # shows its own table, so under runsc none), each asked for NAME.
    name = sys.argv[3]
    found = []
    for proto in ('udp', 'tcp'):
        try:
            for line in open('/proc/net/' + proto).read().splitlines()[1:]:
                local = line.split()[1]
                if local.startswith('0B00007F:'):
                    found.append((proto, int(local.split(':')[1], 16)))
        except OSError:
            pass
    results = {}
    for proto, port in found:
        q = dns_query(name)
        try:
            if proto == 'tcp':
                s = socket.create_connection(('127.0.0.11', port), timeout=4)
                s.sendall(struct.pack('>H', len(q)) + q)
                data = s.recv(4096)[2:]
            else:
                s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                s.settimeout(4)
                s.sendto(q, ('127.0.0.11', port))
                data, _ = s.recvfrom(4096)
            if len(data) < 12:
                results[proto + str(port)] = 'none'
            else:
                rcode, count, _a, _n = dns_reply(data)
                results[proto + str(port)] = 'rcode%d/%d' % (rcode, count)
        except OSError as e:
            results[proto + str(port)] = err(e).replace(':', '')
    out(label, ports=len(found), **results)
`;

// Shell prelude: `probe LABEL CURL-ARGS...` prints rc, HTTP code and the body's start;
// `py ...` runs the probe above; GW is the run network's gateway (the filtering resolver).
const PRELUDE = [
  'probe() { l=$1; shift; c=$(curl -s -o /tmp/b -w "%{http_code}" --max-time 8 "$@"); r=$?;',
  '  b=$(head -c 80 /tmp/b 2>/dev/null | tr " \\n" "__"); rm -f /tmp/b;',
  '  echo "@@ $l rc=$r code=$c body=$b"; }',
  'py() { python3 /workspace/probe.py "$@"; }',
  "GW=$(awk '/^nameserver/ {print $2; exit}' /etc/resolv.conf)",
  'echo "@@ gw addr=$GW"',
].join('\n');

export function parseMarkers(stdout: string): Markers {
  const markers: Markers = new Map();
  for (const line of stdout.split('\n')) {
    const m = /^@@ (\S+)(.*)$/.exec(line);
    if (m?.[1] === undefined) continue;
    const fields: Record<string, string> = {};
    for (const kv of (m[2] ?? '').trim().split(/\s+/)) {
      const i = kv.indexOf('=');
      if (i > 0) fields[kv.slice(0, i)] = kv.slice(i + 1);
    }
    markers.set(m[1], fields);
  }
  return markers;
}

export function marker(run: NetRun, label: string): Record<string, string> {
  const m = run.markers.get(label);
  if (m === undefined)
    throw new Error(`no @@ ${label} line in stdout:\n${run.result.stdout}\n${run.result.stderr}`);
  return m;
}

export function egressOf(events: readonly Event[]): Egress[] {
  return events.filter((e) => e.type === 'egress').map((e) => e.data);
}

/** A curl probe that got no answer from the server (refused, reset, or a gateway error). */
export const failed = (m: Record<string, string>): boolean =>
  m.code !== '200' && !(m.body ?? '').startsWith('hello_from');

export const hostsSeen = (t: HttpTarget): string[] => t.requests.map((r) => r.host ?? '');

export async function networksOfRun(runId: string): Promise<unknown[]> {
  return docker.listNetworks({ filters: { label: [`cfh.run-id=${runId}`] } });
}

export async function exists(file: string): Promise<boolean> {
  return stat(file).then(
    () => true,
    () => false,
  );
}

/** The host-side config directories (resolv.conf) of a run, wherever cfh named them. */
export async function egressConfigDirs(runId: string): Promise<string[]> {
  const names = await readdir(os.tmpdir());
  return names
    .filter((n) => n.startsWith(`cfh-egress-${runId}`))
    .map((n) => path.join(os.tmpdir(), n));
}

/** The engine's runtimes: runsc postures need `runsc-host` (docs/architecture.md). */
export async function engineRuntimes(): Promise<string[]> {
  const info = (await docker.info()) as { Runtimes?: Record<string, unknown> };
  return Object.keys(info.Runtimes ?? {});
}

export const RUNSC_HOST_MISSING =
  'the engine has no runsc-host runtime (runsc with --network=host)';

/**
 * Why a runtime's runs against a far namespace cannot be made here ('' when they can):
 * `farSkip` is why the namespace could not be made ('' when it was).
 */
export function farRunSkip(
  runtime: 'runc' | 'runsc',
  farSkip: string,
  runtimes: readonly string[],
): string {
  if (farSkip !== '') return farSkip;
  if (runtime === 'runsc' && !runtimes.includes('runsc-host')) return RUNSC_HOST_MISSING;
  return '';
}

export interface NetHarness {
  readonly workspace: () => string;
  /** Writes `body` into the workspace (readable by the sandbox) and returns its path there. */
  payload(name: string, body: string | Buffer): Promise<string>;
  baseArgs(root: string, options: NetOptions): string[];
  newRoot(): string;
  run(options: NetOptions & { script: string }): Promise<NetRun>;
}

/** A test file's network harness; `env` gives cfh's environment (CFH_EGRESS_RESOLVER...). */
export function useNetHarness(prefix: string, env: () => Record<string, string>): NetHarness {
  let scratch: string | undefined;
  let n = 0;
  beforeAll(async () => {
    scratch = await tempDir(prefix);
    await mkdir(path.join(scratch, 'ws'));
    await writeFile(path.join(scratch, 'ws', 'probe.py'), PROBE_PY, { mode: 0o644 });
  });
  afterAll(async () => {
    if (scratch !== undefined) await removeDir(scratch);
  });
  const dir = (): string => {
    if (scratch === undefined) throw new Error('harness used outside a test');
    return scratch;
  };
  const workspace = (): string => path.join(dir(), 'ws');
  const baseArgs = (root: string, options: NetOptions): string[] => [
    'sandbox',
    'run',
    '--workspace',
    workspace(),
    '--artifact-root',
    root,
    '--timeout',
    '90',
    ...(options.runtime === undefined ? [] : ['--runtime', options.runtime]),
    '--network',
    options.mode,
    ...(options.allow ?? []).flatMap((a) => ['--allow', a]),
    ...(options.deny ?? []).flatMap((d) => ['--deny', d]),
  ];
  const newRoot = (): string => {
    n += 1;
    return path.join(dir(), `art-${n}`);
  };
  return {
    workspace,
    payload: async (name, body) => {
      await writeFile(path.join(workspace(), name), body, { mode: 0o644 });
      return `/workspace/${name}`;
    },
    baseArgs,
    newRoot,
    run: async (options) => {
      const root = newRoot();
      const result = await cfh(
        [...baseArgs(root, options), '--', 'sh', '-c', `${PRELUDE}\n${options.script}`],
        { env: env() },
      );
      const runDir = await onlyRunDir(root);
      const events = await readEvents(runDir);
      return {
        result,
        dir: runDir,
        runId: runIdOf(runDir),
        events,
        egress: egressOf(events),
        markers: parseMarkers(result.stdout),
      };
    },
  };
}
