#!/usr/bin/env bash
# Makes a Node.js >= 22.12 (package.json's engines) available at .tools/node/bin/node. Uses
# the system's when it is new enough; otherwise installs Node 24 from the npm registry's
# `node` package (../shared/environment.md: the system Node here is 20, past end of life),
# with Debian's npm first when the machine has none.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
tools="$here/.tools/node"

# 1 when the node given is at least 22.12, else 0 (also when it does not run).
recent() { "$1" -p 'const [a, b] = process.versions.node.split(".").map(Number); +(a > 22 || (a === 22 && b >= 12))' 2>/dev/null || echo 0; }

if [ -x "$tools/bin/node" ] && [ "$(recent "$tools/bin/node")" = 1 ]; then
  exit 0
fi
if command -v node >/dev/null 2>&1 && [ "$(recent node)" = 1 ]; then
  mkdir -p "$tools/bin"
  ln -sf "$(command -v node)" "$tools/bin/node"
  exit 0
fi
echo "node-up: system Node is $(node --version 2>/dev/null || echo absent); installing Node 24 into .tools/node" >&2
if ! command -v npm >/dev/null 2>&1; then
  if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "node-up: neither Node >= 22.12 nor npm is installed; install one of them" >&2
    exit 1
  fi
  apt-get update -qq && apt-get install -y -qq npm >/dev/null
fi
mkdir -p "$tools"
npm install -g --prefix "$tools" --no-audit --no-fund node@24 >/dev/null 2>&1 || npm install -g --prefix "$tools" node@24
"$tools/bin/node" --version >/dev/null
