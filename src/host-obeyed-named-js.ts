// What the JavaScript package managers' listed settings name as code to run (class 9,
// host-obeyed-named.ts). Why each key is read:
// - yarn berry (`.yarnrc.yml`): `yarnPath` and each `plugins[].path`, loaded by every yarn
//   command; `injectEnvironmentFiles`, files whose variables every script gets (a
//   `NODE_OPTIONS` there preloads code); yarn 1 (`.yarnrc`): `yarn-path`, the program every
//   yarn command hands over to, and `script-shell`.
// - npm and pnpm (`.npmrc`): the programs npm runs: `script-shell` (every script), `shell`
//   (`npm exec`, `npm explore`), `git` (every git dependency), `editor`, `browser`,
//   `viewer`; the modules `node-options` preloads or loads settings from in every script;
//   `init-module` (`npm init`), `onload-script` (npm 6 and older, on every command); the
//   configuration files it reads next (`globalconfig`, `userconfig`) and the prefix whose
//   `etc/npmrc` and `bin` it uses (`prefix`); pnpm's `pnpmfile` and `global-pnpmfile`, the
//   hooks every `pnpm install` runs, scripts disabled or not.
// - pnpm (`pnpm-workspace.yaml`, pnpm 10's home for the same settings): `pnpmfile`,
//   `globalPnpmfile`, `scriptShell`, `nodeOptions`.
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { npmIni, yarnrc } from './host-obeyed-named-quoting.js';
import { commandWords, preloads, type Named } from './host-obeyed-named-tools.js';

/** The YAML document, or undefined when it does not parse (the tool refuses it too). */
function yaml(text: string): unknown {
  try {
    return parseYaml(text);
  } catch {
    return undefined;
  }
}

const YarnBerry = z.looseObject({
  yarnPath: z.string().optional(),
  plugins: z
    .array(z.union([z.string(), z.looseObject({ path: z.string().optional() })]))
    .optional(),
  injectEnvironmentFiles: z.array(z.string()).optional(),
});

export function yarnBerry(text: string): Named[] {
  const parsed = YarnBerry.safeParse(yaml(text));
  if (!parsed.success) return [];
  const out: Named[] = [];
  if (parsed.data.yarnPath !== undefined)
    out.push({ value: parsed.data.yarnPath, key: 'yarnPath' });
  for (const p of parsed.data.plugins ?? []) {
    const value = typeof p === 'string' ? p : p.path;
    if (value !== undefined) out.push({ value, key: 'plugins' });
  }
  // A trailing `?` marks a file that may be missing; the path is the same.
  for (const f of parsed.data.injectEnvironmentFiles ?? [])
    out.push({ value: f.replace(/\?$/, ''), key: 'injectEnvironmentFiles' });
  return out;
}

/**
 * A setting that is a program (npm spawns `script-shell` whole, spaces and all) or a command
 * line (`editor`, `browser` are split): both are read.
 */
const programOrLine = (value: string, key: string): Named[] => [
  { value, key },
  ...commandWords(value).map((v) => ({ value: v, key })),
];

export function yarnClassic(text: string): Named[] {
  return yarnrc(text).flatMap(({ key, value }): Named[] => {
    if (key === 'yarn-path') return [{ value, key }];
    if (key === 'script-shell') return programOrLine(value, key);
    return [];
  });
}

/** `.npmrc` keys whose value is a command line (its path words are held). */
const NPM_COMMANDS = new Set(['script-shell', 'shell', 'git', 'editor', 'browser', 'viewer']);
/** `.npmrc` keys whose value is a file or directory npm or pnpm loads or runs from. */
const NPM_PATHS = new Set([
  'init-module',
  'onload-script',
  'globalconfig',
  'userconfig',
  'prefix',
  'pnpmfile',
  'global-pnpmfile',
]);

/** `.npmrc`, read as npm reads it (npmIni: its quoting, escapes and comments). */
export function npmrc(text: string): Named[] {
  return npmIni(text).flatMap(({ key, value }): Named[] => {
    if (NPM_COMMANDS.has(key)) return programOrLine(value, key);
    if (NPM_PATHS.has(key)) return [{ value, key }];
    if (key === 'node-options') return preloads(value).map((v) => ({ value: v, key }));
    return [];
  });
}

const PnpmWorkspace = z.looseObject({
  pnpmfile: z.union([z.string(), z.array(z.string())]).optional(),
  globalPnpmfile: z.string().optional(),
  scriptShell: z.string().optional(),
  nodeOptions: z.string().optional(),
});

export function pnpmWorkspace(text: string): Named[] {
  const parsed = PnpmWorkspace.safeParse(yaml(text));
  if (!parsed.success) return [];
  const d = parsed.data;
  return [
    ...[d.pnpmfile ?? []].flat().map((value) => ({ value, key: 'pnpmfile' })),
    ...(d.globalPnpmfile === undefined ? [] : [{ value: d.globalPnpmfile, key: 'globalPnpmfile' }]),
    ...commandWords(d.scriptShell ?? '').map((value) => ({ value, key: 'scriptShell' })),
    ...preloads(d.nodeOptions ?? '').map((value) => ({ value, key: 'nodeOptions' })),
  ];
}
