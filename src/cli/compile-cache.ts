// Node's module compile cache (node:module enableCompileCache) spares every command but
// `--version` recompiling cfh's modules and its dependencies: about a fifth of a command's
// start-up CPU. The cache holds code Node runs, so whoever can write it can run code as
// cfh: it lives in cfh's own package (node_modules/.cache, the convention of build tools),
// as writable as cfh's code and no more, never in $HOME (a sandbox may be given an rw
// mount of it) nor the shared os.tmpdir() default. It is used only when that directory is
// a real, private directory of ours: a global install another user owns simply has none.
// NODE_DISABLE_COMPILE_CACHE=1 turns it off (Node's own switch).
import { lstatSync, mkdirSync } from 'node:fs';
import module from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** `<package>/node_modules/.cache/cfh-compile`, from this module's place in dist/cli/. */
export function compileCacheDir(moduleUrl: string = import.meta.url): string {
  const pkg = path.resolve(path.dirname(fileURLToPath(moduleUrl)), '..', '..');
  return path.join(pkg, 'node_modules', '.cache', 'cfh-compile');
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
