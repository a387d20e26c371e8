// `--env K=V`, `--env K`, `--env-file FILE`: what the command's environment gets, what is
// refused before anything exists (AH-INV-4), and that no value is ever written where the
// evidence or an error message would keep it (AH-INV-2: values may be secrets).
import { execFileSync } from 'node:child_process';
import { realpathSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  ENV_FILE_MAX_BYTES,
  ENV_VALUE_MAX_BYTES,
  parseEnvFile,
  resolveCommandEnv,
} from '../../src/config/command-env.js';
import type { CfhEnvironment } from '../../src/config/env.js';
import { planSandboxRun, type SandboxRunOptions } from '../../src/engine/run/run-plan.js';
import { describeSpec } from '../../src/substrate/container-spec.js';
import { toCreateOptions } from '../../src/substrate/docker/adapter.js';
import { expectConfigError, makeTempDir, removeTempDir } from './helpers.js';
import { testEnvironment } from './test-environment.js';

const SECRET = 'sk-cfh-unit-0123456789abcdef';
let tmp: string | undefined;
let ws = '';

beforeEach(async () => {
  tmp = realpathSync(await makeTempDir('cfh-env-'));
  ws = path.join(tmp, 'ws');
  await mkdir(ws);
});
afterEach(async () => {
  await removeTempDir(tmp);
  tmp = undefined;
});

function at(name: string): string {
  if (tmp === undefined) throw new Error('no temp dir');
  return path.join(tmp, name);
}

function env(credentialSource: NodeJS.ProcessEnv = {}): CfhEnvironment {
  // The digest key is made in the operator's key directory, read through this env.
  return testEnvironment(at(''), {
    credentialSource: { CFH_KEY_DIR: at('keys'), ...credentialSource },
  });
}

function plan(options: Partial<SandboxRunOptions>, hostEnv: NodeJS.ProcessEnv = {}) {
  return planSandboxRun(
    { workspace: ws, command: ['true'], ...options },
    env(hostEnv),
    { uid: 1000, gid: 1000 },
    { pid: 1, start: 'boot/1', host: 'h' },
  );
}

describe('env-file syntax (docker): lines, comments, no quote processing', () => {
  it('takes K=V lines as they are, skips # lines and blanks, drops a CR with the LF', () => {
    const text = [
      '# a comment',
      '',
      '   LEADING=spaces before the name are ignored',
      'QUOTED="kept with its quotes"',
      "SINGLE='and these'",
      'TRAILING=space at the end ',
      'EMPTY=',
      'EQUALS=a=b=c',
      'HASH=value # not a comment',
      'CRLF=windows\r',
    ].join('\n');
    const got = Object.fromEntries(parseEnvFile(text, 'f', {}).map((e) => [e.name, e.value]));
    expect(got).toEqual({
      LEADING: 'spaces before the name are ignored',
      QUOTED: '"kept with its quotes"',
      SINGLE: "'and these'",
      TRAILING: 'space at the end ',
      EMPTY: '',
      EQUALS: 'a=b=c',
      HASH: 'value # not a comment',
      CRLF: 'windows',
    });
  });

  it('a bare name takes cfh’s own value, and is refused when that is unset', () => {
    expect(parseEnvFile('FROM_HOST\n', 'f', { FROM_HOST: 'v' })).toEqual([
      { name: 'FROM_HOST', value: 'v', line: 1 },
    ]);
    expectConfigError(() => parseEnvFile('\n\nMISSING\n', 'f', {}), 'env_unset', 'f:3', 'MISSING');
  });
});

describe('names: the class of a name the start gate would not take as a name', () => {
  // Under runc the gate runs `env -i NAME=VALUE… CMD`: a "name" starting with `-` is an
  // option of env (`-uX=1` unsets, `-S…` splits), `=` or NUL cannot be in a name, and
  // whitespace or a digit first is not a portable name.
  for (const bad of ['-uPATH', '-S', '1ABC', 'A B', 'A-B', '', 'A\0B', 'Ä', 'A.B']) {
    it(`refuses ${JSON.stringify(bad)} and never shows the value in the message`, () => {
      const e = expectConfigError(
        () => resolveCommandEnv({ env: [`${bad}=${SECRET}`] }, {}, ws),
        'env_invalid',
        '--env',
      );
      expect(e.message).not.toContain(SECRET);
      expect(JSON.stringify(e.details)).not.toContain(SECRET);
    });
  }

  it('refuses the same names in an env file, naming file and line', () => {
    const e = expectConfigError(
      () => parseEnvFile(`OK=1\n-uHOME=${SECRET}\n`, 'vars.env', {}),
      'env_invalid',
      'vars.env:2',
    );
    expect(e.message).not.toContain(SECRET);
  });

  it('refuses a NUL in a value and a value beyond the bound, without showing it', () => {
    for (const value of [`a\0${SECRET}`, SECRET + 'x'.repeat(ENV_VALUE_MAX_BYTES)]) {
      const e = expectConfigError(
        () => resolveCommandEnv({ env: [`K=${value}`] }, {}, ws),
        'env_invalid',
        'K',
      );
      expect(e.message).not.toContain(SECRET);
    }
  });

  it('refuses --env K when K is unset in cfh’s environment (an empty value is a value)', () => {
    expectConfigError(() => resolveCommandEnv({ env: ['NOPE'] }, {}, ws), 'env_unset', 'NOPE');
    expect(resolveCommandEnv({ env: ['SET'] }, { SET: '' }, ws).values).toEqual({ SET: '' });
  });
});

describe('--env-file goes through the bounded input reader', () => {
  it('refuses a FIFO without blocking, a directory, and a file beyond the bound', async () => {
    const fifo = at('fifo');
    execFileSync('mkfifo', [fifo]);
    expectConfigError(
      () => resolveCommandEnv({ envFiles: [fifo] }, {}, ws),
      'input_file_not_regular',
    );
    expectConfigError(
      () => resolveCommandEnv({ envFiles: [ws] }, {}, ws),
      'input_file_not_regular',
    );
    const big = at('big.env');
    await writeFile(big, `A=${'x'.repeat(ENV_FILE_MAX_BYTES)}\n`);
    expectConfigError(() => resolveCommandEnv({ envFiles: [big] }, {}, ws), 'input_file_too_large');
    expectConfigError(
      () => resolveCommandEnv({ envFiles: ['/dev/zero'] }, {}, ws),
      'input_file_not_regular',
    );
  });

  it('files first, in order, then every --env: the last one given wins', async () => {
    const a = at('a.env');
    const b = at('b.env');
    await writeFile(a, 'X=from-a\nY=from-a\n');
    await writeFile(b, 'Y=from-b\nZ=from-b\n');
    const got = resolveCommandEnv({ envFiles: [a, b], env: ['Z=from-flag'] }, {}, ws);
    expect(got.values).toEqual({ X: 'from-a', Y: 'from-b', Z: 'from-flag' });
    expect(got.sources).toEqual({
      X: { from: 'file', file: a, line: 1 },
      Y: { from: 'file', file: b, line: 1 },
      Z: { from: 'flag' },
    });
  });
});

describe('the plan: values in the container env only, names and keyed digests elsewhere', () => {
  it('puts the values over the profile’s env and cfh’s base, PATH included', () => {
    const p = plan(
      { env: [`TOKEN=${SECRET}`, 'PATH=/opt/bin:/usr/bin', 'HOSTVAL'] },
      {
        HOSTVAL: 'from-cfh',
      },
    );
    expect(p.spec.env).toMatchObject({
      TOKEN: SECRET,
      PATH: '/opt/bin:/usr/bin',
      HOSTVAL: 'from-cfh',
      HOME: '/tmp',
    });
    expect(toCreateOptions({ ...p.spec, mountCheck: 'recheck' }).Env).toContain(`TOKEN=${SECRET}`);
  });

  it('records names, sources and hmac digests under the machine key, never the value', () => {
    const p = plan({ env: [`TOKEN=${SECRET}`, 'HOSTVAL'] }, { HOSTVAL: SECRET });
    expect(Object.keys(p.commandEnv)).toEqual(['HOSTVAL', 'TOKEN']);
    expect(p.commandEnv.TOKEN).toMatchObject({ from: 'flag' });
    expect(p.commandEnv.HOSTVAL).toMatchObject({ from: 'host' });
    const digest = p.commandEnv.TOKEN?.digest ?? '';
    expect(digest).toMatch(/^hmac-sha256:[0-9a-f]{16}:[0-9a-f]{64}$/);
    // Keyed: the same value digests alike under the key, and not as a bare sha256 would.
    expect(p.commandEnv.HOSTVAL?.digest).toBe(digest);
    const recorded = JSON.stringify({
      commandEnv: p.commandEnv,
      spec: describeSpec(p.spec),
      overrides: p.overrides,
    });
    expect(recorded).not.toContain(SECRET);
    expect(describeSpec(p.spec).envNames).toEqual(expect.arrayContaining(['TOKEN', 'HOSTVAL']));
  });

  it('a run without --env makes no digest key', () => {
    const p = plan({});
    expect(p.commandEnv).toEqual({});
  });
});

describe('the container request: stdin and TTY', () => {
  it('opens and attaches stdin only with -i or the gate, a TTY only with -t', () => {
    const runc = (o: Partial<SandboxRunOptions>) => toCreateOptions(plan(o).spec);
    const runsc = (o: Partial<SandboxRunOptions>) =>
      toCreateOptions(plan({ runtime: 'runsc', ...o }).spec);
    expect(runsc({})).toMatchObject({ OpenStdin: false, AttachStdin: false, Tty: false });
    expect(runsc({ interactive: true })).toMatchObject({
      OpenStdin: true,
      AttachStdin: true,
      StdinOnce: true,
      Tty: false,
    });
    expect(runsc({ interactive: true, tty: true })).toMatchObject({ OpenStdin: true, Tty: true });
    // The gate reads its word on stdin in every case; -t adds the terminal.
    expect(runc({})).toMatchObject({ OpenStdin: true, StdinOnce: true, Tty: false });
    expect(runc({ tty: true })).toMatchObject({ OpenStdin: true, Tty: true });
    expect(describeSpec(plan({ interactive: true, tty: true }).spec)).toMatchObject({
      stdin: 'forwarded',
      tty: true,
    });
  });
});
