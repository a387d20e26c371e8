// What the engine says about itself: its runtimes (and the binaries behind their names),
// limits it can enforce, security options, cgroup version; and, on every run's cold path,
// just its version. Parsed, not trusted by shape: a field missing is a field absent.
import type Docker from 'dockerode';
import type * as Http from 'node:http';
import type { IncomingHttpHeaders } from 'node:http';
import { createRequire } from 'node:module';
import { z } from 'zod';
import type { EngineFacts } from '../runtime.js';
import { engineError } from './errors.js';

// Required, not imported: an ESM import of node:http builds its module facade, which reads
// every export and so loads Node's bundled undici (about 35 ms of CPU at every start of
// cfh); dockerode requires it the same way.
const { request: httpRequest } = createRequire(import.meta.url)('node:http') as typeof Http;

const text = z.string().optional().catch(undefined);
const flag = z.unknown().transform((value) => value === true);

const InfoAnswer = z.looseObject({
  Runtimes: z
    .record(
      z.string(),
      z.looseObject({ path: text, runtimeArgs: z.array(z.string()).nullish().catch(null) }),
    )
    .nullish()
    .catch(null),
  ServerVersion: text,
  DefaultRuntime: text,
  MemoryLimit: flag,
  PidsLimit: flag,
  CpuCfsQuota: flag,
  SecurityOptions: z.array(z.string()).nullish().catch(null),
  CgroupVersion: text,
});

const VersionAnswer = z.looseObject({ Version: z.string(), ApiVersion: z.string() });

export async function engineFacts(docker: Docker, signal?: AbortSignal): Promise<EngineFacts> {
  signal?.throwIfAborted();
  try {
    const [rawInfo, rawVersion]: [unknown, unknown] = await Promise.all([
      docker.info() as Promise<unknown>,
      docker.version(),
    ]);
    const info = InfoAnswer.parse(rawInfo);
    const version = VersionAnswer.parse(rawVersion);
    const registered = info.Runtimes ?? {};
    const runtimes = Object.keys(registered).sort();
    return {
      serverVersion: info.ServerVersion ?? version.Version,
      apiVersion: version.ApiVersion,
      runtimes,
      runtimeArgs: Object.fromEntries(runtimes.map((r) => [r, registered[r]?.runtimeArgs ?? []])),
      runtimePaths: Object.fromEntries(runtimes.map((r) => [r, registered[r]?.path ?? ''])),
      defaultRuntime: info.DefaultRuntime ?? 'runc',
      memoryLimit: info.MemoryLimit,
      pidsLimit: info.PidsLimit,
      cpuCfsQuota: info.CpuCfsQuota,
      securityOptions: info.SecurityOptions ?? [],
      cgroupVersion: info.CgroupVersion ?? '',
    };
  } catch (error) {
    throw engineError(error, 'engine info');
  }
}

/**
 * Server and API version from the headers of `/_ping` (about 1 ms) rather than from
 * `/version` (about 20 ms on engine 20.10, which asks containerd and runc): this sits on
 * every run's cold path. Falls back to `/version` where the headers are absent.
 */
export async function engineVersion(
  docker: Docker,
  signal?: AbortSignal,
): Promise<{ serverVersion: string; apiVersion: string }> {
  signal?.throwIfAborted();
  try {
    const headers = await pingHeaders(docker, signal);
    const serverHeader = headers.server;
    const server =
      typeof serverHeader === 'string' ? /^Docker\/(\S+)/.exec(serverHeader)?.[1] : undefined;
    const api = headers['api-version'];
    if (server !== undefined && typeof api === 'string')
      return { serverVersion: server, apiVersion: api };
    const v = VersionAnswer.parse(await docker.version());
    return { serverVersion: v.Version, apiVersion: v.ApiVersion };
  } catch (error) {
    throw engineError(error, 'engine version');
  }
}

/** dockerode's modem: where it connects (the typings leave these out). */
const ModemAddress = z.looseObject({
  socketPath: z.string().optional(),
  host: z.string().optional(),
  port: z.union([z.number(), z.string()]).optional(),
  protocol: z.string().optional(),
});

function pingHeaders(docker: Docker, signal?: AbortSignal): Promise<IncomingHttpHeaders> {
  const modem = ModemAddress.parse(docker.modem);
  if (modem.protocol === 'https') return Promise.resolve({});
  return new Promise((resolve, reject) => {
    const target =
      modem.socketPath !== undefined
        ? { socketPath: modem.socketPath }
        : { host: modem.host, port: modem.port };
    const req = httpRequest(
      { ...target, path: '/_ping', method: 'GET', ...(signal === undefined ? {} : { signal }) },
      (res) => {
        res.resume();
        res.on('end', () => {
          if (res.statusCode === 200) resolve(res.headers);
          else
            reject(
              Object.assign(new Error(`ping: HTTP ${String(res.statusCode)}`), {
                statusCode: res.statusCode,
              }),
            );
        });
      },
    );
    req.on('error', reject);
    req.end();
  });
}
