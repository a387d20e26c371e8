// Class 9: the one list of paths a host tool obeys later (src/host-obeyed.ts), and the apply
// gate that reads it (src/workspace/host-obeyed-gate.ts).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  HOST_OBEYED_NAMES,
  hostObeyedName,
  hostObeyedPrefix,
  isHostObeyed,
} from '../../src/host-obeyed.js';
import { gateHostObeyed } from '../../src/workspace/host-obeyed-gate.js';
import { WorkspaceError } from '../../src/errors.js';
import type { PatchChange } from '../../src/workspace/patch.js';

describe('class 9: the host-obeyed list', () => {
  it('matches a name in any component, at any depth, without regard to case', () => {
    for (const p of [
      '.git',
      '.git/hooks/post-checkout',
      'vendor/lib/.git/config',
      'sub/.git',
      '.GIT/config',
      'pkg/.envrc',
      '.vscode/tasks.json',
      'team.code-workspace',
      'a/b/.gitattributes',
      '.yarnrc.yml',
    ])
      expect(isHostObeyed(p), p).toBe(true);
    for (const p of [
      'README',
      'src/git.ts',
      '.github/workflows/ci.yml',
      '.gitignore',
      'x.git',
      'envrc',
      '.code-workspace-notes/a',
      'code-workspace',
    ])
      expect(isHostObeyed(p), p).toBe(false);
  });

  it('names the first component that matches, and who obeys it', () => {
    expect(hostObeyedPrefix('a/.envrc/b/.git')).toMatchObject({
      prefix: 'a/.envrc',
      entry: { tool: 'direnv' },
    });
    expect(hostObeyedName('.Git')?.tool).toBe('git');
    expect(hostObeyedName('.code-workspace')).toBeUndefined();
  });

  it('is listed whole in docs/operators.md', () => {
    const docs = readFileSync(
      path.join(import.meta.dirname, '..', '..', 'docs', 'operators.md'),
      'utf8',
    );
    const start = docs.indexOf('## Paths your tools obey');
    const section = docs.slice(start, docs.indexOf('\n## ', start + 1));
    for (const n of HOST_OBEYED_NAMES) expect(section, n.name).toContain(`\`${n.name}\``);
  });
});

const file = (sha: string) => ({ type: 'file' as const, mode: 0o644, size: 1, sha256: sha });
const dir = { type: 'directory' as const, mode: 0o755 };
const A = 'a'.repeat(64);
const B = 'b'.repeat(64);

const CHANGES: PatchChange[] = [
  { path: '.envrc', kind: 'added', before: null, after: file(A), applicable: true },
  { path: '.git/config', kind: 'modified', before: file(A), after: file(B), applicable: true },
  { path: '.git/hooks/x', kind: 'added', before: null, after: file(A), applicable: true },
  { path: '.vscode', kind: 'added', before: null, after: dir, applicable: true },
  { path: '.vscode/tasks.json', kind: 'added', before: null, after: file(A), applicable: true },
  {
    path: 'link',
    kind: 'symlink',
    before: null,
    after: { type: 'symlink', mode: 0o777, target: '/etc' },
    applicable: false,
    note: 'symlink',
  },
  { path: 'newdir', kind: 'added', before: null, after: dir, applicable: true },
  { path: 'newdir/.envrc', kind: 'added', before: null, after: file(A), applicable: true },
  { path: 'work.txt', kind: 'added', before: null, after: file(B), applicable: true },
];

const applied = (named: string[] = []) =>
  gateHostObeyed('run-1', CHANGES, named)
    .changes.filter((c) => c.applicable)
    .map((c) => c.path);

describe('class 9: the apply gate', () => {
  it('holds back every applicable change at a host-obeyed path when nothing is named', () => {
    const gate = gateHostObeyed('run-1', CHANGES);
    expect(gate.heldBack).toEqual([
      '.envrc',
      '.git/config',
      '.git/hooks/x',
      '.vscode',
      '.vscode/tasks.json',
      'newdir/.envrc',
    ]);
    expect(applied()).toEqual(['newdir', 'work.txt']);
    const held = gate.changes.find((c) => c.path === '.envrc');
    expect(held).toMatchObject({ applicable: false, heldBack: true });
    expect(held?.note).toMatch(/^held back: a path your tools obey \(direnv\)/);
    // What no apply writes anyway keeps its own reason.
    expect(gate.changes.find((c) => c.path === 'link')).toMatchObject({ note: 'symlink' });
  });

  it('writes exactly what is named: a path, or a directory and what is below it', () => {
    expect(applied(['.envrc'])).toEqual(['.envrc', 'newdir', 'work.txt']);
    expect(applied(['.git'])).toEqual(['.git/config', '.git/hooks/x', 'newdir', 'work.txt']);
    expect(applied(['.vscode'])).toEqual(['.vscode', '.vscode/tasks.json', 'newdir', 'work.txt']);
  });

  it('adds the directories the patch makes on the way to a named path, not their other contents', () => {
    const changes: PatchChange[] = [
      { path: '.vscode', kind: 'added', before: null, after: dir, applicable: true },
      { path: '.vscode/a.json', kind: 'added', before: null, after: file(A), applicable: true },
      { path: '.vscode/b.json', kind: 'added', before: null, after: file(B), applicable: true },
    ];
    const gate = gateHostObeyed('run-1', changes, ['.vscode/a.json']);
    expect(gate.changes.filter((c) => c.applicable).map((c) => c.path)).toEqual([
      '.vscode',
      '.vscode/a.json',
    ]);
    expect(gate.heldBack).toEqual(['.vscode/b.json']);
  });

  it('holds back a directory the patch removes while a held-back path inside it stays', () => {
    const changes: PatchChange[] = [
      { path: 'sub', kind: 'removed', before: dir, after: null, applicable: true },
      { path: 'sub/.envrc', kind: 'removed', before: file(A), after: null, applicable: true },
      { path: 'sub/a.txt', kind: 'removed', before: file(B), after: null, applicable: true },
    ];
    const gate = gateHostObeyed('run-1', changes);
    expect(gate.heldBack).toEqual(['sub', 'sub/.envrc']);
    expect(gate.changes[0]?.note).toMatch(/^held back: it holds sub\/\.envrc/);
    expect(gate.changes.filter((c) => c.applicable).map((c) => c.path)).toEqual(['sub/a.txt']);
    const named = gateHostObeyed('run-1', changes, ['sub/.envrc']);
    expect(named.heldBack).toEqual([]);
    expect(gateHostObeyed('run-1', changes, ['sub']).heldBack).toEqual([]);
  });

  it('refuses a name that holds nothing back, so a typo is not a decision', () => {
    for (const name of ['work.txt', '.envr', 'link', '.git/hooks/y']) {
      let thrown: unknown;
      try {
        gateHostObeyed('run-1', CHANGES, [name]);
      } catch (error) {
        thrown = error;
      }
      expect(thrown, name).toBeInstanceOf(WorkspaceError);
      expect((thrown as WorkspaceError).code).toBe('host_obeyed_not_held');
      expect((thrown as WorkspaceError).message).toContain(`--host-obeyed ${name} names no`);
    }
  });
});
