// What rustup's and cargo's listed settings name as code to run (class 9,
// host-obeyed-named.ts), read as host-obeyed-named-tools.ts reads the others:
// - rustup: `[toolchain] path`, the toolchain every cargo and rustc there runs.
// - cargo (`.cargo/config.toml`), run by rust-analyzer on opening the folder (its `cargo
//   check` builds every build script and proc-macro): the programs `build.rustc`,
//   `rustc-wrapper`, `rustc-workspace-wrapper`, `rustdoc`, each target's `runner` and
//   `linker`, credential providers, `doc.browser` (what `cargo doc --open` runs); `paths`
//   and `[patch]` `path`s (crates built in place of the registry's, their build scripts
//   run). The flags cargo passes rustc and rustdoc (`rustflags`, `rustdocflags` under
//   `build`, each `target` and `host`) name programs and code as the keys do: `-C linker=`,
//   `-Clinker=`, `--codegen linker=`, `-C link-arg=-fuse-ld=`, `-Z codegen-backend=` and
//   `-Z llvm-plugins=` (a library rustc loads), `--extern` (a proc-macro rustc loads),
//   `@file` (more flags): every path word of them is held, not a list of flags, as rustc's
//   flags that take a path almost all name something it loads or runs. `[env]` is exported
//   to every build script, rustc and program cargo runs: every path word of each value is
//   held (envVariable), a `{ value, relative = true }` one too.
//   Not read: `[alias]` (run when you run it, as a package.json script), vendored
//   `[source]` directories (dependencies, as `node_modules`).
import { commandWords, envVariable, type Named } from './host-obeyed-named-tools.js';
import { tomlEntries, tomlField, tomlStrings } from './host-obeyed-named-toml.js';

/** rustup's `rust-toolchain(.toml)`: `[toolchain] path`. */
export function rustToolchain(text: string): Named[] {
  return tomlEntries(text)
    .filter((e) => e.key === 'toolchain.path')
    .flatMap((e) => tomlStrings(e.raw).map((value) => ({ value, key: 'path' })));
}

const CARGO_PROGRAMS = new Set([
  'doc.browser',
  'build.rustc',
  'build.rustc-wrapper',
  'build.rustc-workspace-wrapper',
  'build.rustdoc',
  'registry.credential-provider',
  'registry.global-credential-providers',
]);

/** The flags cargo passes rustc and rustdoc, where cargo reads them. */
const FLAGS = new Set(['rustflags', 'rustdocflags']);
const FLAG_TABLES = new Set(['build', 'target', 'host', 'profile']);

/** cargo's `.cargo/config.toml`: the programs it runs, the code rustc loads, the crates it builds in place. */
export function cargoConfig(text: string): Named[] {
  return tomlEntries(text).flatMap((e): Named[] => {
    const [top, second] = e.parts;
    const last = e.parts.at(-1) ?? '';
    const words = (): Named[] =>
      // An array of flags is one command line: `["-C", "linker=x"]` as `-C linker=x`.
      // `@file` is a file of more flags rustc reads.
      commandWords(tomlStrings(e.raw).join(' '))
        .flatMap((w) => (w.startsWith('@') ? [w, w.slice(1)] : [w]))
        .map((value) => ({ value, key: e.key }));
    const command =
      CARGO_PROGRAMS.has(e.key) ||
      ((top === 'target' || top === 'host') && (last === 'runner' || last === 'linker')) ||
      (top === 'registries' && last === 'credential-provider') ||
      top === 'credential-alias';
    if (command)
      return tomlStrings(e.raw).flatMap((v) =>
        commandWords(v).map((value) => ({ value, key: e.key })),
      );
    if (FLAGS.has(last) && top !== undefined && FLAG_TABLES.has(top)) return words();
    if (e.key === 'paths') return tomlStrings(e.raw).map((value) => ({ value, key: e.key }));
    if (top === 'patch' && last === 'path' && e.parts.length === 4)
      return tomlStrings(e.raw).map((value) => ({ value, key: e.key }));
    if (top === 'patch' && e.parts.length === 3)
      return tomlField(e.raw, 'path').map((value) => ({ value, key: e.key }));
    if (top === 'env' && second !== undefined) {
      // `NAME = "v"`, `NAME = { value = "v", force = true, relative = true }`, `env.NAME.value`.
      if (e.parts.length === 2 && !e.raw.startsWith('{'))
        return tomlStrings(e.raw).flatMap((v) => envVariable(second, v, e.key));
      const values =
        e.parts.length === 2
          ? tomlField(e.raw, 'value')
          : last === 'value'
            ? tomlStrings(e.raw)
            : [];
      return values.flatMap((v) => envVariable(second, v, e.key));
    }
    return [];
  });
}
