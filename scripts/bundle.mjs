// Bundles the compiled CLI (dist/, from tsc) into dist/bundle/, which bin/cfh runs: one
// start-up reads a handful of files instead of ~1,300 modules (resolution, package.json
// lookups and per-module compilation were about half of a command's start-up CPU). The
// source layout and the tsc output stay as they are: tests and benches import dist/ and
// src/ directly; only the installed entry point uses the bundle.
//
// Code splitting keeps what main.ts imports dynamically (compile-cache.js, run-main.js,
// each command's module) in chunks of their own, so `cfh --version` loads one small file
// and the compile cache is on before the big chunks are compiled.
//
// Two rewrites keep the bundle behaving as the files it came from:
// - `import.meta.url` in cfh's own modules (paths.ts finds the package root with it,
//   remove-tree.ts its child's program, compile-cache.ts its directory) is the module's
//   original place in dist/, expressed relative to the chunk, so the package stays
//   relocatable (npm link, a global install).
// - dockerode's BuildKit session (gRPC, protobuf: ~110 modules) and docker-modem's SSH
//   transport (ssh2) are required at their first call from the installed package, not
//   bundled: cfh uses neither (no BuildKit builds, engine over a unix socket or tcp), and
//   loading them cost every command ~0.1 s.
import * as esbuild from 'esbuild';
import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const outdir = path.join(root, 'dist', 'bundle');

/** Modules loaded from node_modules at their first use instead of being bundled. */
const ON_FIRST_CALL = /node_modules\/(dockerode\/lib\/session|docker-modem\/lib\/ssh)\.js$/;

const cfhBundle = {
  name: 'cfh-bundle',
  setup(build) {
    build.onLoad({ filter: ON_FIRST_CALL }, (args) => {
      // Both export one function (withSession; the ssh agent factory).
      const spec = args.path.slice(args.path.lastIndexOf('node_modules/') + 'node_modules/'.length);
      return {
        loader: 'js',
        contents:
          `let real;\nmodule.exports = function (...a) {\n` +
          `  real ??= __cfhRequire(${JSON.stringify(spec)});\n  return real.apply(this, a);\n};\n`,
      };
    });
    const ownDist = path.join(root, 'dist') + path.sep;
    build.onLoad({ filter: /\.js$/ }, async (args) => {
      if (!args.path.startsWith(ownDist)) return undefined; // a dependency: as it is
      let text = await readFile(args.path, 'utf8');
      if (text.includes('import.meta.url')) {
        const rel = path.relative(outdir, args.path).split(path.sep).join('/');
        text = text.replaceAll(
          'import.meta.url',
          `new URL(${JSON.stringify(rel)}, import.meta.url).href`,
        );
      }
      return { loader: 'js', contents: text };
    });
  },
};

await rm(outdir, { recursive: true, force: true });
const result = await esbuild.build({
  entryPoints: [path.join(root, 'dist', 'cli', 'main.js')],
  outdir,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node22',
  logLevel: 'warning',
  legalComments: 'none',
  plugins: [cfhBundle],
  // The bundled CommonJS dependencies call require(); the lazily loaded ones above use it
  // under a name esbuild does not resolve at build time.
  banner: {
    js:
      'import { createRequire as __cfhCreateRequire } from "node:module";\n' +
      'const require = __cfhCreateRequire(import.meta.url);\nconst __cfhRequire = require;',
  },
});
if (result.errors.length > 0) process.exit(1);
