import { hostname } from 'node:os';
import { describe, expect, it } from 'vitest';
import {
  LABEL_OWNER_HOST,
  LABEL_OWNER_PID,
  LABEL_OWNER_START,
  LABEL_RUN_ID,
  LABEL_VERSION,
  currentOwner,
  ownerLabels,
  ownerStatus,
  processStartTicks,
} from '../../src/sandbox/owner.js';

const RUN_ID = '20240102T030405Z-0123abcd';

function labelsOfThisProcess(): Record<string, string> {
  return ownerLabels(RUN_ID, currentOwner(), '0.0.0-test');
}

describe('currentOwner and ownerLabels', () => {
  it('identify this process by pid, boot id + start ticks, and host', () => {
    const owner = currentOwner();
    expect(owner.pid).toBe(process.pid);
    expect(owner.host).toBe(hostname());
    expect(owner.start).toMatch(/^.+\/\d+$/);
    expect(owner.start.endsWith(`/${processStartTicks(process.pid) ?? 'missing'}`)).toBe(true);
    const labels = labelsOfThisProcess();
    expect(labels[LABEL_RUN_ID]).toBe(RUN_ID);
    expect(labels[LABEL_OWNER_PID]).toBe(String(process.pid));
    expect(labels[LABEL_OWNER_START]).toBe(owner.start);
    expect(labels[LABEL_OWNER_HOST]).toBe(hostname());
    expect(labels[LABEL_VERSION]).toBe('0.0.0-test');
  });

  it('processStartTicks is undefined for a pid that does not exist', () => {
    expect(processStartTicks(999_999_999)).toBeUndefined();
  });
});

describe('ownerStatus', () => {
  it('is alive for the labels of the current process', () => {
    expect(ownerStatus(labelsOfThisProcess())).toBe('alive');
  });

  it('is gone for a pid that does not exist', () => {
    expect(ownerStatus({ ...labelsOfThisProcess(), [LABEL_OWNER_PID]: '999999999' })).toBe('gone');
  });

  it('is gone for the right pid with the wrong start (pid reuse)', () => {
    const labels = labelsOfThisProcess();
    const start = labels[LABEL_OWNER_START] ?? '';
    const ticks = Number(start.slice(start.lastIndexOf('/') + 1));
    const boot = start.slice(0, start.lastIndexOf('/'));
    expect(ownerStatus({ ...labels, [LABEL_OWNER_START]: `${boot}/${ticks + 1}` })).toBe('gone');
    expect(ownerStatus({ ...labels, [LABEL_OWNER_START]: `other-boot/${ticks}` })).toBe('gone');
  });

  it('is gone for another live process that does not match the recorded start', () => {
    // The parent is alive, but the start recorded is this process's.
    expect(ownerStatus({ ...labelsOfThisProcess(), [LABEL_OWNER_PID]: String(process.ppid) })).toBe(
      'gone',
    );
  });

  it('is alive for another live process whose start matches', () => {
    const labels = labelsOfThisProcess();
    const start = labels[LABEL_OWNER_START] ?? '';
    const boot = start.slice(0, start.lastIndexOf('/'));
    const parentTicks = processStartTicks(process.ppid);
    expect(parentTicks).toBeDefined();
    expect(
      ownerStatus({
        ...labels,
        [LABEL_OWNER_PID]: String(process.ppid),
        [LABEL_OWNER_START]: `${boot}/${parentTicks ?? ''}`,
      }),
    ).toBe('alive');
  });

  it.each(['abc', '0', '-1', '1.5', ''])('is gone for the malformed pid %j', (pid) => {
    expect(ownerStatus({ ...labelsOfThisProcess(), [LABEL_OWNER_PID]: pid })).toBe('gone');
  });

  it('is foreign-host for another hostname, even with this pid and start', () => {
    expect(ownerStatus({ ...labelsOfThisProcess(), [LABEL_OWNER_HOST]: `not-${hostname()}` })).toBe(
      'foreign-host',
    );
  });

  it('is foreign-host when the host label is missing', () => {
    const labels: Record<string, string> = { ...labelsOfThisProcess() };
    // eslint-disable-next-line @typescript-eslint/no-dynamic-delete
    delete labels[LABEL_OWNER_HOST];
    expect(ownerStatus(labels)).toBe('foreign-host');
  });
});
