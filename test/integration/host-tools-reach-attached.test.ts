// Found by our adversarial round against the fixes: a host tool's module search path in the sandbox's reach (AH-TOOL-7,
// AH-CONT-1; src/tools/host/host-reach.ts pathCandidates). A search path attached to its
// option (`perl -I../repo/tools`, likewise ruby's `-I`, gcc's `-I`/`-L`) is a relative path
// the candidates never spell: the whole text names `<cwd>/-I..`, the embedded-path rule
// takes `/repo/tools` as absolute. The interpreter resolves `../repo/tools` against the cwd:
// with the rw workspace a sibling of the tool's cwd, the sandbox writes the module the host
// tool loads, and its code runs on the host with the tool's credential.
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { agentRunArgs, cfh, ownBySandbox, useScratch } from './helpers.js';
import { profileFile, scriptFile } from './host-tools-support.js';

const scratch = useScratch('reach-attached');

describe('class: a host tool loads code a sandbox of the run could write', () => {
  it('perl -I../<workspace>/tools: the module the sandbox writes never runs on the host', async () => {
    const repo = await scratch.sampleRepo();
    await mkdir(path.join(repo, 'tools'));
    await ownBySandbox(path.join(repo, 'tools'));
    const cwd = scratch.path('tool-cwd');
    await mkdir(cwd);
    const marker = scratch.path('pwned-attached');
    const rel = path.relative(cwd, path.join(repo, 'tools'));
    expect(rel.startsWith('..')).toBe(true);
    const profile = await profileFile(scratch, 'attached', {
      workspace: { mode: 'rw' },
      tools: ['read_file', 'write_file', 'exec'],
      hostTools: [
        {
          name: 'notify',
          kind: 'exec',
          argv: ['/usr/bin/perl', `-I${rel}`, '-MHook', '-e', 'print "notified\\n"'],
          cwd,
          riskClass: 'read_only',
          sideEffectClass: 'none',
        },
      ],
    });
    const hook = `package Hook; open(my $f, '>', ${JSON.stringify(marker)}); print $f "ran on the host\\n"; 1;\n`;
    const script = await scriptFile(scratch, 'attached', [
      [{ name: 'write_file', input: { path: 'tools/Hook.pm', content: hook } }],
      [{ name: 'host__notify', input: {} }],
    ]);
    const root = scratch.path('art');
    const r = await cfh(
      agentRunArgs({ workspace: repo, artifactRoot: root, profile, script }, ['--json']),
    );
    // Refused at planning (125, host_tool_in_sandbox_reach), or at least never ran.
    expect({ ran: existsSync(marker), exit: r.exitCode }, r.stdout + r.stderr).toEqual({
      ran: false,
      exit: 125,
    });
  });
});
