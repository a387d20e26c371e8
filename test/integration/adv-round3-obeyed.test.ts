// Adversarial round 3, second pass, class 9 against the fix (src/host-obeyed.ts, the one
// list; sandbox/host-obeyed-mounts.ts, the top held read-only; sandbox/host-obeyed-watch.ts,
// the end walk that finds what was created elsewhere; workspace/host-obeyed-gate.ts, the
// apply gate). Two routes the fix's authors did not cover:
// - the end walk lists directories as cfh's user: a directory the sandbox made unreadable
//   (0311: traversable, not listable) is skipped without a word, so a nested repository or
//   an `.envrc` planted inside it is not found, and the run says it is complete;
// - the list itself: host tools that obey a file in the directory they run in (Mercurial's
//   `.hg/hgrc` hooks run on `hg status`; Claude Code's `.claude/settings.json` hooks; a
//   kubeconfig's exec credential plugin; Docker's credential helpers; Emacs' dir-locals;
//   mise's tasks and hooks; cargo's rustc-wrapper) are not on it, so a draft applied with
//   `--yes` writes them to the host without the operator naming them.
import { execa } from 'execa';
import { access, chmod, chown, link, mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { CFH_MAIN, cfh, onlyRunDir, SANDBOX_UID, useScratch } from './helpers.js';
import { next } from './adv-round3-support.js';

const scratch = useScratch('adv3-obeyed');
const USER = 'cfh-tester';

async function exists(file: string): Promise<boolean> {
  return access(file).then(
    () => true,
    () => false,
  );
}

async function userIds(): Promise<{ uid: number; gid: number } | undefined> {
  const r = await execa('id', ['-u', USER], { reject: false });
  if (r.exitCode !== 0) return undefined;
  const g = await execa('id', ['-g', USER]);
  return { uid: Number(r.stdout), gid: Number(g.stdout) };
}

interface HostObeyedReport {
  readonly changed: number;
  readonly paths: readonly string[];
  readonly complete: boolean;
}

describe('class 9: the end walk and a directory it cannot list', () => {
  it.for(['0311', '0755'])(
    'an rw run (cfh as an ordinary user) that plants a nested repository and an .envrc inside a %s directory is found or said incomplete (0755: the control)',
    async (bits, ctx) => {
      if (process.getuid?.() !== 0) ctx.skip('needs root to switch to the test user');
      const ids = await userIds();
      expect(ids, `user ${USER} missing: run scripts/test-user.sh`).toBeDefined();
      if (ids === undefined) return;
      const base = scratch.path(`user-${next()}`);
      await mkdir(base);
      await chmod(path.dirname(base), 0o711);
      await chown(base, ids.uid, ids.gid);
      const ws = path.join(base, 'ws');
      const art = path.join(base, 'art');
      await mkdir(ws);
      await writeFile(path.join(ws, 'README.md'), '# a repository\n');
      await chown(ws, ids.uid, ids.gid);
      await chown(path.join(ws, 'README.md'), ids.uid, ids.gid);
      const marker = path.join(base, 'marker');
      // The sandbox's command: a nested repository whose fsmonitor runs a command on the host's
      // `git status` in sub/, an .envrc, then sub/ made traversable but not listable.
      const cmd = [
        'set -e',
        'mkdir -p /workspace/sub/.git/objects /workspace/sub/.git/refs/heads',
        "printf 'ref: refs/heads/main\\n' > /workspace/sub/.git/HEAD",
        `printf '[core]\\n\\trepositoryformatversion = 0\\n\\tfsmonitor = "touch ${marker}; false"\\n' > /workspace/sub/.git/config`,
        `printf 'touch ${marker}\\n' > /workspace/sub/.envrc`,
        `chmod ${bits} /workspace/sub`,
      ].join('; ');
      const r = await execa(
        'runuser',
        [
          '-u',
          USER,
          '--',
          process.execPath,
          CFH_MAIN,
          'sandbox',
          'run',
          '--profile',
          'untrusted-repo',
          '--workspace',
          ws,
          '--artifact-root',
          art,
          '--',
          'sh',
          '-c',
          cmd,
        ],
        { reject: false, cwd: base },
      );
      try {
        expect(r.exitCode, r.stderr).toBe(0);
        const dir = await onlyRunDir(art);
        const report = JSON.parse(await readFile(path.join(dir, 'report.json'), 'utf8')) as {
          hostObeyed?: HostObeyedReport;
        };
        // The host's git in sub/ (as the operator) runs the planted command: the published
        // deviation (said, not prevented) when the report names it; unsaid when it does not.
        await execa('runuser', ['-u', USER, '--', 'git', '-C', path.join(ws, 'sub'), 'status'], {
          reject: false,
          cwd: base,
        });
        const ran = await exists(marker);
        // The defence: what the run planted is named, or the walk says it did not see it all.
        const h = report.hostObeyed;
        const said = h !== undefined && (!h.complete || h.paths.some((p) => p.startsWith('sub/')));
        expect(
          said,
          `report.hostObeyed ${JSON.stringify(h)}; the planted fsmonitor ran: ${String(ran)}`,
        ).toBe(true);
      } finally {
        await chmod(path.join(ws, 'sub'), 0o755).catch(() => undefined);
      }
    },
  );
});

/** A workspace repository owned by the sandbox user, readable for the draft copy. */
async function repository(): Promise<string> {
  const ws = scratch.path(`ws-${next()}`);
  await chmod(path.dirname(ws), 0o711);
  await mkdir(ws);
  await writeFile(path.join(ws, 'README.md'), '# a repository\n');
  await execa('git', ['init', '-q', ws]);
  if (process.getuid?.() === 0) await execa('chown', ['-R', `${SANDBOX_UID}:${SANDBOX_UID}`, ws]);
  return ws;
}

describe('class 9: host tools the list does not name, through a draft applied with --yes', () => {
  it.each([
    ['.hg/hgrc', '[hooks]\npre-status = touch /tmp/adv3-hg\n'],
    [
      '.claude/settings.json',
      '{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"touch /tmp/adv3-claude"}]}]}}\n',
    ],
    [
      '.kube/config',
      'apiVersion: v1\nkind: Config\nusers:\n- name: u\n  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: /bin/sh\n      args: ["-c", "touch /tmp/adv3-kube"]\n',
    ],
    ['.docker/config.json', '{"credsStore":"../../tmp/adv3-docker"}\n'],
    ['.dir-locals.el', '((nil . ((eval . (shell-command "touch /tmp/adv3-emacs")))))\n'],
    ['.mise.toml', '[hooks]\nenter = "touch /tmp/adv3-mise"\n'],
    ['.cargo/config.toml', '[build]\nrustc-wrapper = "/bin/sh"\n'],
  ])(
    'runs apply --yes does not write %s (a path a host tool obeys) unless it is named',
    async (file, body) => {
      const ws = await repository();
      const art = scratch.path(`art-${next()}`);
      const r = await cfh([
        'sandbox',
        'run',
        '--profile',
        'untrusted-repo',
        '--workspace-mode',
        'draft',
        '--workspace',
        ws,
        '--artifact-root',
        art,
        '--json',
        '--',
        'sh',
        '-c',
        `mkdir -p "$(dirname /workspace/${file})" && cat > /workspace/${file} <<'ADV3EOF'\n${body}ADV3EOF\n`,
      ]);
      expect(r.exitCode, r.stderr).toBe(0);
      const runId = (JSON.parse(r.stdout) as { runId: string }).runId;
      const apply = await cfh(['runs', 'apply', runId, '--yes', '--artifact-root', art]);
      expect(
        await exists(path.join(ws, file)),
        `${file} written by apply --yes: ${apply.stderr}`,
      ).toBe(false);
    },
  );
});

/** A repository whose hooks live in a tracked directory (`core.hooksPath tools/hooks`). */
async function hooksPathRepository(): Promise<string> {
  const ws = scratch.path(`ws-${next()}`);
  await chmod(path.dirname(ws), 0o711);
  await mkdir(path.join(ws, 'tools', 'hooks'), { recursive: true });
  await writeFile(path.join(ws, 'tools', 'hooks', 'README'), 'our hooks\n');
  const git = (...args: string[]) =>
    execa('git', ['-c', 'user.name=op', '-c', 'user.email=op@example.invalid', '-C', ws, ...args]);
  await git('init', '-q');
  await git('add', '.');
  await git('commit', '-qm', 'initial');
  await git('config', 'core.hooksPath', 'tools/hooks');
  if (process.getuid?.() === 0) await execa('chown', ['-R', `${SANDBOX_UID}:${SANDBOX_UID}`, ws]);
  return ws;
}

describe('class 9: the hooks git runs are where the repository says, not where the list looks', () => {
  it.each(['rw', 'draft'] as const)(
    '%s: a hook the sandbox writes into the core.hooksPath directory is not run by the host git',
    async (mode) => {
      const ws = await hooksPathRepository();
      const marker = scratch.path(`marker-hooks-${mode}`);
      const art = scratch.path(`art-hooks-${mode}`);
      const r = await cfh([
        'sandbox',
        'run',
        '--profile',
        'untrusted-repo',
        '--workspace-mode',
        mode,
        '--workspace',
        ws,
        '--artifact-root',
        art,
        '--json',
        '--',
        'sh',
        '-c',
        `printf '#!/bin/sh\\ntouch ${marker}\\n' > /workspace/tools/hooks/post-checkout && chmod +x /workspace/tools/hooks/post-checkout`,
      ]);
      expect([0, 125], r.stderr).toContain(r.exitCode);
      if (mode === 'draft' && r.exitCode === 0) {
        const runId = (JSON.parse(r.stdout) as { runId: string }).runId;
        await cfh(['runs', 'apply', runId, '--yes', '--artifact-root', art]);
      }
      // The operator's next checkout.
      await execa('git', ['-c', 'safe.directory=*', '-C', ws, 'checkout', '-q', '-b', 'next'], {
        reject: false,
      });
      expect(await exists(marker), 'the planted hook ran on the host').toBe(false);
    },
  );
});

describe('class 9: a held directory whose file has another name in the workspace', () => {
  it.each(['rw', 'draft'] as const)(
    '%s: a run cannot write .git/config through a hard link to it elsewhere in the workspace',
    async (mode) => {
      // The workspace's bytes are the attacker's (an unpacked archive keeps hard links): its
      // .git/config is also docs/notes.txt. cfh holds .git read-only at the top (a bind mount),
      // and refuses a top-level FILE with two names, but not a file inside a held directory.
      const ws = scratch.path(`ws-${next()}`);
      await chmod(path.dirname(ws), 0o711);
      await mkdir(path.join(ws, 'docs'), { recursive: true });
      await writeFile(path.join(ws, 'README.md'), '# a repository\n');
      await execa('git', ['init', '-q', ws]);
      await link(path.join(ws, '.git', 'config'), path.join(ws, 'docs', 'notes.txt'));
      if (process.getuid?.() === 0)
        await execa('chown', ['-R', `${SANDBOX_UID}:${SANDBOX_UID}`, ws]);
      const marker = scratch.path(`marker-link-${next()}`);
      const art = scratch.path(`art-${next()}`);
      const r = await cfh([
        'sandbox',
        'run',
        '--profile',
        'untrusted-repo',
        '--workspace-mode',
        mode,
        '--workspace',
        ws,
        '--artifact-root',
        art,
        '--json',
        '--',
        'sh',
        '-c',
        `printf '[core]\\n\\tfsmonitor = "touch ${marker}; false"\\n' >> /workspace/docs/notes.txt`,
      ]);
      expect([0, 1, 2, 125], r.stderr).toContain(r.exitCode);
      if (mode === 'draft' && r.exitCode === 0) {
        const runId = (JSON.parse(r.stdout) as { runId: string }).runId;
        await cfh(['runs', 'apply', runId, '--yes', '--artifact-root', art]);
      }
      await execa('git', ['-c', 'safe.directory=*', 'status'], { cwd: ws, reject: false });
      expect(await exists(marker), 'the planted fsmonitor ran on the host').toBe(false);
    },
  );
});
