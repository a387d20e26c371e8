// `cfh --version` is answered by the entry point before the CLI loads: its static imports
// stay the Node check and the version (what they import in turn is checked too), so the
// version never pays for commander, the engine client, the model SDK or MCP.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const CLI = path.resolve(import.meta.dirname, '../../src/cli');

function staticImports(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(/^import\s+(?:[^'"]*?from\s+)?['"]([^'"]+)['"]/gm)].map(
    (m) => m[1] ?? '',
  );
}

describe('the entry point', () => {
  it('imports only the Node check and the version before it knows the command', () => {
    const entry = staticImports(path.join(CLI, 'main.ts'));
    expect(entry).toEqual(['./node-check.js', '../version.js']);
    expect(staticImports(path.join(CLI, 'node-check.ts'))).toEqual([]);
    const version = staticImports(path.join(CLI, '..', 'version.ts'));
    expect(version.every((s) => s.startsWith('node:') || s === './paths.js')).toBe(true);
    expect(
      staticImports(path.join(CLI, '..', 'paths.ts')).every((s) => s.startsWith('node:')),
    ).toBe(true);
  });
});
