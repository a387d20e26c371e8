// Every run says its CFC mode (AH-CFC-14/15), a command run too: report.json's `cfc` agrees
// with snapshot.cfc, observe is never called enforcement and is reduced assurance, `runs
// show` prints the CFC line and carries report.cfc in --json, and `cfh audit`'s CFC checks
// pass on the real runs (the mode check fails a run whose snapshot lost its mode).
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { auditRunDirectory, type AuditResult } from '../../src/evidence/audit/audit.js';
import { copyRun } from './audit-forge.js';
import { cfh, onlyRunDir, readJson, useScratch } from './helpers.js';

const scratch = useScratch('cfc-audit');
const runs: Record<string, string> = {};

async function commandRun(name: string, extra: string[]): Promise<string> {
  const root = scratch.path(`art-${name}`);
  const r = await cfh([
    'sandbox',
    'run',
    '--workspace',
    await scratch.sampleRepo(),
    '--artifact-root',
    root,
    ...extra,
    '--',
    'true',
  ]);
  expect(r.exitCode, r.stderr).toBe(0);
  return onlyRunDir(root);
}

/** `--artifact-root ROOT RUN_ID` of a run directory. */
const byId = (dir = ''): string[] => ['--artifact-root', path.dirname(dir), path.basename(dir)];

const cfcVerdicts = (r: AuditResult): Record<string, string> =>
  Object.fromEntries(r.checks.filter((c) => c.id.startsWith('cfc.')).map((c) => [c.id, c.verdict]));

beforeAll(async () => {
  runs.disabled = await commandRun('disabled', []);
  runs.observe = await commandRun('observe', ['--cfc', 'observe']);
});

describe('a command run records its CFC mode', () => {
  it('disabled by default: report.cfc {mode: disabled, enforced: false}, nothing decided', async () => {
    const report = await readJson(path.join(runs.disabled ?? '', 'report.json'));
    const snapshot = await readJson<{ cfc?: { mode?: string } }>(
      path.join(runs.disabled ?? '', 'snapshot.json'),
    );
    expect(report.cfc).toEqual({
      mode: 'disabled',
      enforced: false,
      flows: { allowed: 0, denied: 0, wouldDeny: 0, endorsed: 0 },
      handles: 0,
      opaque: 0,
      declassified: 0,
      carried: 0,
    });
    expect(snapshot.cfc?.mode).toBe('disabled');
    const audit = await auditRunDirectory(runs.disabled ?? '');
    expect(cfcVerdicts(audit)).toEqual({
      'cfc.mode-recorded': 'pass',
      'cfc.flow-gated': 'not-applicable',
      'cfc.flow-rederived': 'not-applicable',
      'cfc.influence-derived': 'not-applicable',
      'cfc.observations-labelled': 'not-applicable',
      'cfc.handles-before-policy': 'not-applicable',
      'cfc.prompt-authority': 'not-applicable',
      'cfc.evidence-boundary': 'not-applicable',
    });
  });

  it('observe: not enforcement, reduced assurance, and the audit agrees', async () => {
    const report = await readJson<{ cfc: { mode: string; enforced: boolean } }>(
      path.join(runs.observe ?? '', 'report.json'),
    );
    expect(report.cfc).toMatchObject({ mode: 'observe', enforced: false });
    const audit = await auditRunDirectory(runs.observe ?? '');
    expect(cfcVerdicts(audit)['cfc.mode-recorded']).toBe('pass');
    expect(audit.checks.find((c) => c.id === 'assurance.recorded')?.verdict).toBe('warn');
  });

  it('runs show prints the CFC line and --json carries report.cfc', async () => {
    const show = await cfh(['runs', 'show', ...byId(runs.observe)]);
    expect(show.exitCode, show.stderr).toBe(0);
    expect(show.stdout).toMatch(
      /^cfc {8}observe \(diagnostic, not enforcement\); flows 0 allowed, 0 denied, 0 would-deny, 0 endorsed; 0 handle\(s\), 0 opaque$/m,
    );
    const json = await cfh(['runs', 'show', '--json', ...byId(runs.disabled)]);
    expect(JSON.parse(json.stdout)).toMatchObject({
      cfc: { mode: 'disabled', enforced: false },
      report: { cfc: { mode: 'disabled' } },
    });
  });

  it('the audit fails a run whose snapshot lost its mode: "mode missing"', async () => {
    const copy = await copyRun(runs.disabled ?? '', scratch.path('lost-mode'));
    const file = path.join(copy, 'snapshot.json');
    const snap = JSON.parse(await readFile(file, 'utf8')) as Record<string, unknown>;
    delete snap.cfc;
    await writeFile(file, JSON.stringify(snap));
    const check = (await auditRunDirectory(copy)).checks.find((c) => c.id === 'cfc.mode-recorded');
    expect(check?.verdict).toBe('fail');
    expect(check?.detail).toMatch(/mode missing/);
  });
});

describe('an enforce-explicit agent run passes the CFC checks', () => {
  it('mode, flows before policy, labels, prompt authority, boundary: cfh audit ok', async () => {
    const root = scratch.path('art-agent');
    const script = await scratch.file(
      'cfc-agent.yaml',
      [
        'model: scripted-cfc',
        'turns:',
        '  - text: Looking.',
        '    tool_calls:',
        '      - { name: read_file, input: { path: calc.py } }',
        '      - { name: exec, input: { command: [ls] } }',
        '  - text: Writing.',
        '    tool_calls:',
        '      - { name: write_file, input: { path: notes.txt, content: hi } }',
        '  - text: Done.',
      ].join('\n'),
    );
    const r = await cfh([
      'sandbox',
      'run',
      '--workspace',
      await scratch.sampleRepo(),
      '--artifact-root',
      root,
      '--cfc',
      'enforce-explicit',
      '--label',
      '/workspace=i:repo',
      '--prompt',
      'look around',
      '--script',
      script,
      '--non-interactive',
    ]);
    expect(r.exitCode, r.stderr).toBe(0);
    const dir = await onlyRunDir(root);
    const audit = await auditRunDirectory(dir);
    const bad = audit.checks.filter((c) => c.verdict === 'fail' || c.verdict === 'inconclusive');
    expect(bad, JSON.stringify(bad, null, 2)).toEqual([]);
    expect(Object.values(cfcVerdicts(audit))).toEqual(Array(8).fill('pass'));
    const report = await readJson<{ cfc: { enforced: boolean; flows: { allowed: number } } }>(
      path.join(dir, 'report.json'),
    );
    expect(report.cfc.enforced).toBe(true);
    expect(report.cfc.flows.allowed).toBeGreaterThan(0);
  });
});
