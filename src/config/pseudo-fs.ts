// Kernel pseudo file systems: their files are not data a user wrote. A "regular file" there
// reports size 0 and is generated on read (/proc/self/environ holds cfh's own credentials),
// some reads block (/proc/kmsg, tracefs' trace_pipe), and a directory made there is a kernel
// object (a cgroup) or cannot be made at all: procfs answers mkdir with ENOENT under an
// existing parent, and Node's recursive mkdir retries that forever. cfh neither reads input
// from these nor writes evidence to them.
import { statfsSync } from 'node:fs';
import { statfs } from 'node:fs/promises';
import path from 'node:path';

/** statfs(2) f_type magic numbers (linux/magic.h) of the file systems cfh refuses. */
const PSEUDO_FS_MAGIC: ReadonlyMap<number, string> = new Map([
  [0x9fa0, 'proc'],
  [0x62656572, 'sysfs'],
  [0x1cd1, 'devpts'],
  [0x27e0eb, 'cgroup'],
  [0x63677270, 'cgroup2'],
  [0x64626720, 'debugfs'],
  [0x74726163, 'tracefs'],
  [0x73636673, 'securityfs'],
  [0xcafe4a11, 'bpf'],
  [0x6165676c, 'pstore'],
  [0x62656570, 'configfs'],
  [0x65735543, 'fusectl'],
  [0x19800202, 'mqueue'],
  [0x958458f6, 'hugetlbfs'],
  [0x42494e4d, 'binfmt_misc'],
  [0xde5e81e4, 'efivarfs'],
  [0xf97cff8c, 'selinuxfs'],
  [0x43415d53, 'smackfs'],
  [0x6e736673, 'nsfs'],
  [0x7655821, 'resctrl'],
  [0x187, 'autofs'],
]);

/** Trees refused by path whatever they are mounted as (/dev is devtmpfs, reported as tmpfs). */
export const PSEUDO_TREES: readonly string[] = ['/proc', '/sys', '/dev'];

export function pseudoTreeOf(absolute: string): string | undefined {
  return PSEUDO_TREES.find((t) => absolute === t || absolute.startsWith(`${t}${path.sep}`));
}

/** The pseudo file system `existing` lies on, by name; undefined for an ordinary one. */
export function pseudoFileSystemAt(existing: string): string | undefined {
  return PSEUDO_FS_MAGIC.get(statfsSync(existing).type);
}

export async function pseudoFileSystemAtAsync(existing: string): Promise<string | undefined> {
  return PSEUDO_FS_MAGIC.get((await statfs(existing)).type);
}
