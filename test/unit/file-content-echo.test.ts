// Class (AH-INV-4): an error message about a file's content that quotes the content. A
// profile's `extends`, `--script` and `--approvals` may name any file cfh can read (a
// credential file too) and the refusal goes to stderr, often a CI log: it names the file,
// the line and column, and the field path of cfh's own schema, never a value, an unknown
// key's text or the YAML library's excerpt (src/config/zod-issues.ts, yaml-file.ts).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadApprovalsFile } from '../../src/config/approvals-file.js';
import { loadProfile } from '../../src/config/profile-loader.js';
import { CfhError } from '../../src/errors.js';
import { loadScript } from '../../src/model/scripted-gateway.js';

const SECRET = `s3cr3t${process.pid}Qx`;
const dir = mkdtempSync(path.join(os.tmpdir(), 'cfh-echo-'));
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** Shapes a host file may have, each carrying SECRET where a parser or schema looks. */
const SHAPES: Readonly<Record<string, string>> = {
  netrc: `machine build.example.test login ci password ${SECRET}\n`,
  dotenv: `API_TOKEN=${SECRET}\nOTHER=1\n`,
  shadow: `root:${SECRET}:20228:0:99999:7:::\n`,
  ini: `[default]\naws_secret_access_key = ${SECRET}\n`,
  keyLine: `AKIA${SECRET}: x\n`,
  nestedKey: `limits:\n  ${SECRET}: 1\n`,
  recordKey: `env:\n  ${SECRET}-x: 1\n`,
  wrongValue: `runtime: ${SECRET}\n`,
  wrongType: `name: [${SECRET}]\n`,
  jsonKey: `{"${SECRET}": 1}\n`,
  duplicate: `name: ${SECRET}\nname: ${SECRET}\n`,
  badIndent: `name: a\n  ${SECRET}: b\n c\n`,
  turnsValue: `turns:\n  - text: 1\n    tool_calls: ${SECRET}\n`,
  approvalsValue: `- { rule: ${SECRET}, tool: exec, argsDigest: ${SECRET} }\n`,
};

async function refusal(load: () => unknown): Promise<string> {
  try {
    await load();
  } catch (error) {
    if (!(error instanceof CfhError)) throw error;
    // The hint is printed too (`cfh: WHAT; HINT`): it must hold nothing of the file either.
    return `${error.message} ${error.hint ?? ''} ${JSON.stringify(error.details)}`;
  }
  throw new Error('not refused');
}

describe('a refusal about a file names where, never what it holds', () => {
  const cases = Object.entries(SHAPES).flatMap(([shape, body]) => {
    const file = path.join(dir, `${shape}.txt`);
    writeFileSync(file, body);
    const profile = path.join(dir, `${shape}-profile.yaml`);
    writeFileSync(profile, `extends: ${JSON.stringify(file)}\nname: p\n`);
    const direct = path.join(dir, `${shape}.yaml`);
    writeFileSync(direct, body);
    return [
      { shape, how: 'extends', load: () => loadProfile(profile) },
      { shape, how: 'profile', load: () => loadProfile(direct) },
      { shape, how: '--script', load: () => loadScript(file) },
      { shape, how: '--approvals', load: () => loadApprovalsFile(file) },
    ];
  });

  it.each(cases)('$shape via $how', async ({ load }) => {
    const text = await refusal(load);
    expect(text).not.toContain(SECRET);
    // Still useful: the file is named, and where it is wrong when the text locates it.
    expect(text).toMatch(/\.txt|\.yaml/);
  });

  it('locates a parse error by line and column, and an unknown key by its line', async () => {
    const ini = await refusal(() => loadScript(path.join(dir, 'ini.txt')));
    expect(ini).toMatch(/ini\.txt:\d+:\d+: not valid YAML \([A-Z_]+\)/);
    const key = await refusal(() => loadProfile(path.join(dir, 'nestedKey.yaml')));
    expect(key).toContain('nestedKey.yaml:2:3: an unknown key in limits');
    const rec = await refusal(() => loadProfile(path.join(dir, 'recordKey.yaml')));
    expect(rec).toContain('env.<key> at line 2, column');
  });
});
