// With whose authority `cfh runs apply` writes the host workspace. cfh as root applying a
// workspace another user owns takes that user's file-system identity (effective uid, gid,
// and that gid as the only group) for every read and write of the tree, and its own back
// only to read the run's evidence and extend its log. So whoever can change the workspace
// cannot turn root's writes elsewhere: a directory swapped for a link between the check
// and a rename leads the write only where the owner could write anyway, and a part of the
// tree the owner may not write is not written. Linux changes credentials per thread;
// glibc's seteuid/setegid/setgroups apply them to every thread of the process, libuv's
// pool included, and the apply runs one file-system call at a time.
import { OWN_AUTHORITY, type Authority } from '../../workspace/authority.js';

export interface TreeOwner {
  readonly uid: number;
  readonly gid: number;
}

/** cfh's own authority, or the owner's when cfh is root and the tree is someone else's. */
export function authorityFor(owner: TreeOwner): Authority {
  const euid = process.geteuid?.();
  if (euid !== 0 || owner.uid === 0) return OWN_AUTHORITY;
  const self = { gid: process.getegid?.() ?? 0, groups: process.getgroups?.() ?? [] };
  let asOwner = false;
  const become = (toOwner: boolean): void => {
    if (toOwner === asOwner) return;
    if (toOwner) {
      process.setgroups?.([owner.gid]);
      process.setegid?.(owner.gid);
      process.seteuid?.(owner.uid);
    } else {
      // The real uid stays 0 throughout, so root's effective ids can be taken back.
      process.seteuid?.(0);
      process.setegid?.(self.gid);
      process.setgroups?.(self.groups);
    }
    asOwner = toOwner;
  };
  const within = async <T>(toOwner: boolean, fn: () => Promise<T>): Promise<T> => {
    const before = asOwner;
    become(toOwner);
    try {
      return await fn();
    } finally {
      become(before);
    }
  };
  return {
    asWriter: (fn) => within(true, fn),
    asSelf: (fn) => within(false, fn),
  };
}
