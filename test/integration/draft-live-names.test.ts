// Found by our adversarial round against the fixes: the draft watch's bound (governance extension, "Draft vs commit policy";
// AH-LIFE-4) counts what the shared tree walk visits, and the walk skips an entry whose name
// is not UTF-8 (workspace/walk.ts, `name-not-utf8`) without descending it. A sandbox that
// writes into a directory so named is never measured: the copy grows past
// CFH_DRAFT_MAX_BYTES for as long as it likes, stopped only by the free-space floor.
import { execFileSync } from 'node:child_process';
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SANDBOX_UID, cfh, onlyRunDir, readEvents, useScratch } from './helpers.js';

const scratch = useScratch('draft-names');
const isRoot = process.getuid?.() === 0;

describe('class: the draft copy grows past its bound during the run', () => {
  it('100 MB written below a directory whose name is not UTF-8 stop the run at 20 MiB', async () => {
    const ws = scratch.path('ws');
    await chmod(path.dirname(ws), 0o755);
    await mkdir(ws, { recursive: true });
    await writeFile(path.join(ws, 'notes.txt'), 'first line\n');
    if (isRoot) execFileSync('chown', ['-R', `${SANDBOX_UID}:${SANDBOX_UID}`, ws]);
    const root = scratch.path('art');
    const drafts = scratch.path('drafts');
    await mkdir(drafts);
    await chmod(drafts, 0o711);
    // Five times the bound, then long enough for a dozen walks to have measured it.
    const script = [
      'd=$(printf "d\\377")',
      'mkdir "$d"',
      'head -c 100000000 /dev/zero > "$d/big"',
      'sync',
      'sleep 4',
      'echo wrote',
    ].join('; ');
    const r = await cfh(
      [
        'sandbox',
        'run',
        '--workspace',
        ws,
        '--workspace-mode',
        'draft',
        '--artifact-root',
        root,
      ].concat(['--timeout', '120', '--', 'sh', '-c', script]),
      { env: { CFH_DRAFT_ROOT: drafts, CFH_DRAFT_MAX_BYTES: '20m' } },
    );
    const events = await readEvents(await onlyRunDir(root));
    expect(
      {
        exit: r.exitCode,
        stdout: r.stdout.trim(),
        limit: events.find((e) => e.type === 'limit_reached')?.data,
      },
      r.stderr,
    ).toMatchObject({ exit: 1, limit: { limit: 'draft_bytes' } });
  });
});
