// The host-side directory of a sandbox's resolv.conf: unpredictable, private,
// created exclusively, and removed by reap only when it is cfh's own.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lstat, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import {
  createEgressConfig,
  egressConfigDir,
  isEgressConfigDir,
  removeEgressConfig,
} from '../../src/sandbox/egress-config.js';

const RUN = '20261201T000000Z-0123abcd';
let scratch: string;

beforeAll(async () => {
  scratch = await mkdtemp(path.join(os.tmpdir(), 'cfh-unit-egress-config-'));
});
afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

describe('egress config directory', () => {
  it('is named unpredictably, never by the run id alone', () => {
    const a = egressConfigDir(RUN);
    const b = egressConfigDir(RUN);
    expect(a).not.toBe(b);
    expect(path.dirname(a)).toBe(os.tmpdir());
    expect(path.basename(a)).toMatch(new RegExp(`^cfh-egress-${RUN}-[0-9a-f]{32}$`));
    expect(isEgressConfigDir(a, RUN)).toBe(true);
  });

  it('is created private, with its resolv.conf', async () => {
    const dir = path.join(scratch, `cfh-egress-${RUN}-${'a'.repeat(32)}`);
    const file = await createEgressConfig(dir, '172.20.0.1');
    expect((await lstat(dir)).mode & 0o777).toBe(0o700);
    expect((await lstat(file)).mode & 0o777).toBe(0o644);
    expect(await readFile(file, 'utf8')).toBe(
      'nameserver 172.20.0.1\noptions ndots:0 timeout:2 attempts:1\n',
    );
  });

  it('refuses a path someone else made first: a directory or a symlink', async () => {
    const planted = path.join(scratch, 'planted');
    await mkdir(planted);
    await writeFile(path.join(planted, 'resolv.conf'), 'nameserver 203.0.113.1\n');
    await expect(createEgressConfig(planted, '172.20.0.1')).rejects.toMatchObject({
      code: 'EEXIST',
    });
    const link = path.join(scratch, 'link');
    await symlink(planted, link);
    await expect(createEgressConfig(link, '172.20.0.1')).rejects.toMatchObject({
      code: 'EEXIST',
    });
    expect(await readFile(path.join(planted, 'resolv.conf'), 'utf8')).toBe(
      'nameserver 203.0.113.1\n',
    );
  });

  it('is removed only when it has the shape of that run and is a real directory', async () => {
    const mine = path.join(scratch, `cfh-egress-${RUN}-${'b'.repeat(32)}`);
    await createEgressConfig(mine, '172.20.0.1');
    expect(await removeEgressConfig(mine, '20261201T000000Z-ffffffff')).toBe(false);
    expect(await removeEgressConfig(path.join(scratch, 'elsewhere'), RUN)).toBe(false);
    const target = path.join(scratch, 'target');
    await mkdir(target);
    const link = path.join(scratch, `cfh-egress-${RUN}-${'c'.repeat(32)}`);
    await symlink(target, link);
    expect(await removeEgressConfig(link, RUN)).toBe(false);
    expect((await lstat(target)).isDirectory()).toBe(true);
    expect(await removeEgressConfig(mine, RUN)).toBe(true);
    await expect(lstat(mine)).rejects.toMatchObject({ code: 'ENOENT' });
  });
});
