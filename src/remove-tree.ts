// The one way cfh removes a tree: a draft copy at the end of its run or after its cfh died
// (`cfh reap`, the next run's sweep), a failed copy, an apply's staging, a run directory
// pruned, a temporary directory. Any of them may hold what a less privileged user or a
// sandbox wrote, and some of them that user can still change while it goes. So the tree is
// removed by descriptor (remove-tree-walk.ts: no link is ever followed, no name resolved
// twice), and when cfh is root, every directory another user owns is emptied by a child
// process running with that user's uid and gid (no supplementary groups): the removal has
// only the authority of whoever could write there, and a tree its owner swaps for links
// mid-removal can make cfh delete nothing that owner could not delete anyway.
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { open } from 'node:fs/promises';
import { constants } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CfhError, errorMessage } from './errors.js';
import { removeRoot, type Delegate } from './remove-tree-walk.js';

const WALK = fileURLToPath(new URL('./remove-tree-walk.js', import.meta.url));
/** Under vitest the sources run as they are: the child strips their types (Node 24). */
const WALK_TS = WALK.replace(/\.js$/, '.ts');

let walkSource: Promise<{ text: string; inputType: string }> | undefined;

/**
 * The child's program: the walk's own text, read by cfh and given on the command line, so
 * the other user need not be able to read cfh's installation, and nothing they can write
 * is run.
 */
function childProgram(): Promise<{ text: string; inputType: string }> {
  walkSource ??= readFile(WALK, 'utf8').then(
    (text) => ({ text, inputType: 'module' }),
    async () => ({ text: await readFile(WALK_TS, 'utf8'), inputType: 'module-typescript' }),
  );
  return walkSource;
}

/** Empties the directory on `fd` as its owner: a child process with their uid and gid. */
const asOwner: Delegate = async (fd, owner) => {
  const program = await childProgram();
  const code = `${program.text}\nawait childMain();\n`;
  const child = spawn(process.execPath, [`--input-type=${program.inputType}`, '-e', code], {
    uid: owner.uid,
    gid: owner.gid,
    // Nothing of cfh's environment (NODE_OPTIONS, a loader) reaches the other user's process.
    env: {},
    cwd: '/',
    // The directory is the child's descriptor 3 (CHILD_FD in remove-tree-walk.ts).
    stdio: ['ignore', 'ignore', 'pipe', fd],
  });
  let stderr = '';
  child.stderr?.setEncoding('utf8');
  child.stderr?.on('data', (chunk: string) => {
    if (stderr.length < 4096) stderr += chunk;
  });
  const status = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (exit) => {
      resolve(exit);
    });
  });
  if (status !== 0) {
    const said = stderr
      .split('\n')
      .filter((l) => l !== '' && !l.includes('ExperimentalWarning') && !l.includes('--trace-'))
      .at(-1);
    throw new Error(`as uid ${String(owner.uid)}: ${said ?? `exit ${String(status)}`}`);
  }
};

/**
 * Removes `target` and everything below it; nothing when it is already gone. The path to
 * its parent is the caller's (a draft root, an artifact root, the temp directory: resolved
 * and checked at planning); from the parent down nothing is resolved by name. Cleanup that
 * must finish once begun: no AbortSignal.
 */
export async function removeTree(target: string): Promise<void> {
  const parent = await open(path.dirname(target), constants.O_RDONLY | constants.O_DIRECTORY).catch(
    (error: unknown) => {
      if (isMissing(error)) return undefined;
      throw removeFailed(target, error);
    },
  );
  if (parent === undefined) return;
  try {
    await removeRoot(parent.fd, Buffer.from(path.basename(target)), asOwner);
  } catch (error) {
    if (isMissing(error)) return;
    throw removeFailed(target, error);
  } finally {
    await parent.close();
  }
}

function isMissing(error: unknown): boolean {
  return error instanceof Error && 'code' in error && error.code === 'ENOENT';
}

function removeFailed(target: string, error: unknown): CfhError {
  return new CfhError('tree_remove_failed', `cannot remove '${target}': ${errorMessage(error)}`, {
    boundary: 'workspace',
    details: { path: target },
    cause: error,
    exitCode: 1,
  });
}
