// AH-ART-2: lifecycle documents are replaced atomically. Write a temp file in the same
// directory, fsync it, rename over the target, fsync the directory: a crash leaves the
// previous complete document or the next, never a partial one.
import { open, rename, unlink } from 'node:fs/promises';
import path from 'node:path';
import { createHash, randomBytes } from 'node:crypto';

/** Writes `contents` atomically; returns the sha256 of the bytes written. */
export async function writeFileAtomic(
  target: string,
  contents: string,
  mode = 0o640,
): Promise<string> {
  const dir = path.dirname(target);
  const temp = path.join(dir, `.${path.basename(target)}.${randomBytes(6).toString('hex')}.tmp`);
  const handle = await open(temp, 'wx', mode);
  try {
    await handle.writeFile(contents);
    await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    await rename(temp, target);
  } catch (error) {
    await unlink(temp).catch(() => undefined);
    throw error;
  }
  await syncDirectory(dir);
  return createHash('sha256').update(contents).digest('hex');
}

export async function writeJsonAtomic(target: string, value: unknown): Promise<string> {
  return writeFileAtomic(target, `${JSON.stringify(value, null, 2)}\n`);
}

export async function syncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
