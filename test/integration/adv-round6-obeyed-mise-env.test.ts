// Round 6 (red team): mise exports every `[env]` variable of a held mise.toml on entering the
// directory, but cfh reads only PATH, NODE_OPTIONS, LD_PRELOAD, BASH_ENV and ENV among them.
// Variables whose value is a program the next `git diff` / `git log` / `git fetch` / `cargo`
// / `java` there runs (GIT_EXTERNAL_DIFF, GIT_PAGER, PAGER, GIT_SSH_COMMAND, RUSTC_WRAPPER,
// JAVA_TOOL_OPTIONS's -javaagent) name files that a draft run creates and `cfh runs apply
// --yes` writes unnamed.
//
// docs/operators.md, "What a held configuration names": cfh reads "every key of a listed
// configuration whose value can be a program, a script, a module it loads, a hook or a PATH
// entry"; "Each value that is a path inside the workspace is held beside the names: an apply
// holds it back until named". `git diff` is what an operator runs to review what the sandbox
// did; with mise active (`mise activate`, its normal use) GIT_EXTERNAL_DIFF / GIT_PAGER make
// it run the planted program. cargo's own `rustc-wrapper` key is held; the same program
// through mise's RUSTC_WRAPPER is not. `_.path` (the control) is held today.
//
// The test asserts the secure behaviour (each held back), so it FAILS while the break exists.
import { chown, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SANDBOX_UID, cfh, useScratch } from './helpers.js';
import { dirIn, plainDir, runIn, stateEnv } from './adv-round6-support.js';

const scratch = useScratch('adv6-mise-env');

const MISE = `[env]
_.path = "tools/bin"
GIT_EXTERNAL_DIFF = "tools/diff"
GIT_PAGER = "tools/pager"
GIT_SSH_COMMAND = "tools/ssh"
RUSTC_WRAPPER = "tools/wrap"
JAVA_TOOL_OPTIONS = "-javaagent:tools/agent.jar"
`;

describe("round 6: programs a held mise.toml's [env] names", () => {
  it('runs apply --yes holds back what GIT_EXTERNAL_DIFF, GIT_PAGER, ... name', async () => {
    const env = await stateEnv(scratch, 'mise');
    const art = await plainDir(scratch, 'art');
    const ws = await dirIn(scratch, 'ws');
    await writeFile(path.join(ws, 'mise.toml'), MISE);
    await writeFile(path.join(ws, 'README'), 'a project\n');
    for (const p of ['mise.toml', 'README'])
      await chown(path.join(ws, p), SANDBOX_UID, SANDBOX_UID);
    const plant = [
      'mkdir -p /workspace/tools/bin',
      'for f in bin/git diff pager ssh wrap agent.jar; do printf "#!/bin/sh\\nid > /tmp/pwned\\n" > /workspace/tools/$f; chmod +x /workspace/tools/$f; done',
    ].join('; ');
    const run = await runIn(
      art,
      ['--workspace', ws, '--workspace-mode', 'draft', '--', 'sh', '-c', plant],
      env,
    );
    expect(run.r.exitCode, run.r.stderr).toBe(0);
    const apply = await cfh(
      ['runs', 'apply', path.basename(run.dir ?? ''), '--artifact-root', art, '--yes'],
      { env },
    );
    expect(apply.exitCode, apply.stderr).toBe(0);
    const tools = await readdir(path.join(ws, 'tools')).catch(() => [] as string[]);
    // Control: `_.path` is held back today (tools/bin/git not written).
    const bin = await readdir(path.join(ws, 'tools', 'bin')).catch(() => [] as string[]);
    expect(bin).toEqual([]);
    // Secure: nothing the [env] variables name is written unnamed.
    expect(tools.filter((n) => n !== 'bin').sort()).toEqual([]);
  });
});
