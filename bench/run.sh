#!/usr/bin/env bash
# Compiles src/ and bench/ into dist-bench/ and runs one bench:
#   bench/run.sh [cold-path|seccomp|egress|tools|pool|flood|mediator|draft|host-tools|scrub|audit|mount-resolution|cfc|startup|load|posture|session|children|model-gateways|all] [args...]   (default cold-path)
# dist-bench/src/paths.js resolves the package root to dist-bench/, so the data
# directories and package.json are linked in from the repository root.
set -euo pipefail
cd "$(dirname "$0")/.."
bench="${1:-cold-path}"
if [ $# -gt 0 ]; then shift; fi
case "$bench" in
  cold-path) entry=cold-path ;;
  seccomp | seccomp-overhead) entry=seccomp-overhead ;;
  egress | egress-gateway) entry=egress-gateway ;;
  tools | tool-call) entry=tool-call ;;
  pool | tool-pool) entry=tool-pool ;;
  flood) entry=flood ;;
  mediator) entry=mediator ;;
  draft | draft-copy) entry=draft-copy ;;
  host-tools) entry=host-tools ;;
  scrub) entry=scrub ;;
  audit) entry=audit ;;
  mount-resolution) entry=mount-resolution ;;
  cfc) entry=cfc ;;
  startup) entry=startup ;;
  load) entry=load ;;
  session | sessions) entry=session ;;
  children | bench-children) entry=children ;;
  model-gateways | gateways) entry=model-gateways ;;
  all | bench-all) entry=bench-all ;;
  posture | posture-setup) entry=posture-setup ;;
  *)
    echo "bench/run.sh: unknown bench $bench (cold-path, seccomp, egress, tools, pool, flood, mediator, draft, host-tools, scrub, audit, mount-resolution, cfc, startup, load, posture, session, children, model-gateways, all)" >&2
    exit 2
    ;;
esac
node_modules/.bin/tsc -p tsconfig.bench.json
for entry_dir in profiles images seccomp rate-cards package.json; do
  ln -sfn "../$entry_dir" "dist-bench/$entry_dir"
done
exec node "dist-bench/bench/$entry.js" "$@"
