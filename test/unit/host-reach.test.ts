// What a host tool runs, checked against the run's reach and pinned (AH-TOOL-7, AH-CONT-5),
// on real files in a scratch directory (no engine: the areas are given as a run would
// compute them). The integration file (host-tools-reach.test.ts) proves the same against
// sandboxes that really write; this one covers spellings the CLI episodes do not: a script
// that does not exist yet, `..` through the area, an absolute path inside inline code, a
// draft copy of any run, a hard link, and the pins' view of a change.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { chmodSync, linkSync, mkdirSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { HostTools, type HostToolEntry } from '../../src/config/host-tools-schema.js';
import {
  checkHostToolReach,
  pathCandidates,
  type HostToolReach,
} from '../../src/tools/host/host-reach.js';
import { checkPins } from '../../src/tools/host/host-pin.js';
import { expectConfigError, makeTempDir, must, removeTempDir } from './helpers.js';

let dir: string;
let ws: string;
let tools: string;
let reach: HostToolReach;
const uid = process.getuid?.() ?? 0;

beforeEach(async () => {
  dir = await makeTempDir('cfh-unit-reach-');
  ws = path.join(dir, 'ws');
  tools = path.join(dir, 'tools');
  mkdirSync(ws);
  mkdirSync(tools);
  mkdirSync(path.join(dir, 'art'));
  writeFileSync(path.join(tools, 'tool.mjs'), 'ok\n');
  reach = {
    sandboxWritable: [
      { path: ws, what: 'the rw mount at /workspace' },
      { path: path.join(dir, 'drafts'), what: 'a draft copy', namePrefix: 'cfh-draft-' },
    ],
    sandboxReadable: [
      { path: ws, what: 'the rw mount at /workspace' },
      { path: path.join(dir, 'ro-data'), what: 'the ro mount at /data' },
    ],
    evidence: [{ path: path.join(dir, 'art'), what: 'the artifact root' }],
    trustedUid: uid,
  };
  mkdirSync(path.join(dir, 'drafts', 'cfh-draft-other-run-x'), { recursive: true });
});

afterEach(async () => {
  await removeTempDir(dir);
});

function exec(argv: string[], extra: Record<string, unknown> = {}): HostToolEntry {
  return must(
    HostTools.parse([
      {
        name: 'notify',
        kind: 'exec',
        argv,
        riskClass: 'read_only',
        sideEffectClass: 'none',
        ...extra,
      },
    ])[0],
  );
}

const check = (entry: HostToolEntry, cwd = tools) =>
  checkHostToolReach(entry, process.execPath, cwd, reach);

describe('pathCandidates', () => {
  it('finds the whole text, what follows =, list pieces and absolute paths inside code', () => {
    expect(pathCandidates('--root=/a/b:/c')).toEqual(
      expect.arrayContaining(['--root=/a/b:/c', '/a/b:/c', '/a/b', '/c']),
    );
    expect(pathCandidates('require("/ws/x.js")')).toContain('/ws/x.js');
    expect(pathCandidates('--require ./hook.cjs')).toContain('./hook.cjs');
  });

  it('class: a path attached to its short option (-I../lib) is a candidate too', () => {
    expect(pathCandidates('-I../repo/tools')).toContain('../repo/tools');
    expect(pathCandidates('-L../lib')).toContain('../lib');
  });
});

describe('checkHostToolReach', () => {
  it('accepts a tool outside every area and pins its program and script', () => {
    const { pins, program } = check(exec([process.execPath, 'tool.mjs']));
    expect(program).toBe(pins.files[0]?.path);
    expect(pins.files.map((f) => f.role)).toEqual(['program', 'argv[1]']);
    expect(pins.files[1]?.sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(pins.cwd.path).toBe(tools);
  });

  it('refuses a script that does not exist yet inside the rw area (the sandbox creates it)', () => {
    expectConfigError(
      () => check(exec([process.execPath, path.join(ws, 'later', 'x.mjs')])),
      'host_tool_in_sandbox_reach',
      'the rw mount at /workspace',
    );
  });

  it('refuses a path that only passes through the area (`..`), and one inside inline code', () => {
    mkdirSync(path.join(ws, 'sub'));
    expectConfigError(
      () => check(exec([process.execPath, `${ws}/sub/../../tools/tool.mjs`])),
      'host_tool_in_sandbox_reach',
    );
    expectConfigError(
      () => check(exec([process.execPath, '-e', `import(${JSON.stringify(`${ws}/m.mjs`)})`])),
      'host_tool_in_sandbox_reach',
    );
  });

  it("refuses any run's draft copy, and a cwd inside the area; accepts the draft root itself", () => {
    const other = path.join(dir, 'drafts', 'cfh-draft-other-run-x');
    expectConfigError(
      () => check(exec([process.execPath, 'tool.mjs']), other),
      'host_tool_in_sandbox_reach',
      'a draft copy',
    );
    expectConfigError(
      () => check(exec([process.execPath]), ws),
      'host_tool_in_sandbox_reach',
      "cwd '",
    );
    writeFileSync(path.join(dir, 'drafts', 'tool.mjs'), 'ok\n');
    expect(() =>
      check(exec([process.execPath, 'tool.mjs']), path.join(dir, 'drafts')),
    ).not.toThrow();
  });

  it('refuses a module search path in the env (PYTHONPATH-like lists)', () => {
    expectConfigError(
      () =>
        check(
          exec([process.execPath, 'tool.mjs'], {
            env: { PYTHONPATH: { value: `/usr/lib:${ws}` } },
          }),
        ),
      'host_tool_in_sandbox_reach',
      'env PYTHONPATH',
    );
  });

  it("refuses a script with a second name on the rw area's file system unless root-owned and unwritable", () => {
    const script = path.join(tools, 'linked.mjs');
    writeFileSync(script, 'ok\n');
    linkSync(script, path.join(ws, 'linked.mjs'));
    chmodSync(script, 0o664);
    if (uid === 0) {
      // Root's group write is root's: the writer check passes it, the hard link does not.
      expectConfigError(
        () => check(exec([process.execPath, script])),
        'host_tool_in_sandbox_reach',
        'names on the file system',
      );
      chmodSync(script, 0o644);
      expect(() => check(exec([process.execPath, script]))).not.toThrow();
    } else {
      expectConfigError(
        () => check(exec([process.execPath, script])),
        'host_tool_in_sandbox_reach',
        'names on the file system',
      );
    }
  });

  it('refuses a path inside the artifact root and a directory holding it', () => {
    expectConfigError(
      () => check(exec([process.execPath, 'tool.mjs', path.join(dir, 'art', 'x')])),
      'host_tool_reaches_evidence',
      'lies inside the artifact root',
    );
    expectConfigError(
      () => check(exec([process.execPath, 'tool.mjs', `--root=${dir}`])),
      'host_tool_reaches_evidence',
      'is a directory that holds the artifact root',
    );
    // A credential file inside the evidence, or where a sandbox writes: refused too.
    writeFileSync(path.join(dir, 'art', 'token'), 'credential-1234\n');
    expectConfigError(
      () =>
        check(
          exec([process.execPath, 'tool.mjs'], {
            env: { TOKEN: { fromFile: path.join(dir, 'art', 'token') } },
          }),
        ),
      'host_tool_reaches_evidence',
      'env TOKEN (fromFile)',
    );
    expectConfigError(
      () =>
        check(
          exec([process.execPath, 'tool.mjs'], {
            env: { TOKEN: { fromFile: path.join(ws, 'token') } },
          }),
        ),
      'host_tool_in_sandbox_reach',
      'env TOKEN (fromFile)',
    );
    // A sandbox that can only read a mount can still read a credential there (and send it
    // in any encoding): refused in a ro mount, and through a second name on its file system.
    mkdirSync(path.join(dir, 'ro-data'));
    writeFileSync(path.join(dir, 'ro-data', 'token'), 'credential-1234\n');
    expectConfigError(
      () =>
        check(
          exec([process.execPath, 'tool.mjs'], {
            env: { TOKEN: { fromFile: path.join(dir, 'ro-data', 'token') } },
          }),
        ),
      'host_tool_credential_exposed',
      'which a sandbox of the run can read',
    );
    writeFileSync(path.join(tools, 'token'), 'credential-1234\n');
    linkSync(path.join(tools, 'token'), path.join(dir, 'ro-data', 'copy'));
    expectConfigError(
      () =>
        check(
          exec([process.execPath, 'tool.mjs'], {
            env: { TOKEN: { fromFile: path.join(tools, 'token') } },
          }),
        ),
      'host_tool_credential_exposed',
      'has 2 names on the file system of',
    );
    // Its cwd may hold it (the profile's directory often does), as long as it is not inside.
    expect(() => check(exec([process.execPath, 'tools/tool.mjs']), dir)).not.toThrow();
  });

  it('refuses a script anyone may write, or one behind a link in a directory anyone may write', () => {
    const open = path.join(tools, 'open.mjs');
    writeFileSync(open, 'ok\n');
    chmodSync(open, 0o666);
    expectConfigError(
      () => check(exec([process.execPath, open])),
      'host_tool_program_writable',
      'anyone may write it',
    );
    const shared = path.join(dir, 'shared');
    mkdirSync(shared);
    chmodSync(shared, 0o777);
    symlinkSync(path.join(tools, 'tool.mjs'), path.join(shared, 'link.mjs'));
    expectConfigError(
      () => check(exec([process.execPath, path.join(shared, 'link.mjs')])),
      'host_tool_program_writable',
      'may replace',
    );
  });
});

describe('checkPins', () => {
  it('holds for what was planned; names a rewrite, a replacement and a repointed link', () => {
    const link = path.join(tools, 'current.mjs');
    symlinkSync('tool.mjs', link);
    const { pins } = check(exec([process.execPath, 'current.mjs']));
    expect(checkPins(pins)).toBeUndefined();
    // Same length, same inode: only the content (and ctime) tells.
    writeFileSync(path.join(tools, 'tool.mjs'), 'no\n');
    expect(checkPins(pins)).toMatchObject({ role: 'argv[1]', what: 'content' });
    const again = check(exec([process.execPath, 'current.mjs'])).pins;
    writeFileSync(path.join(tools, 'new.mjs'), 'no\n');
    renameSync(path.join(tools, 'new.mjs'), path.join(tools, 'tool.mjs'));
    expect(checkPins(again)).toMatchObject({ what: 'replaced' });
    const third = check(exec([process.execPath, 'current.mjs'])).pins;
    writeFileSync(path.join(tools, 'other.mjs'), 'no\n');
    renameSync(path.join(tools, 'other.mjs'), path.join(tools, 'x'));
    symlinkSync('x', path.join(tools, 'next.mjs'));
    renameSync(path.join(tools, 'next.mjs'), link);
    expect(checkPins(third)).toMatchObject({ what: 'moved' });
  });
});
