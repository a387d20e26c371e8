// Class 9, a family's file names come from its tool's own list (src/host-obeyed.ts and the
// readers of src/host-obeyed-named.ts): mise reads a directory's configuration from every
// name in jdx/mise src/config/mod.rs (LOCAL_CONFIG_FILENAMES, and for each MISE_ENV the
// DEFAULT_CONFIG_FILENAMES), not only `mise.toml` and `.mise/config.toml`; each is held by
// name, and what each names as code is held beside it.
import { realpathSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { hostObeyedPrefix, isHostObeyed } from '../../src/host-obeyed.js';
import { namedHeldPaths } from '../../src/host-obeyed-named.js';
import { makeTempDir, removeTempDir } from './helpers.js';

let tmp: string | undefined;
let ws = '';

beforeEach(async () => {
  tmp = realpathSync(await makeTempDir('cfh-obeyed-lists-'));
  ws = path.join(tmp, 'ws');
  await mkdir(ws);
});

afterEach(async () => {
  await removeTempDir(tmp);
  tmp = undefined;
});

/** mise's own list, with MISE_ENV=production (jdx/mise src/config/mod.rs). */
const MISE_LIST = [
  '.config/mise/conf.d/quality.toml',
  '.config/mise/config.toml',
  '.config/mise/mise.toml',
  '.config/mise.toml',
  '.mise/config.toml',
  'mise/config.toml',
  '.rtx.toml',
  'mise.toml',
  '.mise.toml',
  '.config/mise/config.local.toml',
  '.config/mise/mise.local.toml',
  '.config/mise.local.toml',
  '.mise/config.local.toml',
  'mise/config.local.toml',
  '.rtx.local.toml',
  'mise.local.toml',
  '.mise.local.toml',
  '.config/mise/config.production.toml',
  '.config/mise.production.toml',
  'mise/config.production.toml',
  'mise.production.toml',
  '.mise/config.production.toml',
  '.mise.production.toml',
  '.rtx.production.toml',
  'mise/config.production.local.toml',
  'mise.production.local.toml',
  '.mise.production.local.toml',
];

describe("class 9: a family's file names come from its tool's own list", () => {
  it("every configuration file in mise's own list is held by name, in any directory", () => {
    for (const f of MISE_LIST) {
      expect(isHostObeyed(f), f).toBe(true);
      expect(isHostObeyed(`sub/${f}`), f).toBe(true);
    }
    expect(hostObeyedPrefix('mise/config.toml')?.prefix).toBe('mise/config.toml');
    // The directory alone, and what mise does not read, are not held: `mise/tasks` runs
    // when it is asked for (`mise run`), as a package.json script does.
    for (const f of ['mise', 'mise/tasks/build', 'mise/README.md', 'promise.toml'])
      expect(isHostObeyed(f), f).toBe(false);
    expect(isHostObeyed('.bunfig.toml')).toBe(true);
  });

  it("what each file in mise's list names as code is held beside it", async () => {
    for (const [i, f] of MISE_LIST.entries()) {
      await mkdir(path.dirname(path.join(ws, f)), { recursive: true });
      await writeFile(path.join(ws, f), `[env]\n_.path = "./tools/bin${String(i)}"\n`);
    }
    const held = namedHeldPaths(ws);
    for (const [i, f] of MISE_LIST.entries())
      expect(held.find((h) => h.path === `tools/bin${String(i)}`)?.why, f).toBe(
        `mise (env._.path in ${f})`,
      );
  });
});
