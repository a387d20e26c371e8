# The set-up and the test command. `make demo` and `make test` work on a fresh Debian
# machine as root: they bring Node, the Docker engine and the sandbox image themselves.
SHELL := /bin/bash
export PATH := $(CURDIR)/.tools/node/bin:$(CURDIR)/node_modules/.bin:$(PATH)
# No registry is reachable on the machines we build on; `auto` tries one first.
CFH_IMAGE_METHOD ?= offline

.PHONY: setup node deps build engine image browser demo demo-host-tools demo-children demo-cfc lint typecheck test test-unit test-integration bench bench-seccomp bench-egress bench-tools bench-flood bench-draft bench-host-tools bench-audit bench-mounts bench-cfc bench-sessions bench-children bench-all perf-docs schema conformance-doc clean

node:
	@scripts/node-up.sh

deps: node
	@if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then npm ci --no-audit --no-fund; fi

build: deps
	@npm run --silent build

setup: build

engine:
	@scripts/engine-up.sh

# The sandbox image, and the toolchain the README's examples name (node, make); each is
# cached by its content tag, so a machine pays for a build once.
CFH_TOOLCHAIN ?= node,make
image: build engine
	@bin/cfh image build --method $(CFH_IMAGE_METHOD)
	@bin/cfh image build --method $(CFH_IMAGE_METHOD) --with $(CFH_TOOLCHAIN)

browser:
	@scripts/browser-up.sh

demo: image
	@echo "== running the sample repository's tests in a sandbox (profile: default) =="
	bin/cfh sandbox run --workspace examples/sample-repo -- python3 -B -m unittest -v
	@echo "== a scripted agent run on a copy of it (profile: untrusted-repo) =="
	@rm -rf .cache/demo-repo && mkdir -p .cache && cp -r examples/sample-repo .cache/demo-repo
	@if [ "$$(id -u)" -eq 0 ]; then chown -R 65534:65534 .cache/demo-repo; fi
	bin/cfh sandbox run --profile untrusted-repo --workspace .cache/demo-repo \
	  --prompt "Run the calc tests and tell me whether calc works" --script examples/agent/fix-and-test.yaml
	@echo "== the same run under CFC enforce-strict (docs/operators.md, CFC) =="
	@rm -rf .cache/demo-repo && cp -r examples/sample-repo .cache/demo-repo
	@if [ "$$(id -u)" -eq 0 ]; then chown -R 65534:65534 .cache/demo-repo; fi
	bin/cfh sandbox run --profile untrusted-repo --workspace .cache/demo-repo --cfc enforce-strict \
	  --prompt "Run the calc tests and tell me whether calc works" --script examples/agent/fix-and-test.yaml
	@echo "(evidence: bin/cfh runs list; bin/cfh runs show RUN_ID)"

# Host tools (docs/operators.md, "Host tools"): the reference MCP memory server and an exec
# notifier on the host, offline; the notifier's token lives only in its own process.
demo-host-tools: image
	@rm -rf .cache/demo-host-tools && mkdir -p .cache/demo-host-tools
	@export DEMO_NOTIFY_TOKEN="demo-$$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"; \
	  echo "== doctor: is each host tool of the profile healthy? =="; \
	  bin/cfh doctor --profile examples/host-tools/profile.yaml && \
	  echo "== an agent run that uses them (scripted model) ==" && \
	  bin/cfh sandbox run --profile examples/host-tools/profile.yaml --workspace examples/sample-repo \
	    --prompt "Remember this project, then tell ops" --script examples/host-tools/script.yaml
	@echo "(the knowledge graph: .cache/demo-host-tools/graph.jsonl; evidence: bin/cfh runs list)"

# CFC (docs/operators.md, "CFC (information flow control)"): an injected README drives the
# scripted model to hand a secret to a deploy tool; enforce-strict refuses it. Offline.
# A parent delegating to three children side by side (examples/children, scripted model):
# each child in containers of its own, its evidence under the parent's run.
demo-children: image
	@rm -rf .cache/demo-children && mkdir -p .cache/demo-children && cp -r examples/sample-repo .cache/demo-children/repo
	bin/cfh sandbox run --profile examples/children/parent.yaml --workspace .cache/demo-children/repo \
	  --artifact-root .cache/demo-children/runs --prompt 'Review, test and fix this repository.' \
	  --script examples/children/script.yaml
	@run=$$(ls .cache/demo-children/runs | head -1); \
	  bin/cfh runs show --artifact-root .cache/demo-children/runs $$run | head -40; \
	  bin/cfh audit --artifact-root .cache/demo-children/runs $$run | tail -1

demo-cfc: image
	@rm -rf .cache/demo-cfc && mkdir -p .cache/demo-cfc && cp -r examples/cfc/repo .cache/demo-cfc/repo
	@if [ "$$(id -u)" -eq 0 ]; then chown -R 65534:65534 .cache/demo-cfc/repo; fi
	bin/cfh sandbox run --profile examples/cfc/profile.yaml --workspace .cache/demo-cfc/repo \
	  --non-interactive --prompt "Summarise this repository" --script examples/cfc/script.yaml
	@echo "(evidence: bin/cfh runs show RUN_ID; the deploy log: .cache/demo-cfc/deployed.log)"

lint: deps
	@npm run --silent lint

typecheck: deps
	@npm run --silent typecheck

test-unit: deps
	@npx vitest run --project unit

test-integration: image browser
	@scripts/test-user.sh
	@npx vitest run --project integration

test: lint typecheck image browser
	@scripts/test-user.sh
	@mkdir -p .cache
	@npx vitest run --reporter=default --reporter=json --outputFile.json=.cache/vitest.json; status=$$?; \
	  node scripts/test-summary.mjs .cache/vitest.json || status=1; exit $$status

bench: image
	@bench/run.sh cold-path

bench-seccomp: image
	@bench/run.sh seccomp

bench-egress: build
	@bench/run.sh egress

bench-tools: image
	@bench/run.sh tools
	@bench/run.sh mediator

bench-flood: image
	@bench/run.sh flood

bench-draft: build
	@bench/run.sh draft

bench-host-tools: build
	@bench/run.sh host-tools

bench-audit: build browser
	@bench/run.sh audit

bench-mounts: build
	@bench/run.sh mount-resolution

# The CFC figures (issue 18): the injection suite's full matrix (every episode in every
# mode, real agent runs: about 10 minutes on 2 CPUs), then its table and the label work per
# tool call against the same call with CFC disabled.
bench-cfc: image
	@scripts/test-user.sh
	@CFC_SUITE=full npx vitest run --project integration test/integration/injection/
	@bench/run.sh cfc

# A session's turn overhead (`cfh serve --stdio`) against a new process per turn, and
# `cfh mcp`'s sandbox_exec round trip against a raw exec (bench/session.ts).
bench-sessions: image
	@bench/run.sh session

# A child run against an agent run of the same profile, and 8 children side by side
# against 8 agent runs in sequence (bench/children.ts).
bench-children: image
	@bench/run.sh children

# Every figure of issue 21 as one table of ratios, baselines named (bench/bench-all.ts says
# how a bench adds its rows); perf-docs writes it into docs/operators.md's Performance.
bench-all: image
	@scripts/test-user.sh
	@bench/run.sh all

perf-docs: image
	@scripts/test-user.sh
	@node scripts/perf-docs.mjs

# docs/schema/*.json from the zod definitions (src/evidence); unit tests check them.
schema: deps
	@npm run --silent schemas

# docs/conformance.md's clause tables, audit checks and not-advertised list, from
# conformance/manifest.yaml (a unit test fails while they differ).
conformance-doc: build
	@node scripts/conformance-doc.mjs

clean:
	rm -rf dist dist-bench
