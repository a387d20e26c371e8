// Files as a host tool's interpreter reaches them, by identity (host-tool-script.ts).
import { readFileSync, realpathSync, statSync } from 'node:fs';
import { againstCwd } from '../../tools/host/host-pin.js';

/** A regular file by identity: one device and inode, however it is reached. */
export interface FileIdentity {
  /** `dev:ino`. */
  readonly id: string;
  readonly real: string;
  /** As the entry wrote it. */
  readonly spelled: string;
}

/** Code as cfh reads it: inline, or a file's text; `shell` when a POSIX shell runs it. */
export interface CodeText {
  readonly text: string;
  readonly shell: boolean;
}

/**
 * An entry's script; `opaque` says why cfh cannot tell which file runs; neither: no script.
 * `code` is inline code, read as its interpreter reads it (host-tool-code.ts); `unresolved`
 * says why what runs is not the operator's to know (the model names it).
 */
export interface ScriptOf {
  readonly file?: FileIdentity;
  readonly opaque?: string;
  readonly code?: CodeText;
  readonly unresolved?: string;
}

export const PLACEHOLDER = /^\{[A-Za-z_][A-Za-z0-9_]{0,63}\}$/;

export function fileIdentity(spelled: string, cwd: string): FileIdentity | undefined {
  // Joined, not path.resolve'd: `link/../x` is where the kernel goes, not where the text does.
  const absolute = againstCwd(spelled, cwd);
  try {
    const st = statSync(absolute, { bigint: true });
    if (!st.isFile()) return undefined;
    return { id: `${String(st.dev)}:${String(st.ino)}`, real: realpathSync(absolute), spelled };
  } catch {
    return undefined;
  }
}

export function isDirectoryAt(spelled: string, cwd: string): boolean {
  try {
    return statSync(againstCwd(spelled, cwd)).isDirectory();
  } catch {
    return false;
  }
}

export function readTextAt(spelled: string, cwd: string): string | undefined {
  try {
    return readFileSync(againstCwd(spelled, cwd), 'utf8');
  } catch {
    return undefined;
  }
}
