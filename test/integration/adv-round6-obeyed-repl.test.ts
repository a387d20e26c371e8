// Round 6 (red team): REPL and debugger start files that a host tool runs from the directory
// it starts in are not on the host-obeyed list, so `cfh runs apply --yes` writes them to the
// host unnamed (and an rw run writes them with no warning).
//
// docs/operators.md, "Paths your tools obey": "a name is on it when a common host tool reads
// it from the directory it runs in (or a parent) for a purpose other than running the
// project's own code, and what it says can make that tool run a program"; the list is kept
// by family, "debuggers' and REPLs' start files" among them (`.gdbinit`, `.lldbinit`,
// `.pdbrc`, `.irbrc` are listed). "An apply writes them only when each is named."
// Missing members of that family, each read from the current directory on start:
//   .Rprofile / .Renviron  R (and RStudio opening the project): R code / R_PROFILE_USER
//   .pryrc                 pry (Ruby REPL, the .irbrc sibling): Ruby code
//   .ghci                  GHCi: `:!` shell commands, `:def` macros
//   .iex.exs               IEx (Elixir): Elixir code
//   .perldb                the Perl debugger (perl -d): Perl code
//   .octaverc              GNU Octave: Octave code, `system(...)`
//   .ocamlinit             the OCaml toplevel: OCaml code, `Sys.command`
//   .latexmkrc, latexmkrc  latexmk (run by editors' LaTeX tooling on save): Perl code
//
// The test asserts the secure behaviour (each held back until named), so it FAILS while the
// break exists.
import { readdir, writeFile, chown } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SANDBOX_UID, cfh, useScratch } from './helpers.js';
import { dirIn, plainDir, runIn, stateEnv } from './adv-round6-support.js';

const scratch = useScratch('adv6-repl');

const START_FILES = [
  '.Rprofile',
  '.Renviron',
  '.pryrc',
  '.ghci',
  '.iex.exs',
  '.perldb',
  '.octaverc',
  '.ocamlinit',
  '.latexmkrc',
  'latexmkrc',
];

describe('round 6: REPL start files in a draft apply', () => {
  it('runs apply --yes writes no REPL or debugger start file the operator did not name', async () => {
    const env = await stateEnv(scratch, 'repl');
    const art = await plainDir(scratch, 'art');
    const ws = await dirIn(scratch, 'ws');
    await writeFile(path.join(ws, 'README'), 'a project\n');
    await chown(path.join(ws, 'README'), SANDBOX_UID, SANDBOX_UID);
    const plant = START_FILES.map((f) => `echo 'system("id > /tmp/pwned")' > /workspace/${f}`).join(
      '; ',
    );
    const run = await runIn(
      art,
      ['--workspace', ws, '--workspace-mode', 'draft', '--', 'sh', '-c', plant],
      env,
    );
    expect(run.r.exitCode, run.r.stderr).toBe(0);
    const id = path.basename(run.dir ?? '');
    const apply = await cfh(['runs', 'apply', id, '--artifact-root', art, '--yes'], { env });
    expect(apply.exitCode, apply.stderr).toBe(0);
    const written = (await readdir(ws)).filter((n) => START_FILES.includes(n)).sort();
    // Secure: every one is held back (named by the operator with --host-obeyed PATH).
    expect(written).toEqual([]);
  });
});
