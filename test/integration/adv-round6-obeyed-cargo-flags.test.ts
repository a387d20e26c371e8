// Round 6 (red team): programs a held cargo configuration names through `rustflags`
// (`-C linker=PATH`, `-Clinker=PATH`) and `[doc] browser` are not read as named programs, so
// a draft run that creates them has them written by `cfh runs apply --yes` unnamed.
//
// docs/operators.md, "What a held configuration names": cfh reads "every key of a listed
// configuration whose value can be a program, a script, a module it loads, a hook or a PATH
// entry", cargo's among them ("`.cargo/config.toml`, run by rust-analyzer on opening the
// folder: `build.rustc`, `rustc-wrapper`, ..., each target's `runner` and `linker`, ..."),
// and "Each value that is a path inside the workspace is held beside the names: an apply
// holds it back until named". `build.rustflags` / `target.<triple>.rustflags` with
// `-C linker=tools/ld` make rustc run tools/ld to link every build script and proc-macro
// that the `cargo check` rust-analyzer starts on opening the folder builds: the same
// program the `linker` key names, which IS held (the control below). `[doc] browser` is the
// program `cargo doc --open` runs, as npm's `browser` (held for npm).
//
// The test asserts the secure behaviour (each named program held back), so it FAILS while
// the break exists.
import { chown, mkdir, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SANDBOX_UID, cfh, useScratch } from './helpers.js';
import { dirIn, plainDir, runIn, stateEnv } from './adv-round6-support.js';

const scratch = useScratch('adv6-cargo');

const CONFIG = `[build]
rustflags = ["-C", "linker=tools/ld"]

[target.x86_64-unknown-linux-gnu]
linker = "tools/ld0"
rustflags = ["-Clinker=tools/ld2"]

[doc]
browser = "tools/browser"
`;

describe('round 6: programs a held .cargo/config.toml names through rustflags', () => {
  it('runs apply --yes holds back the linker rustflags name, as it holds the linker key', async () => {
    const env = await stateEnv(scratch, 'cargo');
    const art = await plainDir(scratch, 'art');
    const ws = await dirIn(scratch, 'ws');
    await mkdir(path.join(ws, '.cargo'));
    await writeFile(path.join(ws, '.cargo', 'config.toml'), CONFIG);
    await writeFile(path.join(ws, 'README'), 'a crate\n');
    for (const p of ['.cargo', '.cargo/config.toml', 'README'])
      await chown(path.join(ws, p), SANDBOX_UID, SANDBOX_UID);
    const plant =
      'mkdir -p /workspace/tools; for f in ld ld0 ld2 browser; do printf "#!/bin/sh\\nid > /tmp/pwned\\n" > /workspace/tools/$f; chmod +x /workspace/tools/$f; done';
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
    const written = (await readdir(path.join(ws, 'tools')).catch(() => [] as string[])).sort();
    // Control: the `linker` key's program is held back today.
    expect(written).not.toContain('ld0');
    // Secure: so are the programs rustflags and doc.browser name.
    expect(written).toEqual([]);
  });
});
