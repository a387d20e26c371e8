// The host workspace an apply writes (`cfh runs apply`, a session's `runs_apply`): the path
// the run recorded, only while it is still that directory and not a link to elsewhere.
import { realpath, stat } from 'node:fs/promises';
import { WorkspaceError } from '../errors.js';

/** The host workspace as recorded, refused when it is gone or now resolves elsewhere. */
export async function hostRoot(hostWorkspace: string): Promise<string> {
  let real: string;
  try {
    real = await realpath(hostWorkspace);
  } catch {
    throw new WorkspaceError('workspace_missing', `the host workspace '${hostWorkspace}' is gone`);
  }
  if (real !== hostWorkspace || !(await stat(real)).isDirectory()) {
    throw new WorkspaceError(
      'workspace_moved',
      `the host workspace '${hostWorkspace}' now resolves to '${real}'; refusing to apply there`,
    );
  }
  return real;
}
