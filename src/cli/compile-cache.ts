// Node's module compile cache (node:module enableCompileCache) spares every command but
// `--version` recompiling cfh's modules and its dependencies: about a fifth of a command's
// start-up CPU. The cache holds code Node runs, so it lives only in a directory of the user's
// own that no one else can write (never the shared os.tmpdir() default), and is skipped
// when that cannot be had. NODE_DISABLE_COMPILE_CACHE=1 turns it off (Node's own switch).
import { lstatSync, mkdirSync } from 'node:fs';
import module from 'node:module';
import os from 'node:os';
import path from 'node:path';

export function compileCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  const cache = env.XDG_CACHE_HOME ?? path.join(env.HOME ?? os.homedir(), '.cache');
  return path.join(cache, 'cfh', 'compile-cache');
}

/** The directory if it is ours alone: a real directory, owned by us, mode without group/other. */
export function privateDirectory(dir: string): boolean {
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const st = lstatSync(dir);
    const uid = process.getuid?.();
    return st.isDirectory() && (uid === undefined || st.uid === uid) && (st.mode & 0o077) === 0;
  } catch {
    return false;
  }
}

const dir = compileCacheDir();
if (path.isAbsolute(dir) && privateDirectory(dir)) {
  try {
    module.enableCompileCache(dir);
  } catch {
    // An older Node, or a cache it cannot use: start-up is only slower.
  }
}
