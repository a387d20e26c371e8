#!/usr/bin/env bash
# Makes a Node.js >= 22 available at .tools/node/bin/node. Uses the system's when it is new
# enough; otherwise installs Node 24 from the npm registry's `node` package
# (../shared/environment.md: the system Node here is 20, past end of life).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
tools="$here/.tools/node"

major() { "$1" -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }

if [ -x "$tools/bin/node" ] && [ "$(major "$tools/bin/node")" -ge 22 ]; then
  exit 0
fi
if command -v node >/dev/null 2>&1 && [ "$(major node)" -ge 22 ]; then
  mkdir -p "$tools/bin"
  ln -sf "$(command -v node)" "$tools/bin/node"
  exit 0
fi
echo "node-up: system Node is $(node --version 2>/dev/null || echo absent); installing Node 24 into .tools/node" >&2
mkdir -p "$tools"
npm install -g --prefix "$tools" --no-audit --no-fund node@24 >/dev/null 2>&1 || npm install -g --prefix "$tools" node@24
"$tools/bin/node" --version >/dev/null
