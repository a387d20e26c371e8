#!/usr/bin/env bash
# Compiles src/ and bench/ into dist-bench/ and runs the cold-path bench.
# dist-bench/src/paths.js resolves the package root to dist-bench/, so the data
# directories and package.json are linked in from the repository root.
set -euo pipefail
cd "$(dirname "$0")/.."
node_modules/.bin/tsc -p tsconfig.bench.json
for entry in profiles images seccomp package.json; do
  ln -sfn "../$entry" "dist-bench/$entry"
done
exec node dist-bench/bench/cold-path.js "$@"
