// The import structure of src/, checked in `npm run lint`: no import cycles, and layers
// that point one way (docs/architecture.md):
//
//   cli → (serve, mcp) → session → engine → (mediator, tools, model, sandbox, workspace, network, seccomp, image) → (substrate, cfc)
//   config, evidence and the root files (errors, log, paths, version) are used by all;
//   evidence uses none of the others but the root files and config's data, except that the
//   audit (evidence/audit/) re-runs the pure decision functions (AUDIT_KERNELS below).
//
// Type-only imports count: a cycle through types is still a cycle in the design.
import { readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

const SRC = path.resolve(new URL('..', import.meta.url).pathname, 'src');

/** The layer of each top-level folder (a file directly in src/ is `root`). */
const RANK = {
  root: 0,
  config: 0,
  evidence: 0,
  substrate: 1,
  cfc: 1,
  seccomp: 2,
  image: 2,
  network: 2,
  sandbox: 2,
  workspace: 2,
  model: 2,
  tools: 2,
  mediator: 2,
  engine: 3,
  // A session drives engine runs turn after turn; its transports speak a protocol over it.
  session: 4,
  serve: 5,
  mcp: 5,
  cli: 6,
};
/** Folders that may import only these (besides themselves). */
const ONLY = { evidence: ['root', 'config'], config: ['root'], root: ['root'] };

/**
 * The audit re-derives every recorded decision with the pure functions that made it (the
 * label algebra and flow decision, policy, the cost estimate): src/evidence/audit/ may import
 * these modules, and nothing else above `evidence`. None of them does I/O or imports the
 * audit (the cycle check below holds that); docs/architecture.md, "Layers".
 */
const AUDIT_KERNELS = [
  'cfc/label.ts',
  'cfc/handles.ts',
  'cfc/label-map.ts',
  'cfc/host-tool-labels.ts',
  'cfc/flow.ts',
  'cfc/runtime.ts',
  'mediator/policy.ts',
  'mediator/policy-rule.ts',
  'mediator/flow-gate.ts',
  'mediator/mediator.ts',
  'model/cost.ts',
  'model/usage.ts',
  'tools/builtin-inputs.ts',
  'tools/model-form.ts',
];
const isAuditKernelImport = (file, target) =>
  path.relative(SRC, file).startsWith(`evidence${path.sep}audit${path.sep}`) &&
  AUDIT_KERNELS.includes(path.relative(SRC, target).split(path.sep).join('/'));

function files(dir) {
  return readdirSync(dir).flatMap((name) => {
    const p = path.join(dir, name);
    return statSync(p).isDirectory() ? files(p) : p.endsWith('.ts') ? [p] : [];
  });
}

function areaOf(file) {
  const rel = path.relative(SRC, file).split(path.sep);
  return rel.length === 1 ? 'root' : rel[0];
}

function specifiersOf(file) {
  return ts
    .preProcessFile(readFileSync(file, 'utf8'), true, true)
    .importedFiles.map((f) => f.fileName);
}

function importsOf(file) {
  return specifiersOf(file)
    .filter((spec) => spec.startsWith('.'))
    .map((spec) => path.resolve(path.dirname(file), spec.replace(/\.js$/, '.ts')));
}

/**
 * An engine adapter is known only to itself and to the composition root: the Docker
 * client is imported under substrate/docker/ alone, and that folder only from cli/ (which
 * makes the runtime) and from itself. The rest of cfh speaks to the port (substrate/runtime.ts).
 */
const ADAPTERS = { 'substrate/docker': ['dockerode', 'docker-modem'] };
const relOf = (file) => path.relative(SRC, file).split(path.sep).join('/');
const inside = (file, folder) => relOf(file).startsWith(`${folder}/`);

const all = files(SRC);
const graph = new Map(all.map((f) => [f, importsOf(f).filter((t) => all.includes(t))]));
const problems = [];

for (const [file, targets] of graph) {
  const from = areaOf(file);
  for (const target of targets) {
    const to = areaOf(target);
    if (to === from || isAuditKernelImport(file, target)) continue;
    const only = ONLY[from];
    const bad =
      (only !== undefined && !only.includes(to)) ||
      (RANK[to] ?? 0) > (RANK[from] ?? 0) ||
      RANK[from] === undefined;
    if (bad)
      problems.push(
        `layer: ${path.relative(SRC, file)} (${from}) imports ${path.relative(SRC, target)} (${to})`,
      );
  }
}

for (const [file, targets] of graph) {
  for (const [folder, clients] of Object.entries(ADAPTERS)) {
    if (inside(file, folder)) continue;
    for (const spec of specifiersOf(file))
      if (clients.includes(spec)) problems.push(`adapter: ${relOf(file)} imports ${spec}`);
    for (const target of targets)
      if (inside(target, folder) && areaOf(file) !== 'cli')
        problems.push(`adapter: ${relOf(file)} imports ${relOf(target)} (only cli/ may)`);
  }
}

// Cycles: Tarjan's strongly connected components.
let index = 0;
const stack = [];
const meta = new Map();
function connect(v) {
  meta.set(v, { index, low: index, on: true });
  index += 1;
  stack.push(v);
  for (const w of graph.get(v) ?? []) {
    if (!meta.has(w)) {
      connect(w);
      meta.get(v).low = Math.min(meta.get(v).low, meta.get(w).low);
    } else if (meta.get(w).on) meta.get(v).low = Math.min(meta.get(v).low, meta.get(w).index);
  }
  if (meta.get(v).low === meta.get(v).index) {
    const component = [];
    let w;
    do {
      w = stack.pop();
      meta.get(w).on = false;
      component.push(path.relative(SRC, w));
    } while (w !== v);
    if (component.length > 1 || (graph.get(v) ?? []).includes(v))
      problems.push(`cycle: ${component.sort().join(' ↔ ')}`);
  }
}
for (const v of graph.keys()) if (!meta.has(v)) connect(v);

if (problems.length > 0) {
  for (const p of problems) console.error(p);
  console.error(`check-layers: ${problems.length} problem(s) in src/ imports`);
  process.exit(1);
}
console.log(`check-layers: ${all.length} files, no cycles, layers point one way`);
